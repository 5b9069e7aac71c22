/**
 * The line a user needs when UCX_TLS asks for atomicx by name and atomicx is
 * not loaded into the process: UCX itself only says "transport 'atomicx' is
 * not available", which reads the same as a host without a device. (When
 * atomicx is loaded but finds no verbs device with atomics, atomicx says
 * so itself.) Printed once per process, as a UCX warning.
 */
#include "core/fiatomic_context.h"

#include <ucs/debug/log_def.h>
#include <uct/api/uct.h>
#include <stdlib.h>
#include <string.h>

#define FIATOMIC_ATOMICX_NAME "atomicx"

/* UCX_TLS names atomicx (not "^...", not "all"): "atomicx,tcp",
 * "tcp,atomicx", "atomicx:aux" */
static int fiatomic_tls_names_atomicx(void)
{
    const char *tls = getenv("UCX_TLS");
    size_t len      = strlen(FIATOMIC_ATOMICX_NAME);
    const char *p;

    if ((tls == NULL) || (tls[0] == '^')) {
        return 0;
    }
    for (p = tls; p != NULL; p = strchr(p, ',')) {
        p += (*p == ',');
        if (!strncmp(p, FIATOMIC_ATOMICX_NAME, len) &&
            ((p[len] == '\0') || (p[len] == ',') || (p[len] == ':'))) {
            return 1;
        }
    }
    return 0;
}

/* Is a UCT component named atomicx registered in this process? */
static int fiatomic_atomicx_loaded(void)
{
    uct_component_h *components;
    uct_component_attr_t attr;
    unsigned i, num;
    int found = 0;

    if (uct_query_components(&components, &num) != UCS_OK) {
        return 1; /* cannot tell: say nothing */
    }
    for (i = 0; (i < num) && !found; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        found = (uct_component_query(components[i], &attr) == UCS_OK) &&
                !strcmp(attr.name, FIATOMIC_ATOMICX_NAME);
    }
    uct_release_component_list(components);
    return found;
}

void fiatomic_check_atomicx_loaded(void)
{
    static int checked = 0;

    if (__atomic_exchange_n(&checked, 1, __ATOMIC_RELAXED) ||
        !fiatomic_tls_names_atomicx() || fiatomic_atomicx_loaded()) {
        return;
    }
    ucs_warn("UCX_TLS names atomicx, but the atomicx transport is not "
             "loaded into this process: preload libuct_atomicx.so.0 "
             "(LD_PRELOAD) or link with -luct_atomicx");
}
