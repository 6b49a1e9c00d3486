/* The one way every Check test program ends: run the suite (CK_NORMAL:
 * failures and the summary line), free the runner, and turn the failure
 * count into the exit status meson reads. */
#ifndef SIVE_TEST_CHECK_RUN_H
#define SIVE_TEST_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
