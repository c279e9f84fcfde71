/*
 * gateway/cli/audit_merge.h: one audit listing merged from several stores,
 * for `fencegate audit --data-dir A --data-dir B ...` (gateways sharing one
 * election, each with its own data_dir).
 *
 * Each store is read in pages with its own store_audit_cursor; the pages are
 * merged oldest first by (time_ms, source, seq), where source is the store's
 * index in the array the caller passes: equal times from different stores
 * come out in that order, equal times from one store in its seq order.  A
 * merged position is a gw_audit_merge_cursor, printed "<time_ms>.<seq>.<n>"
 * (n = source + 1), which means something only with the same stores in the
 * same order.  It never parses as a store_audit_cursor, nor the reverse.
 *
 * Stores are read in separate read-only transactions, one per page, so a
 * listing is not one snapshot: records appended meanwhile may or may not
 * appear, as with paging in a single store.
 * Main thread, no event loop (the CLI); blocking only as store_audit_query.
 * Ownership: every pointer is borrowed for the duration of the call.
 */
#ifndef GW_CMD_AUDIT_MERGE_H
#define GW_CMD_AUDIT_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "store/store.h"

/* The most stores one merged listing reads. */
#define GW_AUDIT_MERGE_MAX 32

/* Room for gw_audit_merge_cursor_format's output, NUL included. */
#define GW_AUDIT_MERGE_CURSOR_LEN 64

/* A position in a merged listing: the last record returned.  Zeroed = the start. */
struct gw_audit_merge_cursor {
    bool set;        /* false: start at since_ms */
    int64_t time_ms; /* time of the last record returned */
    uint64_t seq;    /* its sequence number in its store */
    size_t source;   /* its store's index */
};

/* gw_audit_merge_each_fn - one record of the merged listing, from stores[source].
 * rec and its strings are valid during the call only.  Return 0 to go on; a
 * negative value stops the listing and is returned by gw_audit_merge_query. */
typedef int gw_audit_merge_each_fn(void *arg, size_t source, const struct store_audit_rec *rec);

/*
 * gw_audit_merge_query - call fn for the first q->limit records of the merged
 * listing that match q (lock, since_ms, until_ms) and come after *after.
 * [in]  stores  n open stores (borrowed), 1..GW_AUDIT_MERGE_MAX, each once
 * [in]  q       the filters; q->limit (1..STORE_AUDIT_LIMIT_MAX) bounds the
 *               merged listing, not each store; q->after is ignored
 * [in]  after   where the previous page ended; NULL or zeroed = the start
 * [out] next    may be NULL, and may be after itself; set (next->set) when
 *               more records follow: pass it as after for the next page; else
 *               cleared
 * Returns 0, fn's negative return, ERR_INVAL (bad n, query or cursor source),
 * ERR_NOMEM, or store_audit_query's errors.
 */
MUST_USE int gw_audit_merge_query(struct store *const *stores, size_t n,
                                  const struct store_audit_query *q,
                                  const struct gw_audit_merge_cursor *after,
                                  gw_audit_merge_each_fn *fn, void *arg,
                                  struct gw_audit_merge_cursor *next);

/*
 * gw_audit_merge_cursor_format - write c as "<time_ms>.<seq>.<source + 1>"
 * into out (size len; GW_AUDIT_MERGE_CURSOR_LEN is always enough).
 * Returns 0 or ERR_TOOBIG.
 */
MUST_USE int gw_audit_merge_cursor_format(const struct gw_audit_merge_cursor *c, char *out,
                                          size_t len);

/*
 * gw_audit_merge_cursor_parse - parse what gw_audit_merge_cursor_format wrote,
 * for a listing of n stores (the source must be 1..n).
 * Returns 0 (out->set = true) or ERR_INVAL (out untouched).
 */
MUST_USE int gw_audit_merge_cursor_parse(const char *s, size_t n,
                                         struct gw_audit_merge_cursor *out);

#endif
