"""A corpus of hostile S3 request variants for the differential classification
test (test_classify_diff.py, issue 11, DESIGN.md G9).

Every request is a template: the target bucket, the seeded multipart upload
and its part's ETag are filled in by render() for the bucket in use, so a
request can be replayed in a fresh bucket.  render() returns the request as
it reaches the wire: method, raw target (path and query exactly as written,
never re-encoded), headers and body; signed with SigV4 when credentials are
given (the query canonicalised the way S3 does: each name and value decoded
once, '+' as a space, encoded once, sorted).

Every request carries a payload that would do damage if the store acted on
it: object bodies, DeleteObjects documents naming the fenced keys, browser
form uploads with a fenced key, bucket configuration documents.
"""

import datetime
import hashlib
import hmac
import itertools
import urllib.parse
from dataclasses import dataclass, field

FENCED = "orders/"
KEY = "orders/a"  # an existing fenced object
KEY2 = "orders/b"
MP_KEY = "orders/mp"  # a fenced multipart upload in progress (part 1 uploaded)

# S3's sub-resources (and RGW's own), with the value each is sent with (None: name only).
SUBRESOURCES = [
    ("acl", None), ("cors", None), ("delete", None), ("encryption", None),
    ("lifecycle", None), ("location", None), ("logging", None), ("notification", None),
    ("object-lock", None), ("policy", None), ("replication", None),
    ("requestPayment", None), ("restore", None), ("retention", None),
    ("legal-hold", None), ("select", None), ("select-type", "2"), ("tagging", None),
    ("torrent", None), ("uploadId", "{U}"), ("uploads", None), ("partNumber", "1"),
    ("versionId", "null"), ("versioning", None), ("versions", None), ("website", None),
    ("attributes", None), ("accelerate", None), ("analytics", None), ("inventory", None),
    ("metrics", None), ("ownershipControls", None), ("publicAccessBlock", None),
    ("intelligent-tiering", None), ("policyStatus", None), ("mdsearch", None),
    ("append", None), ("position", "0"), ("list-type", "2"), ("usage", None),
]

METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS"]
ODD_METHODS = ["COPY", "MOVE", "PATCH", "put", "post", "delete", "PROPPATCH", "MKCOL"]

FORM_BOUNDARY = "fgboundary7MA4YWxkTrZu0gW"

_ACL_XML = (
    '<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
    "<Owner><ID>{OWNER}</ID></Owner><AccessControlList>"
    '<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI>'
    "</Grantee><Permission>FULL_CONTROL</Permission></Grant>"
    '<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:type="CanonicalUser"><ID>{OWNER}</ID></Grantee>'
    "<Permission>FULL_CONTROL</Permission></Grant>"
    "</AccessControlList></AccessControlPolicy>"
)

BODIES = {
    "policy": (
        '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",'
        '"Action":"s3:*","Resource":["arn:aws:s3:::{B}","arn:aws:s3:::{B}/*"]}]}'
    ),
    "lifecycle": (
        "<LifecycleConfiguration><Rule><ID>expire-orders</ID><Filter><Prefix>orders/"
        "</Prefix></Filter><Status>Enabled</Status><Expiration><Days>1</Days>"
        "</Expiration></Rule></LifecycleConfiguration>"
    ),
    "acl": _ACL_XML,
    "tagging": "<Tagging><TagSet><Tag><Key>evil</Key><Value>1</Value></Tag></TagSet></Tagging>",
    "cors": (
        "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
        "<AllowedMethod>PUT</AllowedMethod><AllowedMethod>DELETE</AllowedMethod>"
        "</CORSRule></CORSConfiguration>"
    ),
    "versioning": (
        '<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        "<Status>Enabled</Status></VersioningConfiguration>"
    ),
    "website": (
        "<WebsiteConfiguration><IndexDocument><Suffix>orders/a</Suffix></IndexDocument>"
        "</WebsiteConfiguration>"
    ),
    "encryption": (
        "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>"
        "<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"
        "</ServerSideEncryptionConfiguration>"
    ),
    "object-lock": (
        "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>"
        "<DefaultRetention><Mode>COMPLIANCE</Mode><Days>1</Days></DefaultRetention></Rule>"
        "</ObjectLockConfiguration>"
    ),
    "notification": "<NotificationConfiguration></NotificationConfiguration>",
    "logging": (
        "<BucketLoggingStatus><LoggingEnabled><TargetBucket>{B}</TargetBucket>"
        "<TargetPrefix>orders/</TargetPrefix></LoggingEnabled></BucketLoggingStatus>"
    ),
    "requestPayment": (
        "<RequestPaymentConfiguration><Payer>Requester</Payer></RequestPaymentConfiguration>"
    ),
    "publicAccessBlock": (
        "<PublicAccessBlockConfiguration><BlockPublicAcls>true</BlockPublicAcls>"
        "<IgnorePublicAcls>true</IgnorePublicAcls></PublicAccessBlockConfiguration>"
    ),
    "accelerate": (
        "<AccelerateConfiguration><Status>Enabled</Status></AccelerateConfiguration>"
    ),
    "replication": (
        "<ReplicationConfiguration><Role>arn:aws:iam::1:role/r</Role><Rule><ID>r</ID>"
        "<Status>Enabled</Status><Prefix>orders/</Prefix><Destination>"
        "<Bucket>arn:aws:s3:::{B}</Bucket></Destination></Rule></ReplicationConfiguration>"
    ),
    "ownershipControls": (
        "<OwnershipControls><Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership>"
        "</Rule></OwnershipControls>"
    ),
    "retention": (
        "<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>2099-01-01T00:00:00Z"
        "</RetainUntilDate></Retention>"
    ),
    "legal-hold": "<LegalHold><Status>ON</Status></LegalHold>",
    "restore": "<RestoreRequest><Days>1</Days></RestoreRequest>",
    "uploadId": (
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{E}</ETag></Part>"
        "</CompleteMultipartUpload>"
    ),
}


def delete_xml(style="plain", keys=(KEY, KEY2)):
    """A DeleteObjects document naming the fenced keys (style: plain, lower, prefixed)."""
    objs = "".join(f"<Object><Key>{k}</Key></Object>" for k in keys)
    if style == "lower":
        objs = "".join(f"<object><key>{k}</key></object>" for k in keys)
        return f"<delete>{objs}<quiet>false</quiet></delete>"
    if style == "prefixed":
        objs = "".join(f"<s3:Object><s3:Key>{k}</s3:Key></s3:Object>" for k in keys)
        return (f'<s3:Delete xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/">{objs}'
                "</s3:Delete>")
    return f'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{objs}</Delete>'


def form_body(key="orders/form-${filename}"):
    """A browser POST form upload (multipart/form-data) whose key is fenced."""
    b = FORM_BOUNDARY
    parts = [
        f'--{b}\r\nContent-Disposition: form-data; name="key"\r\n\r\n{key}\r\n',
        f'--{b}\r\nContent-Disposition: form-data; name="acl"\r\n\r\nprivate\r\n',
        f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n'
        "Content-Type: application/octet-stream\r\n\r\nFORM UPLOAD AROUND THE FENCE\r\n",
        f"--{b}--\r\n",
    ]
    return "".join(parts)


FORM_CT = f"multipart/form-data; boundary={FORM_BOUNDARY}"


@dataclass
class Req:
    """A request template.  target: raw path and query with {B} (fenced bucket),
    {V} (an empty bucket), {N} (a bucket that does not exist), {U} (the
    seeded upload id); headers and body may use them too, and {E}, {OWNER}."""

    method: str
    target: str
    headers: dict = field(default_factory=dict)
    body: str = ""
    tag: str = ""
    refuse: bool = False  # must be answered by the gateway, never forwarded

    def __post_init__(self):
        # What RGW 16 ignores but a more lenient store might act on: other methods,
        # method overrides, DeleteObjects documents S3 would not parse.
        self.refuse = self.refuse or (
            self.method not in METHODS or self.tag == "override"
            or (self.body.startswith(("<delete>", "<s3:Delete")) and self.method == "POST"))

    def describe(self):
        """One line: request line, headers, what the body is."""
        h = "".join(f" [{k}: {v}]" for k, v in self.headers.items()
                    if not (k == "Content-Type" and v == FORM_CT))
        return f"{self.method} {self.target}{h}" + (f" body={body_kind(self.body)}"
                                                     if self.body else "")


def body_kind(body):
    """A short name for a corpus body."""
    if body.startswith("--" + FORM_BOUNDARY):
        key = body.split('name="key"\r\n\r\n', 1)[1].split("\r\n", 1)[0]
        return f"form(key={key})"
    if body.startswith("<"):
        root = body[1:].split(">", 1)[0].split(" ", 1)[0]
        return f"<{root}>" + ("(keys orders/a,b)" if "Object>" in body or "object>" in body
                              else "")
    if body.startswith("{"):
        return "policy-json"
    return repr(body[:40])


def _fill(s, ctx):
    for k, v in ctx.items():
        if isinstance(v, str):
            s = s.replace("{" + k + "}", v)
    return s


def _q(name, value):
    return name if value is None else f"{name}={value}"


def _payload(method, level, first):
    """(headers, body) for a write whose chosen sub-resource is first."""
    if method in ("GET", "HEAD", "OPTIONS", "DELETE"):
        return {}, ""
    if first == "delete":
        return {"Content-Type": "application/xml"}, delete_xml()
    if first == "acl":
        return {"x-amz-acl": "public-read-write"}, BODIES["acl"]
    if first in BODIES:
        return {}, BODIES[first]
    if method == "POST":
        return {"Content-Type": FORM_CT}, form_body()
    if first == "mdsearch":
        return {"x-amz-meta-search": "x-amz-meta-evil; string"}, ""
    return {}, "OBJECT BODY AROUND THE FENCE" if level == "object" else ""


def _path(level, names):
    if level == "bucket":
        return "/{B}"
    return "/{B}/" + (MP_KEY if "uploadId" in names else KEY)


def pair_requests(methods=METHODS):
    """Every method x every pair of sub-resources (ordered for PUT and POST, whose
    body follows the first), at bucket and object level."""
    out = []
    for method in methods:
        ordered = method in ("PUT", "POST")
        combos = (itertools.permutations(SUBRESOURCES, 2) if ordered
                  else itertools.combinations(SUBRESOURCES, 2))
        for (n1, v1), (n2, v2) in combos:
            for level in ("bucket", "object"):
                h, body = _payload(method, level, n1)
                out.append(Req(method, f"{_path(level, (n1, n2))}?{_q(n1, v1)}&{_q(n2, v2)}",
                               dict(h), body, tag=f"pair {level}"))
    return out


def _spellings(name, value):
    """Encoded and mis-spelled forms of one sub-resource."""
    first = name[0]
    enc_first = "%{:02x}".format(ord(first)) + name[1:]
    forms = [
        _q(name, value), f"{name}=", f"{name}=x", f"{name}%3D", f"{name}%3Dx",
        enc_first, name.capitalize(), f"{name}+", f"+{name}", f"&{name}", f"{name}&",
        f"{_q(name, value)}&{_q(name, value)}",
    ]
    if value and "{" not in value:  # the value percent-encoded, every byte
        forms.append(f"{name}=" + "".join("%{:02X}".format(ord(ch)) for ch in value))
        forms.append(f"{enc_first}=" + "".join("%{:02x}".format(ord(ch)) for ch in value))
    return list(dict.fromkeys(forms))


def spelling_requests(methods=("PUT", "POST", "DELETE")):
    """Every sub-resource written in encoded and mis-spelled forms."""
    out = []
    for name, value in SUBRESOURCES:
        for form in _spellings(name, value):
            for method in methods:
                for level in ("bucket", "object"):
                    h, body = _payload(method, level, name)
                    out.append(Req(method, f"{_path(level, (name,))}?{form}", dict(h), body,
                                   tag=f"spelling {level}"))
    return out


def single_requests(methods=METHODS + ODD_METHODS):
    """Every method with no and each one sub-resource, at bucket and object level,
    on the fenced bucket; bucket-level ones also on an empty and a new bucket."""
    out = []
    for method in methods:
        for sub in [(None, None)] + SUBRESOURCES:
            name, value = sub
            q = "" if name is None else "?" + _q(name, value)
            h, body = _payload(method.upper(), "bucket", name)
            for b in ("{B}", "{V}", "{N}"):
                out.append(Req(method, f"/{b}{q}", dict(h), body, tag="single bucket"))
            h, body = _payload(method.upper(), "object", name)
            path = "/{B}/" + (MP_KEY if name == "uploadId" else KEY)
            out.append(Req(method, path + q, dict(h), body, tag="single object"))
    return out


def special_requests():
    """The issue's own list and other hand-written attacks."""
    form = {"Content-Type": FORM_CT}
    xml = {"Content-Type": "application/xml"}
    obj = "OVERRIDE BODY"
    out = []
    # browser POST form uploads, everywhere a form might be taken
    for target in ("/{B}", "/{B}/", "/{B}/free/x", "/{B}/orders/x?select", "/{B}/orders/x?restore",
                   "/{B}?", "/{B}?x-id=PostObject", "/", "/?", "//", "/{B}//", "/{B}?uploads",
                   "/{B}/orders/x", "/{B}?acl", "/{B}?foo", "/{B}/?versions"):
        for key in ("orders/form-x", "orders/${filename}", "free/../orders/form-y"):
            out.append(Req("POST", target, dict(form), form_body(key), tag="form"))
    out.append(Req("POST", "/{B}", {"Content-Type": "Multipart/Form-Data; boundary=" +
                                    FORM_BOUNDARY}, form_body(), tag="form"))
    out.append(Req("POST", "/{B}", {"Content-Type": "multipart/form-data;boundary=" +
                                    FORM_BOUNDARY}, form_body(), tag="form"))
    # DeleteObjects: odd queries and odd documents
    for q in ("delete", "delete&uploads", "uploads&delete", "delete&versions", "delete%3D",
              "delete%3Dx", "Delete", "%64elete", "delete=", "delete=x", "delete&delete",
              "=&=&delete", "delete&x-id=DeleteObjects", "delete&tagging", "delete&acl",
              "delete&policy", "delete&lifecycle", "delete&select", "delete&restore",
              "delete&mdsearch", "delete&partNumber=1", "delete&uploadId={U}",
              "delete&versionId=null", "delete+", "de%6Cete"):
        for path in ("/{B}", "/{B}/", "//{B}", "/{B}/orders/a", "/{B}//"):
            for style in ("plain", "lower", "prefixed"):
                out.append(Req("POST", f"{path}?{q}", dict(xml), delete_xml(style), tag="delete"))
    for q in ("delete", "Delete", "delete%3D"):
        out.append(Req("POST", f"//?{q}", dict(xml), delete_xml(), tag="delete"))
        out.append(Req("POST", f"/?{q}", dict(xml), delete_xml(), tag="delete"))
    # method override headers and WebDAV-style moves
    for m in ("GET", "POST", "HEAD", "OPTIONS"):
        for over in ("PUT", "DELETE", "POST"):
            for hname in ("X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"):
                out.append(Req(m, "/{B}/orders/a", {hname: over}, obj, tag="override"))
                out.append(Req(m, "/{B}?delete", {hname: over, **xml}, delete_xml(),
                               tag="override"))
    for m in ("COPY", "MOVE"):
        for dest in ("/{B}/orders/a", "http://127.0.0.1/{B}/orders/a", "/{B}/orders/new"):
            out.append(Req(m, "/{B}/free/src", {"Destination": dest, "Overwrite": "T"},
                           tag="webdav"))
            out.append(Req(m, "/{B}/orders/a", {"Destination": "/{B}/free/moved"}, tag="webdav"))
    # copies into the fence
    for method, target in (("PUT", "/{B}/orders/a"), ("PUT", "/{B}/orders/new"),
                           ("PUT", "/{B}/orders/a?tagging"), ("PUT", "/{B}/orders/a?acl"),
                           ("PUT", "/{B}/orders/a?x-id=PutObject"),
                           ("PUT", "/{B}/orders/mp?partNumber=2&uploadId={U}"),
                           ("PUT", "/{B}/orders/a?uploads"), ("POST", "/{B}/orders/a?uploads"),
                           ("PUT", "/{B}/orders/a?append&position=0"),
                           ("PUT", "/{B}/orders/a?policy"), ("PUT", "/{B}/orders/a?restore")):
        for src in ("/{B}/free/src", "{B}/free/src", "%2F{B}%2Ffree%2Fsrc",
                    "/{B}/free/src?versionId=null"):
            out.append(Req(method, target, {"x-amz-copy-source": src}, "", tag="copy"))
    out.append(Req("PUT", "/{B}/orders/a", {"X-Amz-Copy-Source": "/{B}/free/src",
                                           "x-amz-metadata-directive": "REPLACE"}, tag="copy"))
    # bucket-level writes from the issue
    for method, target in (("PUT", "/{B}?policy&uploads"), ("PUT", "/{B}?lifecycle&uploads"),
                           ("PUT", "/{B}?acl&uploads"), ("PUT", "/{N}?uploadId=1"),
                           ("PUT", "/{N}?retention"), ("DELETE", "/{V}?uploads"),
                           ("POST", "/{B}?mdsearch"), ("POST", "/"), ("PUT", "/{N}"),
                           ("PUT", "/{N}/"), ("PUT", "/{N}?x-id=CreateBucket"),
                           ("DELETE", "/{V}"), ("DELETE", "/{V}/"), ("DELETE", "/{V}?x-id=x"),
                           ("DELETE", "/{V}?versions"), ("DELETE", "/{V}?partNumber=1"),
                           ("PUT", "/{B}?policy&policy"), ("PUT", "/{B}?Policy"),
                           ("PUT", "/{B}?policy%3D"), ("PUT", "/{B}?=&=&policy"),
                           ("PUT", "/{B}/?policy"), ("PUT", "//{B}?policy"),
                           ("PUT", "/{B}?lifecycle&x-id=PutObject"),
                           ("PUT", "/{B}?tagging&partNumber=1"),
                           ("PUT", "/{B}?versioning&versionId=null")):
        name = target.split("?", 1)[1].split("&")[0].split("=")[0] if "?" in target else ""
        name = {"Policy": "policy", "policy%3D": "policy"}.get(name, name)
        h, body = _payload(method, "bucket", name)
        out.append(Req(method, target, dict(h), body, tag="bucket"))
    # odd query strings, double slashes, empty buckets
    for method in ("PUT", "POST", "DELETE"):
        for target in ("/{B}/orders/a?=&=", "/{B}/orders/a?&", "/{B}/orders/a?=",
                       "/{B}/orders/a?%00", "/{B}//orders/a", "//{B}/orders/a",
                       "/{B}/orders/a?x-id=GetObject", "/{B}/orders%2Fa", "/{B}/orders/./a",
                       "/{B}/free/../orders/a", "//orders/a", "/{B}/orders/a#frag",
                       "/{B}/orders/a?uploadId=", "/{B}/orders/a?versionId=",
                       "/{B}/orders/a?partNumber=1", "/{B}/orders/a?%2Bdelete"):
            h, body = _payload(method, "object", None)
            out.append(Req(method, target, dict(h), body, tag="odd"))
    return out


def corpus(include_reads=True):
    """The whole corpus; without include_reads, no GET/HEAD/OPTIONS pairs."""
    methods = METHODS if include_reads else ["PUT", "POST", "DELETE"]
    return (special_requests() + single_requests() + spelling_requests() +
            pair_requests(methods))


# ---------------------------------------------------------------- wire form --

UNRESERVED = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def _encode(raw, keep_slash):
    out = []
    for b in raw:
        if b in UNRESERVED or (keep_slash and b == ord("/")):
            out.append(chr(b))
        else:
            out.append("%{:02X}".format(b))
    return "".join(out)


def _decode(s, plus_space):
    if plus_space:
        s = s.replace("+", " ")
    return urllib.parse.unquote_to_bytes(s)


def canonical_query(query):
    """S3's canonical query: each name and value decoded once ('+' a space),
    encoded once, sorted by name then value; empty pieces skipped."""
    pairs = []
    for piece in query.split("&"):
        if not piece:
            continue
        k, eq, v = piece.partition("=")
        pairs.append((_encode(_decode(k, True), False), _encode(_decode(v, True), False)))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


def _hmac(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def sign(method, target, host, headers, body, ak, sk, region="us-east-1"):
    """Adds SigV4 headers (host, x-amz-date, x-amz-content-sha256 signed)."""
    path, _, query = target.partition("?")
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = amz_date[:8]
    payload = hashlib.sha256(body).hexdigest()
    signed_h = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
    names = sorted(signed_h)
    canon = "\n".join([
        method, _encode(_decode(path, False), True), canonical_query(query),
        "".join(f"{n}:{signed_h[n]}\n" for n in names), ";".join(names), payload])
    scope = f"{date}/{region}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(canon.encode()).hexdigest()])
    k = _hmac(("AWS4" + sk).encode(), date)
    for part in (region, "s3", "aws4_request"):
        k = _hmac(k, part)
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    headers["x-amz-date"] = amz_date
    headers["x-amz-content-sha256"] = payload
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={ak}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={sig}")


def render(req, ctx, host, creds=None, extra_headers=None):
    """(method, target, headers, body bytes) of req for ctx, as sent on the wire."""
    target = _fill(req.target, ctx)
    body = _fill(req.body, ctx).encode()
    headers = {"Host": host}
    headers.update({k: _fill(v, ctx) for k, v in req.headers.items()})
    headers.update(extra_headers or {})
    headers["Content-Length"] = str(len(body))
    if creds is not None:
        sign(req.method, target.split("#", 1)[0], host, headers, body, *creds)
    return req.method, target, headers, body
