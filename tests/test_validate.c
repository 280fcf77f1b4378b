/*
 * Every GEMM argument check, one bad argument at a time, each with the
 * status it must produce and a message naming what was wrong.
 */
#include <string.h>

#include "check.h"
#include "internal.h"

static const float one = 1.0f, zero = 0.0f;

static struct mgpu_gemm_problem good(void)
{
    struct mgpu_gemm_problem p = {
        .transa = MGPU_OP_N, .transb = MGPU_OP_N, .m = 64, .n = 32, .k = 16, .batch = 1,
        .a_dtype = MGPU_DTYPE_BF16, .b_dtype = MGPU_DTYPE_BF16, .c_dtype = MGPU_DTYPE_F32,
        .a = 0x10000, .b = 0x20000, .c = 0x30000, .lda = 64, .ldb = 16, .ldc = 64,
        .alpha = &one, .beta = &zero,
    };
    return p;
}

#define EXPECT(mutation, status, word)                                                                  \
    do {                                                                                                \
        struct mgpu_gemm_problem p = good();                                                            \
        mutation;                                                                                       \
        CHECK_STATUS(mgpu_gemm_validate(&p), status);                                                   \
        if ((status) != MGPU_STATUS_SUCCESS)                                                            \
            CHECK(strstr(mgpu_last_error_message(), word) != NULL, "message for `%s` lacks '%s': %s",    \
                  #mutation, word, mgpu_last_error_message());                                          \
    } while (0)

int main(void)
{
    EXPECT((void)0, MGPU_STATUS_SUCCESS, "");
    EXPECT(p.transa = 2, MGPU_STATUS_INVALID_VALUE, "transa");
    EXPECT(p.transb = -1, MGPU_STATUS_INVALID_VALUE, "transb");
    EXPECT(p.a_dtype = 9, MGPU_STATUS_INVALID_VALUE, "dtype");
    EXPECT(p.c_dtype = -3, MGPU_STATUS_INVALID_VALUE, "dtype");
    EXPECT(p.b_dtype = MGPU_DTYPE_F16, MGPU_STATUS_DTYPE_MISMATCH, "same dtype");
    EXPECT(p.a_dtype = p.b_dtype = MGPU_DTYPE_F32, MGPU_STATUS_UNSUPPORTED_DTYPE, "fp32");
    EXPECT(p.m = -1, MGPU_STATUS_INVALID_SIZE, "m, n, k");
    EXPECT(p.n = -5, MGPU_STATUS_INVALID_SIZE, "m, n, k");
    EXPECT(p.k = -1, MGPU_STATUS_INVALID_SIZE, "m, n, k");
    EXPECT((p.m = (int64_t)INT32_MAX + 1, p.lda = p.ldc = p.m), MGPU_STATUS_INVALID_SIZE, "2^31");
    EXPECT(p.batch = -2, MGPU_STATUS_INVALID_SIZE, "batch_count");
    EXPECT(p.alpha = NULL, MGPU_STATUS_NULL_POINTER, "alpha");
    EXPECT(p.beta = NULL, MGPU_STATUS_NULL_POINTER, "beta");
    EXPECT(p.lda = 63, MGPU_STATUS_INVALID_LD, "lda");
    EXPECT((p.transa = MGPU_OP_T, p.lda = 15), MGPU_STATUS_INVALID_LD, "lda");
    EXPECT((p.transa = MGPU_OP_T, p.lda = 16), MGPU_STATUS_SUCCESS, "");
    EXPECT(p.ldb = 15, MGPU_STATUS_INVALID_LD, "ldb");
    EXPECT((p.transb = MGPU_OP_T, p.ldb = 31), MGPU_STATUS_INVALID_LD, "ldb");
    EXPECT((p.transb = MGPU_OP_T, p.ldb = 32), MGPU_STATUS_SUCCESS, "");
    EXPECT(p.ldc = 63, MGPU_STATUS_INVALID_LD, "ldc");
    EXPECT((p.m = 0, p.lda = 0, p.ldc = 1), MGPU_STATUS_INVALID_LD, "lda");
    EXPECT((p.m = 0, p.lda = 1, p.ldc = 1, p.a = p.b = p.c = 0), MGPU_STATUS_SUCCESS, "");
    EXPECT(p.lda = (int64_t)1 << 50, MGPU_STATUS_INVALID_LD, "lda");
    /* batches */
    EXPECT((p.batch = 3, p.stride_a = 64 * 16, p.stride_b = 16 * 32, p.stride_c = 64 * 32 - 1),
           MGPU_STATUS_INVALID_LD, "stride_c");
    EXPECT((p.batch = 3, p.stride_a = -1, p.stride_b = 0, p.stride_c = 64 * 32), MGPU_STATUS_INVALID_LD,
           "stride_a");
    EXPECT((p.batch = 3, p.stride_a = 0, p.stride_b = 0, p.stride_c = 64 * 32), MGPU_STATUS_SUCCESS, "");
    EXPECT((p.batch = 1, p.stride_c = 0), MGPU_STATUS_SUCCESS, "");
    EXPECT((p.batch = 0, p.a = p.b = p.c = 0), MGPU_STATUS_SUCCESS, "");
    /* pointers */
    EXPECT(p.c = 0, MGPU_STATUS_NULL_POINTER, "C");
    EXPECT(p.a = 0, MGPU_STATUS_NULL_POINTER, "A");
    EXPECT(p.b = 0, MGPU_STATUS_NULL_POINTER, "B");
    EXPECT((p.k = 0, p.a = p.b = 0), MGPU_STATUS_SUCCESS, "");
    EXPECT(p.c += 2, MGPU_STATUS_INVALID_VALUE, "aligned");
    EXPECT(p.a += 1, MGPU_STATUS_INVALID_VALUE, "aligned");
    EXPECT((p.c_dtype = MGPU_DTYPE_F16, p.c += 2), MGPU_STATUS_SUCCESS, "");
    return check_exit();
}
