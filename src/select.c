/*
 * GEMM argument validation and variant selection (see select.h).
 *
 * Selection walks the generated registry in table order and takes the first
 * variant that runs on the device's exact compute capability (sm_90a and
 * sm_100a images load nowhere else), takes the problem's dtype and operand
 * layouts, and whose operand access path the inputs allow: tensor-core
 * variants read A and B through TMA, which needs 16-byte alignment; the
 * portable variant takes anything.
 */
#include "internal.h"

#include <string.h>

/* Leading dimensions and strides beyond this many elements cannot address
 * real memory; refusing them keeps every offset computation in int64 range. */
#define MGPU_MAX_EXTENT ((int64_t)1 << 48)
#define TMA_ALIGN 16
#define TMA_MAX_STRIDE_BYTES ((int64_t)1 << 40)

static const char *op_name(int op)
{
    return op == MGPU_OP_N ? "N" : "T";
}

static int dtype_size(int dtype)
{
    return dtype == MGPU_DTYPE_F32 ? 4 : 2;
}

static int dtype_known(int dtype)
{
    return dtype == MGPU_DTYPE_F16 || dtype == MGPU_DTYPE_BF16 || dtype == MGPU_DTYPE_F32;
}

mgpu_status mgpu_gemm_validate(const struct mgpu_gemm_problem *p)
{
    if (p->transa != MGPU_OP_N && p->transa != MGPU_OP_T)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "transa is %d; it must be MGPU_OP_N or MGPU_OP_T", p->transa);
    if (p->transb != MGPU_OP_N && p->transb != MGPU_OP_T)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "transb is %d; it must be MGPU_OP_N or MGPU_OP_T", p->transb);
    if (!dtype_known(p->a_dtype) || !dtype_known(p->b_dtype) || !dtype_known(p->c_dtype))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "a dtype (A %d, B %d, C %d) is not an mgpu_dtype value",
                         p->a_dtype, p->b_dtype, p->c_dtype);
    if (p->a_dtype != p->b_dtype)
        return mgpu_fail(MGPU_STATUS_DTYPE_MISMATCH, "A and B must have the same dtype (A %d, B %d)",
                         p->a_dtype, p->b_dtype);
    if (p->a_dtype == MGPU_DTYPE_F32)
        return mgpu_fail(MGPU_STATUS_UNSUPPORTED_DTYPE, "A and B must be fp16 or bf16; fp32 inputs are not supported");
    if (p->m < 0 || p->n < 0 || p->k < 0)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "m, n, k must be >= 0 (got %lld, %lld, %lld)",
                         (long long)p->m, (long long)p->n, (long long)p->k);
    if (p->m > INT32_MAX || p->n > INT32_MAX || p->k > INT32_MAX)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "m, n, k must be <= 2^31 - 1 (got %lld, %lld, %lld)",
                         (long long)p->m, (long long)p->n, (long long)p->k);
    if (p->batch < 0)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "batch_count must be >= 0 (got %lld)", (long long)p->batch);
    if (!p->alpha || !p->beta)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "%s is NULL", !p->alpha ? "alpha" : "beta");

    const int64_t rows_a = p->transa == MGPU_OP_N ? p->m : p->k;
    const int64_t rows_b = p->transb == MGPU_OP_N ? p->k : p->n;
    const int64_t cols_c = p->n;
    if (p->lda < (rows_a > 1 ? rows_a : 1) || p->lda > MGPU_MAX_EXTENT)
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "lda = %lld; with transa = %s it must be >= max(1, %s) = %lld",
                         (long long)p->lda, op_name(p->transa), p->transa == MGPU_OP_N ? "m" : "k",
                         (long long)(rows_a > 1 ? rows_a : 1));
    if (p->ldb < (rows_b > 1 ? rows_b : 1) || p->ldb > MGPU_MAX_EXTENT)
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "ldb = %lld; with transb = %s it must be >= max(1, %s) = %lld",
                         (long long)p->ldb, op_name(p->transb), p->transb == MGPU_OP_N ? "k" : "n",
                         (long long)(rows_b > 1 ? rows_b : 1));
    if (p->ldc < (p->m > 1 ? p->m : 1) || p->ldc > MGPU_MAX_EXTENT)
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "ldc = %lld; it must be >= max(1, m) = %lld", (long long)p->ldc,
                         (long long)(p->m > 1 ? p->m : 1));
    if (p->batch > 1) {
        if (p->stride_a < 0 || p->stride_b < 0 || p->stride_a > MGPU_MAX_EXTENT || p->stride_b > MGPU_MAX_EXTENT)
            return mgpu_fail(MGPU_STATUS_INVALID_LD, "stride_a and stride_b must be in [0, 2^48] (got %lld, %lld)",
                             (long long)p->stride_a, (long long)p->stride_b);
        if (p->stride_c < p->ldc * cols_c || p->stride_c > MGPU_MAX_EXTENT)
            return mgpu_fail(MGPU_STATUS_INVALID_LD,
                             "stride_c = %lld; the C matrices must not overlap: stride_c >= ldc * n = %lld",
                             (long long)p->stride_c, (long long)(p->ldc * cols_c));
    }

    if (p->m == 0 || p->n == 0 || p->batch == 0)
        return MGPU_STATUS_SUCCESS; /* nothing is read or written */
    if (!p->c)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "C is NULL");
    if (p->c % (uintptr_t)dtype_size(p->c_dtype))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "C (%#llx) is not aligned to its %d-byte elements",
                         (unsigned long long)p->c, dtype_size(p->c_dtype));
    if (p->k > 0) {
        if (!p->a || !p->b)
            return mgpu_fail(MGPU_STATUS_NULL_POINTER, "%s is NULL", !p->a ? "A" : "B");
        if (p->a % 2 || p->b % 2)
            return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "%s is not aligned to its 2-byte elements",
                             p->a % 2 ? "A" : "B");
    }
    return MGPU_STATUS_SUCCESS;
}

static int tma_ok(uintptr_t base, int64_t ld, int64_t stride, int64_t batch)
{
    const int64_t esize = 2;
    if (base % TMA_ALIGN || (ld * esize) % TMA_ALIGN || ld * esize >= TMA_MAX_STRIDE_BYTES)
        return 0;
    if (batch > 1 && (stride == 0 || (stride * esize) % TMA_ALIGN || stride * esize >= TMA_MAX_STRIDE_BYTES))
        return 0;
    return 1;
}

int mgpu_gemm_tma_eligible(const struct mgpu_gemm_problem *p)
{
    return p->k > 0 && tma_ok(p->a, p->lda, p->stride_a, p->batch) && tma_ok(p->b, p->ldb, p->stride_b, p->batch);
}

static int is_tma_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_GEMM_SM90_TMA || k == MGPU_KIND_GEMM_SM100_TMA;
}

/* Whether variant v can compute problem p at all (device aside). */
static int applicable(const struct mgpu_variant *v, const struct mgpu_gemm_problem *p, int tma)
{
    if (v->dtype != MGPU_VARIANT_ANY_DTYPE && v->dtype != p->a_dtype)
        return 0;
    if (v->a_kmajor != MGPU_VARIANT_ANY_LAYOUT && v->a_kmajor != (p->transa == MGPU_OP_T))
        return 0;
    if (v->b_kmajor != MGPU_VARIANT_ANY_LAYOUT && v->b_kmajor != (p->transb == MGPU_OP_N))
        return 0;
    if (is_tma_kind(v->kind)) {
        /* the tile grid must fit the launch limits: grid.y = ceil(n / tile_n) */
        if (!tma || (p->n + v->tile_n - 1) / v->tile_n > 65535)
            return 0;
    } else if ((p->n + v->tile_n - 1) / v->tile_n > 65535) {
        return 0;
    }
    return 1;
}

int mgpu_select_gemm(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                     const char *force, mgpu_status *status)
{
    const int tma = mgpu_gemm_tma_eligible(p);
    int for_device = 0;
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (v->cc_major != caps->cc_major || v->cc_minor != caps->cc_minor)
            continue;
        for_device++;
        if (v->smem_bytes > caps->max_smem_per_block)
            continue;
        if (force && force[0]) {
            if (strcmp(force, v->name) != 0)
                continue;
            if (!applicable(v, p, tma)) {
                *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                                    "MGPU_FORCE_VARIANT=%s cannot compute this problem (dtype, layout or alignment)",
                                    force);
                return -1;
            }
            return i;
        }
        if (applicable(v, p, tma))
            return i;
    }
    if (!for_device) {
        *status = mgpu_fail(MGPU_STATUS_ARCH_MISMATCH,
                            "this build has no GEMM kernel for compute capability %d.%d (it has sm_90a and/or "
                            "sm_100a kernels: cc 9.0 and 10.0)",
                            caps->cc_major, caps->cc_minor);
        return -1;
    }
    if (force && force[0])
        *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                            "MGPU_FORCE_VARIANT=%s names no variant for compute capability %d.%d", force,
                            caps->cc_major, caps->cc_minor);
    else
        *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "no GEMM variant takes m=%lld n=%lld on this device",
                            (long long)p->m, (long long)p->n);
    return -1;
}
