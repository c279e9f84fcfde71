#include "gateway/proxy/proxy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/queue.h>

#include "common/log.h"
#include "gateway/proxy/cond.h"
#include "gateway/proxy/proxy_int.h"

struct gw_proxy *
gw_proxy_new(const struct gw_config *cfg, struct gw_upstream *up, struct gw_s3client *s3c,
             char *errbuf, size_t errlen)
{
    struct gw_proxy *px = calloc(1, sizeof(*px));
    if (px == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    TAILQ_INIT(&px->detached);
    px->cfg = cfg;
    px->up = up;
    px->s3c = s3c;
    px->cond = gw_cond_new(cfg, s3c);
    if (px->cond == NULL) {
        (void)snprintf(errbuf, errlen, "out of memory");
        gw_proxy_free(px);
        return NULL;
    }
    if (s3c == NULL) {
        (void)snprintf(errbuf, errlen, "no upstream signer");
        gw_proxy_free(px);
        return NULL;
    }
    return px;
}

void
gw_proxy_set_config(struct gw_proxy *px, const struct gw_config *cfg)
{
    px->cfg = cfg; /* the signer is reloaded by its owner (gw_s3client_set_config) */
    gw_cond_set_config(px->cond, cfg);
}

void
gw_proxy_set_cond_caps(struct gw_proxy *px, const struct gw_cond_caps *caps)
{
    gw_cond_set_caps(px->cond, caps);
}

bool
gw_proxy_cond_active(const struct gw_proxy *px)
{
    return gw_cond_active(px->cond);
}

void
gw_proxy_set_uploads(struct gw_proxy *px, struct gw_upload *u)
{
    px->uploads = u;
}

void
gw_proxy_copy_settings(struct gw_proxy *px, const struct gw_proxy *from)
{
    px->trailers = from->trailers;
    px->uploads = from->uploads;
    gw_cond_copy_caps(px->cond, from->cond);
    gw_cond_share(px->cond, from->cond);
}

void
gw_proxy_set_trailers(struct gw_proxy *px, bool on)
{
    px->trailers = on;
}

bool
gw_proxy_trailers(const struct gw_proxy *px)
{
    return px->trailers;
}
void
gw_proxy_drain(struct gw_proxy *px, void (*done)(void *arg), void *arg)
{
    if (px == NULL || px->ndetached == 0) {
        done(arg);
        return;
    }
    log_info("draining: %zu fenced write(s) whose client left still await the upstream's "
             "outcome; the epoch barrier holds until they end",
             px->ndetached);
    px->drain_done = done;
    px->drain_arg = arg;
}

void
gw_proxy_free(struct gw_proxy *px)
{
    if (px == NULL) {
        return;
    }
    px->drain_done = NULL; /* ending anyway: a second stop signal, or the drain done */
    while (!TAILQ_EMPTY(&px->detached)) {
        /* shutting down: cancelled, tickets released */
        gw_proxy_preq_free(TAILQ_FIRST(&px->detached));
    }
    gw_cond_free(px->cond);
    free(px);
}
