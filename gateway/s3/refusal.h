/*
 * gateway/s3/refusal.h: a refusal, as the code that decides it describes it.
 *
 * The deciders (the classifier's G9 refusals, authentication, the body
 * checks, the fence's claim and verdicts) fill a struct gw_refusal; one
 * function carries every refusal out (gateway/proxy/refuse.h gw_refuse):
 * the counter, the log line, the audit record (G7) and the S3 error document
 * (gateway/s3/s3err.h), or 503 SlowDown when the record cannot be queued.
 * A value type: no functions, nothing to free; its strings are borrowed.
 */
#ifndef GW_REFUSAL_H
#define GW_REFUSAL_H

#include <stdbool.h>
#include <stdint.h>

/* Which counter a refusal bumps (gateway/base/metrics.h). */
enum gw_refusal_count {
    GW_REFUSAL_UNCOUNTED = 0, /* none (errors, auth failures; cuts the fence counted itself) */
    GW_REFUSAL_FENCE,         /* fence_rejections: a write refused by the fence */
    GW_REFUSAL_CLASSIFY,      /* classify_refusals: refused before the fence (G9, bounds) */
};

/* Why and how a request is refused, as S3 says it.  Zero-initialise, then set. */
struct gw_refusal {
    int status;                  /* HTTP status: 400..599 */
    const char *code;            /* S3 <Code> (borrowed; static in practice) */
    const char *message;         /* human text (borrowed; static in practice) */
    int audit;                   /* enum store_audit_kind to record (G7); 0: not audited */
    enum gw_refusal_count count; /* the counter to bump */
    bool tokens;                 /* the document adds <Lock>, <Token>, <CurrentToken> */
    const char *lock;            /* the lock in question (audit, <Lock>; borrowed), NULL: "" */
    uint64_t token;              /* the token presented (audit, <Token>) */
    uint64_t current;            /* the lock's current token (audit, <CurrentToken>) */
};

#endif
