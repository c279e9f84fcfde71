#include "common/log.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/err.h"
#include "common/jsonstr.h"

_Atomic enum log_level log_threshold = LOG_INFO;

/* log_set_format("json"); atomic, as log_threshold: a reload sets it while worker loops log */
static atomic_bool log_json;

static const char *const level_names[] = {"debug", "info", "warn", "error", "none"};

int
log_set_level(const char *name)
{
    for (int i = LOG_DEBUG; i <= LOG_NONE; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            atomic_store_explicit(&log_threshold, (enum log_level)i, memory_order_relaxed);
            return 0;
        }
    }
    return ERR_INVAL;
}

int
log_set_format(const char *name)
{
    if (strcmp(name, "text") == 0 || strcmp(name, "json") == 0) {
        atomic_store_explicit(&log_json, name[0] == 'j', memory_order_relaxed);
        return 0;
    }
    return ERR_INVAL;
}

/* The length of a leading "req <16 hex>: " in msg, else 0. */
static size_t
reqid_prefix(const char *msg, size_t len)
{
    enum { ID = 16, PRE = 4 + ID + 2 };
    if (len < PRE || memcmp(msg, "req ", 4) != 0 || msg[4 + ID] != ':' || msg[5 + ID] != ' ') {
        return 0;
    }
    return strspn(msg + 4, "0123456789abcdef") >= ID ? PRE : 0;
}

/* One JSON line of a formatted message (msg, len bytes) into out. */
static size_t
json_line(char *out, size_t cap, const char *stamp, enum log_level level, const char *module,
          const char *func, const char *msg, size_t len)
{
    struct buf b;
    buf_init(&b, cap - 1);
    size_t pre = reqid_prefix(msg, len);
    int rc =
        buf_printf(&b, "{\"time\":\"%s\",\"level\":\"%s\",\"module\":", stamp, level_names[level]);
    rc = rc != 0 ? rc : jsonstr_append_cstr(&b, module);
    rc = rc != 0 ? rc : buf_append_str(&b, ",\"func\":");
    rc = rc != 0 ? rc : jsonstr_append_cstr(&b, func);
    if (pre > 0) {
        rc = rc != 0 ? rc : buf_append_str(&b, ",\"request_id\":");
        rc = rc != 0 ? rc : jsonstr_append(&b, msg + 4, pre - 6);
    }
    rc = rc != 0 ? rc : buf_append_str(&b, ",\"msg\":");
    rc = rc != 0 ? rc : jsonstr_append(&b, msg + pre, len - pre);
    rc = rc != 0 ? rc : buf_append_str(&b, "}\n");
    size_t n = 0;
    if (rc == 0) {
        n = b.len;
        memcpy(out, b.data, n);
    } else {
        /* out of memory, or a message too long once escaped: still one valid line */
        int m = snprintf(out, cap, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"(unloggable)\"}\n",
                         stamp, level_names[level]);
        n = m > 0 && (size_t)m < cap ? (size_t)m : 0;
    }
    buf_cleanup(&b);
    return n;
}

static void vlog(enum log_level level, const char *module, const char *func, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));

static void
vlog(enum log_level level, const char *module, const char *func, const char *fmt, va_list ap)
{
    char msg[2048];
    char stamp[64];
    struct timespec ts;
    struct tm tm;

    (void)clock_gettime(CLOCK_REALTIME, &ts);
    (void)gmtime_r(&ts.tv_sec, &tm);
    (void)snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                   ts.tv_nsec / 1000000);
    /* clang-analyzer 14 misreads a va_list parameter as uninitialised */
    int m = vsnprintf(msg, sizeof(msg), fmt, ap); /* NOLINT */
    size_t mlen = m < 0 ? 0 : ((size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1);
    char line[8192];
    size_t len;
    if (atomic_load_explicit(&log_json, memory_order_relaxed)) {
        len = json_line(line, sizeof(line), stamp, level, module, func, msg, mlen);
    } else {
        int n = snprintf(line, sizeof(line), "%s %s %s %s: %.*s", stamp, level_names[level], module,
                         func, (int)mlen, msg);
        len = n < 0 ? 0 : ((size_t)n < sizeof(line) - 1 ? (size_t)n : sizeof(line) - 2);
        line[len++] = '\n';
    }
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
