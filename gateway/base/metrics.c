#include "gateway/base/metrics.h"

struct gw_metrics gw_metrics;

void
gw_metrics_count_status(int status)
{
    if (status >= 500) {
        gw_metrics.responses_5xx++;
    } else if (status >= 400) {
        gw_metrics.responses_4xx++;
    } else if (status >= 300) {
        gw_metrics.responses_3xx++;
    } else {
        gw_metrics.responses_2xx++;
    }
}

int
gw_metrics_render(struct buf *out)
{
    static const struct {
        const char *name;
        const char *type;
        const char *help;
        const uint64_t *value;
    } rows[] = {
#define ROW(field, type, help) {"fencegate_" #field, type, help, &gw_metrics.field}
        ROW(requests, "counter", "Requests received."),
        ROW(requests_active, "gauge", "Requests in progress."),
        ROW(proxied, "counter", "Requests forwarded upstream."),
        ROW(writes, "counter", "Forwarded write requests."),
        ROW(responses_2xx, "counter", "Responses with a 2xx status."),
        ROW(responses_3xx, "counter", "Responses with a 3xx status."),
        ROW(responses_4xx, "counter", "Responses with a 4xx status."),
        ROW(responses_5xx, "counter", "Responses with a 5xx status."),
        ROW(upstream_errors, "counter", "Upstream transfers that failed."),
        ROW(upstream_timeouts, "counter", "Upstream transfers that timed out."),
        ROW(internal_errors, "counter", "Requests failed by the gateway's own fault (500)."),
        ROW(client_aborts, "counter", "Clients that hung up before the response ended."),
        ROW(bytes_in, "counter", "Request body bytes sent upstream."),
        ROW(bytes_out, "counter", "Response body bytes sent to clients."),
        ROW(fence_rejections, "counter", "Writes refused by the fence."),
        ROW(audit_failures, "counter", "Refusals answered 503 SlowDown: audit queue full."),
        ROW(classify_refusals, "counter",
            "Requests refused before the fence: method, query, form upload, bucket-level write, "
            "principal's bounds (G9)."),
        ROW(window_reads, "counter", "Epoch files read to open a write window."),
        ROW(window_holds, "counter", "Last bytes held until a write window was confirmed."),
        ROW(window_cuts, "counter", "Writes cut before their last byte: no write window."),
        ROW(checksum_trailers_forwarded, "gauge",
            "1 if client checksum trailers are forwarded upstream, 0 if only verified."),
        ROW(client_conns_refused, "counter",
            "Connections closed at accept: their address held max_connections_per_client."),
        ROW(client_transfers_refused, "counter",
            "Requests answered 503 SlowDown: their address held max_transfers_per_client."),
        ROW(idle_shed, "counter", "Idle connections closed to admit new ones at max_connections."),
        ROW(slow_bodies_cut, "counter", "Request bodies cut: slower than min_body_rate."),
        ROW(conditional_writes, "gauge", "1: fenced overwrites are sent as conditional writes."),
        ROW(cond_heads, "counter", "HEADs of a key for its ETag: the ETag map missed."),
        ROW(cond_slowdowns, "counter",
            "Fenced writes whose condition failed at the store, token current: 503 SlowDown."),
        ROW(cond_store_refused, "counter",
            "Late fenced writes the store refused (condition failed, token superseded): 409."),
#undef ROW
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const uint64_t *v = rows[i].value;
        int rc =
            buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", rows[i].name, rows[i].help,
                       rows[i].name, rows[i].type, rows[i].name, (unsigned long long)*v);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}
