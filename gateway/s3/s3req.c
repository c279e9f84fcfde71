/*
 * gateway/s3/s3req.c: parse and classify S3 requests (see s3req.h for the rules).
 *
 * Operation names follow the S3 API reference
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Operations_Amazon_Simple_Storage_Service.html);
 * the sub-resource that selects each one is given in the enum's comments.
 */
#include "gateway/s3/s3req.h"

#include <string.h>
#include <strings.h>

#include "common/codec.h"
#include "common/num.h"

#define F_WRITE        0x1u /* changes stored state */
#define F_OBJECT_WRITE 0x2u /* DESIGN.md "Request classification": fenced */
#define F_BUCKET_WRITE 0x4u /* bucket-level: refused unless configured */

#define OW (F_WRITE | F_OBJECT_WRITE)
#define BW (F_WRITE | F_BUCKET_WRITE)

struct op_info {
    const char *name; /* S3 API name */
    unsigned flags;   /* F_* */
};

/* clang-format off */
static const struct op_info ops[GW_S3_OP_COUNT] = {
    [GW_S3_OP_UNKNOWN]                 = {"Unknown", 0},
    [GW_S3_OP_GATEWAY_API]             = {"GatewayApi", 0},
    [GW_S3_OP_LIST_BUCKETS]            = {"ListBuckets", 0},
    [GW_S3_OP_GET_OBJECT]              = {"GetObject", 0},
    [GW_S3_OP_HEAD_OBJECT]             = {"HeadObject", 0},
    [GW_S3_OP_GET_OBJECT_TAGGING]      = {"GetObjectTagging", 0},
    [GW_S3_OP_GET_OBJECT_ACL]          = {"GetObjectAcl", 0},
    [GW_S3_OP_GET_OBJECT_RETENTION]    = {"GetObjectRetention", 0},
    [GW_S3_OP_GET_OBJECT_LEGAL_HOLD]   = {"GetObjectLegalHold", 0},
    [GW_S3_OP_GET_OBJECT_ATTRIBUTES]   = {"GetObjectAttributes", 0},
    [GW_S3_OP_GET_OBJECT_TORRENT]      = {"GetObjectTorrent", 0},
    [GW_S3_OP_SELECT_OBJECT_CONTENT]   = {"SelectObjectContent", 0},
    [GW_S3_OP_LIST_PARTS]              = {"ListParts", 0},
    [GW_S3_OP_OPTIONS]                 = {"OptionsObject", 0},
    [GW_S3_OP_PUT_OBJECT]              = {"PutObject", OW},
    [GW_S3_OP_COPY_OBJECT]             = {"CopyObject", OW},
    [GW_S3_OP_CREATE_MULTIPART]        = {"CreateMultipartUpload", OW},
    [GW_S3_OP_UPLOAD_PART]             = {"UploadPart", OW},
    [GW_S3_OP_UPLOAD_PART_COPY]        = {"UploadPartCopy", OW},
    [GW_S3_OP_COMPLETE_MULTIPART]      = {"CompleteMultipartUpload", OW},
    [GW_S3_OP_ABORT_MULTIPART]         = {"AbortMultipartUpload", OW},
    [GW_S3_OP_DELETE_OBJECT]           = {"DeleteObject", OW},
    [GW_S3_OP_DELETE_OBJECTS]          = {"DeleteObjects", OW},
    [GW_S3_OP_PUT_OBJECT_TAGGING]      = {"PutObjectTagging", OW},
    [GW_S3_OP_DELETE_OBJECT_TAGGING]   = {"DeleteObjectTagging", OW},
    [GW_S3_OP_PUT_OBJECT_ACL]          = {"PutObjectAcl", OW},
    [GW_S3_OP_PUT_OBJECT_RETENTION]    = {"PutObjectRetention", OW},
    [GW_S3_OP_PUT_OBJECT_LEGAL_HOLD]   = {"PutObjectLegalHold", OW},
    [GW_S3_OP_RESTORE_OBJECT]          = {"RestoreObject", OW},
    [GW_S3_OP_LIST_OBJECTS]            = {"ListObjects", 0},
    [GW_S3_OP_LIST_OBJECTS_V2]         = {"ListObjectsV2", 0},
    [GW_S3_OP_LIST_OBJECT_VERSIONS]    = {"ListObjectVersions", 0},
    [GW_S3_OP_LIST_MULTIPART_UPLOADS]  = {"ListMultipartUploads", 0},
    [GW_S3_OP_HEAD_BUCKET]             = {"HeadBucket", 0},
    [GW_S3_OP_GET_BUCKET_POLICY]       = {"GetBucketPolicy", 0},
    [GW_S3_OP_GET_BUCKET_LIFECYCLE]    = {"GetBucketLifecycleConfiguration", 0},
    [GW_S3_OP_GET_BUCKET_VERSIONING]   = {"GetBucketVersioning", 0},
    [GW_S3_OP_GET_BUCKET_CORS]         = {"GetBucketCors", 0},
    [GW_S3_OP_GET_BUCKET_TAGGING]      = {"GetBucketTagging", 0},
    [GW_S3_OP_GET_BUCKET_ACL]          = {"GetBucketAcl", 0},
    [GW_S3_OP_GET_BUCKET_LOCATION]     = {"GetBucketLocation", 0},
    [GW_S3_OP_GET_BUCKET_ENCRYPTION]   = {"GetBucketEncryption", 0},
    [GW_S3_OP_GET_BUCKET_NOTIFICATION] = {"GetBucketNotificationConfiguration", 0},
    [GW_S3_OP_GET_OBJECT_LOCK_CONFIG]  = {"GetObjectLockConfiguration", 0},
    [GW_S3_OP_GET_BUCKET_WEBSITE]      = {"GetBucketWebsite", 0},
    [GW_S3_OP_BUCKET_READ]             = {"BucketRead", 0},
    [GW_S3_OP_CREATE_BUCKET]           = {"CreateBucket", BW},
    [GW_S3_OP_DELETE_BUCKET]           = {"DeleteBucket", BW},
    [GW_S3_OP_PUT_BUCKET_POLICY]       = {"PutBucketPolicy", BW},
    [GW_S3_OP_DELETE_BUCKET_POLICY]    = {"DeleteBucketPolicy", BW},
    [GW_S3_OP_PUT_BUCKET_LIFECYCLE]    = {"PutBucketLifecycleConfiguration", BW},
    [GW_S3_OP_DELETE_BUCKET_LIFECYCLE] = {"DeleteBucketLifecycle", BW},
    [GW_S3_OP_PUT_BUCKET_VERSIONING]   = {"PutBucketVersioning", BW},
    [GW_S3_OP_PUT_BUCKET_CORS]         = {"PutBucketCors", BW},
    [GW_S3_OP_DELETE_BUCKET_CORS]      = {"DeleteBucketCors", BW},
    [GW_S3_OP_PUT_BUCKET_TAGGING]      = {"PutBucketTagging", BW},
    [GW_S3_OP_DELETE_BUCKET_TAGGING]   = {"DeleteBucketTagging", BW},
    [GW_S3_OP_PUT_BUCKET_ACL]          = {"PutBucketAcl", BW},
    [GW_S3_OP_PUT_BUCKET_ENCRYPTION]   = {"PutBucketEncryption", BW},
    [GW_S3_OP_DELETE_BUCKET_ENCRYPTION] = {"DeleteBucketEncryption", BW},
    [GW_S3_OP_PUT_BUCKET_NOTIFICATION] = {"PutBucketNotificationConfiguration", BW},
    [GW_S3_OP_PUT_OBJECT_LOCK_CONFIG]  = {"PutObjectLockConfiguration", BW},
    [GW_S3_OP_PUT_BUCKET_WEBSITE]      = {"PutBucketWebsite", BW},
    [GW_S3_OP_DELETE_BUCKET_WEBSITE]   = {"DeleteBucketWebsite", BW},
    [GW_S3_OP_BUCKET_WRITE]            = {"BucketWrite", BW},
};

/* Recognised query parameters. */
struct qparam {
    const char *name; /* as S3 spells it (case-sensitive) */
    size_t len;       /* strlen(name), so a lookup measures nothing */
    uint64_t bit;     /* GW_S3_Q_* */
};

/* NAME(s): a string literal and its length, for the tables below. */
#define NAME(s) s, sizeof(s) - 1

/* Every name starts with a lower-case letter: find_qparam relies on it. */
static const struct qparam qparams[] = {
    {NAME("uploads"), GW_S3_Q_UPLOADS},           {NAME("uploadId"), GW_S3_Q_UPLOAD_ID},
    {NAME("partNumber"), GW_S3_Q_PART_NUMBER},     {NAME("delete"), GW_S3_Q_DELETE},
    {NAME("tagging"), GW_S3_Q_TAGGING},           {NAME("acl"), GW_S3_Q_ACL},
    {NAME("retention"), GW_S3_Q_RETENTION},       {NAME("legal-hold"), GW_S3_Q_LEGAL_HOLD},
    {NAME("list-type"), GW_S3_Q_LIST_TYPE},       {NAME("versionId"), GW_S3_Q_VERSION_ID},
    {NAME("versions"), GW_S3_Q_VERSIONS},         {NAME("versioning"), GW_S3_Q_VERSIONING},
    {NAME("policy"), GW_S3_Q_POLICY},             {NAME("lifecycle"), GW_S3_Q_LIFECYCLE},
    {NAME("cors"), GW_S3_Q_CORS},                 {NAME("location"), GW_S3_Q_LOCATION},
    {NAME("encryption"), GW_S3_Q_ENCRYPTION},     {NAME("notification"), GW_S3_Q_NOTIFICATION},
    {NAME("object-lock"), GW_S3_Q_OBJECT_LOCK},   {NAME("website"), GW_S3_Q_WEBSITE},
    {NAME("logging"), GW_S3_Q_LOGGING},           {NAME("replication"), GW_S3_Q_REPLICATION},
    {NAME("ownershipControls"), GW_S3_Q_OWNERSHIP_CONTROLS},
    {NAME("publicAccessBlock"), GW_S3_Q_PUBLIC_ACCESS_BLOCK},
    {NAME("accelerate"), GW_S3_Q_ACCELERATE},     {NAME("requestPayment"), GW_S3_Q_REQUEST_PAYMENT},
    {NAME("policyStatus"), GW_S3_Q_POLICY_STATUS}, {NAME("analytics"), GW_S3_Q_ANALYTICS},
    {NAME("inventory"), GW_S3_Q_INVENTORY},       {NAME("metrics"), GW_S3_Q_METRICS},
    {NAME("intelligent-tiering"), GW_S3_Q_INTELLIGENT_TIERING},
    {NAME("attributes"), GW_S3_Q_ATTRIBUTES},     {NAME("restore"), GW_S3_Q_RESTORE},
    {NAME("select"), GW_S3_Q_SELECT},             {NAME("torrent"), GW_S3_Q_TORRENT},
    {NAME("x-id"), GW_S3_Q_X_ID},                 {NAME("select-type"), GW_S3_Q_SELECT_TYPE},
    {NAME("id"), GW_S3_Q_ID},
};

/* Authentication parameters a write may carry (presigned URLs: SigV4, SigV2). */
static const struct {
    const char *name;
    size_t len;
} auth_params[] = {
    {NAME("X-Amz-Algorithm")},
    {NAME("X-Amz-Credential")},
    {NAME("X-Amz-Date")},
    {NAME("X-Amz-Expires")},
    {NAME("X-Amz-SignedHeaders")},
    {NAME("X-Amz-Signature")},
    {NAME("X-Amz-Security-Token")},
    {NAME("X-Amz-Content-Sha256")},
    {NAME("AWSAccessKeyId")},
    {NAME("Signature")},
    {NAME("Expires")},
    {NAME("x-amz-security-token")},
};

/* Parameters that modify an operation rather than select one. */
#define Q_MODIFIERS                                                                               \
    (GW_S3_Q_PART_NUMBER | GW_S3_Q_VERSION_ID | GW_S3_Q_X_ID | GW_S3_Q_SELECT_TYPE | GW_S3_Q_ID)

/* Operations selected by a sub-resource on a bucket (no key), per method. */
struct bucket_sub {
    uint64_t bit;                        /* the selecting GW_S3_Q_* */
    enum gw_s3_op get, put, del;         /* UNKNOWN: not valid with that method */
    const char *get_name, *put_name, *del_name; /* names for the generic BUCKET_READ/WRITE */
};

#define U  GW_S3_OP_UNKNOWN
#define UW GW_S3_OP_UNKNOWN
#define BR GW_S3_OP_BUCKET_READ
#define BWR GW_S3_OP_BUCKET_WRITE
static const struct bucket_sub bucket_subs[] = {
    {GW_S3_Q_UPLOADS, GW_S3_OP_LIST_MULTIPART_UPLOADS, UW, UW, NULL, NULL, NULL},
    {GW_S3_Q_VERSIONS, GW_S3_OP_LIST_OBJECT_VERSIONS, UW, UW, NULL, NULL, NULL},
    {GW_S3_Q_LIST_TYPE, GW_S3_OP_LIST_OBJECTS_V2, UW, UW, NULL, NULL, NULL},
    {GW_S3_Q_POLICY, GW_S3_OP_GET_BUCKET_POLICY, GW_S3_OP_PUT_BUCKET_POLICY,
     GW_S3_OP_DELETE_BUCKET_POLICY, NULL, NULL, NULL},
    {GW_S3_Q_LIFECYCLE, GW_S3_OP_GET_BUCKET_LIFECYCLE, GW_S3_OP_PUT_BUCKET_LIFECYCLE,
     GW_S3_OP_DELETE_BUCKET_LIFECYCLE, NULL, NULL, NULL},
    {GW_S3_Q_VERSIONING, GW_S3_OP_GET_BUCKET_VERSIONING, GW_S3_OP_PUT_BUCKET_VERSIONING, UW,
     NULL, NULL, NULL},
    {GW_S3_Q_CORS, GW_S3_OP_GET_BUCKET_CORS, GW_S3_OP_PUT_BUCKET_CORS,
     GW_S3_OP_DELETE_BUCKET_CORS, NULL, NULL, NULL},
    {GW_S3_Q_TAGGING, GW_S3_OP_GET_BUCKET_TAGGING, GW_S3_OP_PUT_BUCKET_TAGGING,
     GW_S3_OP_DELETE_BUCKET_TAGGING, NULL, NULL, NULL},
    {GW_S3_Q_ACL, GW_S3_OP_GET_BUCKET_ACL, GW_S3_OP_PUT_BUCKET_ACL, UW, NULL, NULL, NULL},
    {GW_S3_Q_LOCATION, GW_S3_OP_GET_BUCKET_LOCATION, UW, UW, NULL, NULL, NULL},
    {GW_S3_Q_ENCRYPTION, GW_S3_OP_GET_BUCKET_ENCRYPTION, GW_S3_OP_PUT_BUCKET_ENCRYPTION,
     GW_S3_OP_DELETE_BUCKET_ENCRYPTION, NULL, NULL, NULL},
    {GW_S3_Q_NOTIFICATION, GW_S3_OP_GET_BUCKET_NOTIFICATION, GW_S3_OP_PUT_BUCKET_NOTIFICATION,
     UW, NULL, NULL, NULL},
    {GW_S3_Q_OBJECT_LOCK, GW_S3_OP_GET_OBJECT_LOCK_CONFIG, GW_S3_OP_PUT_OBJECT_LOCK_CONFIG, UW,
     NULL, NULL, NULL},
    {GW_S3_Q_WEBSITE, GW_S3_OP_GET_BUCKET_WEBSITE, GW_S3_OP_PUT_BUCKET_WEBSITE,
     GW_S3_OP_DELETE_BUCKET_WEBSITE, NULL, NULL, NULL},
    {GW_S3_Q_LOGGING, BR, BWR, UW, "GetBucketLogging", "PutBucketLogging", NULL},
    {GW_S3_Q_REPLICATION, BR, BWR, BWR, "GetBucketReplication", "PutBucketReplication",
     "DeleteBucketReplication"},
    {GW_S3_Q_OWNERSHIP_CONTROLS, BR, BWR, BWR, "GetBucketOwnershipControls",
     "PutBucketOwnershipControls", "DeleteBucketOwnershipControls"},
    {GW_S3_Q_PUBLIC_ACCESS_BLOCK, BR, BWR, BWR, "GetPublicAccessBlock", "PutPublicAccessBlock",
     "DeletePublicAccessBlock"},
    {GW_S3_Q_ACCELERATE, BR, BWR, UW, "GetBucketAccelerateConfiguration",
     "PutBucketAccelerateConfiguration", NULL},
    {GW_S3_Q_REQUEST_PAYMENT, BR, BWR, UW, "GetBucketRequestPayment", "PutBucketRequestPayment",
     NULL},
    {GW_S3_Q_POLICY_STATUS, BR, UW, UW, "GetBucketPolicyStatus", NULL, NULL},
    {GW_S3_Q_ANALYTICS, BR, BWR, BWR, "GetBucketAnalyticsConfiguration",
     "PutBucketAnalyticsConfiguration", "DeleteBucketAnalyticsConfiguration"},
    {GW_S3_Q_INVENTORY, BR, BWR, BWR, "GetBucketInventoryConfiguration",
     "PutBucketInventoryConfiguration", "DeleteBucketInventoryConfiguration"},
    {GW_S3_Q_METRICS, BR, BWR, BWR, "GetBucketMetricsConfiguration",
     "PutBucketMetricsConfiguration", "DeleteBucketMetricsConfiguration"},
    {GW_S3_Q_INTELLIGENT_TIERING, BR, BWR, BWR, "GetBucketIntelligentTieringConfiguration",
     "PutBucketIntelligentTieringConfiguration", "DeleteBucketIntelligentTieringConfiguration"},
};
/* clang-format on */
#undef U
#undef BR
#undef BWR

/* ---- percent-decoding: the one place (DESIGN.md "One key, one meaning") ---- */

/* ---- pieces ---- */

static bool
valid_bucket(const char *s, size_t n)
{
    if (n == 0 || n > GW_S3_MAX_BUCKET) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-' || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

/*
 * virtual_bucket - if host is "<bucket>.<domain>" for the longest matching
 * domain, set *blen to the length of the bucket part at host[0] and return
 * true.  host: port stripped, one trailing dot ignored, compared ignoring case.
 */
static bool
virtual_bucket(const char *host, char *const *domains, size_t *blen)
{
    if (host == NULL || domains == NULL || host[0] == '[') {
        return false; /* IPv6 literals are never virtual-hosted */
    }
    size_t hlen = strlen(host);
    const char *colon = memchr(host, ':', hlen);
    if (colon != NULL) {
        hlen = (size_t)(colon - host);
    }
    if (hlen > 0 && host[hlen - 1] == '.') {
        hlen--;
    }
    size_t best = 0;
    bool found = false;
    for (char *const *d = domains; *d != NULL; d++) {
        size_t dlen = strlen(*d);
        if (dlen == 0 || hlen < dlen + 2 || host[hlen - dlen - 1] != '.') {
            continue;
        }
        if (strncasecmp(host + hlen - dlen, *d, dlen) != 0) {
            continue;
        }
        if (!found || dlen > best) {
            best = dlen;
            found = true;
        }
    }
    if (found) {
        *blen = hlen - best - 1;
    }
    return found;
}

/* gateway_path - a path-style path reserved for the gateway's own API (and, unless
 * operator_paths_s3, its operator endpoints). */
static bool
gateway_path(const char *path, bool operator_paths_s3)
{
    static const char fg[] = "/_fencegate";
    if (strncmp(path, fg, sizeof(fg) - 1) == 0 &&
        (path[sizeof(fg) - 1] == '\0' || path[sizeof(fg) - 1] == '/')) {
        return true;
    }
    return !operator_paths_s3 && (strcmp(path, "/metrics") == 0 || strcmp(path, "/healthz") == 0 ||
                                  strcmp(path, "/readyz") == 0);
}

/* same_name - s[0..n) is name[0..len), exactly or (icase) ignoring ASCII case. */
static bool
same_name(const char *name, size_t len, const char *s, size_t n, bool icase)
{
    return len == n && (icase ? strncasecmp(name, s, n) : memcmp(name, s, n)) == 0;
}

static const struct qparam *
find_qparam(const char *name, size_t len, bool icase)
{
    if (!icase && (len == 0 || name[0] < 'a' || name[0] > 'z')) {
        return NULL; /* every name starts with a lower-case letter; a presigned URL's
                        X-Amz-* parameters need no scan */
    }
    for (size_t i = 0; i < sizeof(qparams) / sizeof(qparams[0]); i++) {
        if (same_name(qparams[i].name, qparams[i].len, name, len, icase)) {
            return &qparams[i];
        }
    }
    return NULL;
}

static bool
is_auth_param(const char *name, size_t len, bool icase)
{
    for (size_t i = 0; i < sizeof(auth_params) / sizeof(auth_params[0]); i++) {
        if (same_name(auth_params[i].name, auth_params[i].len, name, len, icase)) {
            return true;
        }
    }
    return false;
}

/*
 * is_hoisted_header - an x-amz-* header carried in the query, as presigners do
 * (the AWS SDK for JavaScript v3 puts x-amz-checksum-crc32 and
 * x-amz-sdk-checksum-algorithm there; botocore x-amz-meta-*).  They select no
 * operation, so a write may carry them; except x-amz-copy-source*, which would
 * turn a PutObject or UploadPart into a copy whose source nobody checked, and
 * an authentication parameter spelled in another case ("x-amz-signature").
 */
static bool
is_hoisted_header(const char *name, size_t len)
{
    if (is_auth_param(name, len, true)) {
        return false;
    }
    static const char amz[] = "x-amz-";
    static const char copy[] = "x-amz-copy-source";
    if (len <= sizeof(amz) - 1 || strncasecmp(name, amz, sizeof(amz) - 1) != 0) {
        return false;
    }
    return len < sizeof(copy) - 1 || strncasecmp(name, copy, sizeof(copy) - 1) != 0;
}

/* What the query says beyond its GW_S3_Q_* bits (writes are judged on it). */
struct qinfo {
    bool list_v2;    /* list-type=2 */
    bool select2;    /* select-type=2 */
    bool unknown;    /* a parameter neither recognised nor an authentication one */
    bool folded;     /* ... of which one matches a known name ignoring case ("Delete") */
    bool eq_in_name; /* a decoded name holding '=' ("delete%3D"): S3 and RGW split it apart */
};

/*
 * decode_field - percent-decode s[0..n) ('+' is a space) into out (cap bytes
 * with its NUL); a field too long for out is still checked and gives
 * *outlen SIZE_MAX and out "".  Returns 0 or ERR_INVAL.
 */
static int
decode_field(const char *s, size_t n, char *out, size_t cap, size_t *outlen)
{
    if (n >= cap) { /* it may not fit (a presigned URL's credential and signature do
                       not): checked and measured in one pass, then decoded if it does */
        int rc = pct_decode(s, n, true, NULL, SIZE_MAX, outlen);
        if (rc != 0) {
            return rc;
        }
        if (*outlen >= cap) {
            out[0] = '\0';
            *outlen = SIZE_MAX;
            return 0;
        }
    }
    return pct_decode(s, n, true, out, cap - 1, outlen);
}

/* note_param - record one decoded parameter (name[0..dn), value[0..dv)). */
static int
note_param(const char *name, size_t dn, const char *value, size_t dv, struct gw_s3req *r,
           struct qinfo *qi)
{
    const struct qparam *p = dn != SIZE_MAX ? find_qparam(name, dn, false) : NULL;
    if (p == NULL) {
        if (dn == SIZE_MAX || (!is_auth_param(name, dn, false) && !is_hoisted_header(name, dn))) {
            qi->unknown = true;
            qi->folded = qi->folded || (dn != SIZE_MAX && (find_qparam(name, dn, true) != NULL ||
                                                           is_auth_param(name, dn, true)));
        }
        return 0;
    }
    if ((r->query & p->bit) != 0) {
        return ERR_INVAL; /* repeated: which one would the upstream use? */
    }
    r->query |= p->bit;
    if (p->bit == GW_S3_Q_PART_NUMBER) {
        uint64_t pn = 0;
        if (dv == SIZE_MAX || parse_u64n(value, dv, 1, 10000, &pn) != 0) {
            return ERR_INVAL;
        }
        r->part_number = (uint32_t)pn;
    } else if (p->bit == GW_S3_Q_LIST_TYPE) {
        qi->list_v2 = dv == 1 && value[0] == '2';
    } else if (p->bit == GW_S3_Q_SELECT_TYPE) {
        qi->select2 = dv == 1 && value[0] == '2';
    }
    return 0;
}

/*
 * parse_query - set r->query bits, r->part_number and *qi; validate every
 * escape.  A name is read as RGW reads it: up to the first '=' of the
 * decoded parameter; one that held an encoded '=' is flagged (qi->eq_in_name).
 */
static int
parse_query(const char *q, struct gw_s3req *r, struct qinfo *qi)
{
    memset(qi, 0, sizeof(*qi));
    if (q == NULL) {
        return 0;
    }
    while (*q != '\0') {
        size_t seg = strcspn(q, "&");
        if (seg > 0) {
            const char *eq = memchr(q, '=', seg);
            size_t nlen = eq != NULL ? (size_t)(eq - q) : seg;
            const char *val = eq != NULL ? eq + 1 : q + seg;
            char name[64];
            char value[8];
            size_t dn = 0;
            size_t dv = 0;
            if (decode_field(q, nlen, name, sizeof(name), &dn) != 0 ||
                decode_field(val, (size_t)(q + seg - val), value, sizeof(value), &dv) != 0) {
                return ERR_INVAL;
            }
            const char *in_name = dn != SIZE_MAX ? memchr(name, '=', dn) : NULL;
            if (in_name != NULL) {
                qi->eq_in_name = true;
                dn = (size_t)(in_name - name);
            }
            int rc = note_param(name, dn, value, dv, r, qi);
            if (rc != 0) {
                return rc;
            }
        }
        q += seg;
        if (*q == '&') {
            q++;
        }
    }
    return 0;
}

enum method { M_OTHER, M_GET, M_HEAD, M_OPTIONS, M_PUT, M_POST, M_DELETE };

static enum method
method_of(const char *m)
{
    static const struct {
        const char *name;
        enum method m;
    } methods[] = {
        {"GET", M_GET}, {"HEAD", M_HEAD}, {"OPTIONS", M_OPTIONS},
        {"PUT", M_PUT}, {"POST", M_POST}, {"DELETE", M_DELETE},
    };
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (strcmp(m, methods[i].name) == 0) {
            return methods[i].m;
        }
    }
    return M_OTHER;
}

/* popcount of a small mask, portable */
static unsigned
nbits(uint64_t v)
{
    unsigned n = 0;
    while (v != 0) {
        v &= v - 1;
        n++;
    }
    return n;
}

/* classify_object_read - a read on bucket + key; sel: the selecting sub-resource (0: none). */
static enum gw_s3_op
classify_object_read(enum method m, uint64_t sel)
{
    if (m == M_OPTIONS) {
        return GW_S3_OP_OPTIONS;
    }
    if (m == M_HEAD) {
        return sel == 0 ? GW_S3_OP_HEAD_OBJECT : GW_S3_OP_UNKNOWN;
    }
    switch (sel) {
    case 0:
        return GW_S3_OP_GET_OBJECT;
    case GW_S3_Q_UPLOAD_ID:
        return GW_S3_OP_LIST_PARTS;
    case GW_S3_Q_TAGGING:
        return GW_S3_OP_GET_OBJECT_TAGGING;
    case GW_S3_Q_ACL:
        return GW_S3_OP_GET_OBJECT_ACL;
    case GW_S3_Q_RETENTION:
        return GW_S3_OP_GET_OBJECT_RETENTION;
    case GW_S3_Q_LEGAL_HOLD:
        return GW_S3_OP_GET_OBJECT_LEGAL_HOLD;
    case GW_S3_Q_ATTRIBUTES:
        return GW_S3_OP_GET_OBJECT_ATTRIBUTES;
    case GW_S3_Q_TORRENT:
        return GW_S3_OP_GET_OBJECT_TORRENT;
    default:
        return GW_S3_OP_UNKNOWN;
    }
}

/* classify_object_write - a write on bucket + key; UNKNOWN when none is named. */
static enum gw_s3_op
classify_object_write(enum method m, uint64_t sel, uint64_t q, bool copy)
{
    bool part = (q & GW_S3_Q_PART_NUMBER) != 0;
    if (m == M_PUT) {
        switch (sel) {
        case 0:
            if (part) {
                return GW_S3_OP_UNKNOWN; /* partNumber without uploadId */
            }
            return copy ? GW_S3_OP_COPY_OBJECT : GW_S3_OP_PUT_OBJECT;
        case GW_S3_Q_UPLOAD_ID:
            if (!part) {
                return GW_S3_OP_UNKNOWN;
            }
            return copy ? GW_S3_OP_UPLOAD_PART_COPY : GW_S3_OP_UPLOAD_PART;
        case GW_S3_Q_TAGGING:
            return GW_S3_OP_PUT_OBJECT_TAGGING;
        case GW_S3_Q_ACL:
            return GW_S3_OP_PUT_OBJECT_ACL;
        case GW_S3_Q_RETENTION:
            return GW_S3_OP_PUT_OBJECT_RETENTION;
        case GW_S3_Q_LEGAL_HOLD:
            return GW_S3_OP_PUT_OBJECT_LEGAL_HOLD;
        default:
            return GW_S3_OP_UNKNOWN;
        }
    }
    if (m == M_POST) {
        switch (sel) {
        case GW_S3_Q_UPLOADS:
            return GW_S3_OP_CREATE_MULTIPART;
        case GW_S3_Q_UPLOAD_ID:
            return GW_S3_OP_COMPLETE_MULTIPART;
        case GW_S3_Q_RESTORE:
            return GW_S3_OP_RESTORE_OBJECT;
        default:
            return GW_S3_OP_UNKNOWN;
        }
    }
    switch (sel) { /* DELETE */
    case 0:
        return GW_S3_OP_DELETE_OBJECT;
    case GW_S3_Q_UPLOAD_ID:
        return GW_S3_OP_ABORT_MULTIPART;
    case GW_S3_Q_TAGGING:
        return GW_S3_OP_DELETE_OBJECT_TAGGING;
    default:
        return GW_S3_OP_UNKNOWN;
    }
}

/* classify_bucket - an operation on a bucket (no key); sets *name for generic ops. */
static enum gw_s3_op
classify_bucket(enum method m, uint64_t sel, bool list_v2, const char **name)
{
    if (m == M_HEAD) {
        return sel == 0 ? GW_S3_OP_HEAD_BUCKET : GW_S3_OP_UNKNOWN;
    }
    if (m == M_OPTIONS) {
        return GW_S3_OP_OPTIONS;
    }
    if (m == M_POST) {
        return sel == GW_S3_Q_DELETE ? GW_S3_OP_DELETE_OBJECTS : GW_S3_OP_UNKNOWN;
    }
    if (sel == 0) {
        return m == M_GET   ? GW_S3_OP_LIST_OBJECTS
               : m == M_PUT ? GW_S3_OP_CREATE_BUCKET
                            : GW_S3_OP_DELETE_BUCKET;
    }
    for (size_t i = 0; i < sizeof(bucket_subs) / sizeof(bucket_subs[0]); i++) {
        const struct bucket_sub *b = &bucket_subs[i];
        if (b->bit != sel) {
            continue;
        }
        if (m == M_GET) {
            if (sel == GW_S3_Q_LIST_TYPE && !list_v2) {
                return GW_S3_OP_LIST_OBJECTS; /* list-type=1 or junk: S3 lists v1 */
            }
            *name = b->get_name;
            return b->get;
        }
        *name = m == M_PUT ? b->put_name : b->del_name;
        return m == M_PUT ? b->put : b->del;
    }
    return GW_S3_OP_UNKNOWN; /* an object-only sub-resource (uploadId, retention, ...) */
}
#undef UW

static int
refuse(struct gw_s3req *r, int rc, int status, const char *code, const char *msg)
{
    r->refuse_status = status;
    r->refuse_code = code;
    r->refuse_msg = msg;
    return rc;
}

/* form_upload - a Content-Type naming a multipart body (a browser form upload). */
static bool
form_upload(const char *ct)
{
    static const char mp[] = "multipart";
    for (const char *p = ct; p != NULL && *p != '\0'; p++) {
        if (strncasecmp(p, mp, sizeof(mp) - 1) == 0) {
            return true;
        }
    }
    return false;
}

/* The refusals of a write's query (strict: every parameter known, exactly). */
static int
check_write_query(struct gw_s3req *r, const struct qinfo *qi)
{
    if (qi->eq_in_name) {
        return refuse(r, ERR_DENIED, 400, "InvalidArgument",
                      "A query parameter's name holds an encoded '=' (S3 and the upstream would "
                      "read it differently); the write was not forwarded.");
    }
    if (qi->folded) {
        return refuse(r, ERR_DENIED, 400, "InvalidArgument",
                      "A query parameter matches a sub-resource only ignoring case (sub-resources "
                      "are case-sensitive); the write was not forwarded.");
    }
    if (qi->unknown) {
        return refuse(r, ERR_DENIED, 400, "InvalidArgument",
                      "A write may carry only known sub-resources, modifiers (partNumber, "
                      "uploadId, versionId, x-id, id) and presigned-URL parameters; the write was "
                      "not forwarded.");
    }
    if (nbits(r->query & ~Q_MODIFIERS) > 1) {
        return refuse(r, ERR_DENIED, 400, "InvalidRequest",
                      "The query names more than one operation (several sub-resources); the "
                      "write was not forwarded.");
    }
    if (r->bucket_len == 0) {
        return refuse(r, ERR_DENIED, 400, "InvalidRequest",
                      "Service-level writes are not accepted: a write names a bucket.");
    }
    return 0;
}

/*
 * classify - the operation of a parsed request (bucket, key and query done).
 * Returns 0 with *op and *name, or ERR_DENIED with r->refuse_* set.
 */
static int
classify(const struct gw_s3req_in *in, struct gw_s3req *r, const struct qinfo *qi,
         enum gw_s3_op *op, const char **name)
{
    enum method m = method_of(in->method);
    uint64_t sel = r->query & ~Q_MODIFIERS;
    *op = GW_S3_OP_UNKNOWN;
    if (m == M_OTHER) {
        return refuse(r, ERR_DENIED, 405, "MethodNotAllowed",
                      "The specified method is not allowed against this resource (GET, HEAD, "
                      "PUT, POST, DELETE, OPTIONS only).");
    }
    if (in->method_override) {
        return refuse(r, ERR_DENIED, 400, "InvalidRequest",
                      "Method-override headers (X-HTTP-Method-Override, X-HTTP-Method, "
                      "X-Method-Override) are not accepted.");
    }
    if (m == M_POST && form_upload(in->content_type)) {
        return refuse(r, ERR_DENIED, 501, "NotImplemented",
                      "Browser POST form uploads (multipart/form-data) are not supported by this "
                      "gateway: their key is a form field it does not fence.");
    }
    if (m == M_GET || m == M_HEAD || m == M_OPTIONS) {
        if (r->bucket_len == 0) {
            *op = m == M_GET && sel == 0 ? GW_S3_OP_LIST_BUCKETS : GW_S3_OP_UNKNOWN;
        } else if (nbits(sel) > 1) {
            *op = GW_S3_OP_UNKNOWN;
        } else if (r->key_len > 0) {
            *op = classify_object_read(m, sel);
        } else {
            *op = classify_bucket(m, sel, qi->list_v2, name);
        }
        return 0;
    }
    if (m == M_POST && r->key_len > 0 && sel == GW_S3_Q_SELECT && qi->select2) {
        *op = GW_S3_OP_SELECT_OBJECT_CONTENT; /* the one POST that reads */
        return 0;
    }
    int rc = check_write_query(r, qi);
    if (rc != 0) {
        return rc;
    }
    if (r->key_len > 0) {
        *op = classify_object_write(m, sel, r->query, in->copy_source);
    } else {
        *op = classify_bucket(m, sel, qi->list_v2, name);
    }
    if (*op != GW_S3_OP_UNKNOWN) {
        return 0;
    }
    if (m == M_POST && (r->key_len > 0 || sel == 0)) {
        return refuse(r, ERR_DENIED, 501, "NotImplemented",
                      "This POST names no operation the gateway knows (a browser form upload?); "
                      "it is not supported and was not forwarded.");
    }
    return refuse(r, ERR_DENIED, 400, "InvalidRequest",
                  "This sub-resource names no operation with this method at this level; the "
                  "write was not forwarded.");
}

/* ---- public ---- */

int
gw_s3req_parse(const struct gw_s3req_in *in, struct gw_s3req *out)
{
    const char *path = in->path;
    size_t plen = strlen(path);
    size_t blen = 0;
    int rc;

    memset(out, 0, offsetof(struct gw_s3req, bucket));
    out->bucket[0] = '\0';
    out->bucket_len = 0;
    out->key[0] = '\0';
    out->key_len = 0;
    out->raw_key_off = plen;
    out->query = 0;
    out->part_number = 0;
    out->name = ops[GW_S3_OP_UNKNOWN].name;
    (void)refuse(out, 0, 400, "InvalidURI", "Couldn't parse the specified URI.");

    if (path[0] != '/') {
        return ERR_INVAL;
    }
    struct qinfo qi;
    rc = parse_query(in->query, out, &qi);
    if (rc != 0) {
        return rc;
    }

    if (virtual_bucket(in->host, in->virtual_host_domains, &blen)) {
        out->style = GW_S3_STYLE_VIRTUAL;
        if (!valid_bucket(in->host, blen)) {
            return ERR_INVAL;
        }
        for (size_t i = 0; i < blen; i++) {
            char c = in->host[i];
            out->bucket[i] = (char)((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
        }
        out->bucket[blen] = '\0';
        out->bucket_len = blen;
        out->raw_key_off = 1;
    } else {
        out->style = GW_S3_STYLE_PATH;
        if (gateway_path(path, in->operator_paths_s3)) {
            out->op = GW_S3_OP_GATEWAY_API;
            out->name = ops[GW_S3_OP_GATEWAY_API].name;
            return 0;
        }
        const char *seg = path + 1;
        size_t slen = strcspn(seg, "/");
        if (slen > 0) {
            size_t dn = 0;
            rc = pct_decode(seg, slen, false, out->bucket, GW_S3_MAX_BUCKET, &dn);
            if (rc != 0 || !valid_bucket(out->bucket, dn)) {
                return ERR_INVAL;
            }
            out->bucket_len = dn;
            out->raw_key_off = seg[slen] == '/' ? 1 + slen + 1 : plen;
        } else if (seg[0] == '/') {
            return ERR_INVAL; /* "//key": an empty bucket name */
        }
    }
    if (out->raw_key_off < plen) {
        rc = pct_decode(path + out->raw_key_off, plen - out->raw_key_off, false, out->key,
                        GW_S3_MAX_KEY, &out->key_len);
        if (rc == ERR_TOOBIG) {
            out->key[0] = '\0';
            out->key_len = 0;
            return refuse(out, rc, 400, "KeyTooLongError", "Your key is too long.");
        }
        if (rc != 0) {
            return rc;
        }
    }

    const char *name = NULL;
    enum gw_s3_op op = GW_S3_OP_UNKNOWN;
    rc = classify(in, out, &qi, &op, &name);
    if (rc != 0) {
        return rc;
    }
    out->op = op;
    out->name = name != NULL ? name : ops[op].name;
    out->write = (ops[op].flags & F_WRITE) != 0;
    out->object_write = (ops[op].flags & F_OBJECT_WRITE) != 0;
    out->bucket_write = (ops[op].flags & F_BUCKET_WRITE) != 0;
    return 0;
}

void
gw_s3req_cleanup(struct gw_s3req *r)
{
    if (r != NULL) {
        memset(r, 0, sizeof(*r));
    }
}

const char *
gw_s3_op_name(enum gw_s3_op op)
{
    if ((unsigned)op >= GW_S3_OP_COUNT) {
        return "Unknown";
    }
    return ops[op].name;
}

bool
gw_s3_op_is_write(enum gw_s3_op op)
{
    return (unsigned)op < GW_S3_OP_COUNT && (ops[op].flags & F_WRITE) != 0;
}

bool
gw_s3_op_is_object_write(enum gw_s3_op op)
{
    return (unsigned)op < GW_S3_OP_COUNT && (ops[op].flags & F_OBJECT_WRITE) != 0;
}

bool
gw_s3_op_is_bucket_write(enum gw_s3_op op)
{
    return (unsigned)op < GW_S3_OP_COUNT && (ops[op].flags & F_BUCKET_WRITE) != 0;
}

int
gw_s3req_query_get(const char *raw_query, const char *name, char *out, size_t outlen)
{
    if (raw_query == NULL || outlen == 0) {
        return raw_query == NULL ? ERR_NOTFOUND : ERR_TOOBIG;
    }
    size_t want = strlen(name);
    const char *q = raw_query;
    while (*q != '\0') {
        size_t seg = strcspn(q, "&");
        const char *eq = memchr(q, '=', seg);
        size_t nlen = eq != NULL ? (size_t)(eq - q) : seg;
        char dname[256];
        size_t dn = 0;
        int rc = pct_decode(q, nlen, true, dname, sizeof(dname) - 1, &dn);
        if (rc == 0 && dn == want && memcmp(dname, name, dn) == 0) {
            const char *val = eq != NULL ? eq + 1 : q + seg;
            size_t dv = 0;
            return pct_decode(val, (size_t)(q + seg - val), true, out, outlen - 1, &dv);
        }
        q += seg;
        if (*q == '&') {
            q++;
        }
    }
    return ERR_NOTFOUND;
}
