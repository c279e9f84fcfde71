/*
 * common/log.h: leveled logging to stderr.
 *
 * log_debug/info/warn/error(fmt, ...) test the level before evaluating their
 * arguments.  Each line carries an ISO-8601 UTC time, the level, the module
 * (LOG_MODULE, defined by each .c before including this header, else "-") and
 * the calling function.  fatal() logs and exits(1).
 * Never pass secrets, Authorization values or signing keys (STYLE R8).
 * Thread-safe: each line is written with one write(2).
 *
 * Two formats (log_set_format): "text", the default,
 *   2026-11-27T18:39:23.123Z info refuse carry_out: req 0123456789abcdef: ...
 * and "json", one object per line, the message escaped by common/jsonstr.h:
 *   {"time":"...","level":"info","module":"refuse","func":"carry_out",
 *    "request_id":"0123456789abcdef","msg":"..."}
 * where request_id is taken from the house prefix "req <id>: " of gateway
 * lines (STYLE R8), which is then left out of msg; lines without one have
 * no request_id key.
 */
#ifndef COMMON_LOG_H
#define COMMON_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdnoreturn.h>

enum log_level {
    LOG_DEBUG = 0,
    LOG_INFO = 1,
    LOG_WARN = 2,
    LOG_ERROR = 3,
    LOG_NONE = 4,
};

#ifndef LOG_MODULE
#define LOG_MODULE "-"
#endif

/*
 * The current threshold; lines below it are dropped unevaluated.  Atomic: a
 * reload (SIGHUP, on the control loop) sets it while worker loops log.
 */
extern _Atomic enum log_level log_threshold;

/*
 * log_set_level - set the threshold by name ("debug", "info", "warn", "error", "none").
 * Returns 0, or ERR_INVAL for an unknown name (threshold unchanged).
 */
int log_set_level(const char *name);

/*
 * log_set_format - "text" or "json".  Returns 0, or ERR_INVAL for another name
 * (format unchanged).  A line being written keeps the format it started with.
 */
int log_set_format(const char *name);

/* log_write - backend of the macros; use the macros. */
void log_write(enum log_level level, const char *module, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* log_fatal - log at error level, then exit(1). */
noreturn void log_fatal(const char *module, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LOG_AT(lvl, ...)                                                                           \
    do {                                                                                           \
        if ((lvl) >= atomic_load_explicit(&log_threshold, memory_order_relaxed)) {                 \
            log_write((lvl), LOG_MODULE, __func__, __VA_ARGS__);                                   \
        }                                                                                          \
    } while (0)

#define log_debug(...) LOG_AT(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  LOG_AT(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  LOG_AT(LOG_WARN, __VA_ARGS__)
#define log_error(...) LOG_AT(LOG_ERROR, __VA_ARGS__)
#define fatal(...)     log_fatal(LOG_MODULE, __func__, __VA_ARGS__)

#endif
