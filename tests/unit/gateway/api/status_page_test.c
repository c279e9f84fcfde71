/* Unit tests for gateway/api/status_page.c: HTML escaping of what clients name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/api/status_page.h"

static const char *
esc(const char *s)
{
    static struct buf b;
    buf_cleanup(&b);
    buf_init(&b, 4096);
    assert_int_equal(gw_status_page_escape(&b, s), 0);
    return buf_cstr(&b);
}

static void
test_escape(void **state)
{
    (void)state;
    assert_string_equal(esc("orders"), "orders");
    assert_string_equal(esc("<b>x</b> & \"q\" 'a'"),
                        "&lt;b&gt;x&lt;/b&gt; &amp; &quot;q&quot; &#39;a&#39;");
    assert_string_equal(esc("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
    assert_string_equal(esc("a\x01\nb\x7f"), "a&#xFFFD;&#xFFFD;b&#xFFFD;");
    assert_string_equal(esc("caf\xc3\xa9 \xff"), "caf\xc3\xa9 &#xFFFD;");
    assert_string_equal(esc(""), "");
    assert_string_equal(esc(NULL), "");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
