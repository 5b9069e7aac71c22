/**
 * The library's settings from the environment (FIATOMIC_*): one table
 * (fiatomic_config.c) that the library reads them through and that
 * fiatomic_config_print() lists, as ucx_info -c lists UCX's.
 */
#ifndef FIATOMIC_CONFIG_H_
#define FIATOMIC_CONFIG_H_

typedef enum fiatomic_config_id {
    FIATOMIC_CONFIG_STRATEGY,   /* FIATOMIC_STRATEGY */
    FIATOMIC_CONFIG_OP_TIMEOUT, /* FIATOMIC_OP_TIMEOUT */
    FIATOMIC_CONFIG_CAS_HANDOFF, /* FIATOMIC_CAS_HANDOFF */
    FIATOMIC_CONFIG_LAST
} fiatomic_config_id_t;

/** The variable's name ("FIATOMIC_STRATEGY"). */
const char *fiatomic_config_name(fiatomic_config_id_t id);

/** The value in effect: the environment's when set and not empty, else the
 *  table's default. Never NULL. */
const char *fiatomic_config_get(fiatomic_config_id_t id);

#endif
