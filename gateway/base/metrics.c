/*
 * gateway/base/metrics.c: the counters, the histograms and the per-request
 * accounting (metrics.h).  Locks are in metrics_lock.c, the text in
 * metrics_render.c.
 */
#include "gateway/base/metrics.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

/*
 * The sets.  main_set is the control loop's, and any thread's that attached
 * none.  A worker loop's set is in sets[] while attached; what it counted
 * moves to retired when it detaches.  sets_mu guards sets[] and retired
 * (attach, detach and the sum, none of which does I/O); the counters
 * themselves are read with relaxed loads, never under the mutex's protection.
 */
static struct gw_metrics_set main_set;
_Thread_local struct gw_metrics_set *gw_metrics_here = &main_set;

static pthread_mutex_t sets_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gw_metrics_set *sets[GW_METRICS_SETS_MAX];
static struct gw_metrics_set retired;

#define SET_WORDS (sizeof(struct gw_metrics_set) / sizeof(uint64_t))
_Static_assert(sizeof(struct gw_metrics_set) % sizeof(uint64_t) == 0,
               "struct gw_metrics_set holds uint64_t words only");

/* out[i] += s[i] for every word, reading s with relaxed loads (s may be counting). */
static void
add_set(uint64_t *out, const struct gw_metrics_set *s)
{
    const uint64_t *w = (const uint64_t *)(const void *)s;
    for (size_t i = 0; i < SET_WORDS; i++) {
        out[i] += __atomic_load_n(&w[i], __ATOMIC_RELAXED);
    }
}

/* The word at offset in s, by a relaxed load. */
static uint64_t
word_at(const struct gw_metrics_set *s, size_t offset)
{
    return __atomic_load_n((const uint64_t *)(const void *)((const char *)s + offset),
                           __ATOMIC_RELAXED);
}

int
gw_metrics_attach(struct gw_metrics_set *s)
{
    memset(s, 0, sizeof(*s));
    int rc = ERR_AGAIN;
    (void)pthread_mutex_lock(&sets_mu);
    for (size_t i = 0; i < GW_METRICS_SETS_MAX; i++) {
        if (sets[i] == NULL) {
            sets[i] = s;
            rc = 0;
            break;
        }
    }
    (void)pthread_mutex_unlock(&sets_mu);
    if (rc == 0) {
        gw_metrics_here = s;
    }
    return rc;
}

void
gw_metrics_detach(void)
{
    struct gw_metrics_set *s = gw_metrics_here;
    if (s == &main_set) {
        return;
    }
    (void)pthread_mutex_lock(&sets_mu);
    for (size_t i = 0; i < GW_METRICS_SETS_MAX; i++) {
        if (sets[i] == s) {
            sets[i] = NULL;
        }
    }
    /* under the mutex, so no scrape sees s both in sets[] and in retired */
    add_set((uint64_t *)(void *)&retired, s);
    (void)pthread_mutex_unlock(&sets_mu);
    gw_metrics_here = &main_set;
}

void
gw_metrics_sum(struct gw_metrics_set *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t *w = (uint64_t *)(void *)out;
    (void)pthread_mutex_lock(&sets_mu);
    add_set(w, &main_set);
    add_set(w, &retired);
    for (size_t i = 0; i < GW_METRICS_SETS_MAX; i++) {
        if (sets[i] != NULL) {
            add_set(w, sets[i]);
        }
    }
    (void)pthread_mutex_unlock(&sets_mu);
}

uint64_t
gw_metrics_total(size_t offset)
{
    (void)pthread_mutex_lock(&sets_mu);
    uint64_t n = word_at(&main_set, offset) + word_at(&retired, offset);
    for (size_t i = 0; i < GW_METRICS_SETS_MAX; i++) {
        if (sets[i] != NULL) {
            n += word_at(sets[i], offset);
        }
    }
    (void)pthread_mutex_unlock(&sets_mu);
    return n;
}

void
gw_metrics_reset(void)
{
    (void)pthread_mutex_lock(&sets_mu);
    memset(&main_set, 0, sizeof(main_set));
    memset(&retired, 0, sizeof(retired));
    for (size_t i = 0; i < GW_METRICS_SETS_MAX; i++) {
        if (sets[i] != NULL) {
            memset(sets[i], 0, sizeof(*sets[i]));
        }
    }
    (void)pthread_mutex_unlock(&sets_mu);
}

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
    gw_metrics_bump(&h->counts[i], 1);
    gw_metrics_bump(&h->sum_ns, ns);
    gw_metrics_bump(&h->count, 1);
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
    GW_COUNT(requests_by[op][gw_metrics_code_slot(m->status)]);
    gw_histo_observe(&gw_metrics.request_seconds[op], now > m->start_ns ? now - m->start_ns : 0);
}

void
gw_metrics_count_unparsed(int status)
{
    GW_COUNT(requests_by[GW_METRICS_OP_NONE][gw_metrics_code_slot(status)]);
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
            n += GW_METRICS_TOTAL(requests_by[op][c]);
        }
    }
    return n;
}
