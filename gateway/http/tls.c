/*
 * gateway/http/tls.c: server TLS contexts and TLS bufferevents for gateway/http/server.c.
 * OpenSSL errors are converted here (STYLE R4) and never leave this file.
 */
#include "gateway/http/tls.h"

#define LOG_MODULE "tls"

#include <stdio.h>
#include <stdlib.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/log.h"

struct gw_tls {
    SSL_CTX *ctx; /* owned */
};

static void
ssl_error(char *errbuf, size_t errlen, const char *what, const char *file)
{
    char reason[256];
    unsigned long e = ERR_get_error();
    ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    (void)snprintf(errbuf, errlen, "%s %s: %s", what, file, reason);
}

int
gw_tls_new(const char *cert, const char *key, struct gw_tls **out, char *errbuf, size_t errlen)
{
    int rc = ERR_IO;
    struct gw_tls *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return ERR_NOMEM;
    }
    t->ctx = SSL_CTX_new(TLS_server_method());
    if (t->ctx == NULL) {
        ssl_error(errbuf, errlen, "TLS context", "");
        rc = ERR_NOMEM;
        goto fail;
    }
    if (SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION) != 1) {
        ssl_error(errbuf, errlen, "TLS context", "");
        goto fail;
    }
    (void)SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(t->ctx, cert) != 1) {
        ssl_error(errbuf, errlen, "tls_cert", cert);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1) {
        ssl_error(errbuf, errlen, "tls_key", key);
        goto fail;
    }
    if (SSL_CTX_check_private_key(t->ctx) != 1) {
        ssl_error(errbuf, errlen, "tls_key does not match", cert);
        goto fail;
    }
    *out = t;
    return 0;
fail:
    gw_tls_free(t);
    return rc;
}

void
gw_tls_free(struct gw_tls *t)
{
    if (t == NULL) {
        return;
    }
    SSL_CTX_free(t->ctx);
    free(t);
}

struct bufferevent *
gw_tls_bev_new(struct gw_tls *t, struct event_base *base, int fd)
{
    SSL *ssl = SSL_new(t->ctx);
    if (ssl == NULL) {
        ERR_clear_error();
        return NULL;
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* a client that closes without close_notify is an EOF, not an error */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}
