/*
 * common/clock.h: the injectable clock.
 *
 * Everything that needs "now" asks here, so tests can pin time (SigV4 vectors,
 * lease expiry).  clock_mono_ms() is for durations and lease judgement (G6);
 * clock_wall_ms() is for timestamps written into records and signatures.
 * Pinning may change while other threads read (the store's writer thread):
 * each value is read whole, but a reader may pair the new monotonic value
 * with the old wall value for an instant.
 */
#ifndef COMMON_CLOCK_H
#define COMMON_CLOCK_H

#include <stdint.h>

/*
 * Milliseconds on the monotonic clock, or the pinned value.  Linux's
 * CLOCK_BOOTTIME: monotonic, and running through a suspend of the machine
 * (CLOCK_MONOTONIC stops then), so a lease or a write window (G6) counts the
 * time the machine slept.
 */
uint64_t clock_mono_ms(void);

/*
 * clock_coarse_ms - the monotonic clock at the kernel tick's resolution
 * (CLOCK_MONOTONIC_COARSE: a tick or two, a few ms, behind CLOCK_MONOTONIC; a
 * fifth of clock_mono_ms's cost; it stops in a suspend, so it is behind
 * clock_mono_ms by the time the machine slept too), or the pinned monotonic
 * value.  For idle and progress
 * timeouts that a request stamps several times, never for a lease or a write
 * window (G6); compared only with its own values.
 */
uint64_t clock_coarse_ms(void);

/* Milliseconds since the Unix epoch (CLOCK_REALTIME), or the pinned value. */
int64_t clock_wall_ms(void);

/*
 * clock_pin - pin both clocks for tests.  mono_ms and wall_ms are returned as
 * they are until clock_unpin().  Test-only.
 */
void clock_pin(uint64_t mono_ms, int64_t wall_ms);

/* clock_unpin - return to the real clocks. */
void clock_unpin(void);

#endif
