/*
 * common/lockname.h: the one rule for lock names.
 *
 * A lock name is 1..LOCK_NAME_MAX bytes of [A-Za-z0-9._-], and neither "."
 * nor "..": it becomes a path component of the epoch files' keys (and of the
 * dir backend's paths), a header value and an LMDB key.  The election, the
 * fence headers, the JSON API, the configuration and the store all ask here,
 * so a name one of them accepts is never one another refuses.
 */
#ifndef COMMON_LOCKNAME_H
#define COMMON_LOCKNAME_H

#include <stdbool.h>

#define LOCK_NAME_MAX 128 /* longest lock name, in bytes */

/* lock_name_valid - whether lock (NUL-terminated, or NULL: false) is a valid lock name. */
bool lock_name_valid(const char *lock);

#endif
