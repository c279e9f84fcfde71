/*
 * common/buf.h: a growable byte buffer with a hard cap.
 *
 * struct buf is embedded by its owner (buf_init/buf_cleanup).  It always keeps
 * a NUL after the last byte, so text can be read with str functions, but it
 * holds binary data too.  Growth past `cap` fails with ERR_TOOBIG and leaves
 * the contents unchanged (curl's dynbuf idea): every buffer that takes bytes
 * from the wire has a limit.  Not thread-safe; one owner.
 */
#ifndef COMMON_BUF_H
#define COMMON_BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

struct buf {
    char *data;   /* owned (or the local storage); NULL until the first append;
                     NUL-terminated when non-NULL */
    size_t len;   /* bytes in use, not counting the NUL */
    size_t alloc; /* bytes allocated (or of the local storage) */
    size_t cap;   /* hard limit on len */
    char *local;  /* borrowed: buf_init_local's storage, or NULL */
    size_t local_size;
};

/* A string literal and its length, for tables of names compared length first. */
struct strlit {
    const char *s;
    size_t n;
};
#define STRLIT(lit)                                                                                \
    {                                                                                              \
        (lit), sizeof(lit) - 1                                                                     \
    }

/* buf_init - an empty buffer that will never hold more than cap bytes. */
void buf_init(struct buf *b, size_t cap);

/*
 * buf_init_local - an empty buffer that will never hold more than cap bytes,
 * and keeps them in storage[0..size) (borrowed: a caller's stack array, size
 * > 0) while they fit; past that they move to the heap as with buf_init.  For
 * short-lived buffers on the request path, which then allocate nothing.  b
 * must not be copied (its data may point at storage).
 */
void buf_init_local(struct buf *b, size_t cap, char *storage, size_t size);

/* buf_cleanup - free the storage; b is empty (and reusable) afterwards.  NULL-safe. */
void buf_cleanup(struct buf *b);

/* buf_cleanse - like buf_cleanup, but wipes the bytes first (for secrets). */
void buf_cleanse(struct buf *b);

/* buf_reset - keep the storage, drop the contents. */
void buf_reset(struct buf *b);

/*
 * buf_reserve - room for extra more bytes without a reallocation (allocated now,
 * so a long-lived buffer takes its place before the short-lived ones around it).
 * Returns 0, ERR_TOOBIG past the cap, or ERR_NOMEM.
 */
MUST_USE int buf_reserve(struct buf *b, size_t extra);

/*
 * buf_append - add len bytes from p (borrowed).
 * Returns 0, ERR_TOOBIG past the cap, or ERR_NOMEM; on failure b is unchanged.
 */
MUST_USE int buf_append(struct buf *b, const void *p, size_t len);

/* buf_append_str - add the NUL-terminated s.  Returns as buf_append. */
MUST_USE int buf_append_str(struct buf *b, const char *s);

/*
 * buf_append_strs - add the NUL-terminated strings that follow b, up to a NULL
 * (`(const char *)NULL`), in one step: buf_printf("%s%s...") without the
 * format interpreter, for the request path.  Returns as buf_append; on failure
 * b is unchanged.
 */
MUST_USE int buf_append_strs(struct buf *b, ...) __attribute__((sentinel));

/*
 * str_concat - the NUL-terminated strings that follow outlen, up to a NULL,
 * joined into out[0..outlen) and NUL-terminated: snprintf("%s%s...") for a
 * fixed array.  Returns 0, or ERR_TOOBIG if they do not fit (out is then ""
 * when outlen > 0; never truncated text).
 */
MUST_USE int str_concat(char *out, size_t outlen, ...) __attribute__((sentinel));

/*
 * str_copy - s into out[0..outlen), cut to fit and NUL-terminated (nothing
 * when outlen is 0; s NULL copies as ""): snprintf(out, outlen, "%s", s)
 * without the format interpreter, which costs several hundred instructions
 * a call.
 */
void str_copy(char *out, size_t outlen, const char *s);

/*
 * str_caseeq - a and b (NUL-terminated) are equal ignoring ASCII case:
 * strcasecmp(a, b) == 0 in the C locale, with the first bytes compared before
 * the call, where most header-name lookups already differ.
 */
bool str_caseeq(const char *a, const char *b);

/* buf_printf - add formatted text.  Returns as buf_append. */
MUST_USE int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* buf_cstr - the contents as a C string ("" for an empty buffer); valid until the next change. */
const char *buf_cstr(const struct buf *b);

#endif
