/*
 * tests/bench/benchlib.h: what the C micro-benchmarks share: a monotonic
 * clock in nanoseconds for timing rounds (common/clock.h's is milliseconds
 * and may be pinned by tests).
 */
#ifndef FENCEGATE_TESTS_BENCH_BENCHLIB_H
#define FENCEGATE_TESTS_BENCH_BENCHLIB_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
