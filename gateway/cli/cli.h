/*
 * gateway/cli/cli.h: the room of the command line.
 *
 *   main.c                  `fencegate <command>`: dispatch, usage, version
 *   serve.h / serve.c       `serve` (the daemon: builds the loop, the store, the
 *                           election, the upstream, the fence, the proxy and the
 *                           server, and wires them; signals; SIGHUP reload)
 *   check_config.h / .c     `check-config`, and the `-c FILE` argument
 *   lock.h, lock.c          `fencegate lock` (the worker side of the election API)
 *   lock_run.h / .c         `lock run`: signals, the child, renewal scheduling
 *   apiclient.h / .c        the CLI's HTTP client for the JSON API (libcurl, easy)
 *   sdnotify.h / .c         systemd readiness (sd_notify protocol, no library)
 *   audit.h / audit.c       `fencegate audit`: the offline audit-log reader
 *   audit_merge.h / .c      merging several gateways' logs in time order
 *
 * It is the only room besides gateway/proxy/ that may include every other
 * room (make check-deps).
 */
#ifndef GW_CLI_H
#define GW_CLI_H

#include "gateway/cli/audit.h"
#include "gateway/cli/check_config.h"
#include "gateway/cli/lock.h"
#include "gateway/cli/serve.h"

#endif
