/* gateway/s3/s3xml.c: streaming S3 response parsers on expat (see s3xml.h). */
#define LOG_MODULE "s3xml"
#include "gateway/s3/s3xml.h"

#include <expat.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/codec.h"

/* The text values a parser keeps. */
enum field {
    F_NONE = 0,
    F_KEY,        /* ListBucketResult/Contents/Key, Delete/Object/Key */
    F_TRUNCATED,  /* ListBucketResult/IsTruncated */
    F_NEXT_TOKEN, /* ListBucketResult/NextContinuationToken */
    F_ENCODING,   /* ListBucketResult/EncodingType */
    F_CODE,       /* Error/Code */
    F_MESSAGE,    /* Error/Message */
    F_UPLOAD_ID,  /* InitiateMultipartUploadResult/UploadId */
};

struct gw_s3xml {
    XML_Parser p;            /* owned */
    int err;                 /* sticky first error, 0 while fine */
    size_t max_keys;         /* cap on keys */
    size_t max_bytes;        /* cap on input */
    size_t fed;              /* input bytes so far */
    int depth;               /* current element depth (root = 1) */
    enum gw_s3xml_root root; /* the root element */
    bool in_contents;        /* inside ListBucketResult/Contents or Delete/Object */
    unsigned obj_keys;       /* Key elements in the current Delete/Object */
    enum field cur;          /* the text being captured, F_NONE if none */
    int cur_depth;           /* depth of the element being captured */
    struct buf text;         /* the captured text (cap GW_S3XML_MAX_TEXT) */
    struct buf keys;         /* "key\0key\0..." */
    size_t *key_offs;        /* owned; offset of each key in keys */
    size_t nkeys;            /* keys so far */
    size_t key_alloc;        /* entries allocated in key_offs */
    const char **key_ptrs;   /* owned; built by finish */
    bool truncated;          /* IsTruncated was "true" */
    bool url_encoded;        /* EncodingType was "url" */
    bool finished;           /* finish succeeded */
    char *next_token;        /* owned; NextContinuationToken or NULL */
    char *code;              /* owned; Error/Code or NULL */
    char *message;           /* owned; Error/Message or NULL */
    char *upload_id;         /* owned; InitiateMultipartUploadResult/UploadId or NULL */
};

static void
stop(struct gw_s3xml *x, int err)
{
    if (x->err == 0) {
        x->err = err;
    }
    (void)XML_StopParser(x->p, XML_FALSE);
}

static enum field
field_of(const struct gw_s3xml *x, const char *name)
{
    if (x->root == GW_S3XML_ROOT_LIST) {
        if (x->depth == 3 && x->in_contents && strcmp(name, "Key") == 0) {
            return F_KEY;
        }
        if (x->depth == 2) {
            if (strcmp(name, "IsTruncated") == 0) {
                return F_TRUNCATED;
            }
            if (strcmp(name, "NextContinuationToken") == 0) {
                return F_NEXT_TOKEN;
            }
            if (strcmp(name, "EncodingType") == 0) {
                return F_ENCODING;
            }
        }
    } else if (x->root == GW_S3XML_ROOT_DELETE) {
        if (x->depth == 3 && x->in_contents && strcmp(name, "Key") == 0) {
            return F_KEY;
        }
    } else if (x->root == GW_S3XML_ROOT_INITIATE) {
        if (x->depth == 2 && strcmp(name, "UploadId") == 0) {
            return F_UPLOAD_ID;
        }
    } else if (x->root == GW_S3XML_ROOT_ERROR && x->depth == 2) {
        if (strcmp(name, "Code") == 0) {
            return F_CODE;
        }
        if (strcmp(name, "Message") == 0) {
            return F_MESSAGE;
        }
    }
    return F_NONE;
}

/*
 * delete_element_ok - whether an element of a Delete document is exactly one
 * S3 defines at its place (x->depth already counts it): Delete/Object,
 * Delete/Quiet, Delete/Object/Key (once), Delete/Object/VersionId; no prefix,
 * no attribute but xmlns with S3's namespace.  Anything else would let the
 * upstream read keys the gateway did not (or the reverse).
 */
static bool
delete_element_ok(struct gw_s3xml *x, const char *name, const XML_Char **attrs)
{
    static const char s3ns[] = "http://s3.amazonaws.com/doc/2006-03-01/";
    for (const XML_Char **a = attrs; a != NULL && a[0] != NULL; a += 2) {
        if (strcmp(a[0], "xmlns") != 0 || strcmp(a[1], s3ns) != 0) {
            return false;
        }
    }
    switch (x->depth) {
    case 1:
        return true; /* "Delete", exactly (on_start) */
    case 2:
        return strcmp(name, "Object") == 0 || strcmp(name, "Quiet") == 0;
    case 3:
        if (!x->in_contents) {
            return false; /* nothing inside Quiet */
        }
        if (strcmp(name, "Key") == 0) {
            return ++x->obj_keys == 1;
        }
        return strcmp(name, "VersionId") == 0;
    default:
        return false;
    }
}

/* XML_SetElementHandler (start) */
static void XMLCALL
on_start(void *arg, const XML_Char *name, const XML_Char **attrs)
{
    struct gw_s3xml *x = arg;
    if (x->err != 0) {
        return;
    }
    x->depth++;
    if (x->depth == 1 && strcmp(name, "Delete") == 0) {
        x->root = GW_S3XML_ROOT_DELETE;
    }
    if (x->root == GW_S3XML_ROOT_DELETE && !delete_element_ok(x, name, attrs)) {
        stop(x, ERR_INVAL);
        return;
    }
    if (x->depth == 1) {
        if (strcmp(name, "ListBucketResult") == 0) {
            x->root = GW_S3XML_ROOT_LIST;
        } else if (strcmp(name, "Error") == 0) {
            x->root = GW_S3XML_ROOT_ERROR;
        } else if (strcmp(name, "InitiateMultipartUploadResult") == 0) {
            x->root = GW_S3XML_ROOT_INITIATE;
        } else if (strcmp(name, "Delete") == 0) {
            x->root = GW_S3XML_ROOT_DELETE;
        } else {
            x->root = GW_S3XML_ROOT_OTHER;
        }
        return;
    }
    if (x->depth == 2 && ((x->root == GW_S3XML_ROOT_LIST && strcmp(name, "Contents") == 0) ||
                          (x->root == GW_S3XML_ROOT_DELETE && strcmp(name, "Object") == 0))) {
        x->in_contents = true;
        x->obj_keys = 0;
        return;
    }
    if (x->cur == F_NONE) {
        enum field f = field_of(x, name);
        if (f != F_NONE) {
            x->cur = f;
            x->cur_depth = x->depth;
            buf_reset(&x->text);
        }
    }
}

static int
dup_text(const struct gw_s3xml *x, char **out)
{
    char *s = strdup(buf_cstr(&x->text));
    if (s == NULL) {
        return ERR_NOMEM;
    }
    free(*out);
    *out = s;
    return 0;
}

static int
add_key(struct gw_s3xml *x)
{
    if (x->text.len == 0) {
        return ERR_INVAL; /* S3 keys are never empty */
    }
    if (x->nkeys >= x->max_keys) {
        return ERR_TOOBIG;
    }
    if (x->nkeys == x->key_alloc) {
        size_t n = x->key_alloc == 0 ? 16 : 2 * x->key_alloc;
        size_t *o = realloc(x->key_offs, n * sizeof(*o));
        if (o == NULL) {
            return ERR_NOMEM;
        }
        x->key_offs = o;
        x->key_alloc = n;
    }
    size_t off = x->keys.len;
    int rc = buf_append(&x->keys, x->text.data, x->text.len + 1); /* with its NUL */
    if (rc != 0) {
        return rc;
    }
    x->key_offs[x->nkeys++] = off;
    return 0;
}

/* The captured element ended: keep its value. */
static int
commit(struct gw_s3xml *x)
{
    const char *t = buf_cstr(&x->text);
    switch (x->cur) {
    case F_KEY:
        return add_key(x);
    case F_TRUNCATED:
        if (strcmp(t, "true") == 0) {
            x->truncated = true;
        } else if (strcmp(t, "false") == 0) {
            x->truncated = false;
        } else {
            return ERR_INVAL;
        }
        return 0;
    case F_NEXT_TOKEN:
        return dup_text(x, &x->next_token);
    case F_ENCODING:
        if (strcmp(t, "url") != 0) {
            return ERR_INVAL; /* keys in an encoding we cannot undo */
        }
        x->url_encoded = true;
        return 0;
    case F_CODE:
        return dup_text(x, &x->code);
    case F_MESSAGE:
        return dup_text(x, &x->message);
    case F_UPLOAD_ID:
        if (x->text.len == 0 || strlen(t) != x->text.len) {
            return ERR_INVAL; /* empty, or a NUL inside */
        }
        return dup_text(x, &x->upload_id);
    case F_NONE:
    default:
        return 0;
    }
}

/* XML_SetElementHandler (end) */
static void XMLCALL
on_end(void *arg, const XML_Char *name)
{
    struct gw_s3xml *x = arg;
    (void)name;
    if (x->err != 0) {
        return;
    }
    if (x->cur != F_NONE && x->depth == x->cur_depth) {
        int rc = commit(x);
        x->cur = F_NONE;
        if (rc != 0) {
            stop(x, rc);
            return;
        }
    }
    if (x->depth == 2) {
        if (x->root == GW_S3XML_ROOT_DELETE && x->in_contents && x->obj_keys != 1) {
            stop(x, ERR_INVAL); /* an Object without its Key */
            return;
        }
        x->in_contents = false;
    }
    x->depth--;
}

/* XML_SetCharacterDataHandler */
static void XMLCALL
on_text(void *arg, const XML_Char *s, int len)
{
    struct gw_s3xml *x = arg;
    if (x->err != 0 || x->cur == F_NONE || x->depth != x->cur_depth || len <= 0) {
        return;
    }
    int rc = buf_append(&x->text, s, (size_t)len);
    if (rc != 0) {
        stop(x, rc);
    }
}

/* XML_SetStartDoctypeDeclHandler: S3 never sends a DTD; refusing it rules
 * out entity expansion (billion laughs) and external entities. */
static void XMLCALL
on_doctype(void *arg, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
           int has_internal_subset)
{
    struct gw_s3xml *x = arg;
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    stop(x, ERR_INVAL);
}

struct gw_s3xml *
gw_s3xml_new(size_t max_keys, size_t max_bytes)
{
    struct gw_s3xml *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        return NULL;
    }
    x->max_keys = max_keys;
    x->max_bytes = max_bytes;
    buf_init(&x->text, GW_S3XML_MAX_TEXT);
    size_t cap = max_keys > SIZE_MAX / (GW_S3XML_MAX_TEXT + 1) ? SIZE_MAX
                                                               : max_keys * (GW_S3XML_MAX_TEXT + 1);
    buf_init(&x->keys, cap);
    x->p = XML_ParserCreate("UTF-8");
    if (x->p == NULL) {
        gw_s3xml_free(x);
        return NULL;
    }
    XML_SetUserData(x->p, x);
    XML_SetElementHandler(x->p, on_start, on_end);
    XML_SetCharacterDataHandler(x->p, on_text);
    XML_SetStartDoctypeDeclHandler(x->p, on_doctype);
    return x;
}

void
gw_s3xml_free(struct gw_s3xml *x)
{
    if (x == NULL) {
        return;
    }
    if (x->p != NULL) {
        XML_ParserFree(x->p);
    }
    buf_cleanup(&x->text);
    buf_cleanup(&x->keys);
    free(x->key_offs);
    free(x->key_ptrs);
    free(x->next_token);
    free(x->code);
    free(x->message);
    free(x->upload_id);
    free(x);
}

/* Runs expat over one piece; converts its status. */
static int
parse(struct gw_s3xml *x, const char *data, int len, bool final)
{
    if (XML_Parse(x->p, data, len, final ? XML_TRUE : XML_FALSE) != XML_STATUS_OK) {
        if (x->err == 0) {
            x->err = XML_GetErrorCode(x->p) == XML_ERROR_NO_MEMORY ? ERR_NOMEM : ERR_INVAL;
        }
        return x->err;
    }
    return x->err;
}

int
gw_s3xml_feed(struct gw_s3xml *x, const char *data, size_t len)
{
    if (x->err != 0) {
        return x->err;
    }
    if (x->finished) {
        return x->err = ERR_INVAL;
    }
    if (len > x->max_bytes - x->fed) {
        return x->err = ERR_TOOBIG;
    }
    x->fed += len;
    while (len > 0) {
        int n = len > (size_t)INT_MAX ? INT_MAX : (int)len;
        int rc = parse(x, data, n, false);
        if (rc != 0) {
            return rc;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* EncodingType url: decode every key once ('+' is a space, %XX its byte). */
static int
url_decode_keys(struct gw_s3xml *x)
{
    struct buf out;
    buf_init(&out, x->keys.cap);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < x->nkeys; i++) {
        const char *k = x->keys.data + x->key_offs[i];
        size_t off = out.len;
        for (const char *p = k; rc == 0 && *p != '\0'; p++) {
            char c = *p;
            if (c == '+') {
                c = ' ';
            } else if (c == '%') {
                int hi = hex_digit((unsigned char)p[1]);
                int lo = hi < 0 ? -1 : hex_digit((unsigned char)p[2]);
                if (lo < 0 || (hi == 0 && lo == 0)) {
                    rc = ERR_INVAL; /* bad escape, or a NUL in a key */
                    break;
                }
                c = (char)(hi * 16 + lo);
                p += 2;
            }
            rc = buf_append(&out, &c, 1);
        }
        if (rc == 0) {
            rc = buf_append(&out, "", 1);
        }
        x->key_offs[i] = off;
    }
    if (rc != 0) {
        buf_cleanup(&out);
        return rc;
    }
    buf_cleanup(&x->keys);
    x->keys = out;
    return 0;
}

int
gw_s3xml_finish(struct gw_s3xml *x)
{
    if (x->err != 0 || x->finished) {
        return x->err;
    }
    int rc = parse(x, NULL, 0, true);
    if (rc == 0 && x->url_encoded) {
        rc = url_decode_keys(x);
    }
    if (rc == 0 && x->nkeys > 0) {
        x->key_ptrs = calloc(x->nkeys, sizeof(*x->key_ptrs));
        if (x->key_ptrs == NULL) {
            rc = ERR_NOMEM;
        }
    }
    if (rc != 0) {
        x->err = rc;
        return rc;
    }
    for (size_t i = 0; i < x->nkeys; i++) {
        x->key_ptrs[i] = x->keys.data + x->key_offs[i];
    }
    x->finished = true;
    return 0;
}

enum gw_s3xml_root
gw_s3xml_root(const struct gw_s3xml *x)
{
    return x->root;
}

const char *const *
gw_s3xml_keys(const struct gw_s3xml *x, size_t *n)
{
    if (!x->finished || x->nkeys == 0) {
        *n = 0;
        return NULL;
    }
    *n = x->nkeys;
    return x->key_ptrs;
}

bool
gw_s3xml_truncated(const struct gw_s3xml *x)
{
    return x->truncated;
}

const char *
gw_s3xml_next_token(const struct gw_s3xml *x)
{
    return x->next_token;
}

const char *
gw_s3xml_error_code(const struct gw_s3xml *x)
{
    return x->code;
}

const char *
gw_s3xml_error_message(const struct gw_s3xml *x)
{
    return x->message;
}

const char *
gw_s3xml_upload_id(const struct gw_s3xml *x)
{
    return x->upload_id;
}
