/*
 * Every product of the caller's sizes is checked before use: each case
 * here gives the largest values a field takes (INT64_MAX, 2^48, 2^31 - 1)
 * where an unchecked product would wrap, and expects a clear status, never
 * SUCCESS. Runs under UBSan in CI (.ci/sanitize.sh), which would also flag
 * any signed overflow on the way. No device is needed.
 */
#include <string.h>

#include "attention_plan.h"
#include "check.h"
#include "gather_plan.h"
#include "gemm_plan.h"

static const struct mgpu_device_caps hopper = {9, 0, 132, 232448, 0};
static const float one = 1.0f, zero = 0.0f;

static struct mgpu_gemm_problem gemm(void)
{
    struct mgpu_gemm_problem p = {
        .transa = MGPU_OP_T, .transb = MGPU_OP_N, .m = 64, .n = 64, .k = 64, .batch = 1,
        .a_dtype = MGPU_DTYPE_BF16, .b_dtype = MGPU_DTYPE_BF16, .c_dtype = MGPU_DTYPE_BF16,
        .a = 0x7f0000000000, .b = 0x7f1000000000, .c = 0x7f2000000000, .lda = 64, .ldb = 64, .ldc = 64,
        .alpha = &one, .beta = &zero,
    };
    return p;
}

#define GEMM_EXPECT(mutation, status)                                                                   \
    do {                                                                                                \
        struct mgpu_gemm_problem p = gemm();                                                            \
        mutation;                                                                                       \
        CHECK_STATUS(mgpu_gemm_validate(&p), status);                                                   \
    } while (0)

static void check_gemm(void)
{
    const int64_t max48 = (int64_t)1 << 48;
    GEMM_EXPECT(p.m = INT64_MAX, MGPU_STATUS_INVALID_SIZE);
    GEMM_EXPECT(p.batch = INT64_MAX, MGPU_STATUS_INVALID_SIZE);
    GEMM_EXPECT(p.batch = (int64_t)INT32_MAX + 1, MGPU_STATUS_INVALID_SIZE);
    GEMM_EXPECT(p.lda = INT64_MAX, MGPU_STATUS_INVALID_LD);
    GEMM_EXPECT(p.ldc = INT64_MAX, MGPU_STATUS_INVALID_LD);
    /* ldc * n in the batch-stride check: 2^48 * (2^31 - 1) wraps int64 */
    GEMM_EXPECT((p.n = INT32_MAX, p.ldc = max48, p.ldb = 64, p.batch = 2, p.stride_c = max48),
                MGPU_STATUS_INVALID_LD);
    GEMM_EXPECT((p.batch = 2, p.stride_c = INT64_MAX), MGPU_STATUS_INVALID_LD);
    /* spans: 2^31 - 1 batches 2^48 elements apart */
    GEMM_EXPECT((p.batch = INT32_MAX, p.stride_a = max48, p.stride_b = 64, p.stride_c = 64 * 64),
                MGPU_STATUS_INVALID_SIZE);
    GEMM_EXPECT((p.m = INT32_MAX, p.n = INT32_MAX, p.lda = p.ldb = 64, p.k = 64, p.ldc = INT32_MAX, p.transa = MGPU_OP_N,
                 p.lda = INT32_MAX),
                MGPU_STATUS_INVALID_SIZE);

    /* The packed-operand size: A (batch stride 9 elements: unaligned, overlapping
     * matrices) of 2^16 x 2^16 elements over 2^31 - 1 batches would need
     * 2^65 bytes of workspace. A plan never fits that: the portable kernel
     * takes the call, and a forced persistent variant gets
     * INSUFFICIENT_WORKSPACE, not a wrapped size. */
    struct mgpu_gemm_problem p = gemm();
    p.m = p.k = p.lda = p.ldb = (int64_t)1 << 16;
    p.n = 8;
    p.ldc = p.m;
    p.batch = INT32_MAX;
    p.stride_a = 9;
    p.stride_b = p.k * p.n;
    p.stride_c = p.ldc * p.n;
    CHECK_STATUS(mgpu_gemm_validate(&p), MGPU_STATUS_SUCCESS);
    const struct mgpu_gemm_resources ample = {0x7e0000000000, SIZE_MAX, 0x7e8000000000};
    struct mgpu_gemm_plan plan;
    mgpu_status s = MGPU_STATUS_SUCCESS;
    if (mgpu_plan_gemm(&p, &hopper, NULL, &ample, &plan, &s) == 0) {
        CHECK(mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_PORTABLE && plan.degraded,
              "2^65-byte pack: planned %s", mgpu_variants[plan.variant].name);
        int persistent = -1;
        for (int i = 0; i < mgpu_variant_count && persistent < 0; i++)
            if (mgpu_variants[i].kind == MGPU_KIND_GEMM_SM90_PERSISTENT && mgpu_variants[i].dtype == MGPU_DTYPE_BF16 &&
                mgpu_variants[i].gemm.a_kmajor == 1 && mgpu_variants[i].gemm.b_kmajor == 1)
                persistent = i;
        if (persistent >= 0) {
            const struct mgpu_gemm_force force = {.variant = mgpu_variants[persistent].name};
            CHECK(mgpu_plan_gemm(&p, &hopper, &force, &ample, &plan, &s) < 0 &&
                      s == MGPU_STATUS_INSUFFICIENT_WORKSPACE,
                  "forced persistent with a 2^65-byte pack: %s", mgpu_status_string(s));
        }
    } else {
        CHECK(s == MGPU_STATUS_ARCH_MISMATCH, "2^65-byte pack: %s", mgpu_status_string(s));
    }
}

static mgpu_attention_fwd_desc attention(void)
{
    mgpu_attention_fwd_desc d = MGPU_ATTENTION_FWD_DESC_INIT;
    d.batch = 1, d.seqlen_q = d.seqlen_k = 128, d.heads_q = d.heads_kv = 1, d.head_dim = 128;
    return d;
}

#define ATT_EXPECT(mutation, status)                                                                    \
    do {                                                                                                \
        mgpu_attention_fwd_desc d = attention();                                                        \
        struct mgpu_attention_problem p;                                                                \
        mutation;                                                                                       \
        CHECK_STATUS(mgpu_attention_fwd_validate(&d, (void *)0x7f0000000000, (void *)0x7f1000000000,     \
                                                 (void *)0x7f2000000000, (void *)0x7f3000000000, NULL, &p), \
                     status);                                                                           \
    } while (0)

static void check_attention(void)
{
    ATT_EXPECT(d.batch = INT64_MAX, MGPU_STATUS_INVALID_SIZE);
    ATT_EXPECT(d.seqlen_q = INT64_MAX, MGPU_STATUS_INVALID_SIZE);
    /* the query-tile count: 2^24 tiles x (2^31 - 1) heads x (2^31 - 1) sequences wraps int64 */
    ATT_EXPECT((d.batch = INT32_MAX, d.seqlen_q = INT32_MAX, d.heads_q = d.heads_kv = INT32_MAX),
               MGPU_STATUS_INVALID_SIZE);
    /* default dense strides: seq * heads * head_dim = (2^31 - 1) * 2^30 * 128 wraps int64 */
    ATT_EXPECT((d.seqlen_k = INT32_MAX, d.seqlen_q = 1, d.heads_q = d.heads_kv = (int64_t)1 << 30),
               MGPU_STATUS_INVALID_SIZE);
    ATT_EXPECT((d.k_strides.batch = INT64_MAX, d.k_strides.seq = 128, d.k_strides.head = 128), MGPU_STATUS_INVALID_LD);
}

static void check_gather(void)
{
    mgpu_gather_desc g = MGPU_GATHER_DESC_INIT;
    g.src = (void *)0x7f0000000000, g.dst = (void *)0x7f1000000000, g.index = (void *)0x7f2000000000;
    g.elem_size = 8, g.row_elems = 1, g.n_indices = 1, g.src_rows = 1, g.src_row_stride = g.dst_row_stride = 8;
    struct mgpu_gather_problem p;
    CHECK_STATUS(mgpu_gather_validate(&g, &p), MGPU_STATUS_SUCCESS);
    mgpu_gather_desc x = g;
    x.n_indices = INT64_MAX;
    CHECK_STATUS(mgpu_gather_validate(&x, &p), MGPU_STATUS_INVALID_SIZE);
    x = g;
    x.row_elems = INT64_MAX;
    CHECK_STATUS(mgpu_gather_validate(&x, &p), MGPU_STATUS_INVALID_SIZE);
    x = g;
    x.src_row_stride = INT64_MAX;
    CHECK_STATUS(mgpu_gather_validate(&x, &p), MGPU_STATUS_INVALID_LD);
    /* the span: (2^48 - 1) rows 2^48 bytes apart wraps int64 */
    x = g;
    x.src_rows = (int64_t)1 << 48;
    x.src_row_stride = (int64_t)1 << 48;
    CHECK_STATUS(mgpu_gather_validate(&x, &p), MGPU_STATUS_INVALID_SIZE);
    x = g;
    x.n_indices = (int64_t)1 << 48;
    x.dst_row_stride = (int64_t)1 << 48;
    CHECK_STATUS(mgpu_gather_validate(&x, &p), MGPU_STATUS_INVALID_SIZE);
    /* scatter_add: the span of src (n_indices rows) */
    mgpu_scatter_add_desc s = MGPU_SCATTER_ADD_DESC_INIT;
    s.src = (void *)0x7f0000000000, s.dst = (void *)0x7f1000000000, s.index = (void *)0x7f2000000000;
    s.row_elems = 1, s.dst_rows = 1, s.dst_row_stride = 4;
    s.n_indices = (int64_t)1 << 48;
    s.src_row_stride = (int64_t)1 << 48;
    CHECK_STATUS(mgpu_scatter_add_validate(&s, &p), MGPU_STATUS_INVALID_SIZE);
    /* empty calls: SUCCESS whatever the strides (0 here) and pointers */
    mgpu_gather_desc empty = MGPU_GATHER_DESC_INIT;
    empty.elem_size = 4, empty.row_elems = 16;
    CHECK_STATUS(mgpu_gather_validate(&empty, &p), MGPU_STATUS_SUCCESS);
    CHECK(mgpu_gather_problem_empty(&p), "n_indices = 0 is not empty");
    mgpu_scatter_add_desc empty_s = MGPU_SCATTER_ADD_DESC_INIT;
    empty_s.row_elems = 16;
    CHECK_STATUS(mgpu_scatter_add_validate(&empty_s, &p), MGPU_STATUS_SUCCESS);
}

int main(void)
{
    check_gemm();
    check_attention();
    check_gather();
    return check_exit();
}
