/*
 * common/codec.h: hex and percent codecs, one home for each (STYLE: one door
 * for untrusted text).  Pure functions, any thread.
 */
#ifndef COMMON_CODEC_H
#define COMMON_CODEC_H

#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* Each byte's value as a hex digit plus one, 0 for a byte that is none. */
extern const signed char codec_hex_value[256];

/* hex_digit - the value of one hex digit (either case), or -1: one load,
 * where SigV4's signatures and percent-escapes read a digit at a time. */
static inline int
hex_digit(int c)
{
    return c >= 0 && c < 256 ? codec_hex_value[c] - 1 : -1;
}

/* hex_encode - n bytes at p as lowercase hex into out[2n + 1] (NUL-terminated). */
void hex_encode(const unsigned char *p, size_t n, char *out);

/*
 * hex_decode - exactly 2*n hex digits (either case) at hex into n bytes at out.
 * hexlen is the number of digits given.  Returns 0, or ERR_INVAL when hexlen
 * is not 2*n or a digit is not hex.
 */
MUST_USE int hex_decode(const char *hex, size_t hexlen, unsigned char *out, size_t n);

/*
 * pct_decode - strict percent-decoding of s[0..n) into out (cap bytes plus a
 * NUL; out may be NULL to only check and measure).  plus_space: '+' decodes to
 * ' ' (query strings, and S3's EncodingType=url keys); elsewhere it is a '+'.
 * [out] outlen  the decoded length.
 * Returns 0; ERR_INVAL for a '%' not followed by two hex digits, or %00 (a
 * NUL in a key or parameter); ERR_TOOBIG when more than cap bytes decode.
 */
MUST_USE int pct_decode(const char *s, size_t n, bool plus_space, char *out, size_t cap,
                        size_t *outlen);

#endif
