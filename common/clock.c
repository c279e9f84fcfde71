#include "common/clock.h"

#include <stdbool.h>
#include <time.h>

static bool pinned;
static uint64_t pinned_mono;
static int64_t pinned_wall;

uint64_t
clock_mono_ms(void)
{
    if (pinned) {
        return pinned_mono;
    }
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t
clock_wall_ms(void)
{
    if (pinned) {
        return pinned_wall;
    }
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
clock_pin(uint64_t mono_ms, int64_t wall_ms)
{
    pinned = true;
    pinned_mono = mono_ms;
    pinned_wall = wall_ms;
}

void
clock_unpin(void)
{
    pinned = false;
}
