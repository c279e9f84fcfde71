/* common/rand.c: random bytes (see rand.h). */
#include "common/rand.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "common/log.h"

int
rand_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(p + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            log_error("getrandom: %s", strerror(errno));
            return ERR_IO;
        }
        got += (size_t)r;
    }
    return 0;
}

int
rand_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[32];
    size_t done = 0;
    while (done < nbytes) {
        size_t k = nbytes - done < sizeof(b) ? nbytes - done : sizeof(b);
        if (rand_bytes(b, k) != 0) {
            out[0] = '\0';
            return ERR_IO;
        }
        for (size_t i = 0; i < k; i++) {
            out[2 * (done + i)] = hex[b[i] >> 4];
            out[2 * (done + i) + 1] = hex[b[i] & 15];
        }
        done += k;
    }
    out[2 * nbytes] = '\0';
    volatile unsigned char *v = b; /* the bytes may be a secret */
    for (size_t i = 0; i < sizeof(b); i++) {
        v[i] = 0;
    }
    return 0;
}
