/*
 * tests/helpers/preload/slow_sync.c: a slow disk, for tests (LD_PRELOAD).
 *
 * While the file named by $FENCEGATE_SLOW_SYNC_FILE exists and holds a
 * number N, every fdatasync() and fsync() of the process first sleeps N ms.
 * LMDB makes a commit durable with fdatasync() before it writes the meta
 * page, so this holds every store commit (audit records, fence advances) in
 * flight for N ms: the window between queueing a record and its commit,
 * widened so an integration test can kill the gateway inside it
 * (tests/integration/test_audit_durable.py).  The file is read at each call,
 * so a test turns the slowness on and off while the gateway runs.
 *
 * Built as a shared object without sanitizers (Makefile); under ASan the
 * test adds verify_asan_link_order=0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int fdatasync(int fd);
int fsync(int fd);

/* N from the file, 0 when it is absent or unreadable. */
static unsigned long
delay_ms(void)
{
    const char *path = getenv("FENCEGATE_SLOW_SYNC_FILE");
    char text[32] = {0};
    if (path == NULL) {
        return 0;
    }
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return 0;
    }
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    (void)fclose(f);
    text[n] = '\0';
    return strtoul(text, NULL, 10);
}

static void
wait_a_while(void)
{
    unsigned long ms = delay_ms();
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) != 0) {
    }
}

/* The next definition of name (libc's). */
static void *
next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

int
fdatasync(int fd)
{
    int (*real)(int) = (int (*)(int))next("fdatasync");
    wait_a_while();
    return real(fd);
}

int
fsync(int fd)
{
    int (*real)(int) = (int (*)(int))next("fsync");
    wait_a_while();
    return real(fd);
}
