/*
 * gateway/fence/verdict.c: the fence's refusals as S3 says them
 * (gw_fence_refusal, gw_fence_cut_refusal, gw_fence_upload_refusal; DESIGN
 * "The path of a request").  Pure: the refusal is carried out by gateway/proxy/refuse.h.
 */
#include "gateway/fence/fence.h"

#include "store/store.h"

/* A 409 with the fence's extras, audited as kind. */
static void
conflict(struct gw_refusal *r, const char *code, const char *message, int kind, const char *lock,
         uint64_t token, uint64_t current)
{
    *r = (struct gw_refusal){
        .status = 409,
        .code = code,
        .message = message,
        .audit = kind,
        .tokens = true,
        .lock = lock,
        .token = token,
        .current = current,
    };
}

/* A 503: nothing decided, nothing recorded. */
static void
unavailable(struct gw_refusal *r, const char *message)
{
    *r = (struct gw_refusal){.status = 503, .code = "ServiceUnavailable", .message = message};
}

void
gw_fence_refusal(int err, const struct gw_fence_claim *c, uint64_t current, struct gw_refusal *r)
{
    switch (err) {
    case ERR_FENCED:
        conflict(r, "StaleFencingToken",
                 "A newer fencing token has been accepted for this lock; this write comes from a "
                 "stale leader and was not forwarded.",
                 STORE_AUDIT_STALE, c->lock, c->token, current);
        break;
    case ERR_DENIED:
        conflict(r, "FencingTokenNotGranted",
                 "No epoch with this fencing token was granted for this lock.",
                 STORE_AUDIT_NOT_GRANTED, c->lock, c->token, current);
        break;
    case ERR_EXPIRED:
        conflict(r, "FencingLeaseExpired",
                 "The lease of this fencing token has ended (released or run out) and no write "
                 "window can be opened; this write was not forwarded.",
                 STORE_AUDIT_LEASE_EXPIRED, c->lock, c->token, current);
        break;
    case ERR_CONFLICT:
        /* a non-shared election found an epoch another gateway granted (the fence logs it) */
        unavailable(r, "This lock's epoch was granted by another gateway, but this gateway is "
                       "configured as the only one (election.shared is false); its writes are "
                       "refused until the configuration says the election is shared.");
        return;
    default:
        unavailable(r, "The fence could not be checked or advanced durably; nothing was "
                       "forwarded. Retry later.");
        return;
    }
    r->count = GW_REFUSAL_FENCE;
}

void
gw_fence_cut_refusal(int err, const char *lock, uint64_t token, uint64_t current,
                     struct gw_refusal *r)
{
    if (err == ERR_FENCED) {
        conflict(r, "StaleFencingToken",
                 "A newer fencing token was accepted for this lock while this write was in "
                 "flight; it was cut off before reaching the store.",
                 STORE_AUDIT_CUT, lock, token, current);
    } else if (err == ERR_EXPIRED) {
        conflict(r, "FencingLeaseExpired",
                 "The lease of this fencing token ended while this write was in flight; it was "
                 "cut off before reaching the store.",
                 STORE_AUDIT_LEASE_EXPIRED, lock, token, current);
    } else {
        unavailable(r, "The write window of this fencing token could not be checked; the write "
                       "was cut off before reaching the store. Retry later.");
    }
}

void
gw_fence_upload_refusal(const struct gw_fence_claim *c, uint64_t created, struct gw_refusal *r)
{
    if (created > c->token) {
        conflict(r, "StaleFencingToken",
                 "This multipart upload was created under a newer fencing token than the one "
                 "sent; the write was not forwarded.",
                 STORE_AUDIT_STALE, c->lock, c->token, created);
    } else {
        conflict(r, "StaleFencingToken",
                 "This multipart upload was created under an older fencing token; a newer leader "
                 "cannot add to or complete it (it is aborted in the background).",
                 STORE_AUDIT_STALE, c->lock, created, c->token);
    }
    r->count = GW_REFUSAL_FENCE;
}
