/*
 * gateway/json_table.h: a table-driven reader of JSON objects into C structs
 * (STYLE R9, Redis's createIntConfig idea).  A table of field descriptors
 * ({name, type, offset, min, max, default}) describes one JSON object;
 * gw_jt_walk() applies it: unknown keys, wrong types and out-of-range values
 * fail naming the full key path ("upstream.regoin: unknown key"), absent keys
 * get their defaults.  What a table cannot say (arrays of objects, cross-field
 * rules) is the caller's, through GW_JT_CUSTOM fields and the path helpers.
 *
 * Used by gateway/config.c.  No global state; any thread.  Errors are one
 * printable line "path: message" in the caller's errbuf (startup paths only,
 * STYLE R4).  Strings stored by the walker are owned copies (malloc) that the
 * caller frees, also after a failure: values stored before it stay in place.
 * jansson's json_t is named here only as an incomplete struct, so this header
 * does not pull in <jansson.h>.
 */
#ifndef GW_JSON_TABLE_H
#define GW_JSON_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

struct json_t; /* jansson's json_t */

#define GW_JT_MAX_PATH 256 /* key paths in error messages are cut here */

/* Field types understood by gw_jt_walk(). */
enum gw_jt_type {
    GW_JT_STR,     /* char *, owned copy */
    GW_JT_BOOL,    /* bool */
    GW_JT_U32,     /* uint32_t, JSON integer in [min, max] */
    GW_JT_U64,     /* uint64_t, JSON integer in [min, max] */
    GW_JT_ENUM,    /* an enum stored as int; JSON string from choices */
    GW_JT_STRLIST, /* char **, NULL-terminated owned array of owned strings */
    GW_JT_CUSTOM,  /* handled by field.custom, which is also called with NULL when the key is absent
                    */
};

#define GW_JT_REQUIRED 0x1u /* absence is an error */
#define GW_JT_SCRATCH  0x2u /* offset is into the scratch struct, not the target */

/* Where errors go. */
struct gw_jt_ctx {
    char *errbuf;  /* borrowed; the one error line (may be NULL) */
    size_t errlen; /* size of errbuf */
};

/* One JSON spelling of a GW_JT_ENUM value. */
struct gw_jt_choice {
    const char *name; /* JSON spelling */
    int value;        /* stored value */
};

/*
 * A GW_JT_CUSTOM handler: parse v (NULL when the key is absent) found at path
 * into dst (the field's base + offset).  Returns 0, or ERR_* with the error
 * line written through gw_jt_err()/gw_jt_nomem().
 */
typedef int gw_jt_custom_fn(struct gw_jt_ctx *c, const char *path, struct json_t *v, void *dst);

/*
 * One table row.  The member order is fixed: gateway/config.c builds rows with
 * positional initialisers.
 */
struct gw_jt_field {
    const char *name;     /* JSON key */
    enum gw_jt_type type; /* how the value is read */
    unsigned flags;       /* GW_JT_REQUIRED, GW_JT_SCRATCH */
    size_t offset;        /* where it is stored, from base (or scratch with GW_JT_SCRATCH) */
    uint64_t min;         /* GW_JT_U32/U64: smallest value; GW_JT_STR: shortest length */
    uint64_t max;         /* GW_JT_U32/U64: largest value; GW_JT_STR: longest length (0: 4096) */
    uint64_t def;         /* GW_JT_BOOL/U32/U64/ENUM: value when absent */
    const char *sdef;     /* GW_JT_STR: value when absent (copied), or NULL */
    bool (*valid)(const char *s);       /* GW_JT_STR/STRLIST: extra check of each string, or NULL */
    const char *valid_msg;              /* what valid() wants, for the error message */
    const struct gw_jt_choice *choices; /* GW_JT_ENUM: NULL-name-terminated */
    gw_jt_custom_fn *custom;            /* GW_JT_CUSTOM: the handler */
};

#define GW_JT_NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/*
 * gw_jt_walk - apply the table fields[0..n) (n <= 64) to the JSON object obj
 * (NULL: apply every default).
 * [in]  base     values land at base + offset
 * [in]  scratch  GW_JT_SCRATCH fields land at scratch + offset (may be NULL
 *                when the table has none)
 * [out] seen     bit i set when fields[i] was present, or NULL
 * Returns 0, or ERR_INVAL/ERR_NOMEM with errbuf set.  Values stored before a
 * failure stay in base/scratch for their owner to free.
 */
MUST_USE int gw_jt_walk(struct gw_jt_ctx *c, const char *path, struct json_t *obj,
                        const struct gw_jt_field *fields, size_t n, void *base, void *scratch,
                        uint64_t *seen);

/*
 * One element of an array of objects: parse v (element i of the array at
 * path; ipath is "path[i]") into entry i of entries, the block being built.
 * [in] arg  gw_jt_walk_array's arg
 * Returns 0 or ERR_* with errbuf set.
 */
typedef int gw_jt_entry_fn(struct gw_jt_ctx *c, const char *path, const char *ipath, size_t i,
                           struct json_t *v, void *entries, void *arg);

/*
 * gw_jt_walk_array - an optional array of objects: v (NULL: absent) must be
 * an array; absent or [] leaves *out NULL.  Otherwise *out gets calloc(n,
 * size) (owned by the caller, also on failure) and fn parses each element in
 * order; fn should count its entry before parsing it, so the caller can free a
 * partly built one.
 * Returns 0, ERR_INVAL (not an array, or fn's) or ERR_NOMEM, with errbuf set.
 */
MUST_USE int gw_jt_walk_array(struct gw_jt_ctx *c, const char *path, struct json_t *v, size_t size,
                              gw_jt_entry_fn *fn, void *arg, void **out);

/*
 * gw_jt_err - write "path: message" (path NULL or "": the message alone) into
 * c's errbuf, control characters replaced by '?'.  Returns ERR_INVAL.
 */
int gw_jt_err(struct gw_jt_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* gw_jt_nomem - write "out of memory" into c's errbuf.  Returns ERR_NOMEM. */
int gw_jt_nomem(struct gw_jt_ctx *c);

/* gw_jt_join - "parent.name" (or "name" when parent is "") into out, cut to outlen. */
void gw_jt_join(char *out, size_t outlen, const char *parent, const char *name);

/* gw_jt_index_path - "parent[i]" into out, cut to outlen. */
void gw_jt_index_path(char *out, size_t outlen, const char *parent, size_t i);

/* gw_jt_strlist_free - free a GW_JT_STRLIST value and its strings; NULL is a no-op. */
void gw_jt_strlist_free(char **list);

#endif
