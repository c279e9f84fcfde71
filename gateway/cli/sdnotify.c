/*
 * gateway/cli/sdnotify.c: sd_notify(3)'s wire protocol, written out: one
 * datagram on a fresh AF_UNIX socket per message.  Messages are rare (start,
 * reload, stop, a watchdog tick every few seconds), so nothing is kept open.
 */
#define LOG_MODULE "sdnotify"
#include "gateway/cli/sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/num.h"

int
gw_sdnotify_send(const char *msg)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    size_t plen = strlen(path);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if ((path[0] != '/' && path[0] != '@') || plen >= sizeof(sun.sun_path)) {
        log_warn("NOTIFY_SOCKET %s is neither a path nor an abstract name: systemd is not told",
                 path);
        return ERR_INVAL;
    }
    memcpy(sun.sun_path, path, plen);
    if (path[0] == '@') {
        sun.sun_path[0] = '\0'; /* the abstract namespace */
    }
    socklen_t slen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        log_warn("NOTIFY_SOCKET: socket: %s", strerror(errno));
        return ERR_IO;
    }
    size_t len = strlen(msg);
    ssize_t n = sendto(fd, msg, len, MSG_NOSIGNAL, (struct sockaddr *)&sun, slen);
    int saved = errno;
    (void)close(fd);
    if (n < 0 || (size_t)n != len) {
        log_warn("NOTIFY_SOCKET %s: cannot send \"%.*s\": %s", path, (int)strcspn(msg, "\n"), msg,
                 n < 0 ? strerror(saved) : "short send");
        return ERR_IO;
    }
    log_debug("told systemd: %.*s", (int)strcspn(msg, "\n"), msg);
    return 0;
}

int
gw_sdnotify_reloading(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    char msg[64];
    (void)snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
                   (unsigned long long)ts.tv_sec * 1000000ULL +
                       (unsigned long long)ts.tv_nsec / 1000ULL);
    return gw_sdnotify_send(msg);
}

uint64_t
gw_sdnotify_watchdog_usec(void)
{
    const char *usec = getenv("WATCHDOG_USEC");
    const char *pid = getenv("WATCHDOG_PID");
    uint64_t v = 0;
    uint64_t p = 0;
    if (usec == NULL || parse_u64(usec, 1, UINT64_MAX, &v) != 0) {
        return 0;
    }
    if (pid != NULL && (parse_u64(pid, 1, UINT64_MAX, &p) != 0 || p != (uint64_t)getpid())) {
        return 0; /* meant for another process (our parent's, say) */
    }
    return v;
}
