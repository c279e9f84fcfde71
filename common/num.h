/*
 * common/num.h: numbers from untrusted text, through one door (STYLE R10).
 */
#ifndef COMMON_NUM_H
#define COMMON_NUM_H

#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/*
 * parse_u64 - parse the whole of s (decimal digits only: no sign, no spaces,
 * no leading "+", at most 20 digits) into *out, which must lie in [min, max].
 * Returns 0, or ERR_INVAL (empty, non-digit, overflow, out of range); *out is
 * untouched on failure.
 */
MUST_USE int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* parse_u64n - as parse_u64, for the first len bytes of s (need not be NUL-terminated). */
MUST_USE int parse_u64n(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *out);

/*
 * parse_hex_u64n - parse len hex digits (either case, no "0x") into *out,
 * at most 16 digits.  Returns 0 or ERR_INVAL.
 */
MUST_USE int parse_hex_u64n(const char *s, size_t len, uint64_t *out);

/*
 * fmt_u64 - v in decimal into out (no NUL; at most 20 characters), or
 * fmt_hex_u64 - in lowercase hex without leading zeros (at most 16); "0" for 0.
 * The hot path's snprintf("%llu") / ("%zx").  Return the characters written.
 */
size_t fmt_u64(uint64_t v, char out[20]);
size_t fmt_hex_u64(uint64_t v, char out[16]);

/*
 * fmt_u64_zpad - v in decimal, zero-padded to exactly width characters, into
 * out[0..width) (no NUL): snprintf("%0*llu")'s text for v < 10^width (the
 * caller's bound; the higher digits of a larger v are dropped).  The signing
 * path's dates ("%04d%02u...").
 */
void fmt_u64_zpad(uint64_t v, size_t width, char *out);

#endif
