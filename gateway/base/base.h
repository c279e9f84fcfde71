/*
 * gateway/base/base.h: the room every other gateway room stands on.
 *
 * What all rooms read, kept under them so the map stays one-way (make
 * check-deps): it includes nothing of the gateway but itself.
 *
 *   config.h / config.c         the configuration: model (struct gw_config),
 *                               loading from JSON, defaults, cross-key rules
 *   config_listen.c, config_upstream.c, config_access.c
 *                               the sections with arrays or rules of their own
 *                               ("listen", "upstream", "principals"/"fences");
 *                               config_int.h what they share with config.c
 *   config_check.h / .c         name validators, secrets from the environment
 *                               or a file, listen addresses
 *   json_table.h / .c           declarative JSON key tables the loader walks
 *                               (unknown keys and wrong types refused, by path)
 *   metrics.h / metrics.c       the counters and histograms, per-request accounting
 *   metrics_lock.c              the per-lock series and their bound (metrics.max_locks)
 *   metrics_render.c            the Prometheus text, process series from /proc/self
 *   metrics_int.h               what metrics_lock.c shares with metrics_render.c
 *   inflight.h / inflight.c     object writes in flight per configuration and loop,
 *                               what a reload's hold waits for
 *
 * A new configuration key goes in its section's table, in config.c or a
 * config_<section>.c (and the README's table); a new
 * counter in metrics.h and metrics.c.
 */
#ifndef GW_BASE_H
#define GW_BASE_H

#include "gateway/base/config.h"
#include "gateway/base/metrics.h"

#endif
