/* election/backend_dir.c: the `dir` election backend (see backend_dir.h). */
#include "election/backend_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/buf.h"
#include "common/clock.h"
#include "election/sha256.h"

#define LOG_MODULE "election"
#include "common/log.h"

#define TMP_DIR       ".tmp"
#define LIST_MAX_KEYS 100000 /* keys a list may walk before it gives up (ERR_TOOBIG) */

enum op_kind {
    OP_WRITE,
    OP_GET,
    OP_LIST,
    OP_DEL,
};

/* One finished operation waiting for its deferred callback. */
struct dir_op {
    LIST_ENTRY(dir_op) link;
    struct dir_backend *be;
    struct event *ev; /* zero-timeout timer */
    enum op_kind kind;
    int err;
    struct elect_obj_meta meta;
    char *body; /* OP_GET: owned */
    size_t len;
    char **keys; /* OP_LIST: owned array of owned strings */
    size_t nkeys;
    bool truncated;
    union {
        elect_be_write_fn *write;
        elect_be_get_fn *get;
        elect_be_list_fn *list;
        elect_be_del_fn *del;
    } cb;
    void *arg;
};

struct dir_backend {
    struct elect_backend base; /* first: the election holds a pointer to it */
    struct event_base *loop;
    int rootfd; /* O_DIRECTORY of the root */
    char *name; /* "dir:<path>" */
    LIST_HEAD(dir_op_list, dir_op) ops;
    unsigned long tmp_seq; /* temp file names */
};

static int
errno_to_err(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return ERR_NOTFOUND;
    case EEXIST:
        return ERR_EXISTS;
    case ENOMEM:
        return ERR_NOMEM;
    default:
        return ERR_IO;
    }
}

/* Keys are relative paths: non-empty components, not "." / "..", no ".tmp" at the top. */
static bool
key_path_ok(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || key[0] == '/' || key[n - 1] == '/') {
        return false;
    }
    const char *p = key;
    bool first = true;
    while (*p != '\0') {
        const char *slash = strchr(p, '/');
        size_t cl = slash != NULL ? (size_t)(slash - p) : strlen(p);
        if (cl == 0 || cl > 255 || (cl == 1 && p[0] == '.') ||
            (cl == 2 && p[0] == '.' && p[1] == '.') ||
            (first && cl == strlen(TMP_DIR) && memcmp(p, TMP_DIR, cl) == 0)) {
            return false;
        }
        for (size_t i = 0; i < cl; i++) {
            if ((unsigned char)p[i] < 0x20) {
                return false;
            }
        }
        first = false;
        p += cl;
        if (*p == '/') {
            p++;
        }
    }
    return true;
}

static void
etag_of(const char *body, size_t len, char *out)
{
    char hex[ELECT_SHA256_HEX + 1];
    elect_sha256_hex(body, len, hex);
    memcpy(out, hex, 32);
    out[32] = '\0';
}

static int64_t
mtime_ms(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000;
}

/* fsync a directory relative to the root ("" = the root). */
static int
sync_dir(struct dir_backend *d, const char *dir)
{
    int fd = dir[0] == '\0' ? dup(d->rootfd) : openat(d->rootfd, dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        return errno_to_err(errno);
    }
    int err = fsync(fd) == 0 ? 0 : ERR_IO;
    if (err != 0) {
        log_error("fsync of directory %s: %s", dir, strerror(errno));
    }
    (void)close(fd);
    return err;
}

/* The directory part of key ("" for a top-level key) into out. */
static void
parent_of(const char *key, char *out, size_t outlen)
{
    const char *slash = strrchr(key, '/');
    size_t n = slash != NULL ? (size_t)(slash - key) : 0;
    if (n >= outlen) {
        n = outlen - 1;
    }
    memcpy(out, key, n);
    out[n] = '\0';
}

/* mkdir -p of key's directories (relative to the root), fsyncing each new one's parent. */
static int
make_parents(struct dir_backend *d, const char *key)
{
    char path[ELECT_KEY_MAX + 1];
    str_copy(path, sizeof(path), key);
    for (char *p = path; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        if (mkdirat(d->rootfd, path, 0700) == 0) {
            char parent[ELECT_KEY_MAX + 1];
            parent_of(path, parent, sizeof(parent));
            int err = sync_dir(d, parent);
            if (err != 0) {
                return err;
            }
        } else if (errno != EEXIST) {
            int e = errno;
            log_error("mkdir %s: %s", path, strerror(e));
            return errno_to_err(e);
        }
        *p = '/';
    }
    return 0;
}

/* Write body to a new fsync'd temp file under .tmp/, its mtime from clock_wall_ms(). */
static int
write_temp(struct dir_backend *d, const char *body, size_t len, char *tmp, size_t tmplen,
           int64_t *mtime)
{
    (void)snprintf(tmp, tmplen, "%s/w-%ld-%lu", TMP_DIR, (long)getpid(), ++d->tmp_seq);
    int fd = openat(d->rootfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        log_error("create %s: %s", tmp, strerror(e));
        return ERR_IO;
    }
    int err = 0;
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, body + off, len - off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            log_error("write %s: %s", tmp, strerror(errno));
            err = ERR_IO;
            goto fail;
        }
        off += (size_t)n;
    }
    int64_t now = clock_wall_ms();
    struct timespec ts[2] = {{.tv_sec = now / 1000, .tv_nsec = (now % 1000) * 1000000},
                             {.tv_sec = now / 1000, .tv_nsec = (now % 1000) * 1000000}};
    if (futimens(fd, ts) != 0 || fsync(fd) != 0) {
        log_error("futimens/fsync %s: %s", tmp, strerror(errno));
        err = ERR_IO;
        goto fail;
    }
    *mtime = now;
    (void)close(fd);
    return 0;
fail:
    (void)close(fd);
    (void)unlinkat(d->rootfd, tmp, 0);
    return err;
}

/* Read key fully: body (malloc'd, owned by the caller), stat. */
static int
read_key(struct dir_backend *d, const char *key, char **body, size_t *len, struct stat *st)
{
    int fd = openat(d->rootfd, key, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno_to_err(errno);
    }
    int err = 0;
    char *buf = NULL;
    if (fstat(fd, st) != 0) {
        err = ERR_IO;
        goto fail;
    }
    if (!S_ISREG(st->st_mode)) {
        err = ERR_NOTFOUND;
        goto fail;
    }
    if (st->st_size > ELECT_OBJ_MAX) {
        err = ERR_TOOBIG;
        goto fail;
    }
    buf = malloc((size_t)st->st_size + 1);
    if (buf == NULL) {
        err = ERR_NOMEM;
        goto fail;
    }
    size_t off = 0;
    for (;;) {
        ssize_t n = read(fd, buf + off, (size_t)st->st_size + 1 - off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            err = ERR_IO;
            goto fail;
        }
        if (n == 0) {
            break;
        }
        off += (size_t)n;
        if (off > (size_t)st->st_size) {
            err = ERR_IO; /* grew while read: rewritten files are renamed, so not ours */
            goto fail;
        }
    }
    (void)close(fd);
    *body = buf;
    *len = off;
    return 0;
fail:
    free(buf);
    (void)close(fd);
    return err;
}

/* Open and flock the directory of key (created if needed).  Returns the fd or a negative ERR_*. */
static int
lock_parent(struct dir_backend *d, const char *key)
{
    char parent[ELECT_KEY_MAX + 1];
    parent_of(key, parent, sizeof(parent));
    int fd = parent[0] == '\0' ? dup(d->rootfd)
                               : openat(d->rootfd, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return errno_to_err(errno);
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            log_error("flock %s: %s", parent, strerror(errno));
            (void)close(fd);
            return ERR_IO;
        }
    }
    return fd;
}

static void
unlock_parent(int fd)
{
    (void)flock(fd, LOCK_UN);
    (void)close(fd);
}

/* ---- deferral ---- */

static void
op_free(struct dir_op *op)
{
    if (op->ev != NULL) {
        event_free(op->ev);
    }
    free(op->body);
    for (size_t i = 0; op->keys != NULL && i < op->nkeys; i++) {
        free(op->keys[i]);
    }
    free(op->keys);
    free(op);
}

/* evtimer callback (zero timeout), registered by op_defer */
static void
on_deferred(evutil_socket_t fd, short what, void *arg)
{
    struct dir_op *op = arg;
    (void)fd;
    (void)what;
    LIST_REMOVE(op, link);
    bool ok = op->err == 0;
    switch (op->kind) {
    case OP_WRITE:
        op->cb.write(op->arg, op->err, ok ? &op->meta : NULL);
        break;
    case OP_GET:
        op->cb.get(op->arg, op->err, ok ? op->body : NULL, ok ? op->len : 0, ok ? &op->meta : NULL);
        break;
    case OP_LIST:
        op->cb.list(op->arg, op->err, ok && op->nkeys > 0 ? (const char *const *)op->keys : NULL,
                    ok ? op->nkeys : 0, ok && op->truncated);
        break;
    case OP_DEL:
    default:
        op->cb.del(op->arg, op->err);
        break;
    }
    op_free(op);
}

static struct dir_op *
op_new(struct dir_backend *d, enum op_kind kind, void *arg)
{
    struct dir_op *op = calloc(1, sizeof(*op));
    if (op == NULL) {
        return NULL;
    }
    op->be = d;
    op->kind = kind;
    op->arg = arg;
    op->meta.last_modified_ms = -1;
    op->meta.date_ms = -1;
    op->ev = evtimer_new(d->loop, on_deferred, op);
    if (op->ev == NULL) {
        free(op);
        return NULL;
    }
    return op;
}

/* Queue op's callback for the next loop iteration.  Returns 0 or ERR_NOMEM (op freed). */
static int
op_defer(struct dir_op *op)
{
    struct timeval zero = {0, 0};
    if (evtimer_add(op->ev, &zero) != 0) {
        op_free(op);
        return ERR_NOMEM;
    }
    LIST_INSERT_HEAD(&op->be->ops, op, link);
    return 0;
}

/* ---- operations ---- */

static int
do_create(struct dir_backend *d, const char *key, const char *body, size_t len,
          struct elect_obj_meta *meta)
{
    int err = make_parents(d, key);
    if (err != 0) {
        return err;
    }
    char tmp[64];
    int64_t mtime;
    err = write_temp(d, body, len, tmp, sizeof(tmp), &mtime);
    if (err != 0) {
        return err;
    }
    /* link(2) fails with EEXIST if the name exists: create-if-absent, atomically. */
    if (linkat(d->rootfd, tmp, d->rootfd, key, 0) != 0) {
        int e = errno;
        (void)unlinkat(d->rootfd, tmp, 0);
        if (e != EEXIST) {
            log_error("link %s: %s", key, strerror(e));
        }
        return errno_to_err(e);
    }
    (void)unlinkat(d->rootfd, tmp, 0);
    char parent[ELECT_KEY_MAX + 1];
    parent_of(key, parent, sizeof(parent));
    err = sync_dir(d, parent);
    if (err != 0) {
        return err;
    }
    etag_of(body, len, meta->etag);
    meta->last_modified_ms = mtime;
    meta->date_ms = clock_wall_ms();
    return 0;
}

static int
dir_create(struct elect_backend *be, const char *key, const char *body, size_t len,
           elect_be_write_fn *cb, void *arg)
{
    struct dir_backend *d = (struct dir_backend *)be;
    if (!key_path_ok(key)) {
        return ERR_INVAL;
    }
    struct dir_op *op = op_new(d, OP_WRITE, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.write = cb;
    op->err = do_create(d, key, body, len, &op->meta);
    return op_defer(op);
}

static int
do_replace(struct dir_backend *d, const char *key, const char *etag, const char *body, size_t len,
           struct elect_obj_meta *meta)
{
    int lfd = lock_parent(d, key);
    if (lfd < 0) {
        return lfd;
    }
    char *cur = NULL;
    size_t curlen = 0;
    struct stat st;
    int err = read_key(d, key, &cur, &curlen, &st);
    if (err != 0) {
        goto out;
    }
    char cur_etag[ELECT_ETAG_MAX + 1];
    etag_of(cur, curlen, cur_etag);
    if (strcmp(cur_etag, etag) != 0) {
        err = ERR_CONFLICT;
        goto out;
    }
    char tmp[64];
    int64_t mtime;
    err = write_temp(d, body, len, tmp, sizeof(tmp), &mtime);
    if (err != 0) {
        goto out;
    }
    if (renameat(d->rootfd, tmp, d->rootfd, key) != 0) {
        int e = errno;
        log_error("rename over %s: %s", key, strerror(e));
        (void)unlinkat(d->rootfd, tmp, 0);
        err = ERR_IO;
        goto out;
    }
    if (fsync(lfd) != 0) {
        log_error("fsync of the directory of %s: %s", key, strerror(errno));
        err = ERR_IO;
        goto out;
    }
    etag_of(body, len, meta->etag);
    meta->last_modified_ms = mtime;
    meta->date_ms = clock_wall_ms();
out:
    free(cur);
    unlock_parent(lfd);
    return err;
}

static int
dir_replace(struct elect_backend *be, const char *key, const char *etag, enum elect_etag_form form,
            const char *body, size_t len, elect_be_write_fn *cb, void *arg)
{
    struct dir_backend *d = (struct dir_backend *)be;
    (void)form; /* compared bare: both spellings work here */
    if (!key_path_ok(key)) {
        return ERR_INVAL;
    }
    struct dir_op *op = op_new(d, OP_WRITE, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.write = cb;
    op->err = do_replace(d, key, etag, body, len, &op->meta);
    return op_defer(op);
}

static int
dir_get(struct elect_backend *be, const char *key, elect_be_get_fn *cb, void *arg)
{
    struct dir_backend *d = (struct dir_backend *)be;
    if (!key_path_ok(key)) {
        return ERR_INVAL;
    }
    struct dir_op *op = op_new(d, OP_GET, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.get = cb;
    struct stat st;
    op->err = read_key(d, key, &op->body, &op->len, &st);
    if (op->err == 0) {
        etag_of(op->body, op->len, op->meta.etag);
        op->meta.last_modified_ms = mtime_ms(&st);
        op->meta.date_ms = clock_wall_ms();
    }
    return op_defer(op);
}

static int
dir_del(struct elect_backend *be, const char *key, elect_be_del_fn *cb, void *arg)
{
    struct dir_backend *d = (struct dir_backend *)be;
    if (!key_path_ok(key)) {
        return ERR_INVAL;
    }
    struct dir_op *op = op_new(d, OP_DEL, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.del = cb;
    int lfd = lock_parent(d, key);
    if (lfd == ERR_NOTFOUND) {
        op->err = 0;
    } else if (lfd < 0) {
        op->err = lfd;
    } else {
        if (unlinkat(d->rootfd, key, 0) != 0 && errno != ENOENT) {
            log_error("unlink %s: %s", key, strerror(errno));
            op->err = ERR_IO;
        } else if (fsync(lfd) != 0) {
            op->err = ERR_IO;
        }
        unlock_parent(lfd);
    }
    return op_defer(op);
}

/* ---- list ---- */

struct keyvec {
    char **v;
    size_t n, cap;
};

static int
keyvec_add(struct keyvec *kv, const char *s)
{
    if (kv->n == LIST_MAX_KEYS) {
        return ERR_TOOBIG;
    }
    if (kv->n == kv->cap) {
        size_t cap = kv->cap == 0 ? 64 : kv->cap * 2;
        char **v = realloc(kv->v, cap * sizeof(*v));
        if (v == NULL) {
            return ERR_NOMEM;
        }
        kv->v = v;
        kv->cap = cap;
    }
    kv->v[kv->n] = strdup(s);
    if (kv->v[kv->n] == NULL) {
        return ERR_NOMEM;
    }
    kv->n++;
    return 0;
}

static void
keyvec_free(struct keyvec *kv)
{
    for (size_t i = 0; i < kv->n; i++) {
        free(kv->v[i]);
    }
    free(kv->v);
}

/* Collect the regular files under dir (relative, "" = root) whose keys start with prefix. */
static int
walk(struct dir_backend *d, const char *dir, const char *prefix, struct keyvec *kv, int depth)
{
    if (depth > 32) {
        return 0;
    }
    int fd = dir[0] == '\0' ? dup(d->rootfd)
                            : openat(d->rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT || errno == ENOTDIR ? 0 : ERR_IO;
    }
    DIR *dp = fdopendir(fd);
    if (dp == NULL) {
        (void)close(fd);
        return ERR_IO;
    }
    int err = 0;
    size_t pl = strlen(prefix);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            (dir[0] == '\0' && strcmp(de->d_name, TMP_DIR) == 0)) {
            continue;
        }
        char key[ELECT_KEY_MAX + 2];
        int n = snprintf(key, sizeof(key), "%s%s%s", dir, dir[0] != '\0' ? "/" : "", de->d_name);
        if (n < 0 || (size_t)n > ELECT_KEY_MAX) {
            continue;
        }
        struct stat st;
        if (fstatat(d->rootfd, key, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            continue; /* deleted meanwhile */
        }
        if (S_ISDIR(st.st_mode)) {
            /* Descend only where keys with the prefix can be: "<key>/" and
             * the prefix must agree on their common length. */
            size_t kl = (size_t)n;
            key[kl] = '/';
            key[kl + 1] = '\0';
            size_t common = kl + 1 < pl ? kl + 1 : pl;
            bool may = strncmp(key, prefix, common) == 0;
            key[kl] = '\0';
            if (may) {
                err = walk(d, key, prefix, kv, depth + 1);
            }
        } else if (S_ISREG(st.st_mode) && strncmp(key, prefix, pl) == 0) {
            err = keyvec_add(kv, key);
        }
        if (err != 0) {
            break;
        }
    }
    (void)closedir(dp);
    return err;
}

static int
cmp_keys(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
dir_list(struct elect_backend *be, const char *prefix, const char *start_after, uint32_t max,
         elect_be_list_fn *cb, void *arg)
{
    struct dir_backend *d = (struct dir_backend *)be;
    struct dir_op *op = op_new(d, OP_LIST, arg);
    if (op == NULL) {
        return ERR_NOMEM;
    }
    op->cb.list = cb;
    /* Start at the deepest directory the prefix names. */
    char dir[ELECT_KEY_MAX + 1];
    parent_of(prefix, dir, sizeof(dir));
    struct keyvec kv = {0};
    op->err = key_path_ok(dir) || dir[0] == '\0' ? walk(d, dir, prefix, &kv, 0) : 0;
    if (op->err == 0) {
        /* strcmp order is byte order, as S3 lists */
        if (kv.n > 1) {
            qsort(kv.v, kv.n, sizeof(*kv.v), cmp_keys);
        }
        size_t i = 0;
        if (start_after != NULL) {
            while (i < kv.n && strcmp(kv.v[i], start_after) <= 0) {
                i++;
            }
        }
        size_t take = kv.n - i < max ? kv.n - i : max;
        op->keys = calloc(take > 0 ? take : 1, sizeof(*op->keys));
        if (op->keys == NULL) {
            op->err = ERR_NOMEM;
        } else {
            for (size_t j = 0; j < take; j++) {
                op->keys[j] = kv.v[i + j];
                kv.v[i + j] = NULL;
            }
            op->nkeys = take;
            op->truncated = i + take < kv.n;
        }
    }
    for (size_t j = 0; j < kv.n; j++) {
        free(kv.v[j]);
    }
    kv.n = 0;
    keyvec_free(&kv);
    return op_defer(op);
}

static void
dir_free(struct elect_backend *be)
{
    struct dir_backend *d = (struct dir_backend *)be;
    struct dir_op *op;
    while ((op = LIST_FIRST(&d->ops)) != NULL) {
        LIST_REMOVE(op, link);
        op_free(op); /* event_free removes the pending timer: no callback */
    }
    if (d->rootfd >= 0) {
        (void)close(d->rootfd);
    }
    free(d->name);
    free(d);
}

static const struct elect_backend_ops dir_ops = {
    .create = dir_create,
    .replace = dir_replace,
    .get = dir_get,
    .list = dir_list,
    .del = dir_del,
    .free = dir_free,
};

int
elect_backend_dir_new(struct event_base *base, const char *path, struct elect_backend **out,
                      char *errbuf, size_t errlen)
{
    *out = NULL;
    if (base == NULL || path == NULL || path[0] == '\0') {
        return ERR_INVAL;
    }
    struct dir_backend *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        return ERR_NOMEM;
    }
    d->rootfd = -1;
    d->loop = base;
    LIST_INIT(&d->ops);
    int err = ERR_IO;
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        if (errbuf != NULL) {
            (void)snprintf(errbuf, errlen, "election dir %s: %s", path, strerror(errno));
        }
        goto fail;
    }
    d->rootfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->rootfd < 0 || (mkdirat(d->rootfd, TMP_DIR, 0700) != 0 && errno != EEXIST)) {
        if (errbuf != NULL) {
            (void)snprintf(errbuf, errlen, "election dir %s: %s", path, strerror(errno));
        }
        goto fail;
    }
    size_t nl = strlen(path) + 5;
    d->name = malloc(nl);
    if (d->name == NULL) {
        err = ERR_NOMEM;
        goto fail;
    }
    (void)snprintf(d->name, nl, "dir:%s", path);
    d->base.ops = &dir_ops;
    d->base.name = d->name;
    *out = &d->base;
    return 0;
fail:
    dir_free(&d->base);
    return err;
}
