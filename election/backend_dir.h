/*
 * election/backend_dir.h: the `dir` election backend: epoch lock files in a
 * local directory (DESIGN.md "The election", last paragraph).
 *
 * A key is a relative path under the root directory (components must be
 * non-empty and not "." or ".."; ".tmp" at the top is reserved).
 *   create   writes a temp file under <root>/.tmp/, fsyncs it and link(2)s it
 *            to its final name: EEXIST is ERR_EXISTS, atomically, even
 *            between processes; then fsyncs the directory.
 *   replace  under flock(2) on the key's directory: compares the current
 *            ETag, then rename(2)s a fsync'd temp file over the key and
 *            fsyncs the directory.
 *   delete   unlink under the same flock; a missing key is success.
 *   get      body, ETag, Last-Modified (the file's mtime, which writes set
 *            from clock_wall_ms()) and Date (clock_wall_ms()): one machine,
 *            one clock.
 *   list     walks the directories under the prefix, sorts, filters.
 * ETag: the first 32 hex digits of the body's SHA-256, so it changes with
 * every body change (the election never writes the same body twice); the
 * If-Match form is ignored (both spellings are compared bare).
 *
 * The file system work is done synchronously inside each call (small files,
 * one local disk: the fsyncs are the cost) and the callback is deferred to
 * the next loop iteration with a zero-timeout timer, so it never runs before
 * the call returns.  elect_backend_free cancels the deferred callbacks.
 * Event-loop thread only.
 */
#ifndef ELECTION_BACKEND_DIR_H
#define ELECTION_BACKEND_DIR_H

#include <stddef.h>

#include "common/err.h"
#include "election/backend.h"

struct event_base;

/*
 * elect_backend_dir_new - a dir backend rooted at path (created 0700 if
 * missing, with its parent existing).
 * [in]  base    the loop for the deferred callbacks; borrowed, outlives the backend
 * [in]  path    borrowed during the call
 * [out] out     the backend (elect_backend_free, or hand it to elect_new)
 * [out] errbuf  a one-line reason on failure (may be NULL); errlen its size
 * Returns 0, ERR_INVAL (bad arguments), ERR_IO (cannot create or open path), ERR_NOMEM.
 * Blocking (start-up).
 */
MUST_USE int elect_backend_dir_new(struct event_base *base, const char *path,
                                   struct elect_backend **out, char *errbuf, size_t errlen);

#endif
