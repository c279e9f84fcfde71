/*
 * tests/unit/gateway/http/handout_test.c: the acceptor's choice of a loop
 * (gateway/http/handout.c, config "accept": "acceptor"): the fewest open
 * plus pending connections below the share, ties taken in turn from where
 * the last hand-over left off, then the loop whose oldest idle connection is
 * the oldest (it sheds that one), then none; joining past the loops it was
 * made for fails.
 */
#include "gateway/http/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "common/err.h"

#define N    3
#define NONE UINT64_MAX /* no idle connection */

static struct gw_server srv[N + 1];

static struct gw_handout *
made(void)
{
    struct gw_handout *h = gw_handout_new(N, NULL);
    assert_non_null(h);
    for (int i = 0; i < N; i++) {
        assert_int_equal(gw_http_handout_join(h, &srv[i], NULL), 0);
        assert_ptr_equal(srv[i].handout, h);
        assert_ptr_equal(srv[i].slot, &h->slot[i]);
    }
    return h;
}

/* slot i's counts; oldest: when its oldest idle connection went idle (ms), or NONE */
static void
set(struct gw_handout *h, int i, size_t open, size_t pending, uint64_t oldest)
{
    atomic_store(&h->slot[i].open, open);
    atomic_store(&h->slot[i].pending, pending);
    atomic_store(&h->slot[i].oldest_idle, oldest);
}

static void
test_fewest_below_the_share(void **state)
{
    (void)state;
    struct gw_handout *h = made();
    set(h, 0, 3, 0, NONE);
    set(h, 1, 1, 1, NONE); /* pending counts: 2 */
    set(h, 2, 1, 0, NONE);
    assert_ptr_equal(gw_http_handout_pick(h, 4), &h->slot[2]);
    set(h, 2, 1, 2, NONE);
    assert_ptr_equal(gw_http_handout_pick(h, 4), &h->slot[1]);
    gw_handout_free(h);
}

static void
test_ties_in_turn(void **state)
{
    (void)state;
    struct gw_handout *h = made();
    for (size_t next = 0; next < N; next++) {
        h->next = next;
        assert_ptr_equal(gw_http_handout_pick(h, 4), &h->slot[next]);
    }
    gw_handout_free(h);
}

static void
test_full_then_idle_then_none(void **state)
{
    (void)state;
    struct gw_handout *h = made();
    set(h, 0, 4, 0, 900);
    set(h, 1, 3, 1, 500); /* at the share: its oldest idle connection counts */
    set(h, 2, 4, 0, NONE);
    assert_ptr_equal(gw_http_handout_pick(h, 4), &h->slot[1]);
    set(h, 0, 4, 0, 200); /* older than slot 1's, however many slot 1 has */
    assert_ptr_equal(gw_http_handout_pick(h, 4), &h->slot[0]);
    set(h, 2, 4, 0, 0); /* lingering (0): shed before any kept-alive one */
    assert_ptr_equal(gw_http_handout_pick(h, 4), &h->slot[2]);
    set(h, 0, 4, 0, NONE);
    set(h, 1, 3, 1, NONE);
    set(h, 2, 4, 0, NONE);
    assert_null(gw_http_handout_pick(h, 4));
    set(h, 2, 3, 0, NONE); /* one closed: room again */
    assert_ptr_equal(gw_http_handout_pick(h, 4), &h->slot[2]);
    gw_handout_free(h);
}

static void
test_join_past_the_loops(void **state)
{
    (void)state;
    struct gw_handout *h = made();
    assert_int_equal(gw_http_handout_join(h, &srv[N], NULL), ERR_NOMEM);
    gw_handout_free(h);
    gw_handout_free(NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fewest_below_the_share),
        cmocka_unit_test(test_ties_in_turn),
        cmocka_unit_test(test_full_then_idle_then_none),
        cmocka_unit_test(test_join_past_the_loops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
