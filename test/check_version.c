/*
 * The version macros (sive/version.h, generated from meson.build) and the
 * version of the library actually linked both equal the project version,
 * passed by test/meson.build as argv[1].
 */
#include <sive/version.h>
#include <sive/sive.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect_u(const char *what, unsigned long got, unsigned long want)
{
    if (got != want) {
        printf("FAIL %s = %lu, expected %lu\n", what, got, want);
        failures++;
    }
}

static void expect_s(const char *what, const char *got, const char *want)
{
    if (!got || strcmp(got, want) != 0) {
        printf("FAIL %s = \"%s\", expected \"%s\"\n", what, got ? got : "(null)",
               want);
        failures++;
    }
}

int main(int argc, char **argv)
{
    unsigned long major, minor, patch;
    char tail;
    if (argc != 2 || sscanf(argv[1], "%lu.%lu.%lu%c", &major, &minor, &patch,
                            &tail) != 3) {
        fprintf(stderr, "usage: check_version MAJOR.MINOR.PATCH\n");
        return 2;
    }
    const unsigned long number = major * 10000 + minor * 100 + patch;

    expect_s("SIVE_VERSION_STRING", SIVE_VERSION_STRING, argv[1]);
    expect_u("SIVE_VERSION_MAJOR", SIVE_VERSION_MAJOR, major);
    expect_u("SIVE_VERSION_MINOR", SIVE_VERSION_MINOR, minor);
    expect_u("SIVE_VERSION_PATCH", SIVE_VERSION_PATCH, patch);
    expect_u("SIVE_VERSION_NUMBER", SIVE_VERSION_NUMBER, number);
    expect_s("sive_version_string()", sive_version_string(), argv[1]);
    expect_u("sive_version_number()", sive_version_number(), number);

    printf("headers %s (%lu), library %s (%lu), project %s\n",
           SIVE_VERSION_STRING, (unsigned long)SIVE_VERSION_NUMBER,
           sive_version_string(), (unsigned long)sive_version_number(),
           argv[1]);
    return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
