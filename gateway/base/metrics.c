/*
 * gateway/base/metrics.c: the counters, the histograms and the per-request
 * accounting (metrics.h).  Locks are in metrics_lock.c, the text in
 * metrics_render.c.
 */
#include "gateway/base/metrics.h"

#include <time.h>

struct gw_metrics gw_metrics;

/* Upper bounds of the finite buckets, ns: 0.5 ms to 60 s (Prometheus's defaults, widened). */
static const uint64_t bounds_ns[GW_METRICS_BUCKETS] = {
    500000ULL,     1000000ULL,     2500000ULL,     5000000ULL,     10000000ULL,   25000000ULL,
    50000000ULL,   100000000ULL,   250000000ULL,   500000000ULL,   1000000000ULL, 2500000000ULL,
    5000000000ULL, 10000000000ULL, 30000000000ULL, 60000000000ULL,
};

/*
 * The code label's closed set: the statuses this gateway or S3 answers, then
 * one slot per class for the rest, then "other" (outside 100..599).  Slot 0
 * is "499": a request whose client left before any response head (nginx's
 * convention).
 */
static const char *const code_labels[GW_METRICS_CODES] = {
    "499", "100", "200", "201", "202", "204",   "206", "301", "302", "303", "304", "307",
    "400", "401", "403", "404", "405", "406",   "408", "409", "411", "412", "413", "414",
    "415", "416", "417", "428", "429", "431",   "500", "501", "502", "503", "504", "505",
    "1xx", "2xx", "3xx", "4xx", "5xx", "other", NULL,  NULL,  NULL,  NULL,  NULL,  NULL,
};
#define SLOT_CLASS_1XX 36 /* "1xx"; classes follow in order */
#define SLOT_OTHER     41

uint64_t
gw_metrics_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t
gw_metrics_bucket_bound_ns(unsigned i)
{
    return i < GW_METRICS_BUCKETS ? bounds_ns[i] : UINT64_MAX;
}

void
gw_histo_observe(struct gw_histo *h, uint64_t ns)
{
    unsigned i = 0;
    while (i < GW_METRICS_BUCKETS && ns > bounds_ns[i]) { /* le: bound included */
        i++;
    }
    h->counts[i]++;
    h->sum_ns += ns;
    h->count++;
}

unsigned
gw_metrics_code_slot(int status)
{
    if (status == 0 || status == 499) {
        return 0;
    }
    if (status < 100 || status > 599) {
        return SLOT_OTHER;
    }
    for (unsigned i = 1; i < SLOT_CLASS_1XX; i++) {
        const char *l = code_labels[i];
        if ((l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0') == status) {
            return i;
        }
    }
    return SLOT_CLASS_1XX + (unsigned)(status / 100 - 1);
}

const char *
gw_metrics_code_label(unsigned slot)
{
    if (slot >= GW_METRICS_CODES || code_labels[slot] == NULL) {
        return NULL;
    }
    return code_labels[slot];
}

void
gw_metrics_req_begin(struct gw_metrics_req *m)
{
    m->start_ns = gw_metrics_now_ns();
    m->op = GW_METRICS_OP_NONE;
    m->status = 0;
    m->counted = false;
}

void
gw_metrics_req_set_op(struct gw_metrics_req *m, unsigned op)
{
    m->op = (uint16_t)(op < GW_METRICS_OPS ? op : GW_METRICS_OP_NONE);
}

void
gw_metrics_req_status(struct gw_metrics_req *m, int status)
{
    if (m->status == 0) {
        m->status = (int16_t)(status > 0 && status < 1000 ? status : 999);
    }
}

void
gw_metrics_req_end(struct gw_metrics_req *m)
{
    if (m->start_ns == 0 || m->counted) {
        return;
    }
    gw_metrics_req_end_at(m, gw_metrics_now_ns());
}

void
gw_metrics_req_end_at(struct gw_metrics_req *m, uint64_t now)
{
    if (m->start_ns == 0 || m->counted) {
        return;
    }
    m->counted = true;
    unsigned op = m->op < GW_METRICS_OPS ? m->op : GW_METRICS_OP_NONE;
    gw_metrics.requests_by[op][gw_metrics_code_slot(m->status)]++;
    gw_histo_observe(&gw_metrics.request_seconds[op], now > m->start_ns ? now - m->start_ns : 0);
}

void
gw_metrics_count_unparsed(int status)
{
    gw_metrics.requests_by[GW_METRICS_OP_NONE][gw_metrics_code_slot(status)]++;
}

void
gw_metrics_upstream_duration(unsigned op, uint64_t ns)
{
    gw_histo_observe(&gw_metrics.upstream_seconds[op < GW_METRICS_OPS ? op : GW_METRICS_OP_NONE],
                     ns);
}

uint64_t
gw_metrics_requests_of_class(int cls)
{
    uint64_t n = 0;
    for (unsigned c = 0; c < GW_METRICS_CODES; c++) {
        const char *l = code_labels[c];
        if (l == NULL || l[0] != (char)('0' + cls)) {
            continue;
        }
        for (unsigned op = 0; op < GW_METRICS_OPS; op++) {
            n += gw_metrics.requests_by[op][c];
        }
    }
    return n;
}
