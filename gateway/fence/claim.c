/*
 * gateway/fence/claim.c: what a write claims (gw_fence_resolve,
 * gw_fence_resolve_keys): its lock from the config's rules or the request's
 * headers (passed in by the caller: struct gw_fence_headers), its token,
 * and the refusals of contradictions.  Pure: no store, no loop, no HTTP;
 * fence.c decides on the claim.
 */
#include "gateway/fence/fence.h"

#include <stdio.h>
#include <string.h>

#include "common/buf.h"
#include "common/lockname.h"
#include "common/num.h"
#include "gateway/base/config.h"
#include "gateway/s3/s3req.h"
#include "store/store.h"

/* A refusal of the claim: audited as kind, counted as a fence rejection. */
static int
refuse(struct gw_refusal *r, const struct gw_fence_claim *claim, int kind, int status,
       const char *code, const char *message)
{
    *r = (struct gw_refusal){
        .status = status,
        .code = code,
        .message = message,
        .audit = kind,
        .count = GW_REFUSAL_FENCE,
        .lock = claim->lock,
    };
    return ERR_AUTH;
}

/* One of two header spellings; both present and different is an error. */
static int
header_pair(const char *va, const char *vb, const char **out)
{
    if (va != NULL && vb != NULL && strcmp(va, vb) != 0) {
        return ERR_INVAL;
    }
    *out = va != NULL ? va : vb;
    return 0;
}

/* The claim of an object write whose keys fall under rule (NULL: no rule). */
static int
resolve_rule(const struct gw_fence_headers *h, const struct gw_config *cfg,
             const struct gw_fence_rule *rule, bool in_upload, struct gw_fence_claim *claim,
             struct gw_refusal *r)
{
    const char *hlock, *htoken;
    if (header_pair(h->lock, h->meta_lock, &hlock) != 0 ||
        header_pair(h->token, h->meta_token, &htoken) != 0) {
        return refuse(r, claim, STORE_AUDIT_INVALID_TOKEN, 400, "InvalidFencingToken",
                      "X-Fencing-* and x-amz-meta-fencing-* headers disagree.");
    }
    if (hlock != NULL && !lock_name_valid(hlock)) {
        return refuse(r, claim, STORE_AUDIT_INVALID_TOKEN, 400, "InvalidFencingToken",
                      "The fencing lock name must match [A-Za-z0-9._-]{1,128}.");
    }
    if (rule != NULL && hlock != NULL && strcmp(hlock, rule->lock) != 0) {
        str_copy(claim->lock, sizeof(claim->lock), rule->lock);
        return refuse(r, claim, STORE_AUDIT_LOCK_MISMATCH, 400, "FencingLockMismatch",
                      "The fencing lock header contradicts the gateway's rule for this key.");
    }
    const char *lock = rule != NULL ? rule->lock : hlock;
    if (lock != NULL) {
        str_copy(claim->lock, sizeof(claim->lock), lock);
    }
    if (htoken == NULL) {
        /* a write into an upload may be claimed with the upload's epoch (caller) */
        claim->by_upload = in_upload && lock != NULL;
        if ((rule != NULL && rule->require_token) || (rule == NULL && hlock != NULL)) {
            return refuse(r, claim, STORE_AUDIT_MISSING_TOKEN, 428, "MissingFencingToken",
                          "This write is fenced: send X-Fencing-Token with the lock's token.");
        }
        if (rule == NULL && !cfg->fencing.allow_unfenced_writes) {
            return refuse(r, claim, STORE_AUDIT_MISSING_TOKEN, 428, "MissingFencingToken",
                          "Writes without a fencing token are disabled on this gateway.");
        }
        if (!claim->by_upload) {
            claim->lock[0] = '\0';
        }
        return 0; /* a write no rule requires a token for, and that claims none */
    }
    if (parse_u64(htoken, 1, UINT64_MAX, &claim->token) != 0) {
        return refuse(r, claim, STORE_AUDIT_INVALID_TOKEN, 400, "InvalidFencingToken",
                      "The fencing token must be a decimal integer from 1 to 2^64-1.");
    }
    if (lock == NULL) {
        return refuse(r, claim, STORE_AUDIT_INVALID_TOKEN, 400, "InvalidFencingToken",
                      "A fencing token needs a lock: send X-Fencing-Lock.");
    }
    claim->fenced = true;
    return 0;
}

int
gw_fence_resolve(const struct gw_fence_headers *h, const struct gw_config *cfg,
                 const struct gw_s3req *s3, struct gw_fence_claim *claim, struct gw_refusal *r)
{
    memset(claim, 0, sizeof(*claim));
    claim->gen = cfg->generation; /* the reload hold (gw_fence_reload_hold) */
    if (s3->bucket_write && !cfg->fencing.allow_bucket_writes) {
        return refuse(r, claim, STORE_AUDIT_REFUSED, 403, "AccessDenied",
                      "Bucket-level writes are disabled on this gateway "
                      "(fencing.allow_bucket_writes).");
    }
    if (!s3->object_write) {
        return 0; /* reads are never fenced */
    }
    claim->complete = s3->op == GW_S3_OP_COMPLETE_MULTIPART;
    bool in_upload = s3->op == GW_S3_OP_UPLOAD_PART || s3->op == GW_S3_OP_UPLOAD_PART_COPY ||
                     s3->op == GW_S3_OP_COMPLETE_MULTIPART || s3->op == GW_S3_OP_ABORT_MULTIPART;
    int rc =
        resolve_rule(h, cfg, gw_config_fence_rule(cfg, s3->bucket, s3->key), in_upload, claim, r);
    claim->complete = claim->complete && claim->fenced;
    return rc;
}

int
gw_fence_resolve_keys(const struct gw_fence_headers *h, const struct gw_config *cfg,
                      const struct gw_s3req *s3, const char *const *keys, size_t nkeys,
                      struct gw_fence_claim *claim, struct gw_refusal *refusal)
{
    memset(claim, 0, sizeof(*claim));
    claim->gen = cfg->generation; /* the reload hold (gw_fence_reload_hold) */
    const struct gw_fence_rule *rule = NULL;
    for (size_t i = 0; i < nkeys; i++) {
        const struct gw_fence_rule *r = gw_config_fence_rule(cfg, s3->bucket, keys[i]);
        bool same = i == 0 || (r == NULL && rule == NULL) ||
                    (r != NULL && rule != NULL && strcmp(r->lock, rule->lock) == 0);
        if (!same) {
            const struct gw_fence_rule *named = rule != NULL ? rule : r;
            (void)snprintf(claim->lock, sizeof(claim->lock), "%s",
                           named != NULL ? named->lock : "");
            return refuse(refusal, claim, STORE_AUDIT_LOCK_MISMATCH, 400, "FencingLockMismatch",
                          "The keys of this DeleteObjects fall under different fencing locks; "
                          "send one request per lock.");
        }
        /* one lock, possibly several rules: the strictest decides */
        if (i == 0 || (r != NULL && r->require_token && !rule->require_token)) {
            rule = r;
        }
    }
    return resolve_rule(h, cfg, rule, false, claim, refusal);
}
