/**
 * UCX's ERROR and WARN lines counted in this process (test_ucx_log.h).
 */
#include "test_ucx_log.h"

#include <ucs/debug/log_def.h>

#include <atomic>

namespace test_common {

/* UCX may log from its progress and async threads */
static std::atomic<unsigned> ucx_bad_lines(0);

static ucs_log_func_rc_t
count_bad_lines(const char *file, unsigned line, const char *function,
                ucs_log_level_t level,
                const ucs_log_component_config_t *comp_conf,
                const char *message, va_list ap)
{
    if (level <= UCS_LOG_LEVEL_WARN) {
        ++ucx_bad_lines;
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

void ucx_log_count_reset()
{
    static bool pushed = false;

    if (!pushed) {
        ucs_log_push_handler(count_bad_lines);
        pushed = true;
    }
    ucx_bad_lines = 0;
}

unsigned ucx_log_count()
{
    return ucx_bad_lines;
}

} // namespace test_common
