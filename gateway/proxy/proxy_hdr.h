/*
 * gateway/proxy/proxy_hdr.h: the proxy's header rules.
 *
 * Request headers not forwarded: RFC 9110 7.6.1's hop-by-hop headers and any
 * the client's Connection header names, the client's credentials (replaced by
 * the upstream signature), the fencing headers (ours), and with an aws-chunked
 * body its framing headers (the upstream never sees that framing).  Response
 * headers not forwarded: hop-by-hop, and the framing the server writes itself.
 * Pure functions; any thread.
 */
#ifndef GW_PROXY_HDR_H
#define GW_PROXY_HDR_H

#include <stdbool.h>
#include <stddef.h>

/*
 * gw_proxy_hdr_drop_request - whether the request header name stays here.
 * [in] connection  the client's Connection header value, or NULL
 * [in] chunked     the body is aws-chunked (its framing headers stay here)
 */
bool gw_proxy_hdr_drop_request(const char *name, const char *connection, bool chunked);

/* gw_proxy_hdr_drop_response - whether the upstream's response header name stays there. */
bool gw_proxy_hdr_drop_response(const char *name);

/*
 * gw_proxy_hdr_strip_aws_chunked - a Content-Encoding value without its
 * "aws-chunked" token (the framing is removed here), written into
 * out[outlen]; NULL when nothing is left.
 */
const char *gw_proxy_hdr_strip_aws_chunked(const char *value, char *out, size_t outlen);

#endif
