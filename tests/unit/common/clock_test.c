/*
 * tests/unit/common/clock_test.c: the coarse monotonic clock keeps close
 * behind CLOCK_MONOTONIC and never goes back; the lease clock counts a
 * suspend of the machine (a time namespace whose boot-time clock is ahead
 * stands for one); both return a pinned value while pinned, and the real
 * clocks after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/clock.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static uint64_t
raw_ms(clockid_t id)
{
    struct timespec ts;
    (void)clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void
test_coarse_close_behind(void **state)
{
    (void)state;
    uint64_t last = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t before = raw_ms(CLOCK_MONOTONIC);
        uint64_t coarse = clock_coarse_ms();
        uint64_t after = raw_ms(CLOCK_MONOTONIC);
        assert_true(coarse >= last); /* never back */
        assert_true(coarse <= after);
        /* behind by a tick or two (4 ms ticks here, 6 ms seen); a loaded VM
         * delays ticks, so the bound is far from the timeouts it serves */
        assert_true(coarse + 1000 >= before);
        last = coarse;
    }
}

#define SLEPT_S 100000 /* the suspend the namespace stands for */

/* In a child of a new time namespace whose boot-time clock is SLEPT_S ahead of
 * its monotonic one, as after a suspend that long: 0 when clock_mono_ms counts
 * it, 1 when it does not. */
static int
child_after_a_suspend(void)
{
    uint64_t mono = raw_ms(CLOCK_MONOTONIC);
    uint64_t lease_clock = clock_mono_ms();
    return lease_clock >= mono + (SLEPT_S - 10) * 1000u ? 0 : 1;
}

static void
test_lease_clock_counts_a_suspend(void **state)
{
    (void)state;
    if (unshare(CLONE_NEWTIME) != 0) {
        fprintf(stderr, "skipped: no time namespace (%s): needs Linux 5.6 and CAP_SYS_ADMIN\n",
                strerror(errno));
        skip();
    }
    int fd = open("/proc/self/timens_offsets", O_WRONLY);
    assert_true(fd >= 0);
    char line[64];
    int n = snprintf(line, sizeof(line), "boottime %d 0\n", SLEPT_S);
    assert_int_equal(write(fd, line, (size_t)n), n);
    (void)close(fd);
    pid_t pid = fork(); /* only children enter the new namespace */
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(child_after_a_suspend());
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0); /* 1: a lease judged on a clock that slept */
}

static void
test_pinned(void **state)
{
    (void)state;
    clock_pin(123456, 987654321);
    assert_int_equal(clock_mono_ms(), 123456);
    assert_int_equal(clock_coarse_ms(), 123456);
    assert_int_equal(clock_wall_ms(), 987654321);
    clock_unpin();
    assert_true(clock_coarse_ms() != 123456);
    assert_true(clock_wall_ms() > 987654321);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coarse_close_behind),
        cmocka_unit_test(test_lease_clock_counts_a_suspend),
        cmocka_unit_test(test_pinned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
