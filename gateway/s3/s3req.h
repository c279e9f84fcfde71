/*
 * gateway/s3/s3req.h: the S3 request model.
 *
 * Turns a request's method, raw path, raw query and Host header into the
 * bucket, the key and the S3 operation, and says whether the operation
 * writes.  This is the ONE place where the path is percent-decoded (DESIGN.md
 * "One key, one meaning"): the fence rules, the signer and the audit all use
 * the key decoded here.  Nothing is normalised: "a/../b" and "a//b" are keys
 * of their own, as they are to S3.
 *
 * Addressing: when the Host (port stripped, compared case-insensitively) is
 * "<bucket>.<domain>" for one of the configured virtual_host_domains (the
 * longest matching domain wins), the request is virtual-hosted and the whole
 * path is the key; the bucket, taken from a host name, is lower-cased because
 * DNS names are case-insensitive.  Otherwise it is path style: "/bucket/key".
 *
 * Classification rules (fail closed, DESIGN.md "Request classification: fail
 * closed"): a request is either a read, or a write that names exactly one
 * known operation and its keys; anything else is refused (ERR_DENIED, with
 * the status, S3 code and message in refuse_*) and must never be forwarded.
 *  - Methods: GET, HEAD, OPTIONS (reads) and PUT, POST, DELETE (writes),
 *    case-sensitive; anything else is 405 MethodNotAllowed.  A method-override
 *    header (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override) is 400.
 *  - The query is read as RGW reads it (RGWHTTPArgs::parse): each '&'-separated
 *    parameter is percent-decoded ('+' is a space), then split at its first
 *    '='; sub-resources are matched case-sensitively.  S3 splits before
 *    decoding; the two differ only when a name holds an encoded '='.
 *  - Reads (GET/HEAD/OPTIONS, and POST ?select&select-type=2 on an object)
 *    pass with unknown parameters, which S3 ignores; a read the table cannot
 *    name is GW_S3_OP_UNKNOWN.
 *  - Writes are strict, 400 for: a parameter that is neither a sub-resource
 *    nor a known modifier or authentication parameter (partNumber, uploadId,
 *    versionId, x-id, id, select-type, X-Amz-* presign parameters, SigV2's AWSAccessKeyId/
 *    Signature/Expires); a name that matches a known one only ignoring case
 *    ("?Delete"); a decoded name holding '=' ("?delete%3D"); a set of
 *    sub-resources that does not name exactly one operation at this level
 *    ("?delete&uploads", "PUT /b?policy&acl", "PUT /b?uploadId=1"); a
 *    service-level write ("POST /").  So DeleteObjects is recognised whatever
 *    comes with "delete": exactly "POST /b?delete" (plus modifiers) is
 *    DeleteObjects, every other write carrying "delete" is refused.
 *  - Any POST whose Content-Type names a multipart body ("multipart" anywhere,
 *    any case: a browser form upload, whose key is a form field), POST /bucket
 *    without a sub-resource and a POST on an object without a known operation
 *    are 501 NotImplemented.
 *  - A recognised sub-resource given twice ("?uploadId=a&uploadId=b") is
 *    ERR_INVAL: the gateway and the upstream could pick different ones.
 *  - The request itself decides, never botocore's "x-id" hint.
 *  - RestoreObject is fenced like an object write (it acts on its key).
 *
 * Gateway paths: in path style, a request whose first path segment is exactly
 * "_fencegate", or whose whole path is exactly "/metrics", "/healthz" or
 * "/readyz", is GW_S3_OP_GATEWAY_API (compared on the raw bytes, before
 * decoding).  So a bucket named "metrics" can still be used path-style with a
 * key ("/metrics/k") but not listed as "GET /metrics"; virtual-hosted
 * requests are never gateway paths.  Gateway paths are recognised before the
 * rules above (the gateway's API checks its own methods) and never forwarded.
 *
 * Pure functions, no allocation; any thread.
 */
#ifndef GW_S3REQ_H
#define GW_S3REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define GW_S3_MAX_KEY    1024 /* longest decoded key, in bytes (S3's limit) */
#define GW_S3_MAX_BUCKET 255  /* longest bucket name (S3's legacy limit) */

enum gw_s3_op {
    GW_S3_OP_UNKNOWN = 0, /* a read (GET/HEAD/OPTIONS) the table does not name; for a
                             refused request (ERR_DENIED) the op is UNKNOWN too */
    GW_S3_OP_GATEWAY_API, /* /_fencegate/..., /metrics, /healthz, /readyz */

    /* service */
    GW_S3_OP_LIST_BUCKETS, /* GET / */

    /* object reads */
    GW_S3_OP_GET_OBJECT,            /* GET /b/k */
    GW_S3_OP_HEAD_OBJECT,           /* HEAD /b/k */
    GW_S3_OP_GET_OBJECT_TAGGING,    /* GET /b/k?tagging */
    GW_S3_OP_GET_OBJECT_ACL,        /* GET /b/k?acl */
    GW_S3_OP_GET_OBJECT_RETENTION,  /* GET /b/k?retention */
    GW_S3_OP_GET_OBJECT_LEGAL_HOLD, /* GET /b/k?legal-hold */
    GW_S3_OP_GET_OBJECT_ATTRIBUTES, /* GET /b/k?attributes */
    GW_S3_OP_GET_OBJECT_TORRENT,    /* GET /b/k?torrent */
    GW_S3_OP_SELECT_OBJECT_CONTENT, /* POST /b/k?select&select-type=2 (reads only) */
    GW_S3_OP_LIST_PARTS,            /* GET /b/k?uploadId=U */
    GW_S3_OP_OPTIONS,               /* OPTIONS /b[/k]: CORS preflight */

    /* object writes (DESIGN.md "Request classification"): fenced */
    GW_S3_OP_PUT_OBJECT,            /* PUT /b/k */
    GW_S3_OP_COPY_OBJECT,           /* PUT /b/k + x-amz-copy-source */
    GW_S3_OP_CREATE_MULTIPART,      /* POST /b/k?uploads */
    GW_S3_OP_UPLOAD_PART,           /* PUT /b/k?partNumber=N&uploadId=U */
    GW_S3_OP_UPLOAD_PART_COPY,      /* the same + x-amz-copy-source */
    GW_S3_OP_COMPLETE_MULTIPART,    /* POST /b/k?uploadId=U */
    GW_S3_OP_ABORT_MULTIPART,       /* DELETE /b/k?uploadId=U */
    GW_S3_OP_DELETE_OBJECT,         /* DELETE /b/k[?versionId=V] */
    GW_S3_OP_DELETE_OBJECTS,        /* POST /b?delete (keys in the body) */
    GW_S3_OP_PUT_OBJECT_TAGGING,    /* PUT /b/k?tagging */
    GW_S3_OP_DELETE_OBJECT_TAGGING, /* DELETE /b/k?tagging */
    GW_S3_OP_PUT_OBJECT_ACL,        /* PUT /b/k?acl */
    GW_S3_OP_PUT_OBJECT_RETENTION,  /* PUT /b/k?retention */
    GW_S3_OP_PUT_OBJECT_LEGAL_HOLD, /* PUT /b/k?legal-hold */

    GW_S3_OP_RESTORE_OBJECT, /* POST /b/k?restore */

    /* bucket reads */
    GW_S3_OP_LIST_OBJECTS,            /* GET /b */
    GW_S3_OP_LIST_OBJECTS_V2,         /* GET /b?list-type=2 */
    GW_S3_OP_LIST_OBJECT_VERSIONS,    /* GET /b?versions */
    GW_S3_OP_LIST_MULTIPART_UPLOADS,  /* GET /b?uploads */
    GW_S3_OP_HEAD_BUCKET,             /* HEAD /b */
    GW_S3_OP_GET_BUCKET_POLICY,       /* GET /b?policy */
    GW_S3_OP_GET_BUCKET_LIFECYCLE,    /* GET /b?lifecycle */
    GW_S3_OP_GET_BUCKET_VERSIONING,   /* GET /b?versioning */
    GW_S3_OP_GET_BUCKET_CORS,         /* GET /b?cors */
    GW_S3_OP_GET_BUCKET_TAGGING,      /* GET /b?tagging */
    GW_S3_OP_GET_BUCKET_ACL,          /* GET /b?acl */
    GW_S3_OP_GET_BUCKET_LOCATION,     /* GET /b?location */
    GW_S3_OP_GET_BUCKET_ENCRYPTION,   /* GET /b?encryption */
    GW_S3_OP_GET_BUCKET_NOTIFICATION, /* GET /b?notification */
    GW_S3_OP_GET_OBJECT_LOCK_CONFIG,  /* GET /b?object-lock */
    GW_S3_OP_GET_BUCKET_WEBSITE,      /* GET /b?website */
    GW_S3_OP_BUCKET_READ,             /* any other bucket configuration read (name says which) */

    /* bucket writes: refused unless fencing.allow_bucket_writes */
    GW_S3_OP_CREATE_BUCKET,            /* PUT /b */
    GW_S3_OP_DELETE_BUCKET,            /* DELETE /b */
    GW_S3_OP_PUT_BUCKET_POLICY,        /* PUT /b?policy */
    GW_S3_OP_DELETE_BUCKET_POLICY,     /* DELETE /b?policy */
    GW_S3_OP_PUT_BUCKET_LIFECYCLE,     /* PUT /b?lifecycle */
    GW_S3_OP_DELETE_BUCKET_LIFECYCLE,  /* DELETE /b?lifecycle */
    GW_S3_OP_PUT_BUCKET_VERSIONING,    /* PUT /b?versioning */
    GW_S3_OP_PUT_BUCKET_CORS,          /* PUT /b?cors */
    GW_S3_OP_DELETE_BUCKET_CORS,       /* DELETE /b?cors */
    GW_S3_OP_PUT_BUCKET_TAGGING,       /* PUT /b?tagging */
    GW_S3_OP_DELETE_BUCKET_TAGGING,    /* DELETE /b?tagging */
    GW_S3_OP_PUT_BUCKET_ACL,           /* PUT /b?acl */
    GW_S3_OP_PUT_BUCKET_ENCRYPTION,    /* PUT /b?encryption */
    GW_S3_OP_DELETE_BUCKET_ENCRYPTION, /* DELETE /b?encryption */
    GW_S3_OP_PUT_BUCKET_NOTIFICATION,  /* PUT /b?notification */
    GW_S3_OP_PUT_OBJECT_LOCK_CONFIG,   /* PUT /b?object-lock */
    GW_S3_OP_PUT_BUCKET_WEBSITE,       /* PUT /b?website */
    GW_S3_OP_DELETE_BUCKET_WEBSITE,    /* DELETE /b?website */
    GW_S3_OP_BUCKET_WRITE,             /* any other bucket configuration write (name says which) */

    GW_S3_OP_COUNT /* number of operations, not one */
};

enum gw_s3_style {
    GW_S3_STYLE_PATH = 0,    /* /bucket/key */
    GW_S3_STYLE_VIRTUAL = 1, /* Host: bucket.<domain>, path /key */
};

/* Query parameters the model recognises (struct gw_s3req.query bits). */
#define GW_S3_Q_UPLOADS             (UINT64_C(1) << 0)  /* uploads */
#define GW_S3_Q_UPLOAD_ID           (UINT64_C(1) << 1)  /* uploadId */
#define GW_S3_Q_PART_NUMBER         (UINT64_C(1) << 2)  /* partNumber (modifier) */
#define GW_S3_Q_DELETE              (UINT64_C(1) << 3)  /* delete */
#define GW_S3_Q_TAGGING             (UINT64_C(1) << 4)  /* tagging */
#define GW_S3_Q_ACL                 (UINT64_C(1) << 5)  /* acl */
#define GW_S3_Q_RETENTION           (UINT64_C(1) << 6)  /* retention */
#define GW_S3_Q_LEGAL_HOLD          (UINT64_C(1) << 7)  /* legal-hold */
#define GW_S3_Q_LIST_TYPE           (UINT64_C(1) << 8)  /* list-type */
#define GW_S3_Q_VERSION_ID          (UINT64_C(1) << 9)  /* versionId (modifier) */
#define GW_S3_Q_VERSIONS            (UINT64_C(1) << 10) /* versions */
#define GW_S3_Q_VERSIONING          (UINT64_C(1) << 11) /* versioning */
#define GW_S3_Q_POLICY              (UINT64_C(1) << 12) /* policy */
#define GW_S3_Q_LIFECYCLE           (UINT64_C(1) << 13) /* lifecycle */
#define GW_S3_Q_CORS                (UINT64_C(1) << 14) /* cors */
#define GW_S3_Q_LOCATION            (UINT64_C(1) << 15) /* location */
#define GW_S3_Q_ENCRYPTION          (UINT64_C(1) << 16) /* encryption */
#define GW_S3_Q_NOTIFICATION        (UINT64_C(1) << 17) /* notification */
#define GW_S3_Q_OBJECT_LOCK         (UINT64_C(1) << 18) /* object-lock */
#define GW_S3_Q_WEBSITE             (UINT64_C(1) << 19) /* website */
#define GW_S3_Q_LOGGING             (UINT64_C(1) << 20) /* logging */
#define GW_S3_Q_REPLICATION         (UINT64_C(1) << 21) /* replication */
#define GW_S3_Q_OWNERSHIP_CONTROLS  (UINT64_C(1) << 22) /* ownershipControls */
#define GW_S3_Q_PUBLIC_ACCESS_BLOCK (UINT64_C(1) << 23) /* publicAccessBlock */
#define GW_S3_Q_ACCELERATE          (UINT64_C(1) << 24) /* accelerate */
#define GW_S3_Q_REQUEST_PAYMENT     (UINT64_C(1) << 25) /* requestPayment */
#define GW_S3_Q_POLICY_STATUS       (UINT64_C(1) << 26) /* policyStatus */
#define GW_S3_Q_ANALYTICS           (UINT64_C(1) << 27) /* analytics */
#define GW_S3_Q_INVENTORY           (UINT64_C(1) << 28) /* inventory */
#define GW_S3_Q_METRICS             (UINT64_C(1) << 29) /* metrics */
#define GW_S3_Q_INTELLIGENT_TIERING (UINT64_C(1) << 30) /* intelligent-tiering */
#define GW_S3_Q_ATTRIBUTES          (UINT64_C(1) << 31) /* attributes */
#define GW_S3_Q_RESTORE             (UINT64_C(1) << 32) /* restore */
#define GW_S3_Q_SELECT              (UINT64_C(1) << 33) /* select */
#define GW_S3_Q_TORRENT             (UINT64_C(1) << 34) /* torrent */
#define GW_S3_Q_X_ID                (UINT64_C(1) << 35) /* x-id: an SDK hint, ignored */
#define GW_S3_Q_SELECT_TYPE         (UINT64_C(1) << 36) /* select-type (modifier) */
#define GW_S3_Q_ID                  (UINT64_C(1) << 37) /* id: a bucket configuration's id */

/* What to parse.  Every pointer is borrowed for the call only. */
struct gw_s3req_in {
    const char *method; /* as sent, case-sensitive ("GET"; "get" is not GET) */
    const char *path;   /* raw request path before '?', not decoded; must start with '/' */
    const char *query;  /* raw query after '?', not decoded; "" or NULL for none */
    const char *host;   /* Host header value, or NULL */
    char *const *virtual_host_domains; /* NULL-terminated (gw_config.virtual_host_domains) or
                                          NULL: virtual-hosted style is then never used */
    bool copy_source;                  /* the request carries x-amz-copy-source */
    const char *content_type;          /* the Content-Type header, or NULL */
    bool method_override;              /* a method-override header is present */
    bool operator_paths_s3;            /* /metrics, /healthz and /readyz are S3 paths here (an
                                          S3 listener of a gateway with admin_listen): a bucket
                                          may be named so; false: they are the gateway's */
};

/*
 * The parsed request.  Self-contained (fixed buffers, no pointers into the
 * input except name, which is static): embed it in the request context.
 */
struct gw_s3req {
    enum gw_s3_op op;                  /* the operation */
    const char *name;                  /* static S3 API name ("PutObject"); for BUCKET_READ/
                                          BUCKET_WRITE the precise one ("GetBucketLogging") */
    enum gw_s3_style style;            /* how the bucket was addressed */
    bool write;                        /* changes anything (gw_s3_op_is_write) */
    bool object_write;                 /* fenced object write (gw_s3_op_is_object_write) */
    bool bucket_write;                 /* bucket-level write (gw_s3_op_is_bucket_write) */
    char bucket[GW_S3_MAX_BUCKET + 1]; /* decoded bucket, "" when none (ListBuckets, gateway) */
    size_t bucket_len;                 /* strlen(bucket) */
    char key[GW_S3_MAX_KEY + 1];       /* decoded key, exactly as S3 will store it; "" if none */
    size_t key_len;                    /* strlen(key): decoded NULs are refused */
    size_t raw_key_off;                /* the raw (still encoded) key is in->path + raw_key_off,
                                          to its end; equals strlen(in->path) when no key */
    uint64_t query;                    /* GW_S3_Q_* bits present in the query */
    uint32_t part_number;              /* partNumber (1..10000) when present, else 0 */
    int refuse_status;                 /* when gw_s3req_parse failed: the HTTP status */
    const char *refuse_code;           /* ... the static S3 <Code> */
    const char *refuse_msg;            /* ... the static <Message> */
};

/*
 * gw_s3req_parse - parse and classify one request.
 * [in] in    the request (borrowed for the call).
 * [out] out  filled on success; on failure its contents are unspecified.
 * Returns 0: a read, or a write naming exactly one operation (out->op, its
 * bucket and key: non-empty bucket; non-empty key for an object write other
 * than DeleteObjects).  On failure out->refuse_* say how to answer, and
 * nothing may be forwarded: ERR_INVAL for a path not starting with '/', an
 * invalid or NUL percent-escape (path or query), an invalid bucket name
 * (outside [A-Za-z0-9._-]{1,255}, from path or Host), a repeated recognised
 * query parameter, or a partNumber outside 1..10000 (400 InvalidURI or
 * InvalidArgument); ERR_TOOBIG for a decoded key longer than GW_S3_MAX_KEY
 * (400 KeyTooLongError); ERR_DENIED for a request refused by the rules above
 * (405, 400 or 501; bucket and key are then filled when the path gave them,
 * for the audit record).
 */
MUST_USE int gw_s3req_parse(const struct gw_s3req_in *in, struct gw_s3req *out);

/* gw_s3req_cleanup - reset r (it owns no heap memory; this wipes the key).  NULL-safe. */
void gw_s3req_cleanup(struct gw_s3req *r);

/* gw_s3_op_name - the S3 API name of op ("PutObject"), static; "Unknown" for out-of-range. */
const char *gw_s3_op_name(enum gw_s3_op op);

/* gw_s3_op_is_write - op may change stored state (objects, buckets or their settings). */
bool gw_s3_op_is_write(enum gw_s3_op op);

/* gw_s3_op_is_object_write - op is a fenced object write (DESIGN.md "Request
 * classification") or RestoreObject. */
bool gw_s3_op_is_object_write(enum gw_s3_op op);

/* gw_s3_op_is_bucket_write - op is a bucket-level write. */
bool gw_s3_op_is_bucket_write(enum gw_s3_op op);

/*
 * gw_s3req_query_get - the decoded value of the first query parameter whose
 * decoded name is name ("uploadId").  A parameter without '=' has the value "".
 * [in] raw_query  the raw query (after '?'), or NULL.
 * [out] out       outlen bytes; on success the NUL-terminated value.
 * Returns 0; ERR_NOTFOUND when absent; ERR_INVAL for an invalid or NUL
 * escape in that parameter; ERR_TOOBIG when the value and its NUL do not fit.
 */
MUST_USE int gw_s3req_query_get(const char *raw_query, const char *name, char *out, size_t outlen);

#endif
