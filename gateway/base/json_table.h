/*
 * gateway/base/json_table.h: a table-driven reader of JSON objects into C structs
 * (STYLE R9, Redis's createIntConfig idea).  A table of field descriptors
 * ({name, type, offset, min, max, default}) describes one JSON object;
 * gw_json_table_walk() applies it: unknown keys, wrong types and out-of-range values
 * fail naming the full key path ("upstream.regoin: unknown key"), absent keys
 * get their defaults.  What a table cannot say (arrays of objects, cross-field
 * rules) is the caller's, through GW_JSON_TABLE_CUSTOM fields and the path helpers.
 *
 * Used by gateway/base/config.c.  No global state; any thread.  Errors are one
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

#include "common/buf.h"
#include "common/err.h"

struct json_t; /* jansson's json_t */

#define GW_JSON_TABLE_MAX_PATH 256 /* key paths in error messages are cut here */

/* Field types understood by gw_json_table_walk(). */
enum gw_json_table_type {
    GW_JSON_TABLE_STR,     /* char *, owned copy */
    GW_JSON_TABLE_BOOL,    /* bool */
    GW_JSON_TABLE_U32,     /* uint32_t, JSON integer in [min, max] */
    GW_JSON_TABLE_U64,     /* uint64_t, JSON integer in [min, max] */
    GW_JSON_TABLE_ENUM,    /* an enum stored as int; JSON string from choices */
    GW_JSON_TABLE_STRLIST, /* char **, NULL-terminated owned array of owned strings */
    GW_JSON_TABLE_CUSTOM, /* handled by field.custom, which is also called with NULL when the key is
                           * absent
                           */
};

#define GW_JSON_TABLE_REQUIRED 0x1u /* absence is an error */
#define GW_JSON_TABLE_SCRATCH  0x2u /* offset is into the scratch struct, not the target */

/* Where errors go. */
struct gw_json_table_ctx {
    char *errbuf;       /* borrowed; the one error line (may be NULL) */
    size_t errlen;      /* size of errbuf */
    struct buf *inputs; /* borrowed, may be NULL: what a load read besides its text (each
                           secret file's path and bytes), for gw_config_same_source */
};

/* One JSON spelling of a GW_JSON_TABLE_ENUM value. */
struct gw_json_table_choice {
    const char *name; /* JSON spelling */
    int value;        /* stored value */
};

/*
 * A GW_JSON_TABLE_CUSTOM handler: parse v (NULL when the key is absent) found at path
 * into dst (the field's base + offset).  Returns 0, or ERR_* with the error
 * line written through gw_json_table_err()/gw_json_table_nomem().
 */
typedef int gw_json_table_custom_fn(struct gw_json_table_ctx *c, const char *path, struct json_t *v,
                                    void *dst);

/*
 * One table row.  The member order is fixed: gateway/base/config.c builds rows with
 * positional initialisers.
 */
struct gw_json_table_field {
    const char *name;             /* JSON key */
    enum gw_json_table_type type; /* how the value is read */
    unsigned flags;               /* GW_JSON_TABLE_REQUIRED, GW_JSON_TABLE_SCRATCH */
    size_t offset; /* where it is stored, from base (or scratch with GW_JSON_TABLE_SCRATCH) */
    uint64_t min;  /* GW_JSON_TABLE_U32/U64: smallest value; GW_JSON_TABLE_STR: shortest length */
    uint64_t
        max; /* GW_JSON_TABLE_U32/U64: largest value; GW_JSON_TABLE_STR: longest length (0: 4096) */
    uint64_t def;     /* GW_JSON_TABLE_BOOL/U32/U64/ENUM: value when absent */
    const char *sdef; /* GW_JSON_TABLE_STR: value when absent (copied), or NULL */
    bool (*valid)(
        const char *s);    /* GW_JSON_TABLE_STR/STRLIST: extra check of each string, or NULL */
    const char *valid_msg; /* what valid() wants, for the error message */
    const struct gw_json_table_choice *choices; /* GW_JSON_TABLE_ENUM: NULL-name-terminated */
    gw_json_table_custom_fn *custom;            /* GW_JSON_TABLE_CUSTOM: the handler */
};

#define GW_JSON_TABLE_NFIELDS(t) (sizeof(t) / sizeof((t)[0]))

/*
 * gw_json_table_walk - apply the table fields[0..n) (n <= 64) to the JSON object obj
 * (NULL: apply every default).
 * [in]  base     values land at base + offset
 * [in]  scratch  GW_JSON_TABLE_SCRATCH fields land at scratch + offset (may be NULL
 *                when the table has none)
 * [out] seen     bit i set when fields[i] was present, or NULL
 * Returns 0, or ERR_INVAL/ERR_NOMEM with errbuf set.  Values stored before a
 * failure stay in base/scratch for their owner to free.
 */
MUST_USE int gw_json_table_walk(struct gw_json_table_ctx *c, const char *path, struct json_t *obj,
                                const struct gw_json_table_field *fields, size_t n, void *base,
                                void *scratch, uint64_t *seen);

/*
 * One element of an array of objects: parse v (element i of the array at
 * path; ipath is "path[i]") into entry i of entries, the block being built.
 * [in] arg  gw_json_table_walk_array's arg
 * Returns 0 or ERR_* with errbuf set.
 */
typedef int gw_json_table_entry_fn(struct gw_json_table_ctx *c, const char *path, const char *ipath,
                                   size_t i, struct json_t *v, void *entries, void *arg);

/*
 * gw_json_table_walk_array - an optional array of objects: v (NULL: absent) must be
 * an array; absent or [] leaves *out NULL.  Otherwise *out gets calloc(n,
 * size) (owned by the caller, also on failure) and fn parses each element in
 * order; fn should count its entry before parsing it, so the caller can free a
 * partly built one.
 * Returns 0, ERR_INVAL (not an array, or fn's) or ERR_NOMEM, with errbuf set.
 */
MUST_USE int gw_json_table_walk_array(struct gw_json_table_ctx *c, const char *path,
                                      struct json_t *v, size_t size, gw_json_table_entry_fn *fn,
                                      void *arg, void **out);

/*
 * gw_json_table_err - write "path: message" (path NULL or "": the message alone) into
 * c's errbuf, control characters replaced by '?'.  Returns ERR_INVAL.
 */
int gw_json_table_err(struct gw_json_table_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* gw_json_table_nomem - write "out of memory" into c's errbuf.  Returns ERR_NOMEM. */
int gw_json_table_nomem(struct gw_json_table_ctx *c);

/* gw_json_table_join - "parent.name" (or "name" when parent is "") into out, cut to outlen. */
void gw_json_table_join(char *out, size_t outlen, const char *parent, const char *name);

/* gw_json_table_index_path - "parent[i]" into out, cut to outlen. */
void gw_json_table_index_path(char *out, size_t outlen, const char *parent, size_t i);

/* gw_json_table_strlist_free - free a GW_JSON_TABLE_STRLIST value and its strings; NULL is a no-op.
 */
void gw_json_table_strlist_free(char **list);

#endif
