#include "common/token.h"

#include <stdint.h>
#include <string.h>

const unsigned char http_tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,  ['4'] = 1, ['5'] = 1,
    ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['A'] = 1, ['B'] = 1,  ['C'] = 1, ['D'] = 1,
    ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,  ['K'] = 1, ['L'] = 1,
    ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,  ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,  ['^'] = 1, ['_'] = 1,
    ['`'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1,  ['f'] = 1, ['g'] = 1,
    ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1,  ['n'] = 1, ['o'] = 1,
    ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1,  ['v'] = 1, ['w'] = 1,
    ['x'] = 1, ['y'] = 1, ['z'] = 1, ['|'] = 1, ['~'] = 1,
};

bool
http_is_token(const char *s, size_t len)
{
    if (len == 0) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (!http_tchar[(unsigned char)s[i]]) {
            return false;
        }
    }
    return true;
}

static bool
byte_clean(unsigned char c)
{
    return (c >= 0x20 || c == '\t') && c != 0x7f;
}

/* Whether some byte of x is below 0x20 or is 0x7f (exact: a borrow starts only at such a byte). */
static bool
word_suspect(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ULL;
    const uint64_t highs = 0x8080808080808080ULL;
    uint64_t del = x ^ (ones * 0x7f);
    return (((x - ones * 0x20) & ~x) | ((del - ones) & ~del)) & highs;
}

bool
http_value_clean(const char *s, size_t len)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        if (word_suspect(x)) {
            for (size_t k = i; k < i + 8; k++) {
                if (!byte_clean((unsigned char)s[k])) {
                    return false;
                }
            }
        }
    }
    for (; i < len; i++) {
        if (!byte_clean((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}
