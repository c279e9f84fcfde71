/*
 * common/token.h: HTTP's token characters (RFC 9110 section 5.6.2), one
 * table for every header name the gateway checks or builds, on the request
 * path of every request.
 */
#ifndef COMMON_TOKEN_H
#define COMMON_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <strings.h>

/* 1 for tchar: ALPHA, DIGIT and !#$%&'*+-.^_`|~ ; 0 for every other byte. */
extern const unsigned char http_tchar[256];

static inline bool
http_is_tchar(unsigned char c)
{
    return http_tchar[c] != 0;
}

/* http_is_token - the first len bytes of s are a token (at least one tchar). */
bool http_is_token(const char *s, size_t len);

/*
 * http_value_clean - the len bytes at s hold no control character but HTAB
 * (no CR or LF to split a message, no NUL, no DEL): a field value safe to
 * send.  Eight bytes a step.
 */
bool http_value_clean(const char *s, size_t len);

/*
 * http_name_is - the header name name, nlen bytes long, is lit (lowercase,
 * litlen bytes), ignoring case: the lengths first, so a header list is
 * checked against a table of names at an integer compare for most of them.
 */
static inline bool
http_name_is(const char *name, size_t nlen, const char *lit, size_t litlen)
{
    return nlen == litlen && strncasecmp(name, lit, nlen) == 0;
}

/* http_name_is against a string literal */
#define HTTP_NAME_IS(name, nlen, lit) http_name_is((name), (nlen), (lit), sizeof(lit) - 1)

#endif
