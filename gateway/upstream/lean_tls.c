/*
 * gateway/upstream/lean_tls.c: TLS for the lean engine: one OpenSSL client
 * context per client (peer and host-name verification, the CA file), and a
 * bufferevent_openssl per https connection with SNI.  The only file of
 * gateway/upstream/ that includes OpenSSL (make check-deps).
 */
#define LOG_MODULE "upstream"
#include "gateway/upstream/lean.h"

#include <arpa/inet.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <unistd.h>

#include "common/log.h"

void *
lean_tls_new_ctx(const char *ca_file, bool verify)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        log_error("SSL_CTX_new failed");
        return NULL;
    }
    (void)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    int ok = ca_file != NULL ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                             : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        char e[256];
        ERR_error_string_n(ERR_get_error(), e, sizeof(e));
        log_error("TLS: cannot load CAs from %s: %s", ca_file != NULL ? ca_file : "the system", e);
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    return ctx;
}

void
lean_tls_free_ctx(void *ctx)
{
    SSL_CTX_free(ctx);
}

struct bufferevent *
lean_tls_bev(void *vctx, struct event_base *base, const char *host, bool verify)
{
    SSL *ssl = SSL_new(vctx);
    if (ssl == NULL) {
        log_error("SSL_new failed");
        return NULL;
    }
    unsigned char ip[16];
    bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    int ok = 1;
    if (!literal) {
        ok = SSL_set_tlsext_host_name(ssl, host); /* SNI is for names only (RFC 6066) */
    }
    if (ok == 1 && verify) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(vp, host) : SSL_set1_host(ssl, host);
    }
    if (ok != 1) {
        log_error("TLS: cannot set up the host name %s", host);
        SSL_free(ssl);
        return NULL;
    }
    /* no BEV_OPT_CLOSE_ON_FREE: lean_bev_close frees the SSL and closes the socket */
    struct bufferevent *bev =
        bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, 0);
    if (bev == NULL) {
        log_error("bufferevent_openssl_socket_new failed");
        SSL_free(ssl);
        return NULL;
    }
    /* peers that close without close_notify (common for S3 endpoints): a plain EOF.  A
     * close-delimited body could then be cut short unseen; Content-Length and chunked
     * bodies are checked by llhttp regardless. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

void
lean_bev_close(struct bufferevent *bev, bool tls)
{
    evutil_socket_t fd = bufferevent_getfd(bev);
    SSL *ssl = tls ? bufferevent_openssl_get_ssl(bev) : NULL;
    bufferevent_free(bev); /* its events leave the loop now, its memory in a later turn */
    SSL_free(ssl);         /* libevent's finalizer touches it only with BEV_OPT_CLOSE_ON_FREE */
    if (fd >= 0) {
        (void)close(fd); /* now, where the finalizer would close it a turn later */
    }
}

const char *
lean_tls_error(struct bufferevent *bev, char *tmp, size_t len)
{
    unsigned long e = bufferevent_get_openssl_error(bev);
    if (e == 0) {
        return NULL;
    }
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    long vr = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
    char es[200];
    ERR_error_string_n(e, es, sizeof(es));
    if (vr != X509_V_OK) {
        (void)snprintf(tmp, len, "TLS: %s (%s)", es, X509_verify_cert_error_string(vr));
    } else {
        (void)snprintf(tmp, len, "TLS: %s", es);
    }
    while (bufferevent_get_openssl_error(bev) != 0) {
        /* drain the rest of the queue */
    }
    return tmp;
}
