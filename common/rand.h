/*
 * common/rand.h: random bytes from the kernel (getrandom(2)), one home for
 * every secret and identifier the project makes (lease ids, grant ids, probe
 * keys, request-id salts).
 */
#ifndef COMMON_RAND_H
#define COMMON_RAND_H

#include <stddef.h>

#include "common/err.h"

/*
 * rand_bytes - fill buf with n random bytes; blocks only until the kernel's
 * pool is first initialised (early boot).  Retries on EINTR and short reads.
 * Returns 0; ERR_IO when the kernel refuses (logged).
 */
MUST_USE int rand_bytes(void *buf, size_t n);

/*
 * rand_hex - nbytes random bytes as 2*nbytes lower-case hex digits and a NUL
 * in out (2*nbytes + 1 bytes).  Returns 0; ERR_IO as rand_bytes.
 */
MUST_USE int rand_hex(char *out, size_t nbytes);

#endif
