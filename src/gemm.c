/*
 * mgpu_gemm, mgpu_gemm_strided_batched and mgpu_gemm_ex: validate, plan
 * (src/select.c), build the kernel parameters (TMA tensor maps for the
 * tensor-core variants), launch on the handle's stream. The BLAS-style calls
 * are mgpu_gemm_ex's problem without scales, bias or activation.
 *
 * Tensor maps of A and B, one per operand, rank 3 over {contiguous, strided,
 * batch} dimensions, 128-byte swizzled boxes 128 bytes wide (64 16-bit or
 * 128 fp8 elements; fp8 is mapped as UINT8, the kernel knows the format):
 *   K-major operand (A with transa = T, B with transb = N):
 *       dims {k, rows, batch}, box {128 bytes, tile_rows, 1}
 *   MN-major operand (A with transa = N, B with transb = T; 16-bit only):
 *       dims {rows, k, batch}, box {64, 64, 1}; the kernel loads tile_rows / 64 boxes
 * where rows is m for A and n for B (a broadcast operand, batch stride 0, has
 * batch dimension 1). Out-of-bounds elements read as zero, which is how
 * partial tiles at the m, n and k edges are handled. With 2-CTA clusters each
 * CTA loads half of the A tile (tile_rows = tile_m / 2) and multicasts it.
 *
 * The persistent kernel also takes a map of D (C): dims {m, n, batch}, box
 * {128 bytes of rows, 64 columns, 1}, 128-byte swizzle, for its TMA stores;
 * when C's alignment rules that out it stores directly. A plan may add, on
 * the same stream, scratch memory from the handle's pool (src/handle.c) holding packed copies of
 * the operands TMA cannot read and the fp32 split-K partials, the pack
 * kernel in front and the split-K reduction behind.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "../kernels/abi/gemm_abi.h"

_Static_assert((int)MGPU_ABI_F16 == (int)MGPU_DTYPE_F16 && (int)MGPU_ABI_BF16 == (int)MGPU_DTYPE_BF16 &&
                   (int)MGPU_ABI_F32 == (int)MGPU_DTYPE_F32 && (int)MGPU_ABI_E4M3 == (int)MGPU_DTYPE_E4M3 &&
                   (int)MGPU_ABI_E5M2 == (int)MGPU_DTYPE_E5M2,
               "kernel dtype codes must equal the public ones");
_Static_assert((int)MGPU_ABI_ACT_NONE == (int)MGPU_ACTIVATION_NONE &&
                   (int)MGPU_ABI_ACT_RELU == (int)MGPU_ACTIVATION_RELU &&
                   (int)MGPU_ABI_ACT_GELU == (int)MGPU_ACTIVATION_GELU &&
                   (int)MGPU_ABI_BIAS_PER_ROW == (int)MGPU_BIAS_PER_ROW &&
                   (int)MGPU_ABI_BIAS_PER_COLUMN == (int)MGPU_BIAS_PER_COLUMN,
               "kernel epilogue codes must equal the public ones");

#define TMA_ROW_BYTES 128  /* bytes of one swizzle row: the inner box of every map */
#define EPI_COLS 64        /* columns of D per TMA store box (one consumer warpgroup) */
#define MAX_GRID_Z 65535
#define WS_ALIGN 256       /* bytes: start of every workspace part */
#define PACK_BYTES 16      /* packed leading dimensions are multiples of 16 bytes */
#define HELPER_BLOCKS_PER_SM 8 /* grid of the grid-stride pack and reduction kernels */

static CUtensorMapDataType tma_dtype(int dtype)
{
    return dtype == MGPU_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
           : dtype == MGPU_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
           : mgpu_dtype_is_fp8(dtype) ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                      : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

static int dtype_bytes(int dtype)
{
    return mgpu_dtype_size(dtype);
}

static mgpu_status encode_operand(const struct mgpu_driver *d, CUtensorMap *map, int dtype, uintptr_t base,
                                  int k_major, int64_t rows, int64_t k, int64_t ld, int64_t stride,
                                  int64_t batch, int tile_rows, int tile_k)
{
    const cuuint64_t esize = (cuuint64_t)dtype_bytes(dtype);
    cuuint64_t dims[3] = {(cuuint64_t)(k_major ? k : rows), (cuuint64_t)(k_major ? rows : k), (cuuint64_t)batch};
    cuuint64_t strides[2] = {(cuuint64_t)ld * esize, batch > 1 ? (cuuint64_t)stride * esize : (cuuint64_t)ld * esize};
    cuuint32_t box[3] = {(cuuint32_t)(TMA_ROW_BYTES / esize), (cuuint32_t)(k_major ? tile_rows : tile_k), 1};
    cuuint32_t elem_strides[3] = {1, 1, 1};
    CUresult r = d->cuTensorMapEncodeTiled(
        map, tma_dtype(dtype), 3,
        (void *)base, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuTensorMapEncodeTiled");
    return MGPU_STATUS_SUCCESS;
}

/* D as the persistent kernel stores it: {m, n, batch}, box {128 bytes, 64, 1}. */
static mgpu_status encode_output(const struct mgpu_driver *d, CUtensorMap *map, int dtype, uintptr_t base,
                                 int64_t m, int64_t n, int64_t ld, int64_t stride, int64_t batch)
{
    const cuuint64_t esize = (cuuint64_t)dtype_bytes(dtype);
    cuuint64_t dims[3] = {(cuuint64_t)m, (cuuint64_t)n, (cuuint64_t)batch};
    cuuint64_t strides[2] = {(cuuint64_t)ld * esize, batch > 1 ? (cuuint64_t)stride * esize : (cuuint64_t)ld * esize};
    cuuint32_t box[3] = {(cuuint32_t)(TMA_ROW_BYTES / esize), EPI_COLS, 1};
    cuuint32_t elem_strides[3] = {1, 1, 1};
    CUresult r = d->cuTensorMapEncodeTiled(map, tma_dtype(dtype), 3, (void *)base, dims, strides, box, elem_strides,
                                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                           CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuTensorMapEncodeTiled (C)");
    return MGPU_STATUS_SUCCESS;
}

static const char *dtype_name(int dtype)
{
    return dtype == MGPU_DTYPE_F16    ? "f16"
           : dtype == MGPU_DTYPE_BF16 ? "bf16"
           : dtype == MGPU_DTYPE_E4M3 ? "e4m3"
           : dtype == MGPU_DTYPE_E5M2 ? "e5m2"
                                      : "f32";
}

/* The scale, bias and activation fields of the kernel arguments. */
static void set_epilogue(struct mgpu_gemm_args *args, const struct mgpu_gemm_problem *p)
{
    args->scale_a = p->scale_a;
    args->scale_b = p->scale_b;
    args->scale_d = p->scale_d;
    args->bias = p->bias;
    args->bias_batch_stride = p->bias_stride;
    args->bias_dtype = p->bias_dtype;
    args->bias_mode = p->bias_mode;
    args->activation = p->activation;
    args->b_dtype = p->b_dtype;
}

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static unsigned helper_grid(const mgpu_handle *h, int64_t work_items, int threads)
{
    const int64_t need = (work_items + threads - 1) / threads;
    const int64_t cap = (int64_t)(h->caps.sm_count > 0 ? h->caps.sm_count : 1) * HELPER_BLOCKS_PER_SM;
    return (unsigned)(need < cap ? (need > 0 ? need : 1) : cap);
}


/* The foundation's launch: one CTA per tile, grid z over the batch (the first
 * sm90 kernel, the Blackwell kernel and the portable kernel). */
static mgpu_status launch_single(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gemm_problem *p,
                                 int variant)
{
    const struct mgpu_variant *v = &mgpu_variants[variant];
    mgpu_status s = MGPU_STATUS_SUCCESS;
    struct mgpu_gemm_args args = {
        .m = (int32_t)p->m, .n = (int32_t)p->n, .k = (int32_t)p->k,
        .alpha = *p->alpha, .beta = *p->beta,
        .c_dtype = p->c_dtype, .ab_dtype = p->a_dtype,
        .trans_a = p->transa, .trans_b = p->transb,
        .c = p->c, .ldc = p->ldc, .stride_c = p->stride_c,
        .a = p->a, .b = p->b, .lda = p->lda, .ldb = p->ldb, .stride_a = p->stride_a, .stride_b = p->stride_b,
    };
    set_epilogue(&args, p);
    CUtensorMap maps[2];
    void *params[3];
    int n_params = 0;
    if (v->kind == MGPU_KIND_GEMM_SM100_TMA) {
        s = encode_operand(d, &maps[0], p->a_dtype, p->a, p->transa == MGPU_OP_T, p->m, p->k, p->lda,
                           p->stride_a, p->batch, v->tile_m, v->tile_k);
        if (s == MGPU_STATUS_SUCCESS)
            s = encode_operand(d, &maps[1], p->b_dtype, p->b, p->transb == MGPU_OP_N, p->n, p->k, p->ldb,
                               p->stride_b, p->batch, v->tile_n, v->tile_k);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
        params[n_params++] = &maps[0];
        params[n_params++] = &maps[1];
    }
    params[n_params++] = &args;

    const unsigned grid_x = (unsigned)((p->m + v->tile_m - 1) / v->tile_m);
    const unsigned grid_y = (unsigned)((p->n + v->tile_n - 1) / v->tile_n);
    for (int64_t b0 = 0; b0 < p->batch && s == MGPU_STATUS_SUCCESS; b0 += MAX_GRID_Z) {
        args.batch_base = (int32_t)b0;
        const unsigned grid_z = (unsigned)(p->batch - b0 < MAX_GRID_Z ? p->batch - b0 : MAX_GRID_Z);
        s = mgpu_launch(h, d, variant, grid_x, grid_y, grid_z, params);
    }
    return s;
}

/* Where the persistent kernel reads one operand: the caller's matrix or its packed copy. */
struct operand {
    uintptr_t base;
    int64_t ld, stride;
};

/* Leading dimension of a packed operand of `rows` rows: a multiple of 16 bytes. */
static int64_t packed_ld(int64_t rows, int esize)
{
    return round_up(rows, PACK_BYTES / esize);
}

/* Copies `batches` matrices of rows x cols (rows contiguous) of esize-byte
 * elements into the workspace at dst with columns packed_ld(rows) apart. */
static mgpu_status pack_operand(mgpu_handle *h, const struct mgpu_driver *d, int variant, uintptr_t src,
                                int esize, int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batches,
                                CUdeviceptr dst, struct operand *out)
{
    struct mgpu_gemm_pack_args pa = {
        .src = src, .dst = dst, .rows = rows, .cols = cols, .batch = batches,
        .ld_src = ld, .stride_src = stride,
        .ld_dst = packed_ld(rows, esize), .stride_dst = packed_ld(rows, esize) * cols,
        .elem_bytes = esize,
    };
    void *params[1] = {&pa};
    out->base = dst;
    out->ld = pa.ld_dst;
    out->stride = pa.stride_dst;
    return mgpu_launch(h, d, variant, helper_grid(h, pa.ld_dst * esize / PACK_BYTES * cols * batches,
                                                  mgpu_variants[variant].threads), 1, 1, params);
}

static mgpu_status launch_persistent(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gemm_problem *p,
                                     const struct mgpu_gemm_plan *plan, CUdeviceptr ws)
{
    const struct mgpu_variant *v = &mgpu_variants[plan->variant];
    const int64_t rows_a = p->transa == MGPU_OP_N ? p->m : p->k, cols_a = p->transa == MGPU_OP_N ? p->k : p->m;
    const int64_t rows_b = p->transb == MGPU_OP_N ? p->k : p->n, cols_b = p->transb == MGPU_OP_N ? p->n : p->k;
    const int bcast_a = p->batch > 1 && p->stride_a == 0, bcast_b = p->batch > 1 && p->stride_b == 0;
    const int64_t batches_a = bcast_a ? 1 : p->batch, batches_b = bcast_b ? 1 : p->batch;
    struct operand a = {p->a, p->lda, p->stride_a}, b = {p->b, p->ldb, p->stride_b};
    CUdeviceptr next = ws;
    mgpu_status s = MGPU_STATUS_SUCCESS;
    const int esize_a = dtype_bytes(p->a_dtype), esize_b = dtype_bytes(p->b_dtype);
    if (plan->pack_a) {
        s = pack_operand(h, d, plan->pack_variant, p->a, esize_a, rows_a, cols_a, p->lda, p->stride_a, batches_a,
                         next, &a);
        next += (CUdeviceptr)round_up(a.stride * batches_a * esize_a, WS_ALIGN);
    }
    if (s == MGPU_STATUS_SUCCESS && plan->pack_b) {
        s = pack_operand(h, d, plan->pack_variant, p->b, esize_b, rows_b, cols_b, p->ldb, p->stride_b, batches_b,
                         next, &b);
        next += (CUdeviceptr)round_up(b.stride * batches_b * esize_b, WS_ALIGN);
    }
    if (s != MGPU_STATUS_SUCCESS)
        return s;

    struct mgpu_gemm_args args = {
        .m = (int32_t)p->m, .n = (int32_t)p->n, .k = (int32_t)p->k,
        .alpha = *p->alpha, .beta = *p->beta,
        .c_dtype = p->c_dtype, .ab_dtype = p->a_dtype,
        .trans_a = p->transa, .trans_b = p->transb,
        .c = p->c, .ldc = p->ldc, .stride_c = p->stride_c,
        .a = a.base, .b = b.base, .lda = a.ld, .ldb = b.ld, .stride_a = a.stride, .stride_b = b.stride,
        .batch_count = (int32_t)p->batch, .band = plan->band, .splits = plan->splits,
        .a_broadcast = bcast_a, .b_broadcast = bcast_b,
        .workspace = next,
    };
    set_epilogue(&args, p);
    CUtensorMap maps[3];
    memset(maps, 0, sizeof maps);
    s = encode_operand(d, &maps[0], p->a_dtype, a.base, p->transa == MGPU_OP_T, p->m, p->k, a.ld, a.stride,
                       batches_a, v->tile_m / v->cluster_n, v->tile_k);
    if (s == MGPU_STATUS_SUCCESS)
        s = encode_operand(d, &maps[1], p->b_dtype, b.base, p->transb == MGPU_OP_N, p->n, p->k, b.ld, b.stride,
                           batches_b, v->tile_n / v->cluster_m, v->tile_k);
    if (s == MGPU_STATUS_SUCCESS && plan->splits > 1)
        s = mgpu_handle_counters(h, d, MGPU_COUNTERS_SPLIT_K, &args.split_counters);
    args.c_tma = mgpu_gemm_c_tma_eligible(p);
    if (s == MGPU_STATUS_SUCCESS && args.c_tma)
        s = encode_output(d, &maps[2], p->c_dtype, p->c, p->m, p->n, p->ldc, p->stride_c, p->batch);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    void *params[4] = {&maps[0], &maps[1], &maps[2], &args};
    return mgpu_launch(h, d, plan->variant, (unsigned)plan->grid, 1, 1, params);
}

/* Bytes of workspace a plan needs: packed operands, then split-K partials. */
static size_t workspace_bytes(const struct mgpu_gemm_problem *p, const struct mgpu_gemm_plan *plan)
{
    int64_t bytes = 0;
    if (plan->pack_a) {
        const int64_t rows = p->transa == MGPU_OP_N ? p->m : p->k, cols = p->transa == MGPU_OP_N ? p->k : p->m;
        const int64_t batches = p->batch > 1 && p->stride_a == 0 ? 1 : p->batch;
        const int esize = dtype_bytes(p->a_dtype);
        bytes += round_up(packed_ld(rows, esize) * cols * batches * esize, WS_ALIGN);
    }
    if (plan->pack_b) {
        const int64_t rows = p->transb == MGPU_OP_N ? p->k : p->n, cols = p->transb == MGPU_OP_N ? p->n : p->k;
        const int64_t batches = p->batch > 1 && p->stride_b == 0 ? 1 : p->batch;
        const int esize = dtype_bytes(p->b_dtype);
        bytes += round_up(packed_ld(rows, esize) * cols * batches * esize, WS_ALIGN);
    }
    if (plan->splits > 1) { /* one fp32 slot per tile, split and consumer (the tiles padded to whole clusters) */
        const struct mgpu_variant *v = &mgpu_variants[plan->variant];
        const int64_t tiles_m = (p->m + v->tile_m * v->cluster_m - 1) / (v->tile_m * v->cluster_m) * v->cluster_m;
        const int64_t tiles_n = (p->n + v->tile_n * v->cluster_n - 1) / (v->tile_n * v->cluster_n) * v->cluster_n;
        bytes += tiles_m * tiles_n * p->batch * plan->splits * v->tile_m * v->tile_n * (int64_t)sizeof(float);
    }
    return (size_t)bytes;
}

static mgpu_status run_plan(mgpu_handle *h, const struct mgpu_driver *d, const struct mgpu_gemm_problem *p,
                            const struct mgpu_gemm_plan *plan)
{
    if (mgpu_variants[plan->variant].kind != MGPU_KIND_GEMM_SM90_PERSISTENT)
        return launch_single(h, d, p, plan->variant);
    const size_t bytes = workspace_bytes(p, plan);
    CUdeviceptr ws = 0;
    if (bytes) {
        mgpu_status s = mgpu_scratch_alloc(h, d, bytes, &ws);
        if (s != MGPU_STATUS_SUCCESS)
            return s;
    }
    mgpu_status s = launch_persistent(h, d, p, plan, ws);
    if (ws) {
        mgpu_status f = mgpu_scratch_free(h, d, ws);
        if (s == MGPU_STATUS_SUCCESS)
            s = f;
    }
    return s;
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
    const char *force_splits = getenv("MGPU_FORCE_SPLIT_K");
    const char *force_band = getenv("MGPU_FORCE_BAND");
    const struct mgpu_gemm_force forced = {
        .variant = force,
        .splits = force_splits ? atoi(force_splits) : 0,
        .band = force_band ? atoi(force_band) : 0,
    };
    struct mgpu_gemm_plan plan;
    if (mgpu_plan_gemm(p, &h->caps, &forced, &plan, &s) < 0)
        return s;
    if (mgpu_log_enabled())
        mgpu_log("gemm %s%s m=%lld n=%lld k=%lld batch=%lld %s%s%s->%s%s%s%s lda=%lld ldb=%lld ldc=%lld: "
                 "%s%s [%s; split-k %d, grid %lld, band %d, cluster %dx%d%s%s%s]",
                 p->transa == MGPU_OP_N ? "N" : "T", p->transb == MGPU_OP_N ? "N" : "T", (long long)p->m,
                 (long long)p->n, (long long)p->k, (long long)p->batch, dtype_name(p->a_dtype),
                 p->b_dtype != p->a_dtype ? "x" : "", p->b_dtype != p->a_dtype ? dtype_name(p->b_dtype) : "",
                 dtype_name(p->c_dtype), p->scale_a || p->scale_b || p->scale_d ? " scaled" : "",
                 p->bias ? (p->bias_mode == MGPU_BIAS_PER_ROW ? " +row bias" : " +column bias") : "",
                 p->activation == MGPU_ACTIVATION_RELU   ? " relu"
                 : p->activation == MGPU_ACTIVATION_GELU ? " gelu"
                                                         : "",
                 (long long)p->lda, (long long)p->ldb, (long long)p->ldc,
                 mgpu_variants[plan.variant].name, force && force[0] ? " (forced)" : "", plan.shape_class,
                 plan.splits, (long long)plan.grid, plan.band,
                 mgpu_variants[plan.variant].cluster_m, mgpu_variants[plan.variant].cluster_n,
                 plan.pack_a ? ", A packed" : "", plan.pack_b ? ", B packed" : "",
                 mgpu_variants[plan.variant].kind == MGPU_KIND_GEMM_SM90_PERSISTENT && !mgpu_gemm_c_tma_eligible(p)
                     ? ", direct stores"
                     : "");
    return run_plan(h, d, p, &plan);
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

mgpu_status mgpu_gemm_ex(mgpu_handle *handle, const mgpu_gemm_desc *desc)
{
    struct mgpu_gemm_problem p;
    mgpu_status s = mgpu_gemm_problem_from_desc(desc, &p);
    return s == MGPU_STATUS_SUCCESS ? gemm(handle, &p) : s;
}
