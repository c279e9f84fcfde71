#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"

enum log_level log_threshold = LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error", "none"};

int
log_set_level(const char *name)
{
    for (int i = LOG_DEBUG; i <= LOG_NONE; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            log_threshold = (enum log_level)i;
            return 0;
        }
    }
    return ERR_INVAL;
}

static void vlog(enum log_level level, const char *module, const char *func, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));

static void
vlog(enum log_level level, const char *module, const char *func, const char *fmt, va_list ap)
{
    char line[2048];
    struct timespec ts;
    struct tm tm;

    (void)clock_gettime(CLOCK_REALTIME, &ts);
    (void)gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof(line),
                     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s %s: ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, level_names[level], module, func);
    if (n < 0) {
        return;
    }
    size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
    /* clang-analyzer 14 misreads a va_list parameter as uninitialised */
    int m = vsnprintf(line + len, sizeof(line) - len, fmt, ap); /* NOLINT */
    if (m > 0) {
        len += (size_t)m;
    }
    if (len > sizeof(line) - 2) {
        len = sizeof(line) - 2; /* truncated: keep room for the newline */
    }
    line[len++] = '\n';
    /* One write(2) per line keeps lines whole across threads and processes. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void
log_write(enum log_level level, const char *module, const char *func, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, module, func, fmt, ap);
    va_end(ap);
}

noreturn void
log_fatal(const char *module, const char *func, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(LOG_ERROR, module, func, fmt, ap);
    va_end(ap);
    exit(1);
}
