/*
 * GEMM argument validation and variant selection (see select.h).
 *
 * Only variants for the device's exact compute capability count (sm_90a and
 * sm_100a images load nowhere else). Where the registry has persistent
 * kernels for the device (sm_90a), a call is planned by shape class:
 *   k == 0                -> the portable kernel (D = beta * C);
 *   m <= 128 ("small m")  -> the 128 x 128 tile, no cluster (16-bit m <= 64,
 *                            or k <= TINY_TILE_MAX_K: the 64 x 128 tile);
 *   otherwise ("large")   -> the 256 x 128 tile (fp8: 192 x 128); with
 *                            CLUSTER_BY_DEFAULT, 2-CTA clusters along N when
 *                            one batch entry has >= 1024 such tiles and the
 *                            tile columns pair up (even, or >= 8 of them);
 *   too few tiles to fill the SMs (small m, skinny n, small batch with long
 *     K), with SPLIT_K_BY_DEFAULT or MGPU_FORCE_SPLIT_K
 *                         -> split-K over floor(target / CTAs of the tiles) K
 *                            slices, at least MIN_KTILES_PER_SPLIT k-tiles each;
 *                            the target is the SM count, or half of it for small
 *                            m (streaming B, half the SMs already draw the memory
 *                            bandwidth, and each slice adds partials to move);
 *   an operand TMA cannot read (unaligned pointer, odd ld or batch stride)
 *                         -> that operand is packed into an aligned workspace;
 *   every persistent plan -> the band width of the tile order (choose_band).
 * Elsewhere (sm_100a) the first variant in table order that takes the dtype,
 * the layouts and the operand alignment wins: the TMA kernel when TMA can read
 * A and B, else the portable kernel; fp8, scales, bias and activations are
 * NOT_SUPPORTED there (only the sm_90a kernels implement them).
 */
#include "internal.h"

#include <math.h>
#include <string.h>

/* Leading dimensions and strides beyond this many elements cannot address
 * real memory; refusing them keeps every offset computation in int64 range. */
#define MGPU_MAX_EXTENT ((int64_t)1 << 48)
#define TMA_ALIGN 16
#define TMA_MAX_STRIDE_BYTES ((int64_t)1 << 40)
#define MIN_KTILES_PER_SPLIT 4   /* a K slice shorter than this is not worth its partials */
#define MAX_SPLITS 16
#define SMALL_M 128              /* m up to this is "small m" (64- or 128-row tiles) */
#define SMALL_TILE_M 128         /* tile rows for small m */
#define TINY_M 64                /* 16-bit m up to this takes the 64-row tile */
/* 16-bit m <= SMALL_M with k up to this also takes 64-row tiles (two tile
 * rows, no split-K for the shapes measured): on H100, same process,
 * alternating, three rounds (docs/performance.md), 64-row tiles ran 2-30 %
 * faster than 128-row ones (split 2) at 128 x 4096 x 4096, 100 x 4096 x 4096,
 * 96 x 8192 x 4096 and 128 x 8192 x 8192, and 7-10 % slower at
 * 128 x 4096 x 14336, where the 128-row tile's two K slices win. */
#define TINY_TILE_MAX_K 8192
#define LARGE_TILE_M 256         /* tile rows for larger m, 16-bit inputs */
#define FP8_LARGE_TILE_M 192     /* tile rows for larger m, fp8 inputs (two accumulator sets per thread) */
#define CLUSTER_TILE_N 128       /* tile columns of the clustered persistent variants */
#define MIN_ODD_COLUMNS_FOR_CLUSTER 8
/* 2-CTA clusters halve the A tile's trips from L2: with one CTA per tile the
 * consumers of 8192 x 14336 x 4096 spent 29 % of their samples waiting for
 * TMA data at 76 % of L2 throughput (ncu, H100). Measured on H100
 * (docs/performance.md): 2-6 % faster from 8192 x 4096 outputs up (1024
 * large tiles), 2-5 % slower on smaller ones (4096^3, 4096 x 4096 x 2048,
 * 32 x 1024^3), even on fp8 8192^3. Split-K partials live in scratch memory
 * from the handle's own pool, which keeps its memory mapped between calls
 * (src/handle.c). */
#define CLUSTER_BY_DEFAULT 1
#define MIN_TILES_FOR_CLUSTER 1024 /* large tiles of one batch entry */
#define SPLIT_K_BY_DEFAULT 1

static const char *op_name(int op)
{
    return op == MGPU_OP_N ? "N" : "T";
}

int mgpu_dtype_is_fp8(int dtype)
{
    return dtype == MGPU_DTYPE_E4M3 || dtype == MGPU_DTYPE_E5M2;
}

int mgpu_dtype_size(int dtype)
{
    return dtype == MGPU_DTYPE_F32 ? 4 : mgpu_dtype_is_fp8(dtype) ? 1 : 2;
}

static int dtype_size(int dtype)
{
    return mgpu_dtype_size(dtype);
}

static int dtype_known(int dtype)
{
    return dtype == MGPU_DTYPE_F16 || dtype == MGPU_DTYPE_BF16 || dtype == MGPU_DTYPE_F32 ||
           mgpu_dtype_is_fp8(dtype);
}

int mgpu_gemm_needs_extensions(const struct mgpu_gemm_problem *p)
{
    return mgpu_dtype_is_fp8(p->a_dtype) || mgpu_dtype_is_fp8(p->b_dtype) || p->scale_a || p->scale_b ||
           p->scale_d || p->bias || p->activation != MGPU_ACTIVATION_NONE;
}

mgpu_status mgpu_gemm_problem_from_desc(const mgpu_gemm_desc *d, struct mgpu_gemm_problem *p)
{
    if (!d)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "desc is NULL");
    if (d->struct_size != sizeof *d)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "desc->struct_size is %zu, expected %zu: start from MGPU_GEMM_DESC_INIT", d->struct_size,
                         sizeof *d);
    const struct mgpu_gemm_problem q = {
        .transa = d->transa, .transb = d->transb, .m = d->m, .n = d->n, .k = d->k, .batch = d->batch_count,
        .a_dtype = d->a_type, .b_dtype = d->b_type, .c_dtype = d->c_type,
        .a = (uintptr_t)d->A, .b = (uintptr_t)d->B, .c = (uintptr_t)d->C,
        .lda = d->lda, .ldb = d->ldb, .ldc = d->ldc,
        .stride_a = d->stride_a, .stride_b = d->stride_b, .stride_c = d->stride_c,
        .alpha = &d->alpha, .beta = &d->beta,
        .scale_a = (uintptr_t)d->scale_a, .scale_b = (uintptr_t)d->scale_b, .scale_d = (uintptr_t)d->scale_d,
        .bias = (uintptr_t)d->bias, .bias_dtype = d->bias_type, .bias_mode = d->bias_mode,
        .bias_stride = d->bias_batch_stride, .activation = d->activation,
    };
    *p = q;
    return MGPU_STATUS_SUCCESS;
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
    if (p->activation != MGPU_ACTIVATION_NONE && p->activation != MGPU_ACTIVATION_RELU &&
        p->activation != MGPU_ACTIVATION_GELU)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "activation is %d; it must be an mgpu_activation value",
                         p->activation);
    if (p->bias_mode != MGPU_BIAS_PER_ROW && p->bias_mode != MGPU_BIAS_PER_COLUMN)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "bias_mode is %d; it must be MGPU_BIAS_PER_ROW or MGPU_BIAS_PER_COLUMN", p->bias_mode);
    if (p->bias && !dtype_known(p->bias_dtype))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "bias_type %d is not an mgpu_dtype value", p->bias_dtype);
    const int fp8_a = mgpu_dtype_is_fp8(p->a_dtype), fp8_b = mgpu_dtype_is_fp8(p->b_dtype);
    if (fp8_a != fp8_b)
        return mgpu_fail(MGPU_STATUS_DTYPE_MISMATCH,
                         "an fp8 operand pairs only with an fp8 operand (A %d, B %d); e4m3 with e5m2 is allowed",
                         p->a_dtype, p->b_dtype);
    if (!fp8_a && p->a_dtype != p->b_dtype)
        return mgpu_fail(MGPU_STATUS_DTYPE_MISMATCH, "A and B must have the same dtype (A %d, B %d)",
                         p->a_dtype, p->b_dtype);
    if (p->a_dtype == MGPU_DTYPE_F32)
        return mgpu_fail(MGPU_STATUS_UNSUPPORTED_DTYPE,
                         "A and B must be fp16, bf16 or fp8; fp32 inputs are not supported");
    if (mgpu_dtype_is_fp8(p->c_dtype))
        return mgpu_fail(MGPU_STATUS_UNSUPPORTED_DTYPE, "C must be fp16, bf16 or fp32; fp8 output is not supported");
    if (fp8_a && (p->transa != MGPU_OP_T || p->transb != MGPU_OP_N))
        return mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                         "fp8 inputs need transa = T and transb = N (both operands K-major, cuBLASLt's fp8 layout); "
                         "got %s%s", op_name(p->transa), op_name(p->transb));
    if (p->bias && p->bias_dtype != p->c_dtype && p->bias_dtype != MGPU_DTYPE_F32)
        return mgpu_fail(MGPU_STATUS_UNSUPPORTED_DTYPE, "bias_type must be C's dtype (%d) or fp32; got %d",
                         p->c_dtype, p->bias_dtype);
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
    if (p->bias && (p->bias_stride < 0 || p->bias_stride > MGPU_MAX_EXTENT))
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "bias_batch_stride = %lld; it must be in [0, 2^48]",
                         (long long)p->bias_stride);

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
        const int bad_a = p->a % (uintptr_t)dtype_size(p->a_dtype) != 0;
        if (bad_a || p->b % (uintptr_t)dtype_size(p->b_dtype))
            return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "%s is not aligned to its %d-byte elements",
                             bad_a ? "A" : "B", dtype_size(bad_a ? p->a_dtype : p->b_dtype));
    }
    if (p->bias % (uintptr_t)dtype_size(p->bias_dtype))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "bias (%#llx) is not aligned to its %d-byte elements",
                         (unsigned long long)p->bias, dtype_size(p->bias_dtype));
    if (p->scale_a % sizeof(float) || p->scale_b % sizeof(float) || p->scale_d % sizeof(float))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "scale_%s is not aligned to 4 bytes (a float)",
                         p->scale_a % sizeof(float) ? "a" : p->scale_b % sizeof(float) ? "b" : "d");
    return MGPU_STATUS_SUCCESS;
}

static int tma_ok(uintptr_t base, int64_t ld, int64_t stride, int64_t batch, int allow_broadcast, int esize)
{
    if (base % TMA_ALIGN || (ld * esize) % TMA_ALIGN || ld * esize >= TMA_MAX_STRIDE_BYTES)
        return 0;
    if (batch > 1 && stride == 0)
        return allow_broadcast;
    if (batch > 1 && ((stride * esize) % TMA_ALIGN || stride * esize >= TMA_MAX_STRIDE_BYTES))
        return 0;
    return 1;
}

int mgpu_gemm_tma_eligible(const struct mgpu_gemm_problem *p)
{
    return p->k > 0 && tma_ok(p->a, p->lda, p->stride_a, p->batch, 0, dtype_size(p->a_dtype)) &&
           tma_ok(p->b, p->ldb, p->stride_b, p->batch, 0, dtype_size(p->b_dtype));
}

/* TMA stores clip at the tensor's edge in whole 16-byte granules along the
 * contiguous dimension (measured: with m * 4 = 2052 bytes the rows up to the
 * 16-byte boundary were written), so m must end on a granule too, or the
 * rows between m and ldc would be overwritten. */
int mgpu_gemm_c_tma_eligible(const struct mgpu_gemm_problem *p)
{
    return (p->m * dtype_size(p->c_dtype)) % TMA_ALIGN == 0 &&
           tma_ok(p->c, p->ldc, p->stride_c, p->batch, 0, dtype_size(p->c_dtype));
}

static int is_tma_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_GEMM_SM100_TMA;
}

static int is_gemm_kind(enum mgpu_kernel_kind k)
{
    return is_tma_kind(k) || k == MGPU_KIND_GEMM_PORTABLE || k == MGPU_KIND_GEMM_SM90_PERSISTENT;
}

static int on_device(const struct mgpu_variant *v, const struct mgpu_device_caps *caps)
{
    return v->cc_major == caps->cc_major && v->cc_minor == caps->cc_minor && v->smem_bytes <= caps->max_smem_per_block;
}

/* Whether variant v can compute problem p at all (device aside). The
 * persistent kernel takes any alignment (operands TMA cannot read are packed
 * first) but not k == 0. */
static int applicable(const struct mgpu_variant *v, const struct mgpu_gemm_problem *p, int tma)
{
    if (!is_gemm_kind(v->kind))
        return 0;
    if (v->dtype != MGPU_VARIANT_ANY_DTYPE && v->dtype != p->a_dtype)
        return 0;
    if (v->b_dtype != MGPU_VARIANT_ANY_DTYPE && v->b_dtype != p->b_dtype)
        return 0;
    /* fp8, scales, bias and activations: the persistent and portable kernels only */
    if (mgpu_gemm_needs_extensions(p) && v->kind != MGPU_KIND_GEMM_SM90_PERSISTENT &&
        v->kind != MGPU_KIND_GEMM_PORTABLE)
        return 0;
    if (v->a_kmajor != MGPU_VARIANT_ANY_LAYOUT && v->a_kmajor != (p->transa == MGPU_OP_T))
        return 0;
    if (v->b_kmajor != MGPU_VARIANT_ANY_LAYOUT && v->b_kmajor != (p->transb == MGPU_OP_N))
        return 0;
    if (v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT)
        return p->k > 0;
    /* the tile grid must fit the launch limits: grid.y = ceil(n / tile_n) */
    if ((p->n + v->tile_n - 1) / v->tile_n > 65535)
        return 0;
    return is_tma_kind(v->kind) ? tma : 1;
}

static int find_kind(enum mgpu_kernel_kind kind, const struct mgpu_device_caps *caps)
{
    for (int i = 0; i < mgpu_variant_count; i++)
        if (mgpu_variants[i].kind == kind && on_device(&mgpu_variants[i], caps))
            return i;
    return -1;
}

/* The persistent variant of this dtype and layout with the given tile rows
 * and cluster size, or -1. */
static int find_persistent(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, int tile_m,
                           int cluster)
{
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT && on_device(v, caps) && applicable(v, p, 1) &&
            v->tile_m == tile_m && v->cluster_m * v->cluster_n == cluster)
            return i;
    }
    return -1;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Band width of the tile order (kernels/common/tile_scheduler.cuh). The
 * `at_once` units running at one moment cover about band x (at_once / band)
 * cluster tiles, whose operands they fetch from L2 or memory: band cluster
 * tiles' rows of A (tile_m each) and at_once / band columns of B (tile_n
 * each). The sum band * tile_m + (at_once / band) * tile_n is least at
 * band = sqrt(at_once * tile_n / tile_m): 8 for 132 CTAs of 256 x 128 tiles
 * or 66 clusters of 256 x 256, 11 for 128 x 128 tiles. Rounded, at most the
 * tile rows of a batch entry (a wider band is the same order). */
static int choose_band(int64_t at_once, int64_t tile_m, int64_t tile_n, int64_t rows, int force_band)
{
    int64_t band = force_band;
    if (band <= 0) {
        const double best = sqrt((double)at_once * (double)tile_n / (double)tile_m);
        band = (int64_t)(best + 0.5);
    }
    if (band > rows)
        band = rows;
    return band < 1 ? 1 : (int)band;
}

/* Split-K factor, band, grid and helpers of a persistent variant on a problem. */
static int plan_persistent(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, int variant,
                           const struct mgpu_gemm_force *force, struct mgpu_gemm_plan *plan)
{
    const int force_splits = force ? force->splits : 0;
    const struct mgpu_variant *v = &mgpu_variants[variant];
    const int64_t cluster = (int64_t)v->cluster_m * v->cluster_n;
    const int64_t k_tiles = ceil_div(p->k, v->tile_k);
    const int64_t units = ceil_div(ceil_div(p->m, v->tile_m), v->cluster_m) *
                          ceil_div(ceil_div(p->n, v->tile_n), v->cluster_n) * p->batch;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    /* Measured on H100 (docs/performance.md, latest GEMM): 64 / 128 x 8192 x 8192
     * (64 tiles) ran best unsplit, 128 x 4096 x 14336 (32 tiles) with 2-4 slices. */
    const int64_t target = p->m <= SMALL_M ? sms / 2 : sms;
    int64_t splits = 1;
    if (force_splits > 0) {
        splits = force_splits < k_tiles ? force_splits : k_tiles;
    } else if (SPLIT_K_BY_DEFAULT && units * cluster * 2 <= target && k_tiles >= 2 * MIN_KTILES_PER_SPLIT) {
        splits = target / (units * cluster);
        if (splits > k_tiles / MIN_KTILES_PER_SPLIT)
            splits = k_tiles / MIN_KTILES_PER_SPLIT;
        if (splits > MAX_SPLITS)
            splits = MAX_SPLITS;
    }
    /* The kernel counts each tile's arrivals in the handle's split counters:
     * one per tile and 64-column consumer. */
    const int64_t counters = units * cluster * (v->tile_n / 64);
    if (splits > 1 && counters > MGPU_SPLIT_COUNTERS)
        splits = 1;
    plan->variant = variant;
    plan->splits = (int)splits;
    plan->pack_a = !tma_ok(p->a, p->lda, p->stride_a, p->batch, 1, dtype_size(p->a_dtype));
    plan->pack_b = !tma_ok(p->b, p->ldb, p->stride_b, p->batch, 1, dtype_size(p->b_dtype));
    plan->pack_variant = -1;
    if (plan->pack_a || plan->pack_b) {
        plan->pack_variant = find_kind(MGPU_KIND_GEMM_PACK, caps);
        if (plan->pack_variant < 0)
            return -1;
    }
    const int64_t max_grid = sms / cluster * cluster;
    const int64_t want = units * splits * cluster;
    plan->grid = want < max_grid ? want : (max_grid > 0 ? max_grid : cluster);
    plan->band = choose_band(plan->grid / cluster, (int64_t)v->tile_m * v->cluster_m,
                             (int64_t)v->tile_n * v->cluster_n,
                             ceil_div(ceil_div(p->m, v->tile_m), v->cluster_m), force ? force->band : 0);
    return 0;
}

static void plan_single(struct mgpu_gemm_plan *plan, int variant, const char *shape_class)
{
    plan->variant = variant;
    plan->splits = 1;
    plan->pack_variant = -1;
    plan->pack_a = plan->pack_b = 0;
    plan->grid = 0;
    plan->band = 0;
    plan->shape_class = shape_class;
}

int mgpu_plan_gemm(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                   const struct mgpu_gemm_force *forced, struct mgpu_gemm_plan *plan, mgpu_status *status)
{
    const char *force = forced ? forced->variant : NULL;
    const int tma = mgpu_gemm_tma_eligible(p);
    int for_device = 0;
    for (int i = 0; i < mgpu_variant_count; i++)
        for_device += mgpu_variants[i].cc_major == caps->cc_major && mgpu_variants[i].cc_minor == caps->cc_minor &&
                      is_gemm_kind(mgpu_variants[i].kind);
    if (!for_device) {
        *status = mgpu_fail(MGPU_STATUS_ARCH_MISMATCH,
                            "this build has no GEMM kernel for compute capability %d.%d (it has sm_90a and/or "
                            "sm_100a kernels: cc 9.0 and 10.0)",
                            caps->cc_major, caps->cc_minor);
        return -1;
    }
    if (mgpu_gemm_needs_extensions(p) && !(caps->cc_major == 9 && caps->cc_minor == 0)) {
        *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                            "fp8 inputs, scales, bias and activations run on compute capability 9.0 only; this "
                            "device is %d.%d",
                            caps->cc_major, caps->cc_minor);
        return -1;
    }

    if (force && force[0]) {
        for (int i = 0; i < mgpu_variant_count; i++) {
            const struct mgpu_variant *v = &mgpu_variants[i];
            if (!on_device(v, caps) || strcmp(force, v->name) != 0)
                continue;
            if (!applicable(v, p, tma)) {
                *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                                    "MGPU_FORCE_VARIANT=%s cannot compute this problem (dtype, layout or alignment)",
                                    force);
                return -1;
            }
            plan_single(plan, i, "forced");
            if (v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT && plan_persistent(p, caps, i, forced, plan) < 0)
                break;
            return 0;
        }
        *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED,
                            "MGPU_FORCE_VARIANT=%s names no usable variant for compute capability %d.%d", force,
                            caps->cc_major, caps->cc_minor);
        return -1;
    }

    if (p->k > 0) {
        const int small_m = p->m <= SMALL_M;
        /* A 2-CTA cluster takes two tile columns; with an odd count one CTA
         * per cluster row idles, which only pays when there are many columns. */
        const int fp8 = mgpu_dtype_is_fp8(p->a_dtype);
        const int large_tile = fp8 ? FP8_LARGE_TILE_M : LARGE_TILE_M;
        const int64_t tiles_n = ceil_div(p->n, CLUSTER_TILE_N);
        const int cluster = CLUSTER_BY_DEFAULT && ceil_div(p->m, large_tile) * tiles_n >= MIN_TILES_FOR_CLUSTER &&
                                    (tiles_n % 2 == 0 || tiles_n >= MIN_ODD_COLUMNS_FOR_CLUSTER)
                                ? 2
                                : 1;
        const int small_tile = !fp8 && (p->m <= TINY_M || p->k <= TINY_TILE_MAX_K) ? TINY_M : SMALL_TILE_M;
        int v = small_m ? find_persistent(p, caps, small_tile, 1)
                        : find_persistent(p, caps, large_tile, cluster);
        if (v < 0)
            v = find_persistent(p, caps, large_tile, 1);
        if (v >= 0 && plan_persistent(p, caps, v, forced, plan) == 0) {
            plan->shape_class = plan->splits > 1 ? (small_m ? "small m, split-K" : "few tiles, split-K")
                                                 : (small_m ? "small m" : "large");
            return 0;
        }
    }
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (on_device(v, caps) && v->kind != MGPU_KIND_GEMM_SM90_PERSISTENT && applicable(v, p, tma)) {
            plan_single(plan, i, v->kind == MGPU_KIND_GEMM_PORTABLE ? "portable" : "tma");
            return 0;
        }
    }
    *status = mgpu_fail(MGPU_STATUS_NOT_SUPPORTED, "no GEMM variant takes m=%lld n=%lld on this device",
                        (long long)p->m, (long long)p->n);
    return -1;
}

int mgpu_select_gemm(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                     const char *force, mgpu_status *status)
{
    struct mgpu_gemm_plan plan;
    const struct mgpu_gemm_force forced = {.variant = force};
    return mgpu_plan_gemm(p, caps, &forced, &plan, status) < 0 ? -1 : plan.variant;
}
