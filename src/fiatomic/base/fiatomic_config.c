/**
 * The FIATOMIC_* settings: the one table of their names, defaults and
 * meanings. The library reads each through fiatomic_config_get(), and
 * fiatomic_config_print() (fiatomic_info -c) lists them from here, so a
 * setting cannot exist without being listed.
 */
#include "base/fiatomic_config.h"
#include "base/fiatomic_int.h"

#include <ucs/sys/preprocessor.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct fiatomic_config_entry {
    const char *name;
    const char *default_value;
    const char *syntax;
    const char *doc;
} fiatomic_config_entry_t;

static const fiatomic_config_entry_t
fiatomic_config_table[FIATOMIC_CONFIG_LAST] = {
    [FIATOMIC_CONFIG_STRATEGY] = {
        "FIATOMIC_STRATEGY", "auto", "auto|native|cas|direct|target",
        "How every cell is executed: auto lets the selector choose per\n"
        "endpoint, key and cell; another value forces that strategy (for\n"
        "tests and benchmarks), and a cell it cannot execute atomically is\n"
        "unsupported (-FI_EOPNOTSUPP). An unknown value fails\n"
        "fiatomic_create()."
    },
    [FIATOMIC_CONFIG_OP_TIMEOUT] = {
        "FIATOMIC_OP_TIMEOUT",
        UCS_PP_MAKE_STRING(FIATOMIC_OP_TIMEOUT_DEFAULT),
        "<seconds>|<n>s|<n>ms|<n>us|inf",
        "How long an operation waits for its target, whatever its strategy,\n"
        "before it completes with UCS_ERR_TIMED_OUT (its outcome is then\n"
        "unknown; a native or cas operation or a flush fails its endpoint).\n"
        "The op_timeout field of fiatomic_params_t overrides it. A\n"
        "malformed value fails fiatomic_create()."
    },
    [FIATOMIC_CONFIG_CAS_HANDOFF] = {
        "FIATOMIC_CAS_HANDOFF", "yes", "yes|no",
        "Whether the CAS loop hands an element whose compare-and-swap\n"
        "failed twice to target-side execution (one round trip, atomic\n"
        "with UCP's atomics there) where UCP's atomics are software\n"
        "atomics at the target (tcp); no keeps the plain loop (to measure\n"
        "it). Another value fails fiatomic_create()."
    }
};

const char *fiatomic_config_name(fiatomic_config_id_t id)
{
    return fiatomic_config_table[id].name;
}

const char *fiatomic_config_get(fiatomic_config_id_t id)
{
    const char *value = getenv(fiatomic_config_table[id].name);

    return ((value != NULL) && (*value != '\0')) ? value :
           fiatomic_config_table[id].default_value;
}

FIATOMIC_API void fiatomic_config_print(FILE *stream)
{
    const fiatomic_config_entry_t *e;
    const char *line, *nl;
    int id;

    for (id = 0; id < FIATOMIC_CONFIG_LAST; ++id) {
        e = &fiatomic_config_table[id];
        fprintf(stream, "#\n");
        for (line = e->doc; *line != '\0'; line = *nl ? nl + 1 : nl) {
            for (nl = line; (*nl != '\0') && (*nl != '\n'); ++nl) {
            }
            fprintf(stream, "# %.*s\n", (int)(nl - line), line);
        }
        fprintf(stream, "#\n# syntax:  %s\n# default: %s\n#\n%s=%s\n\n",
                e->syntax, e->default_value, e->name,
                fiatomic_config_get((fiatomic_config_id_t)id));
    }
}
