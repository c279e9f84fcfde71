/*
 * gateway/s3/sigv4_int.h: what sigv4.c takes from sigv4_key.c beyond
 * sigv4.h; nothing else includes it.
 */
#ifndef GATEWAY_S3_SIGV4_INT_H
#define GATEWAY_S3_SIGV4_INT_H

#include <stddef.h>

#include "gateway/s3/sigv4.h"

/*
 * gw_sigv4_key_hmac_hex - HMAC-SHA256 of msg under the signing key of (secret,
 * date, region, service), as lowercase hex: the key's prepared states from kc
 * (its scope checked when it was cached), or derived now when kc is NULL
 * (sigv4_key.c).  Returns 0, ERR_INVAL or ERR_NOMEM.
 */
int gw_sigv4_key_hmac_hex(struct gw_sigv4_keycache *kc, const char *secret, const char *date,
                          const char *region, const char *service, const void *msg, size_t len,
                          char hex[GW_SIGV4_HEX_LEN + 1]);

#endif
