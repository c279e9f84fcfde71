#include "common/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void
buf_init(struct buf *b, size_t cap)
{
    b->data = NULL;
    b->len = 0;
    b->alloc = 0;
    b->cap = cap;
    b->local = NULL;
    b->local_size = 0;
}

void
buf_init_local(struct buf *b, size_t cap, char *storage, size_t size)
{
    buf_init(b, cap);
    if (size - 1 > cap) {
        size = cap + 1; /* alloc never exceeds cap + 1 (buf_printf's fast path relies on it) */
    }
    b->local = storage;
    b->local_size = size;
    b->data = storage;
    b->alloc = size;
    storage[0] = '\0';
}

void
buf_cleanup(struct buf *b)
{
    if (b == NULL) {
        return;
    }
    if (b->data != b->local) {
        free(b->data);
    }
    b->data = b->local; /* NULL, or the local storage again */
    b->len = 0;
    b->alloc = b->local_size;
    if (b->data != NULL) {
        b->data[0] = '\0';
    }
}

void
buf_cleanse(struct buf *b)
{
    if (b == NULL) {
        return;
    }
    if (b->data != NULL) {
        /* explicit_bzero: a memset the compiler may not drop before free() */
        explicit_bzero(b->data, b->alloc);
    }
    buf_cleanup(b);
}

void
buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data != NULL) {
        b->data[0] = '\0';
    }
}

static int
reserve(struct buf *b, size_t extra)
{
    if (extra > b->cap || b->len > b->cap - extra) {
        return ERR_TOOBIG;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->alloc) {
        return 0;
    }
    /* 256 first: a request head, a canonical request or a query fits without
     * the 64-128-256 reallocs that dominated the request path's allocations */
    size_t n = b->alloc != 0 ? b->alloc : 256;
    while (n < need) {
        n = n > ((size_t)-1) / 2 ? need : n * 2;
    }
    if (n > b->cap + 1) {
        n = b->cap + 1;
    }
    char *p;
    if (b->data != NULL && b->data == b->local) {
        p = malloc(n); /* out of the local storage: its bytes move to the heap */
        if (p != NULL) {
            memcpy(p, b->data, b->len + 1);
        }
    } else {
        p = realloc(b->data, n);
    }
    if (p == NULL) {
        return ERR_NOMEM;
    }
    b->data = p;
    b->alloc = n;
    return 0;
}

int
buf_reserve(struct buf *b, size_t extra)
{
    int rc = reserve(b, extra);
    if (rc == 0 && b->len == 0) {
        b->data[0] = '\0';
    }
    return rc;
}

int
buf_append(struct buf *b, const void *p, size_t len)
{
    /* the common case, room already there, without a call to reserve */
    if (len >= b->alloc - b->len || len > b->cap - b->len) {
        int rc = reserve(b, len);
        if (rc != 0) {
            return rc;
        }
    }
    if (len > 0) {
        memcpy(b->data + b->len, p, len);
    }
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int
buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int
buf_append_strs(struct buf *b, ...)
{
    va_list ap;
    size_t total = 0;
    va_start(ap, b);
    for (const char *s = va_arg(ap, const char *); s != NULL; s = va_arg(ap, const char *)) {
        total += strlen(s);
    }
    va_end(ap);
    int rc = reserve(b, total);
    if (rc != 0) {
        return rc;
    }
    va_start(ap, b);
    for (const char *s = va_arg(ap, const char *); s != NULL; s = va_arg(ap, const char *)) {
        /* room for all of them was reserved above: one pass per string */
        b->len = (size_t)(stpcpy(b->data + b->len, s) - b->data);
    }
    va_end(ap);
    b->data[b->len] = '\0'; /* no strings at all */
    return 0;
}

int
str_concat(char *out, size_t outlen, ...)
{
    if (outlen == 0) {
        return ERR_TOOBIG;
    }
    va_list ap;
    size_t used = 0;
    int rc = 0;
    va_start(ap, outlen);
    for (const char *s = va_arg(ap, const char *); s != NULL; s = va_arg(ap, const char *)) {
        size_t n = strlen(s);
        if (n >= outlen - used) {
            rc = ERR_TOOBIG;
            used = 0;
            break;
        }
        memcpy(out + used, s, n);
        used += n;
    }
    va_end(ap);
    out[used] = '\0';
    return rc;
}

void
str_copy(char *out, size_t outlen, const char *s)
{
    if (outlen == 0) {
        return;
    }
    size_t n = s != NULL ? strnlen(s, outlen - 1) : 0;
    if (n > 0) {
        memcpy(out, s, n);
    }
    out[n] = '\0';
}

/* lower - c in ASCII lower case (strcasecmp's C-locale folding). */
static unsigned char
lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

bool
str_caseeq(const char *a, const char *b)
{
    return lower((unsigned char)a[0]) == lower((unsigned char)b[0]) && strcasecmp(a, b) == 0;
}

/*
 * Formats straight into the spare room first: one vsnprintf when the text fits
 * (the common case on the request path), a second one after growing when not.
 */
int
buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    size_t room = b->data != NULL ? b->alloc - b->len : 0; /* counts the NUL's byte */
    va_start(ap, fmt);
    int n = vsnprintf(room > 0 ? b->data + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < room) {
        b->len += (size_t)n; /* fits, so within cap: alloc never exceeds cap + 1 */
        return 0;
    }
    if (room > 0) {
        b->data[b->len] = '\0'; /* undo the truncated attempt */
    }
    if (n < 0) {
        return ERR_INVAL;
    }
    int rc = reserve(b, (size_t)n);
    if (rc != 0) {
        return rc;
    }
    va_start(ap, fmt);
    (void)vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

const char *
buf_cstr(const struct buf *b)
{
    return b->data != NULL ? b->data : "";
}
