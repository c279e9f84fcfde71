/*
 * gateway/cli/sdnotify.h: telling systemd how the gateway is doing, with no
 * library: the sd_notify(3) protocol is one datagram to the AF_UNIX socket
 * named by $NOTIFY_SOCKET (a path, or an abstract name when it starts with
 * '@'), holding newline-separated assignments ("READY=1", "STOPPING=1", ...).
 *
 * Without $NOTIFY_SOCKET every call is a no-op returning 0, so `serve` calls
 * these unconditionally.  A failed send is logged once and never stops the
 * gateway: systemd then judges the service by its own timeouts.
 */
#ifndef GW_CLI_SDNOTIFY_H
#define GW_CLI_SDNOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

/*
 * gw_sdnotify_send - sends msg ("READY=1", "STOPPING=1\nSTATUS=draining")
 * as one datagram to $NOTIFY_SOCKET.
 * Returns 0 (sent, or no $NOTIFY_SOCKET), ERR_INVAL (a malformed
 * $NOTIFY_SOCKET), ERR_IO (the send failed).
 */
int gw_sdnotify_send(const char *msg);

/*
 * gw_sdnotify_reloading - "RELOADING=1" with "MONOTONIC_USEC=" set to
 * CLOCK_MONOTONIC now, as systemd requires of a reload notification.
 * Returns as gw_sdnotify_send.
 */
int gw_sdnotify_reloading(void);

/*
 * gw_sdnotify_watchdog_usec - the watchdog interval systemd asks for:
 * $WATCHDOG_USEC when it is a positive number and $WATCHDOG_PID is unset or
 * this process's pid; else 0 (no watchdog).
 */
uint64_t gw_sdnotify_watchdog_usec(void);

#endif
