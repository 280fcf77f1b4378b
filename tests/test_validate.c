/*
 * Every GEMM argument check, one bad argument at a time, each with the
 * status it must produce and a message naming what was wrong: the
 * BLAS-style arguments, fp8 dtypes and layouts, scales, bias and activation
 * (mgpu_gemm_ex), and the descriptor itself.
 */
#include <string.h>

#include "check.h"
#include "gemm_plan.h"

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

    /* fp8: TN only, any e4m3 / e5m2 pair, 16-bit or fp32 output, 1-byte elements */
#define FP8_TN(ta, tb) (p.a_dtype = (ta), p.b_dtype = (tb), p.transa = MGPU_OP_T, p.lda = 16)
    EXPECT(FP8_TN(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3), MGPU_STATUS_SUCCESS, "");
    EXPECT(FP8_TN(MGPU_DTYPE_E5M2, MGPU_DTYPE_E5M2), MGPU_STATUS_SUCCESS, "");
    EXPECT(FP8_TN(MGPU_DTYPE_E4M3, MGPU_DTYPE_E5M2), MGPU_STATUS_SUCCESS, "");
    EXPECT(FP8_TN(MGPU_DTYPE_E5M2, MGPU_DTYPE_E4M3), MGPU_STATUS_SUCCESS, "");
    EXPECT((FP8_TN(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3), p.c_dtype = MGPU_DTYPE_BF16), MGPU_STATUS_SUCCESS, "");
    EXPECT((FP8_TN(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3), p.a += 1, p.b += 3), MGPU_STATUS_SUCCESS, "");
    EXPECT((FP8_TN(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3), p.lda = 17), MGPU_STATUS_SUCCESS, "");
    EXPECT((p.a_dtype = p.b_dtype = MGPU_DTYPE_E4M3), MGPU_STATUS_NOT_SUPPORTED, "transa = T and transb = N");
    EXPECT((FP8_TN(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3), p.transb = MGPU_OP_T, p.ldb = 32), MGPU_STATUS_NOT_SUPPORTED,
           "transa = T and transb = N");
    EXPECT((FP8_TN(MGPU_DTYPE_E5M2, MGPU_DTYPE_E5M2), p.transa = MGPU_OP_N, p.lda = 64), MGPU_STATUS_NOT_SUPPORTED,
           "K-major");
    EXPECT(FP8_TN(MGPU_DTYPE_E4M3, MGPU_DTYPE_BF16), MGPU_STATUS_DTYPE_MISMATCH, "fp8");
    EXPECT(FP8_TN(MGPU_DTYPE_F16, MGPU_DTYPE_E5M2), MGPU_STATUS_DTYPE_MISMATCH, "fp8");
    EXPECT((FP8_TN(MGPU_DTYPE_E4M3, MGPU_DTYPE_E4M3), p.c_dtype = MGPU_DTYPE_E4M3), MGPU_STATUS_UNSUPPORTED_DTYPE,
           "fp8 output");
    EXPECT(p.c_dtype = MGPU_DTYPE_E5M2, MGPU_STATUS_UNSUPPORTED_DTYPE, "fp8 output");
    EXPECT(p.a_dtype = p.b_dtype = MGPU_DTYPE_E5M2 + 1, MGPU_STATUS_INVALID_VALUE, "dtype");
#undef FP8_TN

    /* epilogue fields */
    EXPECT(p.activation = MGPU_ACTIVATION_RELU, MGPU_STATUS_SUCCESS, "");
    EXPECT(p.activation = MGPU_ACTIVATION_GELU, MGPU_STATUS_SUCCESS, "");
    EXPECT(p.activation = MGPU_ACTIVATION_GELU + 1, MGPU_STATUS_INVALID_VALUE, "activation");
    EXPECT(p.activation = -1, MGPU_STATUS_INVALID_VALUE, "activation");
    EXPECT(p.bias_mode = MGPU_BIAS_PER_COLUMN + 1, MGPU_STATUS_INVALID_VALUE, "bias_mode");
    EXPECT((p.bias = 0x40000, p.bias_dtype = MGPU_DTYPE_F32), MGPU_STATUS_SUCCESS, "");
    EXPECT((p.bias = 0x40000, p.bias_dtype = MGPU_DTYPE_F32, p.bias_mode = MGPU_BIAS_PER_COLUMN),
           MGPU_STATUS_SUCCESS, "");
    EXPECT((p.bias = 0x40000, p.bias_dtype = MGPU_DTYPE_BF16, p.c_dtype = MGPU_DTYPE_BF16), MGPU_STATUS_SUCCESS, "");
    EXPECT((p.bias = 0x40000, p.bias_dtype = MGPU_DTYPE_BF16), MGPU_STATUS_UNSUPPORTED_DTYPE, "bias_type");
    EXPECT((p.bias = 0x40000, p.bias_dtype = MGPU_DTYPE_E4M3), MGPU_STATUS_UNSUPPORTED_DTYPE, "bias_type");
    EXPECT((p.bias = 0x40000, p.bias_dtype = 9), MGPU_STATUS_INVALID_VALUE, "bias_type");
    EXPECT((p.bias = 0x40002, p.bias_dtype = MGPU_DTYPE_F32), MGPU_STATUS_INVALID_VALUE, "bias");
    EXPECT((p.bias = 0x40000, p.bias_dtype = MGPU_DTYPE_F32, p.bias_stride = -1), MGPU_STATUS_INVALID_LD,
           "bias_batch_stride");
    EXPECT((p.bias = 0x40000, p.bias_dtype = MGPU_DTYPE_F32, p.batch = 3, p.stride_c = 64 * 32, p.bias_stride = 64),
           MGPU_STATUS_SUCCESS, "");
    EXPECT((p.scale_a = 0x50000, p.scale_b = 0x50004, p.scale_d = 0x50008), MGPU_STATUS_SUCCESS, "");
    EXPECT(p.scale_a = 0x50002, MGPU_STATUS_INVALID_VALUE, "scale_a");
    EXPECT(p.scale_b = 0x50001, MGPU_STATUS_INVALID_VALUE, "scale_b");
    EXPECT(p.scale_d = 0x50006, MGPU_STATUS_INVALID_VALUE, "scale_d");

    /* which calls need the compute capability 9.0 kernels */
    struct mgpu_gemm_problem q = good();
    CHECK(!mgpu_gemm_needs_extensions(&q), "plain bf16 call needs extensions");
    q.activation = MGPU_ACTIVATION_RELU;
    CHECK(mgpu_gemm_needs_extensions(&q), "relu not flagged");
    q = good();
    q.scale_d = 0x50000;
    CHECK(mgpu_gemm_needs_extensions(&q), "scale_d not flagged");
    q = good();
    q.a_dtype = q.b_dtype = MGPU_DTYPE_E5M2;
    CHECK(mgpu_gemm_needs_extensions(&q), "fp8 not flagged");

    /* the descriptor of mgpu_gemm_ex */
    struct mgpu_gemm_problem from;
    CHECK_STATUS(mgpu_gemm_problem_from_desc(NULL, &from), MGPU_STATUS_NULL_POINTER);
    CHECK(strstr(mgpu_last_error_message(), "desc") != NULL, "NULL desc message: %s", mgpu_last_error_message());
    mgpu_gemm_desc desc = MGPU_GEMM_DESC_INIT;
    desc.struct_size -= 8;
    CHECK_STATUS(mgpu_gemm_problem_from_desc(&desc, &from), MGPU_STATUS_INVALID_VALUE);
    CHECK(strstr(mgpu_last_error_message(), "struct_size") != NULL, "struct_size message: %s",
          mgpu_last_error_message());
    mgpu_gemm_desc init = MGPU_GEMM_DESC_INIT;
    CHECK_STATUS(mgpu_gemm_problem_from_desc(&init, &from), MGPU_STATUS_SUCCESS);
    CHECK(*from.alpha == 1.0f && *from.beta == 0.0f && from.batch == 1 && !from.bias && !from.scale_a &&
              !from.scale_b && !from.scale_d && from.activation == MGPU_ACTIVATION_NONE &&
              from.bias_dtype == MGPU_DTYPE_F32 && from.bias_mode == MGPU_BIAS_PER_ROW,
          "MGPU_GEMM_DESC_INIT defaults");
    /* an empty problem (INIT with leading dimensions of 1) is valid and does nothing */
    from.lda = from.ldb = from.ldc = 1;
    CHECK_STATUS(mgpu_gemm_validate(&from), MGPU_STATUS_SUCCESS);
    init.transa = MGPU_OP_T;
    init.m = 64, init.n = 32, init.k = 16;
    init.a_type = init.b_type = MGPU_DTYPE_E4M3;
    init.c_type = MGPU_DTYPE_F16;
    init.A = (const void *)0x10000, init.B = (const void *)0x20000, init.C = (void *)0x30000;
    init.lda = 16, init.ldb = 16, init.ldc = 64;
    init.bias = (const void *)0x40000;
    init.bias_type = MGPU_DTYPE_F16;
    init.bias_mode = MGPU_BIAS_PER_COLUMN;
    init.activation = MGPU_ACTIVATION_GELU;
    const float scale = 2.0f;
    init.scale_a = &scale;
    CHECK_STATUS(mgpu_gemm_problem_from_desc(&init, &from), MGPU_STATUS_SUCCESS);
    CHECK(from.transa == MGPU_OP_T && from.m == 64 && from.n == 32 && from.k == 16 &&
              from.a_dtype == MGPU_DTYPE_E4M3 && from.c_dtype == MGPU_DTYPE_F16 && from.a == 0x10000 &&
              from.lda == 16 && from.bias == 0x40000 && from.bias_dtype == MGPU_DTYPE_F16 &&
              from.bias_mode == MGPU_BIAS_PER_COLUMN && from.activation == MGPU_ACTIVATION_GELU &&
              from.scale_a == (uintptr_t)&scale,
          "descriptor fields not carried into the problem");
    CHECK_STATUS(mgpu_gemm_validate(&from), MGPU_STATUS_SUCCESS);
    return check_exit();
}
