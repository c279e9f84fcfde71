#include "common/clock.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

/* Atomics: a test pins the clock while the store's writer thread reads it
 * (retention by age); relaxed loads cost a plain load on x86. */
static atomic_bool pinned;
static _Atomic uint64_t pinned_mono;
static _Atomic int64_t pinned_wall;

/* The monotonic clock id in ms, or the pinned monotonic value. */
static uint64_t
mono_ms(clockid_t id)
{
    if (atomic_load_explicit(&pinned, memory_order_acquire)) {
        return atomic_load_explicit(&pinned_mono, memory_order_relaxed);
    }
    struct timespec ts;
    (void)clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t
clock_mono_ms(void)
{
    /* CLOCK_BOOTTIME: CLOCK_MONOTONIC stops while the machine is suspended, and a
     * gateway resumed from a suspend would take a lease that ran out meanwhile for
     * live (G6).  Linux's boot-time clock counts the suspend and is read in the vDSO. */
    return mono_ms(CLOCK_BOOTTIME);
}

uint64_t
clock_coarse_ms(void)
{
    return mono_ms(CLOCK_MONOTONIC_COARSE);
}

int64_t
clock_wall_ms(void)
{
    if (atomic_load_explicit(&pinned, memory_order_acquire)) {
        return atomic_load_explicit(&pinned_wall, memory_order_relaxed);
    }
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
clock_pin(uint64_t mono_ms, int64_t wall_ms)
{
    atomic_store_explicit(&pinned_mono, mono_ms, memory_order_relaxed);
    atomic_store_explicit(&pinned_wall, wall_ms, memory_order_relaxed);
    atomic_store_explicit(&pinned, true, memory_order_release);
}

void
clock_unpin(void)
{
    atomic_store_explicit(&pinned, false, memory_order_release);
}
