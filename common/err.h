/*
 * common/err.h: the project's one error space.
 *
 * Every fallible function returns int: 0 is success, a negative ERR_* is a
 * failure.  Library error types (errno, MDB_*, CURLcode, OpenSSL errors,
 * json_error_t) are converted to these codes inside the module that owns the
 * library and never leave it (STYLE R4).  Mapping to an HTTP status happens in
 * exactly one place: gw_s3err_status_from_err() in gateway/s3/s3err.c.
 */
#ifndef COMMON_ERR_H
#define COMMON_ERR_H

#define MUST_USE __attribute__((warn_unused_result))

enum err_code {
    ERR_OK = 0,
    ERR_NOMEM = -1,        /* allocation failed */
    ERR_INVAL = -2,        /* malformed input or bad argument */
    ERR_NOTFOUND = -3,     /* the thing asked for does not exist (an outcome, not a fault) */
    ERR_TOOBIG = -4,       /* a size limit was passed */
    ERR_IO = -5,           /* an I/O or system call failed */
    ERR_UPSTREAM = -6,     /* the upstream could not be reached or answered badly */
    ERR_TIMEOUT = -7,      /* a deadline passed */
    ERR_FENCED = -8,       /* a stale fencing token */
    ERR_EXISTS = -9,       /* the thing to create exists already (precondition failed) */
    ERR_CONFLICT = -10,    /* a concurrent change won; re-read and retry or give up */
    ERR_AUTH = -11,        /* authentication failed */
    ERR_DENIED = -12,      /* authenticated but not allowed */
    ERR_VERSION = -13,     /* stored data has a format this build does not understand */
    ERR_CLOSED = -14,      /* the peer went away or the object was shut down */
    ERR_AGAIN = -15,       /* not now: would block or paused */
    ERR_UNSUPPORTED = -16, /* a valid request this build does not implement */
    ERR_EXPIRED = -17,     /* a lease ended (released or run out) and no window can be opened */
};

/*
 * err_str - a short, static, human-readable name for an ERR_* code.
 * [in] err  a value of enum err_code (0 or negative); any other value gives
 *           "unknown error".
 * Returns a string with static storage; never NULL.
 */
const char *err_str(int err);

#endif
