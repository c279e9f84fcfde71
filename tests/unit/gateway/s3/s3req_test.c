/*
 * tests/unit/gateway/s3/s3req_test.c: the S3 request model.  Every operation in
 * the table is classified from a request shaped as boto3 / the aws cli send
 * it; keys are decoded once and never normalised; bad escapes, over-long keys
 * and ambiguous queries are refused; virtual-hosted addressing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/s3/s3req.h"

static char domain0[] = "s3.example.com";
static char *const domains[] = {domain0, NULL};

/* parse - split target at '?' and parse it with the given Host and copy-source flag. */
static int
parse(const char *method, const char *target, const char *host, bool copy, struct gw_s3req *r)
{
    static char path[8192];
    const char *q = strchr(target, '?');
    size_t plen = q != NULL ? (size_t)(q - target) : strlen(target);
    assert_true(plen < sizeof(path));
    memcpy(path, target, plen);
    path[plen] = '\0';
    struct gw_s3req_in in = {
        .method = method,
        .path = path,
        .query = q != NULL ? q + 1 : "",
        .host = host,
        .virtual_host_domains = domains,
        .copy_source = copy,
    };
    return gw_s3req_parse(&in, r);
}

struct op_case {
    const char *method;
    const char *target;
    bool copy;
    enum gw_s3_op op;
    const char *name; /* expected r.name */
};

#define C(m, t, op, name)                                                                          \
    {                                                                                              \
        m, t, false, op, name                                                                      \
    }
#define CC(m, t, op, name)                                                                         \
    {                                                                                              \
        m, t, true, op, name                                                                       \
    }

/* Path style, as boto3 (addressing_style=path) and the aws cli send them. */
static const struct op_case op_cases[] = {
    C("GET", "/", GW_S3_OP_LIST_BUCKETS, "ListBuckets"),
    C("GET", "/?x-id=ListBuckets", GW_S3_OP_LIST_BUCKETS, "ListBuckets"),
    C("GET", "/b/k", GW_S3_OP_GET_OBJECT, "GetObject"),
    C("GET", "/b/k?partNumber=1", GW_S3_OP_GET_OBJECT, "GetObject"),
    C("GET", "/b/k?versionId=3HL4kqtJlcpXroDTDmJ%2BrmSpXd3dIbrHY", GW_S3_OP_GET_OBJECT,
      "GetObject"),
    C("GET", "/b/k?response-content-type=text%2Fplain&x-id=GetObject", GW_S3_OP_GET_OBJECT,
      "GetObject"),
    C("HEAD", "/b/k", GW_S3_OP_HEAD_OBJECT, "HeadObject"),
    C("HEAD", "/b/k?partNumber=2", GW_S3_OP_HEAD_OBJECT, "HeadObject"),
    C("GET", "/b/k?tagging", GW_S3_OP_GET_OBJECT_TAGGING, "GetObjectTagging"),
    C("GET", "/b/k?acl", GW_S3_OP_GET_OBJECT_ACL, "GetObjectAcl"),
    C("GET", "/b/k?retention", GW_S3_OP_GET_OBJECT_RETENTION, "GetObjectRetention"),
    C("GET", "/b/k?legal-hold", GW_S3_OP_GET_OBJECT_LEGAL_HOLD, "GetObjectLegalHold"),
    C("GET", "/b/k?attributes", GW_S3_OP_GET_OBJECT_ATTRIBUTES, "GetObjectAttributes"),
    C("GET", "/b/k?torrent", GW_S3_OP_GET_OBJECT_TORRENT, "GetObjectTorrent"),
    C("POST", "/b/k?select&select-type=2", GW_S3_OP_SELECT_OBJECT_CONTENT, "SelectObjectContent"),
    C("GET", "/b/k?uploadId=2~abc&max-parts=1000", GW_S3_OP_LIST_PARTS, "ListParts"),
    C("OPTIONS", "/b/k", GW_S3_OP_OPTIONS, "OptionsObject"),
    C("OPTIONS", "/b", GW_S3_OP_OPTIONS, "OptionsObject"),
    C("PUT", "/b/k", GW_S3_OP_PUT_OBJECT, "PutObject"),
    C("PUT", "/b/k?x-id=PutObject", GW_S3_OP_PUT_OBJECT, "PutObject"),
    CC("PUT", "/b/k", GW_S3_OP_COPY_OBJECT, "CopyObject"),
    CC("PUT", "/b/k?x-id=CopyObject", GW_S3_OP_COPY_OBJECT, "CopyObject"),
    C("POST", "/b/k?uploads", GW_S3_OP_CREATE_MULTIPART, "CreateMultipartUpload"),
    C("POST", "/b/k?uploads=&x-id=CreateMultipartUpload", GW_S3_OP_CREATE_MULTIPART,
      "CreateMultipartUpload"),
    C("PUT", "/b/k?partNumber=1&uploadId=x", GW_S3_OP_UPLOAD_PART, "UploadPart"),
    C("PUT", "/b/k?uploadId=x&partNumber=10000&x-id=UploadPart", GW_S3_OP_UPLOAD_PART,
      "UploadPart"),
    CC("PUT", "/b/k?partNumber=3&uploadId=x", GW_S3_OP_UPLOAD_PART_COPY, "UploadPartCopy"),
    C("POST", "/b/k?uploadId=x", GW_S3_OP_COMPLETE_MULTIPART, "CompleteMultipartUpload"),
    C("DELETE", "/b/k?uploadId=x", GW_S3_OP_ABORT_MULTIPART, "AbortMultipartUpload"),
    C("DELETE", "/b/k", GW_S3_OP_DELETE_OBJECT, "DeleteObject"),
    C("DELETE", "/b/k?versionId=v1", GW_S3_OP_DELETE_OBJECT, "DeleteObject"),
    C("POST", "/b?delete", GW_S3_OP_DELETE_OBJECTS, "DeleteObjects"),
    C("POST", "/b?delete=", GW_S3_OP_DELETE_OBJECTS, "DeleteObjects"),
    C("PUT", "/b/k?tagging", GW_S3_OP_PUT_OBJECT_TAGGING, "PutObjectTagging"),
    C("PUT", "/b/k?tagging&versionId=v1", GW_S3_OP_PUT_OBJECT_TAGGING, "PutObjectTagging"),
    C("DELETE", "/b/k?tagging", GW_S3_OP_DELETE_OBJECT_TAGGING, "DeleteObjectTagging"),
    C("PUT", "/b/k?acl", GW_S3_OP_PUT_OBJECT_ACL, "PutObjectAcl"),
    C("PUT", "/b/k?retention", GW_S3_OP_PUT_OBJECT_RETENTION, "PutObjectRetention"),
    C("PUT", "/b/k?legal-hold", GW_S3_OP_PUT_OBJECT_LEGAL_HOLD, "PutObjectLegalHold"),
    C("POST", "/b/k?restore", GW_S3_OP_RESTORE_OBJECT, "RestoreObject"),
    C("GET", "/b", GW_S3_OP_LIST_OBJECTS, "ListObjects"),
    C("GET", "/b/", GW_S3_OP_LIST_OBJECTS, "ListObjects"),
    C("GET", "/b?prefix=a&delimiter=%2F&max-keys=1000&encoding-type=url", GW_S3_OP_LIST_OBJECTS,
      "ListObjects"),
    C("GET", "/b?list-type=1", GW_S3_OP_LIST_OBJECTS, "ListObjects"),
    C("GET", "/b?list-type=2&prefix=..&encoding-type=url", GW_S3_OP_LIST_OBJECTS_V2,
      "ListObjectsV2"),
    C("GET", "/b?list-type=2&prefix=orders%2F&start-after=orders%2Fepoch-1",
      GW_S3_OP_LIST_OBJECTS_V2, "ListObjectsV2"),
    C("GET", "/b?versions&prefix=a", GW_S3_OP_LIST_OBJECT_VERSIONS, "ListObjectVersions"),
    C("GET", "/b?uploads", GW_S3_OP_LIST_MULTIPART_UPLOADS, "ListMultipartUploads"),
    C("HEAD", "/b", GW_S3_OP_HEAD_BUCKET, "HeadBucket"),
    C("PUT", "/b", GW_S3_OP_CREATE_BUCKET, "CreateBucket"),
    C("DELETE", "/b", GW_S3_OP_DELETE_BUCKET, "DeleteBucket"),
    C("GET", "/b?policy", GW_S3_OP_GET_BUCKET_POLICY, "GetBucketPolicy"),
    C("PUT", "/b?policy", GW_S3_OP_PUT_BUCKET_POLICY, "PutBucketPolicy"),
    C("DELETE", "/b?policy", GW_S3_OP_DELETE_BUCKET_POLICY, "DeleteBucketPolicy"),
    C("GET", "/b?lifecycle", GW_S3_OP_GET_BUCKET_LIFECYCLE, "GetBucketLifecycleConfiguration"),
    C("PUT", "/b?lifecycle", GW_S3_OP_PUT_BUCKET_LIFECYCLE, "PutBucketLifecycleConfiguration"),
    C("DELETE", "/b?lifecycle", GW_S3_OP_DELETE_BUCKET_LIFECYCLE, "DeleteBucketLifecycle"),
    C("GET", "/b?versioning", GW_S3_OP_GET_BUCKET_VERSIONING, "GetBucketVersioning"),
    C("PUT", "/b?versioning", GW_S3_OP_PUT_BUCKET_VERSIONING, "PutBucketVersioning"),
    C("GET", "/b?cors", GW_S3_OP_GET_BUCKET_CORS, "GetBucketCors"),
    C("PUT", "/b?cors", GW_S3_OP_PUT_BUCKET_CORS, "PutBucketCors"),
    C("DELETE", "/b?cors", GW_S3_OP_DELETE_BUCKET_CORS, "DeleteBucketCors"),
    C("GET", "/b?tagging", GW_S3_OP_GET_BUCKET_TAGGING, "GetBucketTagging"),
    C("PUT", "/b?tagging", GW_S3_OP_PUT_BUCKET_TAGGING, "PutBucketTagging"),
    C("DELETE", "/b?tagging", GW_S3_OP_DELETE_BUCKET_TAGGING, "DeleteBucketTagging"),
    C("GET", "/b?acl", GW_S3_OP_GET_BUCKET_ACL, "GetBucketAcl"),
    C("PUT", "/b?acl", GW_S3_OP_PUT_BUCKET_ACL, "PutBucketAcl"),
    C("GET", "/b?location", GW_S3_OP_GET_BUCKET_LOCATION, "GetBucketLocation"),
    C("GET", "/b?encryption", GW_S3_OP_GET_BUCKET_ENCRYPTION, "GetBucketEncryption"),
    C("PUT", "/b?encryption", GW_S3_OP_PUT_BUCKET_ENCRYPTION, "PutBucketEncryption"),
    C("DELETE", "/b?encryption", GW_S3_OP_DELETE_BUCKET_ENCRYPTION, "DeleteBucketEncryption"),
    C("GET", "/b?notification", GW_S3_OP_GET_BUCKET_NOTIFICATION,
      "GetBucketNotificationConfiguration"),
    C("PUT", "/b?notification", GW_S3_OP_PUT_BUCKET_NOTIFICATION,
      "PutBucketNotificationConfiguration"),
    C("GET", "/b?object-lock", GW_S3_OP_GET_OBJECT_LOCK_CONFIG, "GetObjectLockConfiguration"),
    C("PUT", "/b?object-lock", GW_S3_OP_PUT_OBJECT_LOCK_CONFIG, "PutObjectLockConfiguration"),
    C("GET", "/b?website", GW_S3_OP_GET_BUCKET_WEBSITE, "GetBucketWebsite"),
    C("PUT", "/b?website", GW_S3_OP_PUT_BUCKET_WEBSITE, "PutBucketWebsite"),
    C("DELETE", "/b?website", GW_S3_OP_DELETE_BUCKET_WEBSITE, "DeleteBucketWebsite"),
    C("GET", "/b?logging", GW_S3_OP_BUCKET_READ, "GetBucketLogging"),
    C("PUT", "/b?logging", GW_S3_OP_BUCKET_WRITE, "PutBucketLogging"),
    C("GET", "/b?replication", GW_S3_OP_BUCKET_READ, "GetBucketReplication"),
    C("PUT", "/b?replication", GW_S3_OP_BUCKET_WRITE, "PutBucketReplication"),
    C("DELETE", "/b?replication", GW_S3_OP_BUCKET_WRITE, "DeleteBucketReplication"),
    C("GET", "/b?ownershipControls", GW_S3_OP_BUCKET_READ, "GetBucketOwnershipControls"),
    C("PUT", "/b?ownershipControls", GW_S3_OP_BUCKET_WRITE, "PutBucketOwnershipControls"),
    C("DELETE", "/b?ownershipControls", GW_S3_OP_BUCKET_WRITE, "DeleteBucketOwnershipControls"),
    C("GET", "/b?publicAccessBlock", GW_S3_OP_BUCKET_READ, "GetPublicAccessBlock"),
    C("PUT", "/b?publicAccessBlock", GW_S3_OP_BUCKET_WRITE, "PutPublicAccessBlock"),
    C("DELETE", "/b?publicAccessBlock", GW_S3_OP_BUCKET_WRITE, "DeletePublicAccessBlock"),
    C("GET", "/b?accelerate", GW_S3_OP_BUCKET_READ, "GetBucketAccelerateConfiguration"),
    C("PUT", "/b?accelerate", GW_S3_OP_BUCKET_WRITE, "PutBucketAccelerateConfiguration"),
    C("GET", "/b?requestPayment", GW_S3_OP_BUCKET_READ, "GetBucketRequestPayment"),
    C("PUT", "/b?requestPayment", GW_S3_OP_BUCKET_WRITE, "PutBucketRequestPayment"),
    C("GET", "/b?policyStatus", GW_S3_OP_BUCKET_READ, "GetBucketPolicyStatus"),
    C("GET", "/b?analytics&id=a1", GW_S3_OP_BUCKET_READ, "GetBucketAnalyticsConfiguration"),
    C("PUT", "/b?analytics&id=a1", GW_S3_OP_BUCKET_WRITE, "PutBucketAnalyticsConfiguration"),
    C("DELETE", "/b?analytics&id=a1", GW_S3_OP_BUCKET_WRITE, "DeleteBucketAnalyticsConfiguration"),
    C("GET", "/b?inventory&id=i", GW_S3_OP_BUCKET_READ, "GetBucketInventoryConfiguration"),
    C("PUT", "/b?inventory&id=i", GW_S3_OP_BUCKET_WRITE, "PutBucketInventoryConfiguration"),
    C("DELETE", "/b?inventory&id=i", GW_S3_OP_BUCKET_WRITE, "DeleteBucketInventoryConfiguration"),
    C("GET", "/b?metrics&id=m", GW_S3_OP_BUCKET_READ, "GetBucketMetricsConfiguration"),
    C("PUT", "/b?metrics&id=m", GW_S3_OP_BUCKET_WRITE, "PutBucketMetricsConfiguration"),
    C("DELETE", "/b?metrics&id=m", GW_S3_OP_BUCKET_WRITE, "DeleteBucketMetricsConfiguration"),
    C("GET", "/b?intelligent-tiering&id=t", GW_S3_OP_BUCKET_READ,
      "GetBucketIntelligentTieringConfiguration"),
    C("PUT", "/b?intelligent-tiering&id=t", GW_S3_OP_BUCKET_WRITE,
      "PutBucketIntelligentTieringConfiguration"),
    C("DELETE", "/b?intelligent-tiering&id=t", GW_S3_OP_BUCKET_WRITE,
      "DeleteBucketIntelligentTieringConfiguration"),
    /* gateway paths */
    C("GET", "/_fencegate/v1/locks", GW_S3_OP_GATEWAY_API, "GatewayApi"),
    C("POST", "/_fencegate/v1/locks/orders/acquire", GW_S3_OP_GATEWAY_API, "GatewayApi"),
    C("GET", "/_fencegate/v1/locks/orders?wait_ms=30000&after=4", GW_S3_OP_GATEWAY_API,
      "GatewayApi"),
    C("GET", "/_fencegate", GW_S3_OP_GATEWAY_API, "GatewayApi"),
    C("GET", "/metrics", GW_S3_OP_GATEWAY_API, "GatewayApi"),
    C("GET", "/healthz", GW_S3_OP_GATEWAY_API, "GatewayApi"),
    C("HEAD", "/readyz", GW_S3_OP_GATEWAY_API, "GatewayApi"),
    C("GET", "/metrics/k", GW_S3_OP_GET_OBJECT, "GetObject"),
    C("GET", "/metrics/", GW_S3_OP_LIST_OBJECTS, "ListObjects"),
    C("GET", "/_fencegatex/k", GW_S3_OP_GET_OBJECT, "GetObject"),
    /* reads the table does not name stay reads (S3 ignores what it does not know) */
    C("HEAD", "/", GW_S3_OP_UNKNOWN, "Unknown"),
    C("GET", "/?acl", GW_S3_OP_UNKNOWN, "Unknown"),
    C("GET", "/b/k?tagging&acl", GW_S3_OP_UNKNOWN, "Unknown"),
    C("HEAD", "/b/k?acl", GW_S3_OP_UNKNOWN, "Unknown"),
    C("HEAD", "/b?acl", GW_S3_OP_UNKNOWN, "Unknown"),
    C("GET", "/b?uploadId=x", GW_S3_OP_UNKNOWN, "Unknown"),
    C("GET", "/b?delete", GW_S3_OP_UNKNOWN, "Unknown"),
    C("GET", "/b/k?uploads", GW_S3_OP_UNKNOWN, "Unknown"),
    C("GET", "/b/k?Delete&mdsearch&foo=bar", GW_S3_OP_GET_OBJECT, "GetObject"),
    C("GET", "/b?delete%3D", GW_S3_OP_UNKNOWN, "Unknown"), /* RGW reads "delete" */
    C("POST", "/b/k?select&select-type=2&unknown=1", GW_S3_OP_SELECT_OBJECT_CONTENT,
      "SelectObjectContent"),
    /* writes with modifiers and presigned-URL parameters */
    C("PUT",
      "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a&X-Amz-Date=d&"
      "X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=s&x-id=PutObject",
      GW_S3_OP_PUT_OBJECT, "PutObject"),
    C("PUT", "/b/k?AWSAccessKeyId=a&Expires=1&Signature=s", GW_S3_OP_PUT_OBJECT, "PutObject"),
    C("POST", "/b?delete&x-id=DeleteObjects", GW_S3_OP_DELETE_OBJECTS, "DeleteObjects"),
};

static void
test_classify_table(void **state)
{
    (void)state;
    bool seen[GW_S3_OP_COUNT] = {false};
    for (size_t i = 0; i < sizeof(op_cases) / sizeof(op_cases[0]); i++) {
        const struct op_case *c = &op_cases[i];
        struct gw_s3req r;
        int rc = parse(c->method, c->target, "127.0.0.1:9000", c->copy, &r);
        if (rc != 0 || r.op != c->op || strcmp(r.name, c->name) != 0) {
            fail_msg("%s %s%s: want %s (%d), got rc %d op %s (%d) name %s", c->method, c->target,
                     c->copy ? " +copy" : "", c->name, c->op, rc, gw_s3_op_name(r.op), r.op,
                     rc == 0 ? r.name : "-");
        }
        assert_int_equal(r.style, GW_S3_STYLE_PATH);
        assert_int_equal(r.write, gw_s3_op_is_write(r.op));
        assert_int_equal(r.object_write, gw_s3_op_is_object_write(r.op));
        assert_int_equal(r.bucket_write, gw_s3_op_is_bucket_write(r.op));
        seen[c->op] = true;
    }
    /* every operation in the table is reached by some request */
    for (int op = 0; op < GW_S3_OP_COUNT; op++) {
        if (!seen[op]) {
            fail_msg("operation %s (%d) has no test request", gw_s3_op_name((enum gw_s3_op)op), op);
        }
    }
}

static void
test_names_and_flags(void **state)
{
    (void)state;
    /* the fenced object writes (DESIGN.md "Request classification"), plus
     * RestoreObject (it acts on its key) */
    static const enum gw_s3_op object_writes[] = {
        GW_S3_OP_PUT_OBJECT,
        GW_S3_OP_COPY_OBJECT,
        GW_S3_OP_UPLOAD_PART,
        GW_S3_OP_UPLOAD_PART_COPY,
        GW_S3_OP_CREATE_MULTIPART,
        GW_S3_OP_COMPLETE_MULTIPART,
        GW_S3_OP_ABORT_MULTIPART,
        GW_S3_OP_DELETE_OBJECT,
        GW_S3_OP_DELETE_OBJECTS,
        GW_S3_OP_PUT_OBJECT_TAGGING,
        GW_S3_OP_PUT_OBJECT_ACL,
        GW_S3_OP_PUT_OBJECT_RETENTION,
        GW_S3_OP_PUT_OBJECT_LEGAL_HOLD,
        GW_S3_OP_DELETE_OBJECT_TAGGING,
        GW_S3_OP_RESTORE_OBJECT,
    };
    bool is_ow[GW_S3_OP_COUNT] = {false};
    for (size_t i = 0; i < sizeof(object_writes) / sizeof(object_writes[0]); i++) {
        is_ow[object_writes[i]] = true;
    }
    for (int i = 0; i < GW_S3_OP_COUNT; i++) {
        enum gw_s3_op op = (enum gw_s3_op)i;
        const char *name = gw_s3_op_name(op);
        assert_non_null(name);
        assert_true(name[0] >= 'A' && name[0] <= 'Z');
        if (gw_s3_op_is_object_write(op) != is_ow[i]) {
            fail_msg("%s: object write %d, want %d", name, gw_s3_op_is_object_write(op), is_ow[i]);
        }
        /* bucket writes: exactly the bucket-level rows from CreateBucket on */
        bool want_bw = i >= GW_S3_OP_CREATE_BUCKET;
        if (gw_s3_op_is_bucket_write(op) != want_bw) {
            fail_msg("%s: bucket write %d, want %d", name, gw_s3_op_is_bucket_write(op), want_bw);
        }
        bool want_w = is_ow[i] || want_bw;
        assert_int_equal(gw_s3_op_is_write(op), want_w);
        /* names are unique */
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(name, gw_s3_op_name((enum gw_s3_op)j));
        }
    }
    assert_string_equal(gw_s3_op_name(GW_S3_OP_COUNT), "Unknown");
    assert_string_equal(gw_s3_op_name((enum gw_s3_op) - 1), "Unknown");
    assert_false(gw_s3_op_is_write(GW_S3_OP_COUNT));
    assert_false(gw_s3_op_is_object_write((enum gw_s3_op)1000));
}

/* A request refused by the classifier (issue 11's list, and its neighbours). */
struct refusal {
    const char *method;
    const char *target;
    const char *content_type; /* NULL: none */
    bool override;            /* a method-override header */
    int status;               /* refuse_status */
    const char *code;         /* refuse_code */
};

#define R(m, t, st, code)                                                                          \
    {                                                                                              \
        m, t, NULL, false, st, code                                                                \
    }
#define FORM "multipart/form-data; boundary=xyz"

static const struct refusal refusals[] = {
    /* a copy source hoisted into the query would make a PutObject a copy */
    {"PUT", "/abuse/orders/x?x-amz-copy-source=other%2Fk", NULL, false, 400, "InvalidArgument"},
    {"PUT", "/abuse/orders/x?X-Amz-Copy-Source-Range=bytes%3D0-1", NULL, false, 400,
     "InvalidArgument"},
    /* browser POST form uploads: the key is a form field */
    {"POST", "/abuse", FORM, false, 501, "NotImplemented"},
    {"POST", "/abuse/", FORM, false, 501, "NotImplemented"},
    {"POST", "/abuse/free/x", FORM, false, 501, "NotImplemented"},
    {"POST", "/abuse/orders/x?select", FORM, false, 501, "NotImplemented"},
    {"POST", "/abuse/orders/x?restore", FORM, false, 501, "NotImplemented"},
    {"POST", "/abuse?delete", FORM, false, 501, "NotImplemented"},
    {"POST", "/abuse/k?uploads", "Multipart/Form-Data", false, 501, "NotImplemented"},
    {"POST", "/abuse/k?select&select-type=2", FORM, false, 501, "NotImplemented"},
    {"POST", "/", FORM, false, 501, "NotImplemented"},
    R("POST", "/abuse", 501, "NotImplemented"),
    R("POST", "/abuse/", 501, "NotImplemented"),
    R("POST", "/abuse/free/x", 501, "NotImplemented"),
    R("POST", "/abuse/orders/x?select", 501, "NotImplemented"),
    R("POST", "/abuse/orders/x?select&select-type=1", 501, "NotImplemented"),
    R("POST", "/abuse/orders/x?delete", 501, "NotImplemented"),
    /* DeleteObjects with anything else, or spelled otherwise */
    R("POST", "/abuse?delete&uploads", 400, "InvalidRequest"),
    R("POST", "/abuse?uploads&delete", 400, "InvalidRequest"),
    R("POST", "/abuse?delete&versions", 400, "InvalidRequest"),
    R("POST", "/abuse?delete&policy", 400, "InvalidRequest"),
    R("POST", "/abuse?delete%3D", 400, "InvalidArgument"),
    R("POST", "/abuse?delete%3Dx", 400, "InvalidArgument"),
    R("POST", "/abuse?delete%3D=x", 400, "InvalidArgument"),
    R("POST", "/abuse?Delete", 400, "InvalidArgument"),
    R("POST", "/abuse?DELETE", 400, "InvalidArgument"),
    R("POST", "/abuse?delete&mdsearch", 400, "InvalidArgument"),
    R("POST", "/abuse?delete&prefix=a", 400, "InvalidArgument"),
    R("POST", "/abuse?delete+", 400, "InvalidArgument"),
    R("POST", "/abuse?uploads", 400, "InvalidRequest"),
    /* bucket-level writes with more than one (or a foreign) sub-resource */
    R("PUT", "/abuse?policy&uploads", 400, "InvalidRequest"),
    R("PUT", "/abuse?lifecycle&uploads", 400, "InvalidRequest"),
    R("PUT", "/abuse?acl&uploads", 400, "InvalidRequest"),
    R("PUT", "/abuse?policy&acl", 400, "InvalidRequest"),
    R("PUT", "/newbucket?uploadId=1", 400, "InvalidRequest"),
    R("PUT", "/b?retention", 400, "InvalidRequest"),
    R("PUT", "/b?location", 400, "InvalidRequest"),
    R("PUT", "/b?policyStatus", 400, "InvalidRequest"),
    R("DELETE", "/b?uploads", 400, "InvalidRequest"),
    R("DELETE", "/b?versioning", 400, "InvalidRequest"),
    R("DELETE", "/b?retention", 400, "InvalidRequest"),
    R("POST", "/abuse?mdsearch", 400, "InvalidArgument"),
    R("PUT", "/abuse?mdsearch", 400, "InvalidArgument"),
    R("PUT", "/abuse?Policy", 400, "InvalidArgument"),
    /* service level */
    R("POST", "/", 400, "InvalidRequest"),
    R("PUT", "/", 400, "InvalidRequest"),
    R("DELETE", "/", 400, "InvalidRequest"),
    R("POST", "/?delete", 400, "InvalidRequest"),
    /* object-level writes the table does not name */
    R("PUT", "/b/k?tagging&acl", 400, "InvalidRequest"),
    R("PUT", "/b/k?uploadId=x", 400, "InvalidRequest"),
    R("PUT", "/b/k?partNumber=1", 400, "InvalidRequest"),
    R("PUT", "/b/k?policy", 400, "InvalidRequest"),
    R("PUT", "/b/k?delete", 400, "InvalidRequest"),
    R("DELETE", "/b/k?acl", 400, "InvalidRequest"),
    R("PUT", "/b/k?response-content-type=x", 400, "InvalidArgument"),
    R("PUT", "/b/k?x-amz-signature=s", 400, "InvalidArgument"),
    R("PUT", "/b/k?foo", 400, "InvalidArgument"),
    R("PUT", "/b/k?=x", 400, "InvalidArgument"),
    R("DELETE", "/b/k?versionid=v", 400, "InvalidArgument"),
    /* methods */
    R("COPY", "/abuse/orders/x", 405, "MethodNotAllowed"),
    R("MOVE", "/abuse/orders/x", 405, "MethodNotAllowed"),
    R("PATCH", "/b/k", 405, "MethodNotAllowed"),
    R("TRACE", "/b", 405, "MethodNotAllowed"),
    R("put", "/b/k", 405, "MethodNotAllowed"),
    R("get", "/b/k", 405, "MethodNotAllowed"),
    R("", "/b/k", 405, "MethodNotAllowed"),
    {"POST", "/abuse/orders/x", NULL, true, 400, "InvalidRequest"},
    {"GET", "/abuse/orders/x", NULL, true, 400, "InvalidRequest"},
};

static int
parse_full(const struct refusal *c, struct gw_s3req *r)
{
    static char path[512];
    const char *q = strchr(c->target, '?');
    size_t plen = q != NULL ? (size_t)(q - c->target) : strlen(c->target);
    memcpy(path, c->target, plen);
    path[plen] = '\0';
    struct gw_s3req_in in = {
        .method = c->method,
        .path = path,
        .query = q != NULL ? q + 1 : "",
        .content_type = c->content_type,
        .method_override = c->override,
    };
    return gw_s3req_parse(&in, r);
}

static void
test_refusals(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        const struct refusal *c = &refusals[i];
        struct gw_s3req r;
        int rc = parse_full(c, &r);
        if (rc != ERR_DENIED || r.refuse_status != c->status ||
            strcmp(r.refuse_code, c->code) != 0) {
            fail_msg("%s %s%s%s: want %d %s, got rc %d (%s) %d %s", c->method, c->target,
                     c->content_type != NULL ? " form" : "", c->override ? " override" : "",
                     c->status, c->code, rc, rc == 0 ? r.name : "-", r.refuse_status,
                     r.refuse_code != NULL ? r.refuse_code : "-");
        }
        assert_non_null(r.refuse_msg);
        assert_int_equal(r.op, GW_S3_OP_UNKNOWN);
        assert_false(r.write);
    }
    /* the same shapes without what makes them ambiguous pass */
    static const struct refusal fine[] = {
        {"POST", "/abuse?delete", "application/xml", false, 0, NULL},
        {"PUT", "/abuse?policy", NULL, false, 0, NULL},
        {"PUT", "/abuse/k", "multipart/form-data", false, 0, NULL}, /* not a POST: a body */
        {"POST", "/abuse/k?uploads", "application/octet-stream", false, 0, NULL},
        /* the JS SDK v3 presigner hoists its checksum headers into the query */
        {"PUT",
         "/abuse/k?x-id=PutObject&x-amz-checksum-crc32=AAAAAA%3D%3D&"
         "x-amz-sdk-checksum-algorithm=CRC32&X-Amz-Algorithm=AWS4-HMAC-SHA256",
         NULL, false, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        struct gw_s3req r;
        assert_int_equal(parse_full(&fine[i], &r), 0);
        assert_true(r.write);
    }
}

/*
 * The invariant, over every method and a grid of targets: a request either is
 * refused (a status, code and message), or passes as a read with a read method
 * (POST ?select&select-type=2 the one POST), or passes as a write that names
 * one known operation with a bucket and, at object level, a key.
 */
static void
test_fail_closed(void **state)
{
    (void)state;
    static const char *const methods[] = {"GET",   "HEAD", "OPTIONS", "PUT",   "POST", "DELETE",
                                          "PATCH", "put",  "post",    "MKCOL", "",     "CONNECT"};
    static const char *const targets[] = {
        "/",
        "/?uploads",
        "/b",
        "/b?delete",
        "/b?uploads",
        "/b?tagging&acl",
        "/b?policy",
        "/b?retention",
        "/b?list-type=2",
        "/b/k",
        "/b/k?uploads",
        "/b/k?uploadId=u",
        "/b/k?uploadId=u&partNumber=2",
        "/b/k?tagging",
        "/b/k?versionId=v",
        "/b/k?restore",
        "/b/k?acl&retention",
        "/b/k?policy",
        "/b/k?x-id=GetObject",
        "/b/k?foo=bar",
        "/b/k?legal-hold",
        "/b/k?torrent",
        "/b/k?select&select-type=2",
        "/b/k?select",
        "/b?versions",
        "/b?location",
        "/b?delete%3D",
        "/b?Delete",
    };
    for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
        bool read = strcmp(methods[m], "GET") == 0 || strcmp(methods[m], "HEAD") == 0 ||
                    strcmp(methods[m], "OPTIONS") == 0;
        bool write = strcmp(methods[m], "PUT") == 0 || strcmp(methods[m], "POST") == 0 ||
                     strcmp(methods[m], "DELETE") == 0;
        for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
            struct gw_s3req r;
            int rc = parse(methods[m], targets[t], NULL, false, &r);
            if (rc != 0) {
                assert_int_equal(rc, ERR_DENIED);
                assert_true(r.refuse_status >= 400 && r.refuse_status <= 501);
                assert_false(read); /* reads are never refused by the table */
                continue;
            }
            if (!r.write) {
                if (!read && r.op != GW_S3_OP_SELECT_OBJECT_CONTENT) {
                    fail_msg("%s %s: passed as a read (%s)", methods[m], targets[t], r.name);
                }
                continue;
            }
            if (!write || r.op == GW_S3_OP_UNKNOWN || r.bucket_len == 0 ||
                r.object_write == r.bucket_write ||
                (r.object_write && r.key_len == 0 && r.op != GW_S3_OP_DELETE_OBJECTS)) {
                fail_msg("%s %s: passed as write %s without naming it", methods[m], targets[t],
                         r.name);
            }
        }
    }
}

static void
test_keys(void **state)
{
    (void)state;
    static const struct {
        const char *target;
        const char *bucket;
        const char *key;
        size_t key_len;
        const char *raw_key;
    } cases[] = {
        {"/data/orders/1.json", "data", "orders/1.json", 13, "orders/1.json"},
        {"/data/a%2Fb", "data", "a/b", 3, "a%2Fb"},
        {"/data/hello%20world", "data", "hello world", 11, "hello%20world"},
        {"/data/a+b", "data", "a+b", 3, "a+b"},
        {"/data/caf%C3%A9/%E2%82%AC", "data", "caf\xc3\xa9/\xe2\x82\xac", 9, "caf%C3%A9/%E2%82%AC"},
        {"/data/caf\xc3\xa9", "data", "caf\xc3\xa9", 5, "caf\xc3\xa9"},
        {"/data/a/../b", "data", "a/../b", 6, "a/../b"},
        {"/data/free/../orders/x", "data", "free/../orders/x", 16, "free/../orders/x"},
        {"/data/a//b", "data", "a//b", 4, "a//b"},
        {"/data//x", "data", "/x", 2, "/x"},
        {"/data/./x", "data", "./x", 3, "./x"},
        {"/data/%2e%2e/x", "data", "../x", 4, "%2e%2e/x"},
        {"/data/..", "data", "..", 2, ".."},
        {"/data/a%252F", "data", "a%2F", 4, "a%252F"}, /* decoded once, only once */
        {"/data/%0A%7F", "data", "\n\x7f", 2, "%0A%7F"},
        {"/data/k%3Fx%3Dy%26z", "data", "k?x=y&z", 7, "k%3Fx%3Dy%26z"},
        {"/My.Bucket_1-x/K", "My.Bucket_1-x", "K", 1, "K"},
        {"/d%61ta/k", "data", "k", 1, "k"},
        {"/data/", "data", "", 0, ""},
        {"/data", "data", "", 0, ""},
        {"/", "", "", 0, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gw_s3req r;
        const char *t = cases[i].target;
        int rc = parse("GET", t, NULL, false, &r);
        if (rc != 0) {
            fail_msg("%s: %d", t, rc);
        }
        assert_string_equal(r.bucket, cases[i].bucket);
        assert_int_equal(r.bucket_len, strlen(cases[i].bucket));
        assert_int_equal(r.key_len, cases[i].key_len);
        assert_memory_equal(r.key, cases[i].key, cases[i].key_len + 1);
        assert_string_equal(t + r.raw_key_off, cases[i].raw_key);
    }
}

static void
test_bad_requests(void **state)
{
    (void)state;
    static const struct {
        const char *method;
        const char *target;
        int rc;
    } cases[] = {
        {"GET", "/data/a%2", ERR_INVAL},
        {"GET", "/data/a%", ERR_INVAL},
        {"GET", "/data/a%zz", ERR_INVAL},
        {"GET", "/data/%G1", ERR_INVAL},
        {"GET", "/data/a%00b", ERR_INVAL},
        {"PUT", "/data/%00", ERR_INVAL},
        {"GET", "/da%2Fta/k", ERR_INVAL}, /* decoded bucket holds '/' */
        {"GET", "/da%00ta/k", ERR_INVAL},
        {"GET", "/da%zta/k", ERR_INVAL},
        {"GET", "/da ta/k", ERR_INVAL},
        {"GET", "/da:ta/k", ERR_INVAL},
        {"GET", "//k", ERR_INVAL}, /* empty bucket */
        {"GET", "", ERR_INVAL},
        {"GET", "*", ERR_INVAL},
        {"GET", "http://h/b/k", ERR_INVAL}, /* absolute form is not ours to parse */
        {"GET", "b/k", ERR_INVAL},
        {"GET", "/b/k?x=%zz", ERR_INVAL}, /* escapes are checked in every parameter */
        {"GET", "/b/k?%zz=1", ERR_INVAL},
        {"GET", "/b/k?x=%00", ERR_INVAL},
        {"GET", "/b/k?x=%4", ERR_INVAL},
        {"GET", "/b/k?averyveryveryveryverylongparametername%z=1", ERR_INVAL},
        {"GET", "/b/k?x=averyveryveryverylongvalue%", ERR_INVAL},
        {"PUT", "/b/k?uploadId=a&uploadId=b&partNumber=1", ERR_INVAL}, /* repeated */
        {"PUT", "/b/k?uploadId=a&upload%49d=b&partNumber=1", ERR_INVAL},
        {"PUT", "/b/k?uploadId=a&partNumber=1&partNumber=2", ERR_INVAL},
        {"POST", "/b?delete&delete", ERR_INVAL},
        {"PUT", "/b/k?partNumber=0&uploadId=a", ERR_INVAL},
        {"PUT", "/b/k?partNumber=10001&uploadId=a", ERR_INVAL},
        {"PUT", "/b/k?partNumber=-1&uploadId=a", ERR_INVAL},
        {"PUT", "/b/k?partNumber=1x&uploadId=a", ERR_INVAL},
        {"PUT", "/b/k?partNumber=&uploadId=a", ERR_INVAL},
        {"PUT", "/b/k?partNumber&uploadId=a", ERR_INVAL},
        {"PUT", "/b/k?partNumber=123456789&uploadId=a", ERR_INVAL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gw_s3req r;
        int rc = parse(cases[i].method, cases[i].target, NULL, false, &r);
        if (rc != cases[i].rc) {
            fail_msg("%s %s: want %d got %d", cases[i].method, cases[i].target, cases[i].rc, rc);
        }
    }
    /* unknown parameters may repeat (S3 ignores them); names are decoded before matching */
    struct gw_s3req r;
    assert_int_equal(parse("GET", "/b?prefix=a&prefix=b&&", NULL, false, &r), 0);
    assert_int_equal(r.op, GW_S3_OP_LIST_OBJECTS);
    assert_int_equal(parse("PUT", "/b/k?upload%49d=u&part%4Eumber=7", NULL, false, &r), 0);
    assert_int_equal(r.op, GW_S3_OP_UPLOAD_PART);
    assert_int_equal(r.part_number, 7);
    assert_true((r.query & GW_S3_Q_UPLOAD_ID) != 0);
    assert_int_equal(parse("PUT", "/b/k?partNumber=00042&uploadId=u", NULL, false, &r), 0);
    assert_int_equal(r.part_number, 42);
    /* case matters: "UPLOADS" is not a sub-resource, and on a write it is refused */
    assert_int_equal(parse("POST", "/b/k?UPLOADS", NULL, false, &r), ERR_DENIED);
    assert_int_equal(r.refuse_status, 400);
}

static void
test_key_length(void **state)
{
    (void)state;
    static char target[8 + 3 * (GW_S3_MAX_KEY + 1) + 1];
    struct gw_s3req r;

    /* 1024 plain bytes: fine; 1025: too big */
    size_t n = (size_t)snprintf(target, sizeof(target), "/b/");
    memset(target + n, 'k', GW_S3_MAX_KEY);
    target[n + GW_S3_MAX_KEY] = '\0';
    assert_int_equal(parse("PUT", target, NULL, false, &r), 0);
    assert_int_equal(r.key_len, GW_S3_MAX_KEY);
    assert_int_equal(strlen(r.key), GW_S3_MAX_KEY);
    target[n + GW_S3_MAX_KEY] = 'k';
    target[n + GW_S3_MAX_KEY + 1] = '\0';
    assert_int_equal(parse("PUT", target, NULL, false, &r), ERR_TOOBIG);

    /* the limit is on the decoded key: 1024 escapes are 3072 raw bytes and fine */
    for (size_t i = 0; i < GW_S3_MAX_KEY; i++) {
        memcpy(target + n + 3 * i, "%41", 3);
    }
    target[n + 3 * GW_S3_MAX_KEY] = '\0';
    assert_int_equal(parse("PUT", target, NULL, false, &r), 0);
    assert_int_equal(r.key_len, GW_S3_MAX_KEY);
    assert_int_equal(r.key[0], 'A');
    memcpy(target + n + 3 * GW_S3_MAX_KEY, "%41", 4);
    assert_int_equal(parse("PUT", target, NULL, false, &r), ERR_TOOBIG);

    /* buckets: at most 255 bytes */
    char b[300];
    memset(b, 0, sizeof(b));
    b[0] = '/';
    memset(b + 1, 'b', GW_S3_MAX_BUCKET);
    assert_int_equal(parse("GET", b, NULL, false, &r), 0);
    assert_int_equal(r.bucket_len, GW_S3_MAX_BUCKET);
    b[1 + GW_S3_MAX_BUCKET] = 'b';
    assert_int_equal(parse("GET", b, NULL, false, &r), ERR_INVAL);
}

static void
test_virtual_hosted(void **state)
{
    (void)state;
    static const struct {
        const char *host;
        const char *target;
        enum gw_s3_style style;
        const char *bucket;
        const char *key;
        enum gw_s3_op op;
    } cases[] = {
        {"mybucket.s3.example.com", "/k", GW_S3_STYLE_VIRTUAL, "mybucket", "k",
         GW_S3_OP_GET_OBJECT},
        {"mybucket.s3.example.com:9000", "/dir/k%20x", GW_S3_STYLE_VIRTUAL, "mybucket", "dir/k x",
         GW_S3_OP_GET_OBJECT},
        {"MyBucket.S3.Example.COM", "/k", GW_S3_STYLE_VIRTUAL, "mybucket", "k",
         GW_S3_OP_GET_OBJECT},
        {"my.dotted.bucket.s3.example.com", "/", GW_S3_STYLE_VIRTUAL, "my.dotted.bucket", "",
         GW_S3_OP_LIST_OBJECTS},
        {"b.s3.example.com.", "/k", GW_S3_STYLE_VIRTUAL, "b", "k", GW_S3_OP_GET_OBJECT},
        {"b.s3.example.com.:80", "/k", GW_S3_STYLE_VIRTUAL, "b", "k", GW_S3_OP_GET_OBJECT},
        {"b.s3.example.com", "/?list-type=2&prefix=a", GW_S3_STYLE_VIRTUAL, "b", "",
         GW_S3_OP_LIST_OBJECTS_V2},
        {"b.s3.example.com", "//k", GW_S3_STYLE_VIRTUAL, "b", "/k", GW_S3_OP_GET_OBJECT},
        {"b.s3.example.com", "/a/../b", GW_S3_STYLE_VIRTUAL, "b", "a/../b", GW_S3_OP_GET_OBJECT},
        {"b.s3.example.com", "/metrics", GW_S3_STYLE_VIRTUAL, "b", "metrics", GW_S3_OP_GET_OBJECT},
        {"b.s3.example.com", "/_fencegate/v1/locks", GW_S3_STYLE_VIRTUAL, "b",
         "_fencegate/v1/locks", GW_S3_OP_GET_OBJECT},
        /* not virtual-hosted: path style */
        {"s3.example.com", "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {"s3.example.com:9000", "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {"xs3.example.com", "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {".s3.example.com", "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {"b.s3.example.org", "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {"[::1]:9000", "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {"127.0.0.1:9000", "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {"", "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {NULL, "/b/k", GW_S3_STYLE_PATH, "b", "k", GW_S3_OP_GET_OBJECT},
        {"s3.example.com", "/metrics", GW_S3_STYLE_PATH, "", "", GW_S3_OP_GATEWAY_API},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gw_s3req r;
        int rc = parse("GET", cases[i].target, cases[i].host, false, &r);
        if (rc != 0) {
            fail_msg("%s %s: %d", cases[i].host, cases[i].target, rc);
        }
        assert_int_equal(r.style, cases[i].style);
        assert_string_equal(r.bucket, cases[i].bucket);
        assert_string_equal(r.key, cases[i].key);
        assert_int_equal(r.op, cases[i].op);
    }

    /* virtual-hosted writes */
    struct gw_s3req r;
    assert_int_equal(parse("PUT", "/", "newbucket.s3.example.com", false, &r), 0);
    assert_int_equal(r.op, GW_S3_OP_CREATE_BUCKET);
    assert_int_equal(parse("PUT", "/k?partNumber=2&uploadId=u", "b.s3.example.com", false, &r), 0);
    assert_int_equal(r.op, GW_S3_OP_UPLOAD_PART);
    assert_string_equal("/k?partNumber=2&uploadId=u" + r.raw_key_off, "k?partNumber=2&uploadId=u");
    assert_int_equal(parse("POST", "/?delete", "b.s3.example.com", false, &r), 0);
    assert_int_equal(r.op, GW_S3_OP_DELETE_OBJECTS);
    assert_string_equal(r.bucket, "b");

    /* a host naming an invalid bucket */
    assert_int_equal(parse("GET", "/k", "a!b.s3.example.com", false, &r), ERR_INVAL);

    /* the longest matching domain wins; none configured: always path style */
    static char d_short[] = "example.com";
    char *const two[] = {d_short, domain0, NULL};
    struct gw_s3req_in in = {.method = "GET",
                             .path = "/k",
                             .query = "",
                             .host = "b.s3.example.com",
                             .virtual_host_domains = two};
    assert_int_equal(gw_s3req_parse(&in, &r), 0);
    assert_string_equal(r.bucket, "b");
    in.host = "c.example.com";
    assert_int_equal(gw_s3req_parse(&in, &r), 0);
    assert_string_equal(r.bucket, "c");
    in.virtual_host_domains = NULL;
    in.host = "b.s3.example.com";
    assert_int_equal(gw_s3req_parse(&in, &r), 0);
    assert_int_equal(r.style, GW_S3_STYLE_PATH);
    assert_string_equal(r.bucket, "k");
    in.query = NULL;
    assert_int_equal(gw_s3req_parse(&in, &r), 0);
    assert_int_equal(r.query, 0);
}

/* admin_listen: on an S3 listener the operator paths are buckets; /_fencegate stays ours. */
static void
test_operator_paths_s3(void **state)
{
    (void)state;
    struct gw_s3req r;
    static const char *const paths[] = {"/metrics", "/healthz", "/readyz"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        struct gw_s3req_in in = {.method = "GET", .path = paths[i], .query = "list-type=2"};
        assert_int_equal(gw_s3req_parse(&in, &r), 0);
        assert_int_equal(r.op, GW_S3_OP_GATEWAY_API); /* no admin listener: the gateway's */
        in.operator_paths_s3 = true;
        assert_int_equal(gw_s3req_parse(&in, &r), 0);
        assert_int_not_equal(r.op, GW_S3_OP_GATEWAY_API);
        assert_string_equal(r.name, "ListObjectsV2");
        assert_string_equal(r.bucket, paths[i] + 1);
        in.method = "PUT";
        in.path = i == 0 ? "/metrics/k" : paths[i];
        in.query = "";
        assert_int_equal(gw_s3req_parse(&in, &r), 0);
        assert_int_equal(r.op, i == 0 ? GW_S3_OP_PUT_OBJECT : GW_S3_OP_CREATE_BUCKET);
    }
    struct gw_s3req_in in = {
        .method = "GET", .path = "/_fencegate/v1/locks", .query = "", .operator_paths_s3 = true};
    assert_int_equal(gw_s3req_parse(&in, &r), 0);
    assert_int_equal(r.op, GW_S3_OP_GATEWAY_API);
}

static void
test_query_get(void **state)
{
    (void)state;
    char v[64];
    assert_int_equal(gw_s3req_query_get("partNumber=1&uploadId=2~abc", "uploadId", v, sizeof(v)),
                     0);
    assert_string_equal(v, "2~abc");
    assert_int_equal(gw_s3req_query_get("partNumber=1&uploadId=x", "partNumber", v, sizeof(v)), 0);
    assert_string_equal(v, "1");
    assert_int_equal(gw_s3req_query_get("partNumber=1", "uploadId", v, sizeof(v)), ERR_NOTFOUND);
    assert_int_equal(gw_s3req_query_get("", "uploadId", v, sizeof(v)), ERR_NOTFOUND);
    assert_int_equal(gw_s3req_query_get(NULL, "uploadId", v, sizeof(v)), ERR_NOTFOUND);
    assert_int_equal(gw_s3req_query_get("uploadIdx=1&xuploadId=2", "uploadId", v, sizeof(v)),
                     ERR_NOTFOUND);
    assert_int_equal(gw_s3req_query_get("uploads", "uploads", v, sizeof(v)), 0);
    assert_string_equal(v, "");
    assert_int_equal(gw_s3req_query_get("uploads=", "uploads", v, sizeof(v)), 0);
    assert_string_equal(v, "");
    assert_int_equal(gw_s3req_query_get("a=1&a=2", "a", v, sizeof(v)), 0);
    assert_string_equal(v, "1");
    assert_int_equal(gw_s3req_query_get("&&a=1&", "a", v, sizeof(v)), 0);
    assert_string_equal(v, "1");
    assert_int_equal(gw_s3req_query_get("prefix=orders%2F2026&x=1", "prefix", v, sizeof(v)), 0);
    assert_string_equal(v, "orders/2026");
    assert_int_equal(gw_s3req_query_get("prefix=a+b%2Bc", "prefix", v, sizeof(v)), 0);
    assert_string_equal(v, "a b+c");
    assert_int_equal(gw_s3req_query_get("v=a=b", "v", v, sizeof(v)), 0);
    assert_string_equal(v, "a=b");
    assert_int_equal(gw_s3req_query_get("upload%49d=z", "uploadId", v, sizeof(v)), 0);
    assert_string_equal(v, "z");
    assert_int_equal(gw_s3req_query_get("list-type=2", "list-type", v, sizeof(v)), 0);
    assert_string_equal(v, "2");
    /* errors in the wanted value; errors elsewhere do not matter here */
    assert_int_equal(gw_s3req_query_get("a=%zz", "a", v, sizeof(v)), ERR_INVAL);
    assert_int_equal(gw_s3req_query_get("a=%00", "a", v, sizeof(v)), ERR_INVAL);
    assert_int_equal(gw_s3req_query_get("b=%zz&a=1", "a", v, sizeof(v)), 0);
    assert_string_equal(v, "1");
    /* the value and its NUL must fit */
    assert_int_equal(gw_s3req_query_get("a=abc", "a", v, 3), ERR_TOOBIG);
    assert_int_equal(gw_s3req_query_get("a=abc", "a", v, 4), 0);
    assert_string_equal(v, "abc");
    assert_int_equal(gw_s3req_query_get("a=abc", "a", v, 0), ERR_TOOBIG);
}

static void
test_query_bits(void **state)
{
    (void)state;
    struct gw_s3req r;
    assert_int_equal(parse("GET", "/b/k?versionId=v&partNumber=3&x-id=GetObject", NULL, false, &r),
                     0);
    assert_int_equal(r.query, GW_S3_Q_VERSION_ID | GW_S3_Q_PART_NUMBER | GW_S3_Q_X_ID);
    assert_int_equal(r.part_number, 3);
    assert_int_equal(parse("GET", "/b/k", NULL, false, &r), 0);
    assert_int_equal(r.query, 0);
    assert_int_equal(r.part_number, 0);
}

static void
test_cleanup(void **state)
{
    (void)state;
    struct gw_s3req r;
    assert_int_equal(parse("PUT", "/b/secret-key", NULL, false, &r), 0);
    gw_s3req_cleanup(&r);
    assert_int_equal(r.key_len, 0);
    assert_int_equal(r.key[0], '\0');
    assert_int_equal(r.bucket[0], '\0');
    gw_s3req_cleanup(NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_table), cmocka_unit_test(test_names_and_flags),
        cmocka_unit_test(test_fail_closed),    cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_keys),           cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_key_length),     cmocka_unit_test(test_virtual_hosted),
        cmocka_unit_test(test_query_get),      cmocka_unit_test(test_query_bits),
        cmocka_unit_test(test_cleanup),        cmocka_unit_test(test_operator_paths_s3),
    };
    return cmocka_run_group_tests_name("s3req", tests, NULL, NULL);
}
