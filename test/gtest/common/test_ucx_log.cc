/**
 * UCX's ERROR and WARN lines counted in this process (test_ucx_log.h).
 */
#include "test_ucx_log.h"

#include <ucs/debug/log_def.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace test_common {

/* UCX may log from its progress and async threads */
static std::atomic<unsigned> ucx_bad_lines(0);
static std::mutex allowed_lock;
static std::vector<std::string> allowed;

static bool is_allowed(const char *message, va_list ap)
{
    std::lock_guard<std::mutex> guard(allowed_lock);
    char text[512];
    va_list copy;

    if (allowed.empty()) {
        return false;
    }
    va_copy(copy, ap);
    vsnprintf(text, sizeof(text), message, copy);
    va_end(copy);
    for (const std::string &a : allowed) {
        if (strstr(text, a.c_str()) != NULL) {
            return true;
        }
    }
    return false;
}

static ucs_log_func_rc_t
count_bad_lines(const char *file, unsigned line, const char *function,
                ucs_log_level_t level,
                const ucs_log_component_config_t *comp_conf,
                const char *message, va_list ap)
{
    if ((level <= UCS_LOG_LEVEL_WARN) && !is_allowed(message, ap)) {
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
    std::lock_guard<std::mutex> guard(allowed_lock);
    allowed.clear();
}

void ucx_log_allow(const char *text)
{
    std::lock_guard<std::mutex> guard(allowed_lock);
    allowed.push_back(text);
}

unsigned ucx_log_count()
{
    return ucx_bad_lines;
}

} // namespace test_common
