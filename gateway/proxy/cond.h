/*
 * gateway/proxy/cond.h: conditional writes (DESIGN "Conditional writes").
 *
 * With fencing.conditional_writes on (or "auto" and the start-up probe,
 * gateway/s3client/cond_probe.h, found the store honours them), a fenced
 * write that replaces a key's current version goes to the store with a
 * condition on the version this gateway knows: If-Match: <ETag> (quoted or
 * bare, as the store takes it) or If-None-Match: * when the key is known to
 * be absent.  So a write that arrives at the store late, after a newer
 * epoch's write of the key, fails there (412) instead of landing.
 *
 * This module decides whether a write gets a condition and which one: the
 * ETag map (gateway/proxy/etag_map.h), filled from this gateway's fenced
 * writes' answers, and on a miss a HEAD of the key through the internal S3
 * client (counted: fencegate_cond_heads).  The proxy adds the header
 * (proxy_fwd.c), sends the write, and maps a 412 to its own condition
 * (proxy_xfer.c).
 *
 * Event-loop thread only.  Owned by the proxy.
 */
#ifndef GW_COND_H
#define GW_COND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "gateway/s3client/cond_probe.h"

struct gw_config;
struct gw_cond;
struct gw_cond_head;
struct gw_s3client;
struct gw_s3req;

/* Longest condition value: a quoted ETag. */
#define GW_COND_VALUE_MAX 132

/* What a fenced write gets. */
enum gw_cond_use {
    GW_COND_USE_NONE = 0, /* nothing: off, or not an overwrite of one key */
    GW_COND_USE_TRACK,    /* no condition (the store ignores it on this operation, or the
                             client set its own), but its answer updates the map */
    GW_COND_USE_ADD,      /* a condition of ours */
    GW_COND_USE_UNKNOWN,  /* "on", and the probe has not answered yet: 503 SlowDown */
};

/* The condition header to add. */
struct gw_cond_hdr {
    const char *name;                  /* "If-Match" or "If-None-Match" (static) */
    char value[GW_COND_VALUE_MAX + 1]; /* the ETag as the store takes it, or "*" */
};

/*
 * gw_cond_new - the conditional-write state for cfg (borrowed until
 * gw_cond_set_config or free), making its HEADs through s3c (borrowed).
 * Returns it, or NULL (out of memory).
 */
struct gw_cond *gw_cond_new(const struct gw_config *cfg, struct gw_s3client *s3c);

/* gw_cond_free - cancel the HEADs in flight (no callback runs) and free.  NULL-safe. */
void gw_cond_free(struct gw_cond *c);

/* gw_cond_set_config - cfg (borrowed) from now on (the map's bound follows). */
void gw_cond_set_config(struct gw_cond *c, const struct gw_config *cfg);

/* gw_cond_set_caps - what the store honours (the probe's answer; copied). */
void gw_cond_set_caps(struct gw_cond *c, const struct gw_cond_caps *caps);

/*
 * gw_cond_share - c uses what from has learned, and learns into it (the ETag
 * map and the buckets that ignore conditions: one for the process, under a
 * mutex), dropping its own.  A worker loop's proxy made from the control
 * loop's, on the control loop's thread; from must be freed after c.
 */
void gw_cond_share(struct gw_cond *c, struct gw_cond *from);

/* gw_cond_copy_caps - dst learns what src has learned of the store (a new worker loop). */
void gw_cond_copy_caps(struct gw_cond *dst, const struct gw_cond *src);

/* gw_cond_active - whether fenced PutObjects get conditions now (for the log and metrics). */
bool gw_cond_active(const struct gw_cond *c);

/*
 * gw_cond_use - what the fenced write s3 gets.  own: the request carries a
 * condition of its own on the destination (If-Match, If-None-Match, and for
 * a copy x-amz-copy-source-if-*): then nothing is added (TRACK).
 */
enum gw_cond_use gw_cond_use(const struct gw_cond *c, const struct gw_s3req *s3, bool own);

/*
 * gw_cond_lookup - the condition from the map for bucket/key as learned
 * under lock at token.  Returns 0 (out filled) or ERR_NOTFOUND (HEAD it).
 */
MUST_USE int gw_cond_lookup(struct gw_cond *c, const char *lock, uint64_t token, const char *bucket,
                            const char *key, struct gw_cond_hdr *out);

/*
 * gw_cond_head_fn - a HEAD's answer: err 0 and the condition (borrowed for
 * the call; also recorded in the map); or ERR_UPSTREAM / ERR_TIMEOUT (no
 * answer, 5xx: retry later) or ERR_DENIED (another 4xx: the key's version
 * cannot be known, send the write without a condition).
 */
typedef void gw_cond_head_fn(void *arg, int err, const struct gw_cond_hdr *hdr);

/*
 * gw_cond_head - HEAD bucket/key (plain strings, copied) for its ETag;
 * counted.  done runs once, never before this returns, unless cancelled.
 * [out] out  the HEAD, for gw_cond_head_cancel until done runs
 * Returns 0, ERR_INVAL, ERR_NOMEM (no callback runs).
 */
MUST_USE int gw_cond_head(struct gw_cond *c, const char *lock, uint64_t token, const char *bucket,
                          const char *key, gw_cond_head_fn *done, void *arg,
                          struct gw_cond_head **out);

/* gw_cond_head_cancel - stop a HEAD; its callback never runs.  NULL-safe. */
void gw_cond_head_cancel(struct gw_cond_head *h);

/*
 * gw_cond_record - a tracked write's answer: a 2xx PutObject with an ETag
 * records it, a 2xx DeleteObject records the key absent, anything else
 * (a copy or complete, whose ETag is in the body; a failure) forgets the key.
 * [in] etag  the answer's ETag header, or NULL
 */
void gw_cond_record(struct gw_cond *c, const char *lock, uint64_t token, const struct gw_s3req *s3,
                    int status, const char *etag);

/*
 * gw_cond_bucket_ignore - after a 412, the key was found as the condition
 * said: the store may refuse conditions that hold on bucket (RGW 16 refuses
 * If-Match with the key's current ETag on a versioned bucket).  With
 * If-Match (absence false) that proves it: no condition goes to bucket from
 * now on in this process (logged once).  A refused If-None-Match: * followed
 * by an absent key (absence true) proves nothing alone, since a create and a
 * delete of the key may have come in between: the bucket is only suspected,
 * and ignored if the next such refusal comes before any If-None-Match: *
 * write to it passes (gw_cond_bucket_passed).  At most GW_COND_MAX_IGNORED
 * buckets are kept; past that every bucket is treated so.  At most
 * GW_COND_MAX_SUSPECTS are suspected at once; past that the oldest suspicion
 * is dropped.
 */
void gw_cond_bucket_ignore(struct gw_cond *c, const char *bucket, bool absence);

/* gw_cond_bucket_passed - a write to bucket with our If-None-Match: * passed (2xx). */
void gw_cond_bucket_passed(struct gw_cond *c, const char *bucket);

#define GW_COND_MAX_IGNORED  1024
#define GW_COND_MAX_SUSPECTS 64

/* gw_cond_forget - forget bucket/key (a 412: its version moved on). */
void gw_cond_forget(struct gw_cond *c, const char *bucket, const char *key);

#endif
