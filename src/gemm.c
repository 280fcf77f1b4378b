/*
 * mgpu_gemm and mgpu_gemm_strided_batched: validate, select, build the kernel
 * parameters (TMA tensor maps for the tensor-core variants), launch.
 *
 * Tensor maps, one per operand, rank 3 over {contiguous, strided, batch}
 * dimensions, 128-byte swizzled boxes 64 elements (128 bytes) wide:
 *   K-major operand (A with transa = T, B with transb = N):
 *       dims {k, rows, batch}, box {64, tile_rows, 1}
 *   MN-major operand (A with transa = N, B with transb = T):
 *       dims {rows, k, batch}, box {64, 64, 1}; the kernel loads tile_rows / 64 boxes
 * where rows is m for A and n for B. Out-of-bounds elements read as zero,
 * which is how partial tiles at the m, n and k edges are handled.
 */
#include "internal.h"

#include <stdlib.h>

#include "../kernels/common/gemm_abi.h"

_Static_assert((int)MGPU_ABI_F16 == (int)MGPU_DTYPE_F16 && (int)MGPU_ABI_BF16 == (int)MGPU_DTYPE_BF16 &&
                   (int)MGPU_ABI_F32 == (int)MGPU_DTYPE_F32,
               "kernel dtype codes must equal the public ones");

#define TMA_BOX_INNER 64   /* elements: one 128-byte swizzle row of 16-bit data */
#define MAX_GRID_Z 65535

static mgpu_status encode_operand(const struct mgpu_driver *d, CUtensorMap *map, int dtype, uintptr_t base,
                                  int k_major, int64_t rows, int64_t k, int64_t ld, int64_t stride,
                                  int64_t batch, int tile_rows, int tile_k)
{
    const cuuint64_t esize = 2;
    cuuint64_t dims[3] = {(cuuint64_t)(k_major ? k : rows), (cuuint64_t)(k_major ? rows : k), (cuuint64_t)batch};
    cuuint64_t strides[2] = {(cuuint64_t)ld * esize, batch > 1 ? (cuuint64_t)stride * esize : (cuuint64_t)ld * esize};
    cuuint32_t box[3] = {TMA_BOX_INNER, (cuuint32_t)(k_major ? tile_rows : tile_k), 1};
    cuuint32_t elem_strides[3] = {1, 1, 1};
    CUresult r = d->cuTensorMapEncodeTiled(
        map, dtype == MGPU_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3,
        (void *)base, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuTensorMapEncodeTiled");
    return MGPU_STATUS_SUCCESS;
}

static const char *dtype_name(int dtype)
{
    return dtype == MGPU_DTYPE_F16 ? "f16" : dtype == MGPU_DTYPE_BF16 ? "bf16" : "f32";
}

static mgpu_status launch(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gemm_problem *p,
                          int variant)
{
    const struct mgpu_variant *v = &mgpu_variants[variant];
    CUfunction fn;
    mgpu_status s = mgpu_kernel_function(h, d, variant, &fn);
    if (s != MGPU_STATUS_SUCCESS)
        return s;

    struct mgpu_gemm_args args = {
        .m = (int32_t)p->m, .n = (int32_t)p->n, .k = (int32_t)p->k,
        .alpha = *p->alpha, .beta = *p->beta,
        .c_dtype = p->c_dtype, .ab_dtype = p->a_dtype,
        .trans_a = p->transa, .trans_b = p->transb,
        .c = p->c, .ldc = p->ldc, .stride_c = p->stride_c,
        .a = p->a, .b = p->b, .lda = p->lda, .ldb = p->ldb, .stride_a = p->stride_a, .stride_b = p->stride_b,
    };
    CUtensorMap maps[2];
    void *params[3];
    int n_params = 0;
    if (v->kind == MGPU_KIND_GEMM_SM90_TMA || v->kind == MGPU_KIND_GEMM_SM100_TMA) {
        s = encode_operand(d, &maps[0], p->a_dtype, p->a, p->transa == MGPU_OP_T, p->m, p->k, p->lda,
                           p->stride_a, p->batch, v->tile_m, v->tile_k);
        if (s == MGPU_STATUS_SUCCESS)
            s = encode_operand(d, &maps[1], p->a_dtype, p->b, p->transb == MGPU_OP_N, p->n, p->k, p->ldb,
                               p->stride_b, p->batch, v->tile_n, v->tile_k);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
        params[n_params++] = &maps[0];
        params[n_params++] = &maps[1];
    }
    params[n_params++] = &args;

    CUlaunchConfig cfg = {
        .gridDimX = (unsigned)((p->m + v->tile_m - 1) / v->tile_m),
        .gridDimY = (unsigned)((p->n + v->tile_n - 1) / v->tile_n),
        .blockDimX = (unsigned)v->threads, .blockDimY = 1, .blockDimZ = 1,
        .sharedMemBytes = (unsigned)v->smem_bytes,
        .hStream = h->stream,
        .attrs = NULL, .numAttrs = 0,
    };
    for (int64_t b0 = 0; b0 < p->batch; b0 += MAX_GRID_Z) {
        args.batch_base = (int32_t)b0;
        cfg.gridDimZ = (unsigned)(p->batch - b0 < MAX_GRID_Z ? p->batch - b0 : MAX_GRID_Z);
        CUresult r = d->cuLaunchKernelEx(&cfg, fn, params, NULL);
        if (r != CUDA_SUCCESS)
            return mgpu_driver_fail(d, r, v->name);
    }
    return MGPU_STATUS_SUCCESS;
}

static mgpu_status gemm(mgpu_handle *h, const struct mgpu_gemm_problem *p)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    s = mgpu_gemm_validate(p);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (p->m == 0 || p->n == 0 || p->batch == 0)
        return MGPU_STATUS_SUCCESS;
    if (p->batch > INT32_MAX)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "batch_count must be <= 2^31 - 1");

    const char *force = getenv("MGPU_FORCE_VARIANT");
    int variant = mgpu_select_gemm(p, &h->caps, force, &s);
    if (variant < 0)
        return s;
    if (mgpu_log_enabled())
        mgpu_log("gemm %s%s m=%lld n=%lld k=%lld batch=%lld %s->%s lda=%lld ldb=%lld ldc=%lld: %s%s",
                 p->transa == MGPU_OP_N ? "N" : "T", p->transb == MGPU_OP_N ? "N" : "T", (long long)p->m,
                 (long long)p->n, (long long)p->k, (long long)p->batch, dtype_name(p->a_dtype),
                 dtype_name(p->c_dtype), (long long)p->lda, (long long)p->ldb, (long long)p->ldc,
                 mgpu_variants[variant].name, force && force[0] ? " (forced)" : "");
    return launch(h, d, p, variant);
}

mgpu_status mgpu_gemm(mgpu_handle *handle, mgpu_operation transa, mgpu_operation transb, int64_t m, int64_t n,
                      int64_t k, const float *alpha, const void *A, mgpu_dtype a_type, int64_t lda, const void *B,
                      mgpu_dtype b_type, int64_t ldb, const float *beta, void *C, mgpu_dtype c_type, int64_t ldc)
{
    const struct mgpu_gemm_problem p = {
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .batch = 1,
        .a_dtype = a_type, .b_dtype = b_type, .c_dtype = c_type,
        .a = (uintptr_t)A, .b = (uintptr_t)B, .c = (uintptr_t)C,
        .lda = lda, .ldb = ldb, .ldc = ldc,
        .alpha = alpha, .beta = beta,
    };
    return gemm(handle, &p);
}

mgpu_status mgpu_gemm_strided_batched(mgpu_handle *handle, mgpu_operation transa, mgpu_operation transb,
                                      int64_t m, int64_t n, int64_t k, const float *alpha, const void *A,
                                      mgpu_dtype a_type, int64_t lda, int64_t stride_a, const void *B,
                                      mgpu_dtype b_type, int64_t ldb, int64_t stride_b, const float *beta, void *C,
                                      mgpu_dtype c_type, int64_t ldc, int64_t stride_c, int64_t batch_count)
{
    const struct mgpu_gemm_problem p = {
        .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .batch = batch_count,
        .a_dtype = a_type, .b_dtype = b_type, .c_dtype = c_type,
        .a = (uintptr_t)A, .b = (uintptr_t)B, .c = (uintptr_t)C,
        .lda = lda, .ldb = ldb, .ldc = ldc,
        .stride_a = stride_a, .stride_b = stride_b, .stride_c = stride_c,
        .alpha = alpha, .beta = beta,
    };
    return gemm(handle, &p);
}
