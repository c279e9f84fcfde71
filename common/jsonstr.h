/*
 * common/jsonstr.h: JSON string literals from arbitrary bytes.
 *
 * jsonstr_append() writes s as one JSON string (quotes included) that every
 * JSON parser accepts, whatever the bytes: '"' and '\\' are escaped, control
 * bytes (0x00-0x1f) and DEL become \u00XX (newline too: one form for all), and each byte
 * that does not begin a valid UTF-8 sequence (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF) becomes U+FFFD, as WHATWG's decoder
 * does.  Valid UTF-8 passes through unchanged, so a valid string round-trips.
 * Pure; any thread.
 */
#ifndef COMMON_JSONSTR_H
#define COMMON_JSONSTR_H

#include <stddef.h>

#include "common/buf.h"

/*
 * jsonstr_append - append s[0..len) to b as a quoted JSON string.
 * [in] s  borrowed; may hold NUL bytes; NULL with len 0 is "".
 * Returns 0, or buf_append's ERR_NOMEM / ERR_TOOBIG (b then holds a prefix).
 */
MUST_USE int jsonstr_append(struct buf *b, const char *s, size_t len);

/* jsonstr_append_cstr - jsonstr_append of a C string; NULL appends null (the JSON literal). */
MUST_USE int jsonstr_append_cstr(struct buf *b, const char *s);

/*
 * jsonstr_utf8_len - the length of the valid UTF-8 sequence at s[0..len), or 0
 * when s[0] does not begin one.
 */
size_t jsonstr_utf8_len(const unsigned char *s, size_t len);

#endif
