/*
 * gateway/upstream/upmsg.h: wire-format helpers of the upstream client.
 *
 * Checks on what gateway/upstream/curl_xfer.c hands to libcurl (URL, method, request
 * headers) and the collector that parses the response head libcurl delivers
 * line by line (CURLOPT_HEADERFUNCTION).  No libcurl, no libevent: plain
 * functions, so the parser can be tested and fuzzed on its own.  Internal to
 * gateway/upstream*.c.  Not thread-safe; one owner per struct gw_upmsg_head.
 */
#ifndef GW_UPSTREAM_MSG_H
#define GW_UPSTREAM_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/err.h"
#include "gateway/net/net.h"

#define GW_UPMSG_HEAD_MAX_BYTES ((size_t)64 * 1024) /* response head bytes, 1xx heads included */

struct gw_upmsg_head_off; /* where one header sits in buf (offsets survive growth) */

/* A response head being collected.  Embedded by its owner: gw_upmsg_head_init/cleanup. */
struct gw_upmsg_head {
    struct buf buf;                /* names and values, each NUL-terminated */
    struct gw_upmsg_head_off *off; /* position of each header in buf */
    struct gw_header *hdrs;        /* pointers into buf; valid once the head is complete */
    size_t n;                      /* headers of the head being parsed */
    size_t cap;                    /* entries allocated in off and hdrs */
    size_t bytes;                  /* head bytes seen so far, 1xx heads included */
    int status;                    /* status of the head being parsed; 0 before its status line */
};

/* gw_upmsg_head_init - an empty collector (allocates nothing). */
void gw_upmsg_head_init(struct gw_upmsg_head *h);

/*
 * gw_upmsg_head_reset - forget everything for the next response, keeping the
 * storage unless it grew past keep_bytes.
 */
void gw_upmsg_head_reset(struct gw_upmsg_head *h, size_t keep_bytes);

/* gw_upmsg_head_cleanup - free the storage.  NULL-safe; h may be reused after gw_upmsg_head_init.
 */
void gw_upmsg_head_cleanup(struct gw_upmsg_head *h);

/*
 * gw_upmsg_head_line - take one line of a response head as libcurl delivers it
 * (status line, header line or the blank line; CRLF included; not
 * NUL-terminated).  Interim (1xx) heads are parsed and dropped.  An obs-fold
 * continuation line is joined to the previous value with one space
 * (RFC 9112 section 5.2).
 * Returns 0 (line taken), 1 (the final head is complete: h->status, h->hdrs
 * and h->n are valid until the next reset), ERR_TOOBIG (past
 * GW_UPMSG_HEAD_MAX_BYTES), ERR_UPSTREAM (malformed), or ERR_NOMEM.
 */
MUST_USE int gw_upmsg_head_line(struct gw_upmsg_head *h, const char *line, size_t len);

/*
 * gw_upmsg_req_url_ok - true for an absolute http:// or https:// URL with a host,
 * all printable ASCII and no '#': libcurl would percent-encode spaces and
 * high bytes and cut at '#', and the path would not go out byte for byte.
 */
bool gw_upmsg_req_url_ok(const char *url);

/* gw_upmsg_req_method_ok - true if method is an RFC 9110 token. */
bool gw_upmsg_req_method_ok(const char *method);

/* Request headers that libcurl would otherwise add, or that frame the body. */
enum gw_upmsg_req_hdr {
    GW_UPMSG_REQ_HDR_ACCEPT = 0, /* Accept */
    GW_UPMSG_REQ_HDR_EXPECT = 1, /* Expect */
    GW_UPMSG_REQ_HDR_TE = 2,     /* Transfer-Encoding (never accepted) */
    GW_UPMSG_REQ_HDR_CL = 3,     /* Content-Length */
    GW_UPMSG_REQ_HDR_OTHER = 4,  /* anything else */
};

/*
 * gw_upmsg_req_header_check - check one "Name: value" request header for a
 * request whose body is body_length bytes (-1: none).
 * [out] kind   which of enum gw_upmsg_req_hdr it is
 * [out] empty  the value is empty (after trimming spaces and tabs)
 * Returns 0, or ERR_INVAL: no colon, name not a token, a control byte (CR,
 * LF, ...) in the value, Transfer-Encoding (we frame the body), or a
 * Content-Length that differs from body_length (0 when there is no body).
 */
MUST_USE int gw_upmsg_req_header_check(const char *h, int64_t body_length,
                                       enum gw_upmsg_req_hdr *kind, bool *empty);

#endif
