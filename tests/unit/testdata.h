/*
 * tests/unit/testdata.h: where the unit tests find their third-party data.
 *
 * The SigV4 test suite, S3's signing examples and the captured client requests
 * live in tests/data/ (with their LICENSE and NOTICE).  The Makefile compiles
 * the absolute path in (FENCEGATE_TESTDATA_DIR), so a test binary run by hand
 * from any directory finds them; $FENCEGATE_TESTDATA overrides it.
 */
#ifndef TESTS_UNIT_TESTDATA_H
#define TESTS_UNIT_TESTDATA_H

#include <stdlib.h>

#ifndef FENCEGATE_TESTDATA_DIR
#define FENCEGATE_TESTDATA_DIR "tests/data"
#endif

/* testdata_dir - the test-data folder (no trailing slash); static. */
static inline const char *
testdata_dir(void)
{
    const char *d = getenv("FENCEGATE_TESTDATA");
    return d != NULL && d[0] != '\0' ? d : FENCEGATE_TESTDATA_DIR;
}

#endif
