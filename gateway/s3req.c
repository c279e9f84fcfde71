/*
 * gateway/s3req.c: parse and classify S3 requests (see s3req.h for the rules).
 *
 * Operation names follow the S3 API reference
 * (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Operations_Amazon_Simple_Storage_Service.html);
 * the sub-resource that selects each one is given in the enum's comments.
 */
#include "gateway/s3req.h"

#include <string.h>
#include <strings.h>

#include "common/num.h"

#define F_WRITE        0x1u /* changes stored state */
#define F_OBJECT_WRITE 0x2u /* DESIGN.md "Writes": fenced */
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
    [GW_S3_OP_UNKNOWN_WRITE]           = {"UnknownWrite", F_WRITE | F_OBJECT_WRITE | F_BUCKET_WRITE},
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
    [GW_S3_OP_POST_OBJECT]             = {"PostObject", OW},
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
    [GW_S3_OP_RESTORE_OBJECT]          = {"RestoreObject", F_WRITE},
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
    uint64_t bit;     /* GW_S3_Q_* */
};

static const struct qparam qparams[] = {
    {"uploads", GW_S3_Q_UPLOADS},           {"uploadId", GW_S3_Q_UPLOAD_ID},
    {"partNumber", GW_S3_Q_PART_NUMBER},     {"delete", GW_S3_Q_DELETE},
    {"tagging", GW_S3_Q_TAGGING},           {"acl", GW_S3_Q_ACL},
    {"retention", GW_S3_Q_RETENTION},       {"legal-hold", GW_S3_Q_LEGAL_HOLD},
    {"list-type", GW_S3_Q_LIST_TYPE},       {"versionId", GW_S3_Q_VERSION_ID},
    {"versions", GW_S3_Q_VERSIONS},         {"versioning", GW_S3_Q_VERSIONING},
    {"policy", GW_S3_Q_POLICY},             {"lifecycle", GW_S3_Q_LIFECYCLE},
    {"cors", GW_S3_Q_CORS},                 {"location", GW_S3_Q_LOCATION},
    {"encryption", GW_S3_Q_ENCRYPTION},     {"notification", GW_S3_Q_NOTIFICATION},
    {"object-lock", GW_S3_Q_OBJECT_LOCK},   {"website", GW_S3_Q_WEBSITE},
    {"logging", GW_S3_Q_LOGGING},           {"replication", GW_S3_Q_REPLICATION},
    {"ownershipControls", GW_S3_Q_OWNERSHIP_CONTROLS},
    {"publicAccessBlock", GW_S3_Q_PUBLIC_ACCESS_BLOCK},
    {"accelerate", GW_S3_Q_ACCELERATE},     {"requestPayment", GW_S3_Q_REQUEST_PAYMENT},
    {"policyStatus", GW_S3_Q_POLICY_STATUS}, {"analytics", GW_S3_Q_ANALYTICS},
    {"inventory", GW_S3_Q_INVENTORY},       {"metrics", GW_S3_Q_METRICS},
    {"intelligent-tiering", GW_S3_Q_INTELLIGENT_TIERING},
    {"attributes", GW_S3_Q_ATTRIBUTES},     {"restore", GW_S3_Q_RESTORE},
    {"select", GW_S3_Q_SELECT},             {"torrent", GW_S3_Q_TORRENT},
    {"x-id", GW_S3_Q_X_ID},
};

/* Parameters that modify an operation rather than select one. */
#define Q_MODIFIERS (GW_S3_Q_PART_NUMBER | GW_S3_Q_VERSION_ID | GW_S3_Q_X_ID)

/* Operations selected by a sub-resource on a bucket (no key), per method. */
struct bucket_sub {
    uint64_t bit;                        /* the selecting GW_S3_Q_* */
    enum gw_s3_op get, put, del;         /* UNKNOWN(_WRITE): not valid with that method */
    const char *get_name, *put_name, *del_name; /* names for the generic BUCKET_READ/WRITE */
};

#define U  GW_S3_OP_UNKNOWN
#define UW GW_S3_OP_UNKNOWN_WRITE
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

static int
hexval(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/*
 * pct_decode - decode s[0..n) into out (cap bytes plus a NUL; out may be
 * NULL to only check).  plus_space: '+' decodes to ' ' (query strings).
 * [out] outlen  decoded length.
 * Returns 0, ERR_INVAL (a '%' not followed by two hex digits, or %00),
 * ERR_TOOBIG (more than cap bytes).
 */
static int
pct_decode(const char *s, size_t n, bool plus_space, char *out, size_t cap, size_t *outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (n - i < 3) {
                return ERR_INVAL;
            }
            int hi = hexval(s[i + 1]);
            int lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return ERR_INVAL;
            }
            c = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        if (o == cap) {
            return ERR_TOOBIG;
        }
        if (out != NULL) {
            out[o] = c;
        }
        o++;
    }
    if (out != NULL) {
        out[o] = '\0';
    }
    *outlen = o;
    return 0;
}

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

/* gateway_path - a path-style path reserved for the gateway's own API. */
static bool
gateway_path(const char *path)
{
    static const char fg[] = "/_fencegate";
    if (strncmp(path, fg, sizeof(fg) - 1) == 0 &&
        (path[sizeof(fg) - 1] == '\0' || path[sizeof(fg) - 1] == '/')) {
        return true;
    }
    return strcmp(path, "/metrics") == 0 || strcmp(path, "/healthz") == 0 ||
           strcmp(path, "/readyz") == 0;
}

static const struct qparam *
find_qparam(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof(qparams) / sizeof(qparams[0]); i++) {
        if (strlen(qparams[i].name) == len && memcmp(qparams[i].name, name, len) == 0) {
            return &qparams[i];
        }
    }
    return NULL;
}

/*
 * parse_query - set r->query bits and r->part_number; validate every escape.
 * [out] list_v2  list-type had the value "2".
 */
static int
parse_query(const char *q, struct gw_s3req *r, bool *list_v2)
{
    *list_v2 = false;
    if (q == NULL) {
        return 0;
    }
    while (*q != '\0') {
        size_t seg = strcspn(q, "&");
        const char *eq = memchr(q, '=', seg);
        size_t nlen = eq != NULL ? (size_t)(eq - q) : seg;
        const char *val = eq != NULL ? eq + 1 : q + seg;
        size_t vlen = (size_t)(q + seg - val);
        char name[32];
        size_t dn = 0;
        /* names longer than any we know still get their escapes checked */
        int rc = pct_decode(q, nlen, true, name, sizeof(name) - 1, &dn);
        if (rc == ERR_TOOBIG) {
            rc = pct_decode(q, nlen, true, NULL, (size_t)-1, &dn);
            dn = 0;
        }
        if (rc != 0) {
            return ERR_INVAL;
        }
        char value[8];
        size_t dv = 0;
        rc = pct_decode(val, vlen, true, value, sizeof(value) - 1, &dv);
        if (rc == ERR_TOOBIG) {
            rc = pct_decode(val, vlen, true, NULL, (size_t)-1, &dv);
            value[0] = '\0';
            dv = (size_t)-1; /* too long for any value we interpret */
        }
        if (rc != 0) {
            return ERR_INVAL;
        }
        const struct qparam *p = dn > 0 ? find_qparam(name, dn) : NULL;
        if (p != NULL) {
            if ((r->query & p->bit) != 0) {
                return ERR_INVAL; /* repeated: which one would the upstream use? */
            }
            r->query |= p->bit;
            if (p->bit == GW_S3_Q_PART_NUMBER) {
                uint64_t pn = 0;
                if (dv == (size_t)-1 || parse_u64n(value, dv, 1, 10000, &pn) != 0) {
                    return ERR_INVAL;
                }
                r->part_number = (uint32_t)pn;
            } else if (p->bit == GW_S3_Q_LIST_TYPE) {
                *list_v2 = dv == 1 && value[0] == '2';
            }
        }
        q += seg;
        if (*q == '&') {
            q++;
        }
    }
    return 0;
}

static bool
is_read_method(const char *m)
{
    return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 || strcmp(m, "OPTIONS") == 0;
}

static enum gw_s3_op
unknown(const char *method)
{
    return is_read_method(method) ? GW_S3_OP_UNKNOWN : GW_S3_OP_UNKNOWN_WRITE;
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

/* classify_object - an operation on bucket + key; sel: the selecting sub-resource (0: none). */
static enum gw_s3_op
classify_object(const char *m, uint64_t sel, uint64_t q, bool copy)
{
    if (strcmp(m, "GET") == 0) {
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
    if (strcmp(m, "HEAD") == 0) {
        return sel == 0 ? GW_S3_OP_HEAD_OBJECT : GW_S3_OP_UNKNOWN;
    }
    if (strcmp(m, "OPTIONS") == 0) {
        return GW_S3_OP_OPTIONS;
    }
    if (strcmp(m, "PUT") == 0) {
        bool part = (q & GW_S3_Q_PART_NUMBER) != 0;
        switch (sel) {
        case 0:
            if (part) {
                return GW_S3_OP_UNKNOWN_WRITE; /* partNumber without uploadId */
            }
            return copy ? GW_S3_OP_COPY_OBJECT : GW_S3_OP_PUT_OBJECT;
        case GW_S3_Q_UPLOAD_ID:
            if (!part) {
                return GW_S3_OP_UNKNOWN_WRITE;
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
            return GW_S3_OP_UNKNOWN_WRITE;
        }
    }
    if (strcmp(m, "POST") == 0) {
        switch (sel) {
        case GW_S3_Q_UPLOADS:
            return GW_S3_OP_CREATE_MULTIPART;
        case GW_S3_Q_UPLOAD_ID:
            return GW_S3_OP_COMPLETE_MULTIPART;
        case GW_S3_Q_RESTORE:
            return GW_S3_OP_RESTORE_OBJECT;
        case GW_S3_Q_SELECT:
            return GW_S3_OP_SELECT_OBJECT_CONTENT;
        default:
            return GW_S3_OP_UNKNOWN_WRITE;
        }
    }
    if (strcmp(m, "DELETE") == 0) {
        switch (sel) {
        case 0:
            return GW_S3_OP_DELETE_OBJECT;
        case GW_S3_Q_UPLOAD_ID:
            return GW_S3_OP_ABORT_MULTIPART;
        case GW_S3_Q_TAGGING:
            return GW_S3_OP_DELETE_OBJECT_TAGGING;
        default:
            return GW_S3_OP_UNKNOWN_WRITE;
        }
    }
    return GW_S3_OP_UNKNOWN_WRITE;
}

/* classify_bucket - an operation on a bucket (no key); sets *name for generic ops. */
static enum gw_s3_op
classify_bucket(const char *m, uint64_t sel, bool list_v2, const char **name)
{
    if (strcmp(m, "HEAD") == 0) {
        return sel == 0 ? GW_S3_OP_HEAD_BUCKET : GW_S3_OP_UNKNOWN;
    }
    if (strcmp(m, "OPTIONS") == 0) {
        return GW_S3_OP_OPTIONS;
    }
    if (strcmp(m, "POST") == 0) {
        if (sel == GW_S3_Q_DELETE) {
            return GW_S3_OP_DELETE_OBJECTS;
        }
        return sel == 0 ? GW_S3_OP_POST_OBJECT : GW_S3_OP_UNKNOWN_WRITE;
    }
    bool get = strcmp(m, "GET") == 0;
    bool put = strcmp(m, "PUT") == 0;
    bool del = strcmp(m, "DELETE") == 0;
    if (sel == 0) {
        if (get) {
            return GW_S3_OP_LIST_OBJECTS;
        }
        if (put) {
            return GW_S3_OP_CREATE_BUCKET;
        }
        return del ? GW_S3_OP_DELETE_BUCKET : GW_S3_OP_UNKNOWN_WRITE;
    }
    for (size_t i = 0; i < sizeof(bucket_subs) / sizeof(bucket_subs[0]); i++) {
        const struct bucket_sub *b = &bucket_subs[i];
        if (b->bit != sel) {
            continue;
        }
        if (get) {
            if (sel == GW_S3_Q_LIST_TYPE && !list_v2) {
                return GW_S3_OP_LIST_OBJECTS; /* list-type=1 or junk: S3 lists v1 */
            }
            *name = b->get_name;
            return b->get;
        }
        if (put) {
            *name = b->put_name;
            return b->put;
        }
        if (del) {
            *name = b->del_name;
            return b->del;
        }
        return GW_S3_OP_UNKNOWN_WRITE;
    }
    /* an object-only sub-resource (uploadId, retention, ...) on a bucket */
    return get ? GW_S3_OP_UNKNOWN : GW_S3_OP_UNKNOWN_WRITE;
}
#undef UW

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

    if (path[0] != '/') {
        return ERR_INVAL;
    }
    bool list_v2 = false;
    rc = parse_query(in->query, out, &list_v2);
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
        if (gateway_path(path)) {
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
        if (rc != 0) {
            return rc;
        }
    }

    const char *name = NULL;
    uint64_t sel = out->query & ~Q_MODIFIERS;
    enum gw_s3_op op;
    if (nbits(sel) > 1) {
        op = unknown(in->method);
    } else if (out->bucket_len == 0) {
        /* service level: only ListBuckets exists (GET /, any hint such as ?x-id=ListBuckets) */
        op = strcmp(in->method, "GET") == 0 && sel == 0 ? GW_S3_OP_LIST_BUCKETS
                                                        : unknown(in->method);
    } else if (out->key_len > 0) {
        op = classify_object(in->method, sel, out->query, in->copy_source);
    } else {
        op = classify_bucket(in->method, sel, list_v2, &name);
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
