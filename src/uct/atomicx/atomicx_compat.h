/**
 * atomicx: the internal UCT API differences between the UCX releases atomicx
 * is built against (1.13 .. 1.22). configure probes each difference in the
 * UCX source tree (ATOMICX_UCT_* in ATOMICX_UCT_COMPAT_CPPFLAGS, see
 * configure.m4); this header turns them into one spelling for the rest of
 * atomicx, and atomicx_compat.c holds the glue that differs as a whole.
 */

#ifndef UCT_ATOMICX_COMPAT_H_
#define UCT_ATOMICX_COMPAT_H_

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/api/version.h>


/* A generic function (ucs_empty_function_return_*, prototyped "(void)" in
 * newer UCX) in an ops table slot: through void (*)(void), the cast that
 * -Wcast-function-type accepts */
#define UCT_ATOMICX_FUNC(_type, _func) ((_type)(void (*)(void))(_func))


/* Memory domain query: uct_md_attr_v2_t (flat) or uct_md_attr_t (cap.*) */
#if ATOMICX_UCT_MD_QUERY_V2
typedef uct_md_attr_v2_t uct_atomicx_md_attr_t;
#  define UCT_ATOMICX_MD_CAP(_attr, _field) ((_attr)->_field)
#else
typedef uct_md_attr_t uct_atomicx_md_attr_t;
#  define UCT_ATOMICX_MD_CAP(_attr, _field) ((_attr)->cap._field)
#endif


/* mem_reg: flags in a parameter struct, or as an argument */
#if ATOMICX_UCT_MEM_REG_PARAMS
#  define UCT_ATOMICX_MEM_REG_ARGS   const uct_md_mem_reg_params_t *params
#  define UCT_ATOMICX_MEM_REG_FLAGS  \
        UCT_MD_MEM_REG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0)
#else
#  define UCT_ATOMICX_MEM_REG_ARGS   unsigned flags
#  define UCT_ATOMICX_MEM_REG_FLAGS  flags
#endif


/* mkey_pack: with or without the registered address and length */
#if ATOMICX_UCT_MKEY_PACK_ADDRESS
#  define UCT_ATOMICX_MKEY_PACK_ARGS void *address, size_t length,
#else
#  define UCT_ATOMICX_MKEY_PACK_ARGS
#endif


/* rkey_unpack: with or without a parameter struct */
#if ATOMICX_UCT_RKEY_UNPACK_PARAMS
#  define UCT_ATOMICX_RKEY_UNPACK_ARGS const uct_rkey_unpack_params_t *params,
#else
#  define UCT_ATOMICX_RKEY_UNPACK_ARGS
#endif


/* The memory domain ops table (atomicx_compat.c) */
extern uct_md_ops_t uct_atomicx_md_ops;

/* The interface's internal ops, which UCP calls directly on newer UCX */
extern uct_iface_internal_ops_t *uct_atomicx_iface_internal_ops;

/* Fills the component's members that only some releases have */
void uct_atomicx_component_compat_init(uct_component_t *component);

/* UCS_OK when the UCX running this process is the release atomicx was built
 * for (major.minor); where the process has no libucp to ask, the class size
 * check of atomicx_init.c is the guard */
ucs_status_t uct_atomicx_version_check(void);

#endif
