/*
 * A minimal assertion harness for the C tests: CHECK records a failure with
 * its location and goes on, so one run reports every broken case;
 * check_exit() turns the count into the process status Meson reads
 * (0 passed, 1 failed, 77 skipped).
 */
#ifndef MGPU_TESTS_CHECK_H
#define MGPU_TESTS_CHECK_H

#include <stdio.h>

static int check_failures;
static int check_count;

#define CHECK(cond, ...)                                                                                \
    do {                                                                                                \
        check_count++;                                                                                  \
        if (!(cond)) {                                                                                  \
            check_failures++;                                                                           \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);                     \
            fprintf(stderr, __VA_ARGS__);                                                               \
            fputc('\n', stderr);                                                                        \
        }                                                                                               \
    } while (0)

#define CHECK_STATUS(expr, expected)                                                                    \
    do {                                                                                                \
        mgpu_status got_ = (expr);                                                                      \
        CHECK(got_ == (expected), "%s returned %s, expected %s (message: %s)", #expr,                  \
              mgpu_status_string(got_), mgpu_status_string(expected), mgpu_last_error_message());       \
    } while (0)

#define MGPU_TEST_SKIP 77

static int check_exit(void)
{
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
