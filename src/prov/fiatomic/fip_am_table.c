/**
 * The domain worker's table of active message handlers, filled for every
 * id a message can name (UCP's 16 bits). UCX 1.13.1 reads the table entry
 * of a received message's id before it checks the id against the table's
 * length, and when the table grows it initialises one entry (the id asked
 * for) instead of every entry it adds: one empty message of any peer with
 * an id beyond the table (65535, 32768) or on an entry left uninitialised
 * made the process read wild memory and die. Here every entry is set, with
 * no callback (UCP drops such a message, and logs it), before libfiatomic
 * and the provider set theirs: 65536 entries of 24 bytes, 1.5 MiB a
 * domain. UCX 1.22 checks the id first and initialises what it adds; the
 * versions between were not read, and are filled too.
 */
#include "fip.h"

#define FIP_AM_TABLE_IDS 65536u

static int fip_am_table_needed(void)
{
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    return UCP_VERSION(major, minor) < UCP_VERSION(1, 22);
}

int fip_am_table_fill(ucp_worker_h worker)
{
    ucp_am_handler_param_t param = {0};
    unsigned id;

    if (!fip_am_table_needed()) {
        return 0;
    }
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_CB;
    param.cb         = NULL;
    /* the highest first: the table grows once, to its full size */
    for (id = FIP_AM_TABLE_IDS; id-- > 0;) {
        param.id = id;
        if (ucp_worker_set_am_recv_handler(worker, &param) != UCS_OK) {
            return -FI_ENOMEM;
        }
    }
    return 0;
}
