/*
 * gateway/http/tls.h: TLS for the HTTP server's listeners (OpenSSL, behind
 * libevent's bufferevent_openssl).  The only place besides gateway/s3/sigv4.c
 * that includes OpenSSL headers (STYLE R1).  Event-loop thread only.
 */
#ifndef GW_TLS_H
#define GW_TLS_H

#include <stddef.h>

#include "common/err.h"

struct bufferevent;
struct event_base;
struct gw_tls;

/*
 * gw_tls_new - a server TLS context (TLS 1.2+) from PEM files.
 * [in] cert     certificate chain file (borrowed)
 * [in] key      private key file (borrowed)
 * [out] out     on success, a new context owned by the caller (gw_tls_free)
 * [out] errbuf  on failure, which file and OpenSSL's reason
 * Returns 0, ERR_IO (a file cannot be loaded or the key does not match), ERR_NOMEM.
 */
MUST_USE int gw_tls_new(const char *cert, const char *key, struct gw_tls **out, char *errbuf,
                        size_t errlen);

/* gw_tls_free - free the context (connections keep their own references).  NULL-safe. */
void gw_tls_free(struct gw_tls *t);

/*
 * gw_tls_bev_new - a server-side TLS bufferevent on the accepted socket fd.
 * The bufferevent owns fd and its SSL (both freed with it).  Returns NULL on
 * failure (fd is then still the caller's).
 */
struct bufferevent *gw_tls_bev_new(struct gw_tls *t, struct event_base *base, int fd);

#endif
