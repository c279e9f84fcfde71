/*
 * gateway/base/inflight.h: object writes in flight, counted by the
 * configuration they were classified under (DESIGN "What a reload leaves as
 * it was").
 *
 * A reload that makes a lock cover keys it did not cover holds that lock's
 * fenced writes classified under the new configuration until every object
 * write classified under an older one into a bucket whose rules changed has
 * ended (gw_fence_reload_hold): a write that started unfenced, or under
 * another lock, must not land after the new lock's first write.  A key's
 * lock changes only where its bucket's rules do, so writes into other
 * buckets are not waited for.  Each configuration the gateway serves carries
 * one record per event loop (its gw_inflight, attached by serve): how many
 * object writes that loop began and ended under it, counted in one of
 * GW_INFLIGHT_SLOTS slots by a hash of the bucket (buckets may share a slot:
 * a hold then waits for both, which is safe), and whether the loop has moved
 * on to a newer configuration.  A record is written by its loop only, with
 * plain stores (no read-modify-write on the request path); the control loop
 * reads every record.
 *
 * A write is counted from the turn of the loop that classified it (the turn
 * its head was parsed in, so a loop that has moved on begins no more writes
 * under the older configuration) until nothing of it can reach the store any
 * more from this process: its request freed, or its transfer ended when it
 * outlives its client.  What the store may still commit after that (a
 * transfer cut after its last byte) is covered by the commit margin the
 * fence adds.
 */
#ifndef GW_INFLIGHT_H
#define GW_INFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

struct gw_inflight;

#define GW_INFLIGHT_SLOTS 64 /* buckets' slots: a set of them is a uint64_t mask */

/* gw_inflight_slot - the slot bucket's writes count in: FNV-1a of its bytes, modulo the slots. */
unsigned gw_inflight_slot(const char *bucket);

/* gw_inflight_new - slots for loops event loops (index 0 the control loop).  NULL: no memory. */
struct gw_inflight *gw_inflight_new(uint32_t loops);

/* gw_inflight_free - NULL-safe. */
void gw_inflight_free(struct gw_inflight *in);

/*
 * gw_inflight_begin - loop began an object write into a bucket of slot
 * (gw_inflight_slot; loop's thread only; in NULL: nothing).
 */
void gw_inflight_begin(struct gw_inflight *in, unsigned loop, unsigned slot);

/* gw_inflight_end - one of loop's writes in slot ended (loop's thread only; in NULL: nothing). */
void gw_inflight_end(struct gw_inflight *in, unsigned loop, unsigned slot);

/* gw_inflight_moved_on - loop classifies nothing under this configuration from now on. */
void gw_inflight_moved_on(struct gw_inflight *in, unsigned loop);

/*
 * gw_inflight_ended - every loop has moved on and every write it began under
 * this configuration into the slots of mask (bit i: slot i) has ended (any
 * thread).  *pending (may be NULL): those writes still in flight, counted on
 * the loops that have moved on.
 */
bool gw_inflight_ended(const struct gw_inflight *in, uint64_t mask, uint64_t *pending);

#endif
