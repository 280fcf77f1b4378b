/*
 * GEMM argument validation and the complete plan of a call (see gemm_plan.h).
 *
 * Only variants for the device's exact compute capability count (sm_90a and
 * sm_100a images load nowhere else). Both have persistent kernels, and a
 * call is planned by shape class; the variant table (gen/variants.c) says
 * which rows serve each class. On sm_90a (compute capability 9.0):
 *   k == 0                -> the portable kernel (D = beta * C);
 *   16-bit m <= 16, TN, operands 16-byte loads can read, k a multiple of 8
 *     ("decode")          -> MGPU_GEMM_DECODE: the small-m kernel
 *                            (kernels/hopper/gemm_sm90_small_m.cuh; its own
 *                            split-K, plan_small_m);
 *   m <= 128 ("small m")  -> MGPU_GEMM_SMALL_M (16-bit m <= 64, or k <=
 *                            TINY_TILE_MAX_K: MGPU_GEMM_TINY_M; TN whose
 *                            64 x 64 tiles make more than a quarter of a
 *                            wave and at most one, any k: the 64 x 64 row,
 *                            no split, narrow_wanted; 64 < m, one batch
 *                            entry, whose 64 x 128 tiles make more than a
 *                            wave: MGPU_GEMM_SMALL_M when that gives the
 *                            busiest CTA no more rows, half_rows_wanted);
 *   16-bit, at most one wave of LARGE tiles ("few tiles", few_tiles_shape)
 *                         -> MGPU_GEMM_TINY_M when its 64-row tiles make at
 *                            most one wave, else MGPU_GEMM_SMALL_M (one batch
 *                            entry whose A or B rows as read start off
 *                            128-byte lines: lone MGPU_GEMM_LARGE CTAs where
 *                            the 128-row tiles take more than a wave and the
 *                            large ones pad no more rows); split-K only with
 *                            k >= 4096;
 *   otherwise ("large")   -> MGPU_GEMM_LARGE; with CLUSTER_BY_DEFAULT,
 *                            MGPU_GEMM_LARGE_CLUSTER (2-CTA clusters along N)
 *                            when one batch entry has >= 1024 of the LARGE
 *                            row's tiles and the tile columns pair up (even,
 *                            or >= 8 of them), or, 16-bit, when an operand
 *                            TMA reads as it is has rows off 128-byte lines
 *                            (operands_off_lines); 16-bit, one batch entry,
 *                            no cluster: MGPU_GEMM_SMALL_M (128 x 128) when
 *                            its waves give the busiest CTA at most 7/8 of
 *                            the rows (half_rows_wanted); 16-bit, any of
 *                            these: MGPU_GEMM_LARGE_192[_CLUSTER] (192 x 128
 *                            tiles, the same cluster choice; clusters for
 *                            K-major A only) when they give the busiest CTA
 *                            at most 7/8 of the work (mid_rows_wanted);
 *                            16-bit TN, one batch entry, rows off 128-byte
 *                            lines, k >= 2048, beyond one wave: any of
 *                            these but the 128 x 128 ones ->
 *                            MGPU_GEMM_WIDE_192[_CLUSTER] (192 x 192 tiles,
 *                            three consumer warpgroups) where the busiest
 *                            CTA's work is at most 17/16 of theirs
 *                            (wide_wanted; not with MGPU_FORCE_TAIL_SPLIT=1);
 *                            16-bit, one batch entry, beyond one wave, any
 *                            of these -> MGPU_GEMM_WAVE[_CLUSTER] (tiles of
 *                            other wgmma N, e.g. 224 x 128, the same cluster
 *                            choice) where whole waves of them give the
 *                            busiest CTA at most 15/16 of the plan's work,
 *                            weighted by operand bytes per product
 *                            (wave_rows_wanted);
 *   large, 16-bit, MGPU_FORCE_SCHEDULE=pingpong
 *                         -> the same on the ping-pong rows
 *                            (MGPU_GEMM_LARGE_PINGPONG[_CLUSTER]: a 128 x 128
 *                            tile per consumer warpgroup, choose_schedule);
 *                            never by default, fused epilogue or not;
 *   too few tiles to fill the SMs (small m, skinny n, small batch with long
 *     K), with SPLIT_K_BY_DEFAULT or MGPU_FORCE_SPLIT_K
 *                         -> split-K over floor(target / CTAs of the tiles) K
 *                            slices, at least MIN_KTILES_PER_SPLIT k-tiles each;
 *                            the target is the SM count, or half of it for small
 *                            m (streaming B, half the SMs already draw the memory
 *                            bandwidth, and each slice adds partials to move);
 *   more than one wave of units, no split-K, 16-bit on a cooperative row
 *     with two consumer warpgroups (tail_split_tiles)
 *                         -> the units past the last full wave shared out
 *                            along K over every CTA ("split-K tail") where
 *                            that cuts the busiest CTA's k-tiles by
 *                            TAIL_SPLIT_MIN_GAIN percent and K is long
 *                            (TAIL_SPLIT_MIN_TILE_K), or as
 *                            MGPU_FORCE_TAIL_SPLIT says;
 *   an operand TMA cannot read (unaligned pointer, odd ld or batch stride)
 *                         -> that operand is packed into the handle's workspace;
 *   every persistent plan -> the band width of the tile order (choose_band);
 *   alpha == 0            -> as k == 0: A and B are not read (BLAS).
 * The workspace holds the packed operands, then the split-K (or split-K
 * tail) partials. A plan that needs more than the handle has gives up
 * split-K slices first (down to none), and the tail; operands that must be packed but do not fit send the call to
 * the portable kernel, which reads any layout directly. The plan says what
 * it gave up (MGPU_LOG).
 * On sm_100a (compute capability 10.0) the persistent kernel
 * (kernels/blackwell/gemm_sm100_persistent.cuh) has 256 x 128 tiles per CTA
 * and comes as lone CTAs or CTA pairs sharing a cta_group::2 MMA:
 *   k == 0, alpha == 0    -> the portable kernel, as above;
 *   m > SMALL_M and the 128-wide tile columns pair up (even, or >= 8 of
 *     them)               -> MGPU_GEMM_LARGE_CLUSTER: CTA pairs (256 x 256
 *                            cluster tiles);
 *   otherwise             -> MGPU_GEMM_LARGE: lone CTAs (small m, a single or
 *                            odd few tile columns);
 *   operands TMA cannot read -> packed into the workspace, as above;
 *   the band of the tile order as above;
 *   too few CTAs of tiles  -> split-K by the sm_90a default rule
 *                            (sm100_splits), or MGPU_FORCE_SPLIT_K;
 *   fp8 (TN, any e4m3 / e5m2 pair) -> the same two shape classes among the
 *                            kind::f8f6f4 rows (256 x 128 tiles, 128-wide
 *                            k-tiles);
 *   scales, bias, activations -> the same rows (the epilogue is fused in
 *                            the epilogue warpgroup), or the portable kernel
 *                            for k == 0 / alpha == 0, as on sm_90a.
 * These thresholds are not measured: no Blackwell GPU has run this library
 * yet (bench/blackwell_first_run.sh is the first measurement).
 */
#include "gemm_plan.h"
#include "gemm_small_m_abi.h"

#include <math.h>
#include <string.h>

/* Leading dimensions and strides beyond this many elements cannot address
 * real memory; refusing them keeps every offset computation in int64 range. */
#define MGPU_MAX_EXTENT ((int64_t)1 << 48)
/* The most bytes one matrix may span, first to last element over all batches. */
#define MGPU_MAX_SPAN ((int64_t)1 << 56)
#define TMA_ALIGN 16
#define TMA_MAX_STRIDE_BYTES ((int64_t)1 << 40)
#define MIN_KTILES_PER_SPLIT 4   /* a K slice shorter than this is not worth its partials */
#define MAX_SPLITS 16
#define SMALL_M 128              /* m up to this is "small m": MGPU_GEMM_TINY_M or SMALL_M */
#define TINY_M_MAX 64            /* 16-bit m up to this is MGPU_GEMM_TINY_M (64-row tiles) */
#define TINY_TILE_ROWS 64        /* tile_m of the MGPU_GEMM_TINY_M rows */
#define SMALL_TILE_ROWS 128      /* tile_m of the MGPU_GEMM_SMALL_M rows */
/* 16-bit m <= SMALL_M with k up to this is also TINY_M (two tile
 * rows, no split-K for the shapes measured): on H100, same process,
 * alternating, three rounds, 64-row tiles ran 2-30 % faster than 128-row
 * ones (split 2) at 128 x 4096 x 4096, 100 x 4096 x 4096, 96 x 8192 x 4096
 * and 128 x 8192 x 8192, and 7-10 % slower at 128 x 4096 x 14336, where the
 * 128-row tile's two K slices won (docs/decisions/002-small-m-64-row-tiles.md;
 * the 64 x 128 tile). Longer k at m > TINY_M_MAX: TINY_M only where
 * narrow_wanted takes the 64 x 64 tile, whatever k (since decision 062,
 * 128 x 4096 x 14336 runs it, no split-K). */
#define TINY_TILE_MAX_K 8192
#define MIN_ODD_COLUMNS_FOR_CLUSTER 8
/* 2-CTA clusters halve the A tile's trips from L2: with one CTA per tile the
 * consumers of 8192 x 14336 x 4096 spent 29 % of their samples waiting for
 * TMA data at 76 % of L2 throughput (ncu, H100). Measured on H100: 2-6 %
 * faster from 8192 x 4096 outputs up (1024 large tiles), 2-5 % slower on
 * smaller ones (4096^3, 4096 x 4096 x 2048, 32 x 1024^3); fp8 8192^3 (1376
 * tiles) as fast or faster (docs/decisions/004-2cta-clusters-threshold.md). */
#define CLUSTER_BY_DEFAULT 1
#define MIN_TILES_FOR_CLUSTER 1024 /* large tiles of one batch entry */
/* 16-bit large problems on the ping-pong rows (1) or the cooperative ones (0):
 * choose_schedule. Cooperative for plain GEMMs (0.942x against 0.849x
 * cuBLAS, decision 015) and, since the cooperative epilogue reads a per-row
 * bias once per tile and GELU uses the hardware tanh, for fused ones too:
 * H100, bf16 + bias + GELU, 0.942x / 0.892x cuBLASLt cooperative against
 * 0.879x / 0.856x on ping-pong at 8192^3 / 8192 x 14336 x 4096
 * (docs/decisions/018-gemm-fused-epilogue-cooperative.md). */
#define PINGPONG_BY_DEFAULT 0
#define SPLIT_K_BY_DEFAULT 1
#define TMA_ROW_BYTES 128  /* bytes of one swizzle row: the inner box of every map */
/* L2 promotion of the operand maps' missed lines: 128 bytes, one box row.
 * 256 fetched lines half outside the box wherever rows do not start on 256
 * bytes: H100, 3000^3 0.104 -> 0.090 ms and 5000^3 0.463 -> 0.418 ms
 * against 256, aligned shapes unchanged
 * (docs/decisions/057-gemm-l2-promotion.md). */
#define GEMM_L2_PROMOTE_BYTES 128
#define EPI_COLS 64        /* columns of D per TMA store box (one consumer warpgroup) */
#define SM100_EPI_COLS 32  /* the same on sm_100a: one epilogue warp's TMEM lanes */
#define WS_ALIGN 256       /* bytes: start of every workspace part */
#define PACK_BYTES 16      /* packed leading dimensions are multiples of 16 bytes */
#define HELPER_BLOCKS_PER_SM 8 /* grid of the grid-stride pack kernel */
/* Tile columns per one-CTA-per-tile launch (grid y is at most 65535): a
 * multiple of 8, so that the column offset of every launch keeps B and C at
 * their 16-byte alignment. */
#define MAX_GRID_Y_TILES 65528

static const char *op_name(int op)
{
    return op == MGPU_OP_N ? "N" : "T";
}

int mgpu_gemm_needs_extensions(const struct mgpu_gemm_problem *p)
{
    return mgpu_dtype_is_fp8(p->a_dtype) || mgpu_dtype_is_fp8(p->b_dtype) || p->scale_a || p->scale_b ||
           p->scale_d || p->bias || p->activation != MGPU_ACTIVATION_NONE;
}

int mgpu_gemm_problem_empty(const struct mgpu_gemm_problem *p)
{
    return p->m == 0 || p->n == 0 || p->batch == 0;
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

/* Whether `batch` matrices of rows x cols elements (rows contiguous, ld and
 * stride apart) span at most MGPU_MAX_SPAN bytes. */
static int span_ok(int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch, int esize)
{
    int64_t one, all, bytes;
    return mgpu_span_ok(cols, ld, rows, &one) && mgpu_span_ok(batch, stride, one, &all) &&
           mgpu_mul_ok(all, esize, &bytes) && bytes <= MGPU_MAX_SPAN;
}

mgpu_status mgpu_gemm_validate(const struct mgpu_gemm_problem *p)
{
    if (p->transa != MGPU_OP_N && p->transa != MGPU_OP_T)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "transa is %d; it must be MGPU_OP_N or MGPU_OP_T", p->transa);
    if (p->transb != MGPU_OP_N && p->transb != MGPU_OP_T)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "transb is %d; it must be MGPU_OP_N or MGPU_OP_T", p->transb);
    if (!mgpu_dtype_known(p->a_dtype) || !mgpu_dtype_known(p->b_dtype) || !mgpu_dtype_known(p->c_dtype))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "a dtype (A %d, B %d, C %d) is not an mgpu_dtype value",
                         p->a_dtype, p->b_dtype, p->c_dtype);
    if (p->activation != MGPU_ACTIVATION_NONE && p->activation != MGPU_ACTIVATION_RELU &&
        p->activation != MGPU_ACTIVATION_GELU)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "activation is %d; it must be an mgpu_activation value",
                         p->activation);
    if (p->bias_mode != MGPU_BIAS_PER_ROW && p->bias_mode != MGPU_BIAS_PER_COLUMN)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE,
                         "bias_mode is %d; it must be MGPU_BIAS_PER_ROW or MGPU_BIAS_PER_COLUMN", p->bias_mode);
    if (p->bias && !mgpu_dtype_known(p->bias_dtype))
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
    if (p->batch < 0 || p->batch > INT32_MAX)
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE, "batch_count must lie in [0, 2^31 - 1] (got %lld)",
                         (long long)p->batch);
    if (!p->alpha || !p->beta)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "%s is NULL", !p->alpha ? "alpha" : "beta");

    const int64_t rows_a = p->transa == MGPU_OP_N ? p->m : p->k, cols_a = p->transa == MGPU_OP_N ? p->k : p->m;
    const int64_t rows_b = p->transb == MGPU_OP_N ? p->k : p->n, cols_b = p->transb == MGPU_OP_N ? p->n : p->k;
    if (p->lda < (rows_a > 1 ? rows_a : 1) || p->lda > MGPU_MAX_EXTENT)
        return mgpu_fail(MGPU_STATUS_INVALID_LD,
                         "lda = %lld; with transa = %s it must be >= max(1, %s) = %lld and <= 2^48",
                         (long long)p->lda, op_name(p->transa), p->transa == MGPU_OP_N ? "m" : "k",
                         (long long)(rows_a > 1 ? rows_a : 1));
    if (p->ldb < (rows_b > 1 ? rows_b : 1) || p->ldb > MGPU_MAX_EXTENT)
        return mgpu_fail(MGPU_STATUS_INVALID_LD,
                         "ldb = %lld; with transb = %s it must be >= max(1, %s) = %lld and <= 2^48",
                         (long long)p->ldb, op_name(p->transb), p->transb == MGPU_OP_N ? "k" : "n",
                         (long long)(rows_b > 1 ? rows_b : 1));
    if (p->ldc < (p->m > 1 ? p->m : 1) || p->ldc > MGPU_MAX_EXTENT)
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "ldc = %lld; it must be >= max(1, m) = %lld and <= 2^48",
                         (long long)p->ldc, (long long)(p->m > 1 ? p->m : 1));
    if (p->batch > 1) {
        if (p->stride_a < 0 || p->stride_b < 0 || p->stride_a > MGPU_MAX_EXTENT || p->stride_b > MGPU_MAX_EXTENT)
            return mgpu_fail(MGPU_STATUS_INVALID_LD, "stride_a and stride_b must be in [0, 2^48] (got %lld, %lld)",
                             (long long)p->stride_a, (long long)p->stride_b);
        int64_t c_matrix;
        if (!mgpu_mul_ok(p->ldc, p->n, &c_matrix) || p->stride_c < c_matrix || p->stride_c > MGPU_MAX_EXTENT)
            return mgpu_fail(MGPU_STATUS_INVALID_LD,
                             "stride_c = %lld; the C matrices must not overlap (stride_c >= ldc * n, here %lld * "
                             "%lld) and stride_c must be <= 2^48",
                             (long long)p->stride_c, (long long)p->ldc, (long long)p->n);
    }
    if (p->bias && (p->bias_stride < 0 || p->bias_stride > MGPU_MAX_EXTENT))
        return mgpu_fail(MGPU_STATUS_INVALID_LD, "bias_batch_stride = %lld; it must be in [0, 2^48]",
                         (long long)p->bias_stride);

    if (mgpu_gemm_problem_empty(p))
        return MGPU_STATUS_SUCCESS; /* nothing is read or written */
    const int64_t batch_a = p->batch > 1 ? p->batch : 1;
    if (!span_ok(p->m, p->n, p->ldc, p->stride_c, batch_a, mgpu_dtype_size(p->c_dtype)) ||
        (p->k > 0 && (!span_ok(rows_a, cols_a, p->lda, p->stride_a, batch_a, mgpu_dtype_size(p->a_dtype)) ||
                      !span_ok(rows_b, cols_b, p->ldb, p->stride_b, batch_a, mgpu_dtype_size(p->b_dtype)))))
        return mgpu_fail(MGPU_STATUS_INVALID_SIZE,
                         "A, B or C would span more than 2^56 bytes (first to last element over all batches)");
    if (!p->c)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "C is NULL");
    if (p->c % (uintptr_t)mgpu_dtype_size(p->c_dtype))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "C (%#llx) is not aligned to its %d-byte elements",
                         (unsigned long long)p->c, mgpu_dtype_size(p->c_dtype));
    if (p->k > 0) {
        if (!p->a || !p->b)
            return mgpu_fail(MGPU_STATUS_NULL_POINTER, "%s is NULL", !p->a ? "A" : "B");
        const int bad_a = p->a % (uintptr_t)mgpu_dtype_size(p->a_dtype) != 0;
        if (bad_a || p->b % (uintptr_t)mgpu_dtype_size(p->b_dtype))
            return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "%s is not aligned to its %d-byte elements",
                             bad_a ? "A" : "B", mgpu_dtype_size(bad_a ? p->a_dtype : p->b_dtype));
    }
    if (p->bias && p->bias % (uintptr_t)mgpu_dtype_size(p->bias_dtype))
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "bias (%#llx) is not aligned to its %d-byte elements",
                         (unsigned long long)p->bias, mgpu_dtype_size(p->bias_dtype));
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
    return p->k > 0 && tma_ok(p->a, p->lda, p->stride_a, p->batch, 0, mgpu_dtype_size(p->a_dtype)) &&
           tma_ok(p->b, p->ldb, p->stride_b, p->batch, 0, mgpu_dtype_size(p->b_dtype));
}

/* TMA stores clip at the tensor's edge in whole 16-byte granules along the
 * contiguous dimension (measured: with m * 4 = 2052 bytes the rows up to the
 * 16-byte boundary were written), so m must end on a granule too, or the
 * rows between m and ldc would be overwritten. */
int mgpu_gemm_c_tma_eligible(const struct mgpu_gemm_problem *p)
{
    return (p->m * mgpu_dtype_size(p->c_dtype)) % TMA_ALIGN == 0 &&
           tma_ok(p->c, p->ldc, p->stride_c, p->batch, 0, mgpu_dtype_size(p->c_dtype));
}

/* ------------------------------------------------------------ small m (decode)
 *
 * The small-m kernel (kernels/hopper/gemm_sm90_small_m.cuh) streams B into
 * registers and runs mma.sync on 16 rows of D; it takes K-major 16-bit
 * operands (TN) that it can read with 16-byte loads. The planner sends
 * m <= DECODE_MAX_M there (decode_wanted) and splits K so that the CTAs
 * fill the SMs, DECODE_CTAS_PER_SM each, with at least DECODE_MIN_STEPS
 * 32-element steps of K per slice (plan_small_m). Two CTAs per SM (8
 * slices at n = 4096, 4 at n = 8192; both CTAs resident: 122 registers)
 * keep twice the bytes of B in flight per SM: measured on H100 (2026-11-27,
 * back to back, programmatic launch, the split sum with 16-byte loads),
 * 17.2 against 17.8 us at 1 x 4096^2 and 53.7 against 55.2 at 1 x 8192^2
 * (bf16; m = 16 and f16 alike); four per SM (two waves) lost, 19.3 and 54.5
 * (docs/decisions/021-gemm-small-m-narrow-tile.md, amendment). */
#define DECODE_MAX_M 16
#define DECODE_CTAS_PER_SM 2
#define DECODE_MIN_STEPS 8
#define DECODE_MAX_SPLITS 32
#define DECODE_STEP_K 32
/* The tensor-map ring form of the small-m kernel
 * (kernels/hopper/gemm_sm90_small_m_tma.cuh): taken instead of the register
 * form where A and B are readable by TMA with 128-byte aligned columns (a
 * box row then is one L2 line); its rows whose ring takes more than
 * DECODE_TMA_PAIR_SMEM bytes run one CTA per SM, the others two. Its row
 * (decode_tma_row; 64 elements of K per stage):
 * - 64 columns, 20 stages, one CTA per SM, where k <= DECODE_TMA_NARROW_MAX_K
 *   and its CTAs make one wave that fills the SMs at least as well as the
 *   128-column rows would (n = k = 4096 and 8192: measured 47.6 against
 *   50.6 us at 1 x 8192^2, 16.2 against 16.4 at 1 x 4096^2; slower where
 *   it ran two waves, at k = 14336 and 28672, or with fewer CTAs);
 * - else 128 columns, 12 stages (one CTA per SM) where its K slices fill the
 *   SMs at least as well as two CTAs per SM would, else 6 stages (two per SM);
 * H100, 2026-11-28 (docs/decisions/051-gemm-small-m-tensor-ring.md). */
#define DECODE_TMA_BY_DEFAULT 1
#define DECODE_TMA_TILE_N 128
#define DECODE_TMA_TILE_K 64
#define DECODE_TMA_ONE_STAGES 12
#define DECODE_TMA_PAIR_STAGES 6
#define DECODE_TMA_NARROW_N 64
#define DECODE_TMA_NARROW_STAGES 20
#define DECODE_TMA_NARROW_MAX_K 8192
#define DECODE_TMA_PAIR_SMEM MGPU_GEMM_SMALL_M_TMA_PAIR_SMEM

/* K slices of the small-m kernel for `blocks` column blocks (all batch
 * entries) over `target` CTA slots: as many as fill the slots when at least
 * two do, each of at least DECODE_MIN_STEPS steps, at most DECODE_MAX_SPLITS. */
static int64_t decode_splits(int64_t blocks, int64_t steps, int64_t target)
{
    if (!SPLIT_K_BY_DEFAULT || blocks * 2 > target)
        return 1;
    int64_t splits = target / blocks;
    if (splits > steps / DECODE_MIN_STEPS)
        splits = steps / DECODE_MIN_STEPS;
    if (splits > DECODE_MAX_SPLITS)
        splits = DECODE_MAX_SPLITS;
    return splits < 1 ? 1 : splits;
}

/* CTAs of the small-m kernel with `cols` columns each over `per_sm` slots per SM. */
static int64_t decode_ctas(const struct mgpu_gemm_problem *p, int64_t sms, int64_t cols, int64_t per_sm)
{
    const int64_t blocks = mgpu_cdiv(p->n, cols) * p->batch;
    return blocks * decode_splits(blocks, mgpu_cdiv(p->k, DECODE_STEP_K), sms * per_sm);
}

/* The share (thousandths) of `per_sm` CTA slots per SM that those CTAs fill over their waves. */
static int64_t decode_fill(const struct mgpu_gemm_problem *p, int64_t sms, int64_t cols, int64_t per_sm)
{
    const int64_t ctas = decode_ctas(p, sms, cols, per_sm), target = sms * per_sm;
    if (ctas >= ((int64_t)1 << 40)) /* many waves: every count as full */
        return 1000;
    return ctas * 1000 / (mgpu_cdiv(ctas, target) * target);
}

/* The ring row wanted for p (see above): its columns and stages. */
static void decode_tma_row(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, int *cols,
                           int *stages)
{
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    const int64_t one = decode_fill(p, sms, DECODE_TMA_TILE_N, 1);
    const int64_t pair = decode_fill(p, sms, DECODE_TMA_TILE_N, DECODE_CTAS_PER_SM);
    *cols = DECODE_TMA_TILE_N;
    *stages = one >= pair ? DECODE_TMA_ONE_STAGES : DECODE_TMA_PAIR_STAGES;
    if (p->k <= DECODE_TMA_NARROW_MAX_K && decode_ctas(p, sms, DECODE_TMA_NARROW_N, 1) <= sms &&
        decode_fill(p, sms, DECODE_TMA_NARROW_N, 1) >= (one > pair ? one : pair)) {
        *cols = DECODE_TMA_NARROW_N;
        *stages = DECODE_TMA_NARROW_STAGES;
    }
}

/* 1 when the small-m row v can compute p as it is. */
static int small_m_eligible(const struct mgpu_gemm_problem *p, const struct mgpu_variant *v)
{
    const int64_t vec = 16 / 2; /* 16-bit elements per 16-byte load */
    if (mgpu_dtype_is_fp8(p->a_dtype) || p->a_dtype != v->dtype || p->b_dtype != v->dtype)
        return 0;
    if (p->transa != MGPU_OP_T || p->transb != MGPU_OP_N || p->m > v->gemm.tile_m || p->k == 0 || p->k % vec)
        return 0;
    if (p->a % 16 || p->b % 16 || p->lda % vec || p->ldb % vec || p->batch > MGPU_MAX_GRID_YZ)
        return 0;
    if (p->batch > 1 && (p->stride_a % vec || p->stride_b % vec))
        return 0;
    return 1;
}

/* 1 when the tensor-map ring row v can compute p as it is: the register
 * form's conditions, and A and B readable through TMA (a batch stride of 0
 * is a broadcast operand: its map has one batch entry). */
static int small_m_tma_eligible(const struct mgpu_gemm_problem *p, const struct mgpu_variant *v)
{
    const int es = mgpu_dtype_size(p->a_dtype);
    return small_m_eligible(p, v) && p->m <= v->gemm.tile_m && tma_ok(p->a, p->lda, p->stride_a, p->batch, 1, es) &&
           tma_ok(p->b, p->ldb, p->stride_b, p->batch, 1, es);
}

/* Whether the ring form is wanted where it can run: B's columns on 128-byte
 * boundaries (each box row one L2 line). */
static int small_m_tma_wanted(const struct mgpu_gemm_problem *p)
{
    const int es = mgpu_dtype_size(p->b_dtype);
    return DECODE_TMA_BY_DEFAULT && p->b % TMA_ROW_BYTES == 0 && (p->ldb * es) % TMA_ROW_BYTES == 0 &&
           (p->batch == 1 || (p->stride_b * es) % TMA_ROW_BYTES == 0);
}

/* The small-m row of p's dtype with tile_m == rows on the device, if it can compute p. */
static const struct mgpu_variant *small_m_variant(const struct mgpu_gemm_problem *p,
                                                  const struct mgpu_device_caps *caps, int rows)
{
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (v->kind == MGPU_KIND_GEMM_SMALL_M_SM90 && v->gemm.tile_m == rows && v->cc_major == caps->cc_major &&
            v->cc_minor == caps->cc_minor && small_m_eligible(p, v))
            return v;
    }
    return NULL;
}

/* ------------------------------------------------------------ selection */

/* The devices whose kernels implement mgpu_gemm_ex's extensions (fp8
 * inputs, scales, bias, activations): sm_90a (persistent and portable
 * kernels) and sm_100a (kernels/blackwell/gemm_sm100_persistent.cuh:
 * kind::f8f6f4 rows for every fp8 pair, the fused epilogue; and the
 * portable kernel). No other device has GEMM kernels at all. */
static int extensions_run_on(const struct mgpu_device_caps *caps)
{
    return (caps->cc_major == 9 && caps->cc_minor == 0) || (caps->cc_major == 10 && caps->cc_minor == 0);
}

static int is_gemm_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_GEMM_SM100_PERSISTENT || k == MGPU_KIND_GEMM_PORTABLE || k == MGPU_KIND_GEMM_SM90_PERSISTENT ||
           k == MGPU_KIND_GEMM_SMALL_M_SM90 || k == MGPU_KIND_GEMM_SMALL_M_TMA_SM90;
}

static int is_pack_kind(enum mgpu_kernel_kind k)
{
    return k == MGPU_KIND_GEMM_PACK;
}

static int any_fits(const struct mgpu_variant *v, const void *ctx)
{
    (void)v;
    (void)ctx;
    return 1;
}

/* Small m on 64 x 64 tiles (16-bit, TN: gen/variants.c, SM90_WS_NARROW):
 * one consumer warpgroup per CTA, so m <= 128 with n = 4096 has 64-128
 * tiles streaming B, twice the CTAs of the 64 x 128 tile, without split-K.
 * narrow_wanted takes them when they make more than a quarter of a wave
 * and at most one wave: measured on H100 (2026-11-27, same process as cuBLAS, back to
 * back device time per call) 64 x 4096^2 18.1 against 20.6 us (bf16), 18.4
 * against 20.5 (f16), 128 x 4096^2 18.4 against 22.0 / 18.8 against 21.6,
 * 64 x 8192^2 52.0 against 52.9 / 52.2 against 52.8; beyond one wave it
 * lost (128 x 8192^2 56.8 against 53.6, 128 x 6144 x 4096 32.1 against
 * 25.1, 128 x 14336 x 4096 59.3 against 50.4), and two K slices lost
 * everywhere (docs/decisions/021-gemm-small-m-narrow-tile.md). Since
 * decision 062 at any k (there measured at 128 x 4096 x 14336, 64 x 4096 x
 * 14336 and 64 x 8192 x 28672). From a quarter to half a wave (33-65 tiles
 * on 132 SMs) is not measured: there the 64 x 128 plan runs about as many
 * CTAs with 2 or 3 K slices. */
#define NARROW_BY_DEFAULT 1
#define NARROW_TILE_N 64
#define NARROW_TILE_M 64

/* What the lookup ranks GEMM variants by. */
struct gemm_fit {
    const struct mgpu_gemm_problem *p;
    int tma;               /* A and B readable through TMA as they are */
    enum mgpu_gemm_shape_class want; /* the persistent shape class the heuristic wants */
    int persistent_ok;     /* 0: the persistent kernel is out (its operand packs do not fit) */
    int decode_rows;       /* want == MGPU_GEMM_DECODE: the small-m row of this tile_m */
    int decode_cols, decode_stages; /* and the columns and stages of its tensor-map ring (decode_tma_row) */
    int few_tiles;         /* m > SMALL_M with at most one wave of large tiles (few_tiles_shape) */
    int narrow;            /* small m on the 64-column tile (narrow_wanted) */
    int half_rows;         /* 128-row tiles for their fewer waves (half_rows_wanted) */
    int mid_rows;          /* 192-row tiles for their fuller waves (mid_rows_wanted) */
    int wave_rows;         /* want == MGPU_GEMM_WAVE[_CLUSTER]: the tile_m of that row (wave_rows_wanted) */
};

/* 0: v cannot compute the problem; else its preference: the persistent
 * variant of the wanted shape class (4), of the large tile without cluster
 * (3), the one-CTA-per-tile kernels (2), other persistent variants (1:
 * forcible only, in practice). The persistent kernel takes any alignment
 * (operands TMA cannot read are packed first) but not k == 0. */
static int gemm_fits(const struct mgpu_variant *v, const void *ctx)
{
    const struct gemm_fit *f = ctx;
    const struct mgpu_gemm_problem *p = f->p;
    if (v->dtype != MGPU_VARIANT_ANY_DTYPE && v->dtype != p->a_dtype)
        return 0;
    if (v->gemm.b_dtype != MGPU_VARIANT_ANY_DTYPE && v->gemm.b_dtype != p->b_dtype)
        return 0;
    if (v->gemm.a_kmajor != MGPU_VARIANT_ANY_LAYOUT && v->gemm.a_kmajor != (p->transa == MGPU_OP_T))
        return 0;
    if (v->gemm.b_kmajor != MGPU_VARIANT_ANY_LAYOUT && v->gemm.b_kmajor != (p->transb == MGPU_OP_N))
        return 0;
    if (v->kind == MGPU_KIND_GEMM_SMALL_M_SM90) {
        if (!small_m_eligible(p, v))
            return 0;
        return f->want == MGPU_GEMM_DECODE && v->gemm.tile_m == f->decode_rows ? 4 : 1;
    }
    if (v->kind == MGPU_KIND_GEMM_SMALL_M_TMA_SM90) {
        if (!small_m_tma_eligible(p, v))
            return 0;
        /* the wanted ring before the register form (4); other rings forcible only */
        return f->want == MGPU_GEMM_DECODE && v->gemm.tile_m == f->decode_rows && v->gemm.tile_n == f->decode_cols &&
                       v->gemm.tile_k == DECODE_TMA_TILE_K && v->gemm.stages == f->decode_stages &&
                       small_m_tma_wanted(p)
                   ? 5
                   : 1;
    }
    if (v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT) {
        if (p->k == 0 || !f->persistent_ok)
            return 0;
        if (v->gemm.tile_n == NARROW_TILE_N) /* only where narrow_wanted chose it, else forcible only */
            return f->narrow && v->gemm.shape_class == f->want ? 5 : 1;
        if (v->gemm.shape_class == MGPU_GEMM_WAVE || v->gemm.shape_class == MGPU_GEMM_WAVE_CLUSTER)
            return v->gemm.shape_class == f->want && v->gemm.tile_m == f->wave_rows ? 4 : 1;
        if (v->gemm.shape_class == f->want)
            return 4;
        return v->gemm.shape_class == MGPU_GEMM_LARGE ? 3 : 1;
    }
    if (v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT) {
        if (p->k == 0 || !f->persistent_ok)
            return 0;
        return v->gemm.shape_class == f->want ? 4 : 3;
    }
    return 2;
}

/* The persistent MGPU_GEMM_LARGE variant of p's operand types on the device,
 * or NULL: its kind says which policy applies, its tile whether clusters pay. */
static const struct mgpu_variant *large_variant(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps)
{
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if ((v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT || v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT) &&
            v->gemm.shape_class == MGPU_GEMM_LARGE &&
            v->cc_major == caps->cc_major && v->cc_minor == caps->cc_minor && v->dtype == p->a_dtype &&
            v->gemm.b_dtype == p->b_dtype)
            return v;
    }
    return NULL;
}

/* Whether small-m p goes to the 64 x 64 tile (NARROW_BY_DEFAULT; more than
 * a quarter of a wave and at most one of its tiles, whatever k: at
 * 128 x 4096 x 14336 it ran 0.054-0.056 ms against 0.059-0.061 for the
 * 128 x 128 tiles' two K slices, three processes each, H100, decision 062;
 * a row of its dtype and layout on the device). */
static int narrow_wanted(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps)
{
    if (!NARROW_BY_DEFAULT || mgpu_dtype_is_fp8(p->a_dtype) || p->m > SMALL_M)
        return 0;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    /* bounded by validation: m <= 128 here, n * batch <= 2^56 */
    const int64_t tiles = mgpu_cdiv(p->m, NARROW_TILE_M) * mgpu_cdiv(p->n, NARROW_TILE_N) * p->batch;
    if (tiles * 4 <= sms || tiles > sms)
        return 0;
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT && v->gemm.tile_n == NARROW_TILE_N &&
            v->cc_major == caps->cc_major && v->cc_minor == caps->cc_minor && v->dtype == p->a_dtype &&
            v->gemm.a_kmajor == (p->transa == MGPU_OP_T) && v->gemm.b_kmajor == (p->transb == MGPU_OP_N))
            return 1;
    }
    return 0;
}

/* Whether p goes to the small-m kernel (sets f->want and f->decode_rows). */
static int decode_wanted(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, struct gemm_fit *f)
{
    if (p->m > DECODE_MAX_M || !small_m_variant(p, caps, DECODE_MAX_M))
        return 0;
    f->want = MGPU_GEMM_DECODE;
    f->decode_rows = DECODE_MAX_M;
    decode_tma_row(p, caps, &f->decode_cols, &f->decode_stages);
    return 1;
}

/* One operand as the persistent kernel reads it, and its copy into the
 * workspace when TMA cannot read it as it is. */
struct operand {
    int pack;
    int64_t rows, cols, batches; /* rows contiguous; batches: 1 for a broadcast operand */
    int esize;
    int64_t packed_ld, packed_bytes; /* packed_bytes < 0: more than any workspace */
};

static struct operand describe_operand(uintptr_t base, int trans_is_n, int64_t m_or_n, int64_t k, int64_t ld,
                                       int64_t stride, int64_t batch, int dtype, int is_b)
{
    struct operand o;
    o.esize = mgpu_dtype_size(dtype);
    /* A: N -> rows m, cols k; B: N -> rows k, cols n */
    const int rows_are_k = is_b ? trans_is_n : !trans_is_n;
    o.rows = rows_are_k ? k : m_or_n;
    o.cols = rows_are_k ? m_or_n : k;
    o.batches = batch > 1 && stride == 0 ? 1 : batch;
    o.pack = !tma_ok(base, ld, stride, batch, 1, o.esize);
    o.packed_ld = 0;
    o.packed_bytes = 0;
    if (o.pack) {
        int64_t bytes;
        if (mgpu_round_up_ok(o.rows, PACK_BYTES / o.esize, &o.packed_ld) &&
            mgpu_mul3_ok(o.packed_ld, o.cols, o.batches, &bytes) && mgpu_mul_ok(bytes, o.esize, &bytes) &&
            mgpu_round_up_ok(bytes, WS_ALIGN, &bytes))
            o.packed_bytes = bytes;
        else
            o.packed_bytes = -1;
    }
    return o;
}

/* Whether operand o's rows, as the kernel reads them, start off 128-byte lines
 * (TMA_ROW_BYTES: each 128-byte box row then touches two L2 lines): read as it
 * is, with a base, leading dimension or batch stride off 128 bytes; packed
 * into the workspace (only with `packed` set), rows of o->rows rounded up to
 * PACK_BYTES (or no packing possible). */
static int rows_off_lines(const struct operand *o, uintptr_t base, int64_t ld, int64_t stride, int64_t batch,
                          int packed)
{
    if (o->pack)
        return packed && (o->packed_bytes < 0 || (o->packed_ld * o->esize) % TMA_ROW_BYTES != 0);
    return base % TMA_ROW_BYTES != 0 || (ld * o->esize) % TMA_ROW_BYTES != 0 ||
           (batch > 1 && (stride * o->esize) % TMA_ROW_BYTES != 0);
}

/* Whether A or B has rows off 128-byte lines (rows_off_lines); `packed`: the
 * operands the plan packs count too. */
static int operands_off_lines(const struct mgpu_gemm_problem *p, int packed)
{
    const struct operand a = describe_operand(p->a, p->transa == MGPU_OP_N, p->m, p->k, p->lda, p->stride_a,
                                              p->batch, p->a_dtype, 0);
    const struct operand b = describe_operand(p->b, p->transb == MGPU_OP_N, p->n, p->k, p->ldb, p->stride_b,
                                              p->batch, p->b_dtype, 1);
    return rows_off_lines(&a, p->a, p->lda, p->stride_a, p->batch, packed) ||
           rows_off_lines(&b, p->b, p->ldb, p->stride_b, p->batch, packed);
}

/* Problems of at most one wave of large tiles (m > SMALL_M, 16-bit): the
 * smaller tiles fill the SMs without split-K. Measured on H100 (bf16 TN,
 * same process as cuBLAS, docs/performance.md "Small and medium shapes"):
 * 256^3 .. 1024^3 ran 1.25-1.31x cuBLAS with 64 x 128 tiles and no split
 * against 0.64-0.90x with 256 x 128 tiles (split 2-4 where it applied),
 * 2048^3 and 1024 x 4096 x 1024 1.02x / 1.08x with 128 x 128 tiles against
 * 0.96x / 1.04x; every split-K factor of 2 or 4 on these shapes was slower
 * than none (its fp32 partials cost more than the idle SMs). So: 64-row
 * tiles when they make at most one wave, else 128-row tiles; K is split
 * only when the tiles fill at most half the SMs and K is long
 * (FEW_TILES_SPLIT_MIN_KTILES). Larger problems keep LARGE / LARGE_CLUSTER.
 * With K that long the large tiles also stay where the 128-row ones would
 * take more than one wave and the large ones pad no more rows (the busiest
 * CTA then runs as many rows either way, and a 256 x 128 tile runs faster
 * per row): H100, 2026-11-27, back to back, 256 x 10240 x 8192 82.5-82.8
 * us in one wave of 80 large tiles against 99.3-99.5 in 160 of 128 x 128,
 * 512 x 6144 x 4096 43.4-43.5 against 47.1, 256 x 14336 x 4096 52.6-52.7
 * against 55.9; but 384 x 8192 x 4096, whose second tile row of 256 is half
 * padding, 60.1-60.6 against 48.9 (decision 013, amended).
 * One batch entry whose A or B rows, as the kernel reads them (as they are,
 * or packed: PACK_BYTES-aligned rows), start off 128-byte lines keeps the
 * large tiles there whatever K (FEW_TILES_OFF_LINES_LARGE, lone CTAs; see
 * operands_off_lines). Measured on H100 (2026-11-27, bf16 TN, single
 * launches, same process as cuBLAS, medians of 21, two alternations; ms):
 * 2000^3 (4000-byte rows) 0.036-0.039 on 128 lone 256 x 128 CTAs against
 * 0.051-0.053 on 256 of 128 x 128 (cuBLAS 0.038; 2-CTA clusters
 * 0.040-0.042, ping-pong 0.046-0.051); 1500^3 (both packed to 3008-byte
 * rows) 0.049-0.051 on 72 lone 256 x 128 CTAs against 0.055-0.061 (cuBLAS
 * 0.074; clusters 0.054-0.059); 2048^3, rows on lines, keeps 128 x 128
 * (0.038-0.040 against 0.040-0.041 on 256 x 128)
 * (docs/decisions/032-gemm-medium-odd-shapes.md). */
#define FEW_TILES_SPLIT_MIN_KTILES 64 /* k >= 4096 (16-bit) */
#define FEW_TILES_OFF_LINES_LARGE 1
static int few_tiles_shape(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                           const struct mgpu_variant *large, struct gemm_fit *f)
{
    if (!large || mgpu_dtype_is_fp8(p->a_dtype) || p->m <= SMALL_M)
        return 0;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    const int64_t tiles_n = mgpu_cdiv(p->n, large->gemm.tile_n);
    /* bounded by validation: m, n <= 2^31, batch * m * n <= 2^56 */
    if (mgpu_cdiv(p->m, large->gemm.tile_m) * tiles_n * p->batch > sms)
        return 0;
    int want = mgpu_cdiv(p->m, TINY_TILE_ROWS) * tiles_n * p->batch <= sms ? MGPU_GEMM_TINY_M : MGPU_GEMM_SMALL_M;
    /* the 128-row tiles take more than one wave, and the large ones pad no more rows */
    const int large_as_good = want == MGPU_GEMM_SMALL_M && mgpu_cdiv(p->m, SMALL_TILE_ROWS) * tiles_n * p->batch > sms &&
                              mgpu_cdiv(p->m, large->gemm.tile_m) * large->gemm.tile_m <=
                                  mgpu_cdiv(p->m, SMALL_TILE_ROWS) * SMALL_TILE_ROWS;
    if (large_as_good && mgpu_cdiv(p->k, large->gemm.tile_k) >= FEW_TILES_SPLIT_MIN_KTILES)
        return 0;
    if (FEW_TILES_OFF_LINES_LARGE && large_as_good && p->batch == 1 && operands_off_lines(p, 1))
        want = MGPU_GEMM_LARGE; /* lone CTAs: wanted_shape returns before the cluster rule */
    f->few_tiles = 1;
    f->want = want;
    return 1;
}

/* Wave quantization of one-batch-entry 16-bit problems beyond one wave
 * (half_rows_wanted): the persistent CTAs each take whole tiles, so a plan
 * runs about as long as its busiest CTA, ceil(tiles / SMs) tiles of tile_m
 * rows. 128 x 128 tiles (the MGPU_GEMM_SMALL_M row) are taken instead of
 *   - 64 x 128 tiles (64 < m <= 128, k <= TINY_TILE_MAX_K, where the
 *     64 x 64 row is not taken) when the 64-row tiles make more than one
 *     wave and the 128-row ones give the busiest CTA no more rows: half
 *     the CTAs per column of B, each column read by one CTA rather than two;
 *   - 256 x 128 tiles (MGPU_GEMM_LARGE, below the cluster threshold) when
 *     they give the busiest CTA at most 7/8 of the rows: a 128 x 128 tile
 *     runs slower per row than a 256 x 128 one (1024 x 8192 x 8192, 4
 *     against 2 waves of the same rows: 0.185-0.188 against 0.175 ms), so it
 *     pays only where it cuts the busiest CTA's work.
 * Measured on H100 (2026-11-27, bf16 TN, same process as cuBLAS;
 * docs/decisions/013-gemm-few-tiles-and-decode.md, amendment): back to back
 * 128 x 10240 x 8192 72.3-73.1 against 84.9-85.1 us (cuBLAS 63.6-63.9),
 * 96 x 10240 x 8192 75.8-76.0 against 86.1-88.4, 128 x 28672 x 8192
 * 167.9-171.4 against 179.6-179.7, 128 x 14336 x 4096 47.6 against
 * 49.0-49.2, 512 x 10240 x 8192 139.4-141.1 against 171.7-172.6; single
 * launches 1024 x 10240 x 8192 0.98-0.99x cuBLAS (0.88x before),
 * 1024 x 6144 x 4096 1.01-1.04x (0.83x), 1024 x 14336 x 4096 1.04-1.06x
 * (1.005x). Batched problems and fp8 keep their tiles (not measured). */
#define HALF_ROWS_TILE_N 128 /* the 64 x 128, 128 x 128 and 256 x 128 rows */
static int half_rows_wanted(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, int64_t rows_now,
                            int64_t share_num, int64_t share_den)
{
    if (mgpu_dtype_is_fp8(p->a_dtype) || p->batch != 1)
        return 0;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    const int64_t tiles_n = mgpu_cdiv(p->n, HALF_ROWS_TILE_N);
    /* bounded by validation: m, n <= 2^31 - 1 */
    const int64_t now = mgpu_cdiv(p->m, rows_now) * tiles_n, then = mgpu_cdiv(p->m, SMALL_TILE_ROWS) * tiles_n;
    /* m <= 64 has as many 128-row tiles as 64-row ones */
    if (now <= sms || (rows_now < SMALL_TILE_ROWS && then >= now))
        return 0;
    /* rows of the busiest CTA */
    return mgpu_cdiv(then, sms) * SMALL_TILE_ROWS * share_den <= mgpu_cdiv(now, sms) * rows_now * share_num;
}

/* Operands TMA reads as they are with rows off 128-byte lines (a base,
 * leading dimension or batch stride that is not a multiple of 128 bytes:
 * operands_off_lines(p, 0)). Such 16-bit problems take 2-CTA clusters
 * (the A tile fetched once per pair) below MIN_TILES_FOR_CLUSTER too
 * (MISALIGNED_CLUSTER). Measured on H100 (2026-11-27, bf16 TN, single
 * launches, same process as cuBLAS, medians of 15, two processes each; ms):
 * 4000^3 0.1953-0.1972 (0.90x) on lone CTAs, 0.1817-0.1858 (0.98-1.00x) on
 * clusters, where 4096^3 runs 0.182-0.187 either way; 3000^3 0.192 on the
 * 128 x 128 rows (half_rows_wanted), 0.166 on lone 256 x 128 CTAs,
 * 0.123-0.127 on clusters; 4096 x 4096 x 4000 0.182-0.190 lone, 0.182-0.186
 * clusters. Operands the plan packs are left out (not measured: 3999^3
 * keeps lone CTAs). fp8 keeps its threshold (not measured). */
#define MISALIGNED_CLUSTER 1

/* Wave quantization of 16-bit large problems on the 256 x 128 rows
 * (MGPU_GEMM_LARGE, LARGE_CLUSTER, or the 128 x 128 ones half_rows_wanted
 * took): the busiest CTA runs ceil(units / units at once) tiles of tile_m
 * rows, a unit being a tile (lone CTAs) or a pair of tiles along N (2-CTA
 * clusters, SM count / 2 at once); with the split-K tail (tail_split_tiles,
 * where the plan takes it by default) the units past the last full wave
 * are shared out along K. The 192 x 128 rows (MGPU_GEMM_LARGE_192,
 * LARGE_192_CLUSTER with the same cluster choice) are taken when they give
 * the busiest CTA at most MID_ROWS_SHARE_NUM / MID_ROWS_SHARE_DEN of the
 * work (tile rows x k-tiles) of the tile wanted so far (a 192-row tile
 * moves 11 % more operand bytes per multiply than a 256-row one), and less
 * than the 128 x 128 tiles where those were taken; only beyond one wave of
 * the tiles wanted so far (at one wave or less, fewer rows per CTA in more
 * waves did not pay: 512 x 6144 x 4096 ran 43.4 us in one wave of 256 x 128
 * tiles against 47.1 in two of 128 x 128, decision 013). 3000^3 on 132 SMs: 288 tiles of
 * 256 x 128 (2.2 waves: 768 rows for the busiest CTA) against 384 of
 * 192 x 128 (2.9 waves: 576 rows). Clusters of 192-row tiles need K-major A
 * (96 rows of the shared A tile per CTA); other layouts keep the 256-row
 * cluster. Measured on H100 (2026-11-27, bf16 TN, same process as cuBLAS,
 * two processes each; ms): 3000^3 0.120-0.122 -> 0.114 (192 x 128 clusters),
 * 3000 x 3000 x 1000 0.052-0.055 -> 0.048-0.050, 3072^2 x 1024 0.043-0.044
 * (128 x 128) -> 0.038-0.040 (lone); forced where the rows are equal or more,
 * 13-18 % slower (6000^3 0.724 against 0.64, 5000^3 0.540 against 0.46), 8192^3
 * even (docs/decisions/040-gemm-192-row-tiles.md). */
#define MID_ROWS_BY_DEFAULT 1
#define MID_TILE_ROWS 192
#define MID_ROWS_SHARE_NUM 7
#define MID_ROWS_SHARE_DEN 8

/* The sm_90a persistent row of class `cls` for p's types and layouts on the device, or NULL. */
static const struct mgpu_variant *class_row(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                                            enum mgpu_gemm_shape_class cls)
{
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT && v->gemm.shape_class == cls &&
            v->cc_major == caps->cc_major && v->cc_minor == caps->cc_minor && v->dtype == p->a_dtype &&
            v->gemm.b_dtype == p->b_dtype && v->gemm.a_kmajor == (p->transa == MGPU_OP_T) &&
            v->gemm.b_kmajor == (p->transb == MGPU_OP_N))
            return v;
    }
    return NULL;
}

static int64_t tail_split_tiles(const struct mgpu_gemm_problem *p, const struct mgpu_variant *v,
                                const struct mgpu_gemm_force *force, int64_t units, int64_t cluster,
                                int64_t k_tiles, int64_t sms);

/* The busiest CTA's work on v's kind of row with tile_m x tile_n tiles in
 * clusters of `cluster` CTAs along N: tile rows x k-tiles, the split-K tail
 * counted where the plan would take it (tail_split_tiles: by default, or as
 * MGPU_FORCE_TAIL_SPLIT says where `force` is given), at most
 * BUSIEST_WORK_MAX (callers scale it by a few thousand); -1 where the units
 * make at most one wave. */
#define BUSIEST_WORK_MAX (INT64_MAX >> 16)
static int64_t busiest_work(const struct mgpu_gemm_problem *p, const struct mgpu_variant *v,
                            const struct mgpu_gemm_force *force, int64_t sms, int64_t tile_m, int64_t tile_n,
                            int64_t cluster)
{
    const int64_t at_once = sms / cluster > 0 ? sms / cluster : 1;
    const int64_t k_tiles = mgpu_cdiv(p->k, v->gemm.tile_k);
    /* bounded by validation: m, n <= 2^31 - 1, batch * m * n <= 2^56, k <= 2^31 - 1 */
    const int64_t units = mgpu_cdiv(p->m, tile_m) * mgpu_cdiv(mgpu_cdiv(p->n, tile_n), cluster) * p->batch;
    const int64_t tail = tail_split_tiles(p, v, force, units, cluster, k_tiles, sms);
    if (units <= at_once)
        return -1; /* one wave */
    /* tail < at_once <= the SM count: tail * k_tiles < 2^40 */
    int64_t per_cta = 0, work = 0;
    const int ok = tail > 0 ? mgpu_mul_ok(units / at_once, k_tiles, &per_cta) &&
                                  mgpu_add_ok(per_cta, mgpu_cdiv(tail * k_tiles, at_once), &per_cta)
                            : mgpu_mul_ok(mgpu_cdiv(units, at_once), k_tiles, &per_cta);
    return ok && mgpu_mul_ok(per_cta, tile_m, &work) && work <= BUSIEST_WORK_MAX ? work : BUSIEST_WORK_MAX;
}

static void mid_rows_wanted(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                            const struct mgpu_variant *large, struct gemm_fit *f)
{
    if (!MID_ROWS_BY_DEFAULT || mgpu_dtype_is_fp8(p->a_dtype) || large->gemm.tile_n != HALF_ROWS_TILE_N)
        return;
    const int cluster = f->want == MGPU_GEMM_LARGE_CLUSTER;
    if (!cluster && f->want != MGPU_GEMM_LARGE && !f->half_rows)
        return;
    const struct mgpu_variant *mid =
        class_row(p, caps, cluster ? MGPU_GEMM_LARGE_192_CLUSTER : MGPU_GEMM_LARGE_192);
    if (!mid || mid->gemm.tile_m != MID_TILE_ROWS)
        return;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    const int64_t ctas = cluster ? 2 : 1;
    const int64_t now_rows = f->half_rows ? SMALL_TILE_ROWS : large->gemm.tile_m;
    const int64_t now = busiest_work(p, large, NULL, sms, now_rows, HALF_ROWS_TILE_N, ctas);
    const int64_t then = busiest_work(p, mid, NULL, sms, MID_TILE_ROWS, HALF_ROWS_TILE_N, ctas);
    if (now < 0)
        return; /* the tiles wanted so far make one wave: the wave count is no guide (013) */
    const int take = f->half_rows ? then < now : then * MID_ROWS_SHARE_DEN <= now * MID_ROWS_SHARE_NUM;
    if (!take)
        return;
    f->want = cluster ? MGPU_GEMM_LARGE_192_CLUSTER : MGPU_GEMM_LARGE_192;
    f->half_rows = 0;
    f->mid_rows = 1;
}

/* 16-bit TN problems of one batch entry with rows off 128-byte lines and
 * long K, beyond one wave, on the 256 x 128 or 192 x 128 tiles so far: the
 * 192 x 192 rows (three consumer warpgroups; MGPU_GEMM_WIDE_192,
 * WIDE_192_CLUSTER with the same cluster choice; they have no split-K tail,
 * so not where MGPU_FORCE_TAIL_SPLIT=1 asks for it) when the
 * busiest CTA's work (tile area x k-tiles, the tail counted where the plan so
 * far takes it) is at most WIDE_SHARE_NUM / WIDE_SHARE_DEN of that of the
 * tile so far: off 128-byte lines the wider tile ran 2-9 % faster at equal
 * work. Measured on H100 (2026-11-28, bf16 TN, forced against the plan
 * before this rule, two processes each; ms): 3000^3 0.114-0.116 ->
 * 0.107-0.108 (192 x 128 clusters before, equal work), 3000 x 3000 x 4000
 * 0.120-0.122 (256 x 128 clusters and the tail, 3 % less work) ->
 * 0.108-0.111, 6000^3 0.621-0.631 -> 0.614-0.617 (equal); 5000^3 even at
 * 12 % more work, 4000^3 +14 % at 12.5 % more (not taken). Rows on lines:
 * 4096^3 +13 % at 12.5 % more work, 8192^3 +4-6 % at 5.5 % more, 3072^2 x
 * 1024 even or slower; k < WIDE_MIN_K: 3000 x 3000 x 1000 even, 2056 x 2312
 * x 200 up to 17 % slower (docs/decisions/046-gemm-192x192-tiles.md). */
#define WIDE_BY_DEFAULT 1
#define WIDE_MIN_K 2048
#define WIDE_TILE 192
#define WIDE_SHARE_NUM 17
#define WIDE_SHARE_DEN 16

static void wide_wanted(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                        const struct mgpu_gemm_force *force, struct gemm_fit *f)
{
    const struct mgpu_variant *large = large_variant(p, caps);
    if (!WIDE_BY_DEFAULT || (force && force->tail_split > 0) || !large || mgpu_dtype_is_fp8(p->a_dtype) ||
        p->transa != MGPU_OP_T || p->transb != MGPU_OP_N || p->batch != 1 || p->k < WIDE_MIN_K ||
        large->gemm.tile_n != HALF_ROWS_TILE_N || f->half_rows)
        return;
    const int cluster = f->want == MGPU_GEMM_LARGE_CLUSTER || f->want == MGPU_GEMM_LARGE_192_CLUSTER;
    if (!cluster && f->want != MGPU_GEMM_LARGE && f->want != MGPU_GEMM_LARGE_192)
        return;
    const struct mgpu_variant *wide = class_row(p, caps, cluster ? MGPU_GEMM_WIDE_192_CLUSTER : MGPU_GEMM_WIDE_192);
    if (!wide || wide->gemm.tile_m != WIDE_TILE || wide->gemm.tile_n != WIDE_TILE || !operands_off_lines(p, 0))
        return;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    const int64_t ctas = cluster ? 2 : 1;
    const struct mgpu_variant *now_row =
        f->mid_rows ? class_row(p, caps, cluster ? MGPU_GEMM_LARGE_192_CLUSTER : MGPU_GEMM_LARGE_192) : large;
    if (!now_row)
        return;
    /* work in tile area x k-tiles: rows x k-tiles (at most BUSIEST_WORK_MAX) x 128 or 192 columns */
    const int64_t now = busiest_work(p, now_row, force, sms, f->mid_rows ? MID_TILE_ROWS : large->gemm.tile_m,
                                     HALF_ROWS_TILE_N, ctas);
    const int64_t then = busiest_work(p, wide, force, sms, WIDE_TILE, WIDE_TILE, ctas);
    if (now < 0 || then < 0)
        return; /* one wave: the wave count is no guide (013) */
    if (then * WIDE_TILE * WIDE_SHARE_DEN > now * HALF_ROWS_TILE_N * WIDE_SHARE_NUM)
        return;
    f->want = cluster ? MGPU_GEMM_WIDE_192_CLUSTER : MGPU_GEMM_WIDE_192;
    f->mid_rows = 0;
}

/* 16-bit problems of one batch entry beyond one wave, on the cooperative
 * 256 x 128, 192 x 128, 128 x 128 (for their waves) or 192 x 192 tiles so
 * far: the rows of other wgmma N (MGPU_GEMM_WAVE, WAVE_CLUSTER with the same
 * cluster choice; gen/variants.c, SM90_WS_WAVE) whose waves leave fewer SMs
 * idle. Each is scored by its busiest CTA's work, tile area x k-tiles over
 * whole waves (the split-K tail left out on both sides: where the plan
 * takes it, it measured 1-2 % where this count promises 13 %: 5000^3,
 * docs/decisions/053-gemm-large-behind.md), times a penalty for the
 * operand bytes a tile moves per product, (tm + tn) / (tm tn), against the
 * 256 x 128 tile's: a quarter of the excess (a 192 x 128 tile, 11 % more
 * bytes, ran as fast per product within 1-2 % at 8192^3: decision 040; the
 * 192 x 192 one, 11 % fewer, 2-9 % faster: decision 046). The best row is
 * taken when its score is at most WAVE_SHARE_NUM / WAVE_SHARE_DEN of the
 * plan's; not where MGPU_FORCE_TAIL_SPLIT=1 asks for the tail (the plan so
 * far keeps it, as measured in decision 038). 5000^3 on 132 SMs: 400 cluster units of 256 x 256 in 7 waves of
 * 66 (6.06) against 460 of 224 x 256 in 7 (6.97): 0.89. */
#define WAVE_BY_DEFAULT 1
#define WAVE_SHARE_NUM 15
#define WAVE_SHARE_DEN 16

/* The busiest CTA's work on v in tile area x k-tiles over whole waves (no
 * tail), weighted by its operand bytes per product; < 0 for one wave. */
static double wave_score(const struct mgpu_gemm_problem *p, const struct mgpu_variant *v, int64_t sms, int64_t ctas)
{
    static const struct mgpu_gemm_force no_tail = {.tail_split = -1};
    const int64_t tm = v->gemm.tile_m, tn = v->gemm.tile_n;
    const int64_t rows = busiest_work(p, v, &no_tail, sms, tm, tn, ctas);
    if (rows < 0)
        return -1.0;
    /* bytes per product against the 256 x 128 tile's, (tm + tn) / (tm tn) / ((256 + 128) / (256 x 128)) */
    const double bytes = (double)(tm + tn) * 256.0 * 128.0 / ((double)tm * (double)tn * (256.0 + 128.0));
    return (double)rows * (double)tn * (3.0 + bytes) / 4.0;
}

static void wave_rows_wanted(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                             const struct mgpu_gemm_force *force, struct gemm_fit *f)
{
    if (!WAVE_BY_DEFAULT || (force && force->tail_split > 0) || mgpu_dtype_is_fp8(p->a_dtype) || p->batch != 1 ||
        p->m <= SMALL_M || f->few_tiles)
        return;
    const int cluster = f->want == MGPU_GEMM_LARGE_CLUSTER || f->want == MGPU_GEMM_LARGE_192_CLUSTER ||
                        f->want == MGPU_GEMM_WIDE_192_CLUSTER;
    const enum mgpu_gemm_shape_class now_class = f->half_rows ? MGPU_GEMM_SMALL_M : f->want;
    if (!cluster && now_class != MGPU_GEMM_LARGE && now_class != MGPU_GEMM_LARGE_192 &&
        now_class != MGPU_GEMM_WIDE_192 && now_class != MGPU_GEMM_SMALL_M)
        return;
    const struct mgpu_variant *now_row = class_row(p, caps, now_class);
    if (!now_row)
        return;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    const int64_t ctas = cluster ? 2 : 1;
    const double now = wave_score(p, now_row, sms, ctas);
    if (now < 0)
        return; /* one wave: the wave count is no guide (013) */
    const enum mgpu_gemm_shape_class wave_class = cluster ? MGPU_GEMM_WAVE_CLUSTER : MGPU_GEMM_WAVE;
    const struct mgpu_variant *best = NULL;
    double best_score = now * WAVE_SHARE_NUM / WAVE_SHARE_DEN;
    for (int i = 0; i < mgpu_variant_count; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (v->kind != MGPU_KIND_GEMM_SM90_PERSISTENT || v->gemm.shape_class != wave_class ||
            v->cc_major != caps->cc_major || v->cc_minor != caps->cc_minor || v->dtype != p->a_dtype ||
            v->gemm.b_dtype != p->b_dtype || v->gemm.a_kmajor != (p->transa == MGPU_OP_T) ||
            v->gemm.b_kmajor != (p->transb == MGPU_OP_N))
            continue;
        const double score = wave_score(p, v, sms, ctas);
        if (score >= 0 && score <= best_score) {
            best = v;
            best_score = score;
        }
    }
    if (!best)
        return;
    f->want = wave_class;
    f->wave_rows = best->gemm.tile_m;
    f->half_rows = 0;
    f->mid_rows = 0;
}

/* The persistent shape class the heuristic wants for p. */
static void wanted_shape(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, struct gemm_fit *f)
{
    const int fp8 = mgpu_dtype_is_fp8(p->a_dtype);
    const struct mgpu_variant *large = large_variant(p, caps);
    if (large && large->kind == MGPU_KIND_GEMM_SM100_PERSISTENT) {
        /* sm_100a: CTA pairs (LARGE_CLUSTER) for large m when the tile
         * columns pair up, lone CTAs (LARGE) otherwise; not yet measured */
        const int64_t tiles_n = mgpu_cdiv(p->n, large->gemm.tile_n);
        f->want = p->m > SMALL_M && tiles_n >= 2 && (tiles_n % 2 == 0 || tiles_n >= MIN_ODD_COLUMNS_FOR_CLUSTER)
                      ? MGPU_GEMM_LARGE_CLUSTER
                      : MGPU_GEMM_LARGE;
        return;
    }
    if (decode_wanted(p, caps, f))
        return;
    if (p->m <= SMALL_M) { /* fp8 has no 64-row tile: two accumulator sets per thread need the rows */
        f->narrow = narrow_wanted(p, caps); /* the 64 x 64 row is of the TINY_M class */
        f->want = f->narrow || (!fp8 && (p->m <= TINY_M_MAX || p->k <= TINY_TILE_MAX_K)) ? MGPU_GEMM_TINY_M
                                                                                        : MGPU_GEMM_SMALL_M;
        if (f->want == MGPU_GEMM_TINY_M && !f->narrow &&
            half_rows_wanted(p, caps, TINY_TILE_ROWS, 1, 1)) {
            f->want = MGPU_GEMM_SMALL_M;
            f->half_rows = 1;
        }
        return;
    }
    /* A 2-CTA cluster takes two tile columns; with an odd count one CTA per
     * cluster row idles, which only pays when there are many columns. */
    f->want = MGPU_GEMM_LARGE;
    if (!large || few_tiles_shape(p, caps, large, f))
        return;
    const int64_t tiles_n = mgpu_cdiv(p->n, large->gemm.tile_n);
    const int many_tiles = mgpu_cdiv(p->m, large->gemm.tile_m) * tiles_n >= MIN_TILES_FOR_CLUSTER ||
                           (MISALIGNED_CLUSTER && !fp8 && operands_off_lines(p, 0));
    if (CLUSTER_BY_DEFAULT && many_tiles && (tiles_n % 2 == 0 || tiles_n >= MIN_ODD_COLUMNS_FOR_CLUSTER))
        f->want = MGPU_GEMM_LARGE_CLUSTER;
    else if (large->gemm.tile_n == HALF_ROWS_TILE_N && half_rows_wanted(p, caps, large->gemm.tile_m, 7, 8)) {
        f->want = MGPU_GEMM_SMALL_M;
        f->half_rows = 1;
    }
    mid_rows_wanted(p, caps, large, f);
}

/* The schedule of the sm_90a persistent kernel for a large problem: the
 * cooperative rows (both consumer warpgroups on each 256 x 128 tile) or the
 * ping-pong ones (a 128 x 128 tile per warpgroup, the two in turns on the
 * tensor cores, kernels/hopper/gemm_sm90_pingpong.cuh), keeping the cluster
 * decision of wanted_shape. PINGPONG_BY_DEFAULT says which serves 16-bit
 * large problems (docs/performance.md, "GEMM schedules"); MGPU_FORCE_SCHEDULE
 * overrides it. fp8 has no ping-pong rows. */
static void choose_schedule(const struct mgpu_gemm_problem *p, const struct mgpu_gemm_force *force,
                            struct gemm_fit *f)
{
    /* a large problem on 128 x 128 tiles for their waves (half_rows_wanted) counts as large here */
    const int wide = f->want == MGPU_GEMM_WIDE_192 || f->want == MGPU_GEMM_WIDE_192_CLUSTER ||
                     f->want == MGPU_GEMM_WAVE || f->want == MGPU_GEMM_WAVE_CLUSTER;
    if (f->want != MGPU_GEMM_LARGE && f->want != MGPU_GEMM_LARGE_CLUSTER && !f->mid_rows && !wide &&
        !(f->half_rows && p->m > SMALL_M))
        return;
    const struct mgpu_variant *large = NULL;
    for (int i = 0; i < mgpu_variant_count && !large; i++) {
        const struct mgpu_variant *v = &mgpu_variants[i];
        if (v->kind == MGPU_KIND_GEMM_SM90_PERSISTENT && v->gemm.shape_class == MGPU_GEMM_LARGE_PINGPONG &&
            v->dtype == p->a_dtype && v->gemm.b_dtype == p->b_dtype)
            large = v;
    }
    if (!large)
        return;
    const int schedule = force ? force->schedule : MGPU_SCHEDULE_DEFAULT;
    const int pingpong =
        schedule == MGPU_SCHEDULE_PINGPONG || (schedule == MGPU_SCHEDULE_DEFAULT && PINGPONG_BY_DEFAULT);
    if (pingpong)
        f->want = f->want == MGPU_GEMM_LARGE_CLUSTER || f->want == MGPU_GEMM_LARGE_192_CLUSTER ||
                          f->want == MGPU_GEMM_WIDE_192_CLUSTER || f->want == MGPU_GEMM_WAVE_CLUSTER
                      ? MGPU_GEMM_LARGE_PINGPONG_CLUSTER
                      : MGPU_GEMM_LARGE_PINGPONG;
}

/* ------------------------------------------------------------ plans */

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

/* Programmatic dependent launch of the sm_90a persistent kernel (kernel
 * side: griddepcontrol in hopper/gemm_sm90_persistent.cuh; launch:
 * src/gemm/gemm.c). It hides about 1.3 us of launch and set-up per call of
 * ours queued behind another, but a two-consumer row that keeps (nearly)
 * every SM busy with a long run per CTA lost more than that. Measured on
 * H100 (2026-11-27, bf16 TN, back to back, one process per setting, 2-4
 * alternations; us per call, off -> on): gains 64 x 4096^2 17.6 -> 16.2,
 * 128 x 4096^2 18.0 -> 17.3 and 64 x 8192^2 51.4 -> 50.0 (the 64 x 64 row,
 * one consumer), 1024^3 9.5 -> 8.2 and 1024 x 4096 x 1024 18.3 -> 17.0 (16 /
 * 32 k-tiles per CTA), 64 x 14336 x 4096 46.6 -> 46.0 (112 CTAs), split-K
 * plans on 64 CTAs 1.1-1.3 us; losses 128 x 8192^2 52.8 -> 54.9, 128 x 14336
 * x 4096 49.3 -> 51.4, 32 x 1024^3 106.9 -> 108.9, 2048^3 28.5 -> 29.2,
 * 256 x 4096^2 21.4 -> 21.7, 512 x 4096^2 26.8 -> 27.1 (128 or 132 CTAs,
 * 64-128 k-tiles each); 4096^3 (256 per CTA) 179.2 -> 178.2, within the
 * spread. Where between 112 and 128 CTAs of 132 the loss starts is not
 * measured (docs/decisions/025-gemm-programmatic-launch.md, amended). */
#define PROGRAMMATIC_BY_DEFAULT 1
#define PROGRAMMATIC_MAX_KTILES_PER_CTA 64 /* two-consumer rows on 7/8 of the SMs or more: off from here */
static int programmatic_wanted(const struct mgpu_variant *v, const struct mgpu_gemm_force *force, int64_t grid,
                               int64_t cluster, int64_t work_units, int64_t ktiles_per_unit, int64_t sms)
{
    if (v->kind != MGPU_KIND_GEMM_SM90_PERSISTENT) /* the kernels without griddepcontrol */
        return 0;
    if (force && force->programmatic)
        return force->programmatic > 0;
    if (!PROGRAMMATIC_BY_DEFAULT)
        return 0;
    if (v->threads <= 256 || grid * 8 <= sms * 7) /* one consumer warpgroup, or an eighth of the SMs free */
        return 1;
    /* k-tiles of the busiest CTA: its units (a cluster's CTAs share each) times a unit's k-tiles */
    const int64_t units_per_cta = mgpu_cdiv(work_units, grid / cluster > 0 ? grid / cluster : 1);
    return units_per_cta * ktiles_per_unit < PROGRAMMATIC_MAX_KTILES_PER_CTA;
}

/* The scale, bias, activation and plain fields of the kernel arguments. */
static struct mgpu_gemm_args base_args(const struct mgpu_gemm_problem *p)
{
    struct mgpu_gemm_args a;
    memset(&a, 0, sizeof a);
    a.m = (int32_t)p->m;
    a.n = (int32_t)p->n;
    a.k = (int32_t)p->k;
    a.alpha = *p->alpha;
    a.beta = *p->beta;
    a.c_dtype = p->c_dtype;
    a.ab_dtype = p->a_dtype;
    a.b_dtype = p->b_dtype;
    a.trans_a = p->transa;
    a.trans_b = p->transb;
    a.c = p->c;
    a.ldc = p->ldc;
    a.stride_c = p->stride_c;
    a.a = p->a;
    a.b = p->b;
    a.lda = p->lda;
    a.ldb = p->ldb;
    a.stride_a = p->stride_a;
    a.stride_b = p->stride_b;
    a.scale_a = p->scale_a;
    a.scale_b = p->scale_b;
    a.scale_d = p->scale_d;
    a.bias = p->bias;
    a.bias_batch_stride = p->bias_stride;
    a.bias_dtype = p->bias_dtype;
    a.bias_mode = p->bias_mode;
    a.activation = p->activation;
    return a;
}

static void operand_map(struct mgpu_tensor_map_desc *m, int dtype, uint64_t base, int k_major, int64_t rows,
                        int64_t k, int64_t ld, int64_t stride, int64_t batch, int tile_rows, int tile_k);

/* The small-m kernel's plan: grid (column blocks, K slices, batch), the
 * split-K partials in the workspace, the arguments, and for the ring form
 * the tensor maps of A and B. */
static void plan_small_m(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, int variant,
                         const struct mgpu_gemm_force *force, const struct mgpu_gemm_resources *res,
                         struct mgpu_gemm_plan *plan)
{
    const struct mgpu_variant *v = &mgpu_variants[variant];
    const int64_t blocks = mgpu_cdiv(p->n, v->gemm.tile_n); /* per batch entry */
    const int64_t steps = mgpu_cdiv(p->k, DECODE_STEP_K);
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    const int ring = v->kind == MGPU_KIND_GEMM_SMALL_M_TMA_SM90;
    const int64_t target = sms * (ring && v->smem_bytes > DECODE_TMA_PAIR_SMEM ? 1 : DECODE_CTAS_PER_SM);
    const int force_splits = force ? force->splits : 0;
    int64_t splits = 1;
    if (force_splits > 0)
        splits = force_splits < steps ? force_splits : steps;
    else
        splits = decode_splits(blocks * p->batch, steps, target);
    if (ring) { /* the ring cuts K into whole stages of tile_k: no slice without one */
        const int64_t stages_k = mgpu_cdiv(p->k, v->gemm.tile_k);
        if (splits > stages_k)
            splits = stages_k;
    }
    if (splits > MGPU_MAX_GRID_YZ) /* grid y */
        splits = MGPU_MAX_GRID_YZ;
    /* one counter per column block and batch entry */
    if (splits > 1 && blocks * p->batch > MGPU_SPLIT_COUNTERS)
        splits = 1;
    /* partials: [batch][split][column of the grid][tile_m rows], fp32; bounded
     * by the C span check of validation (n * batch <= 2^56) */
    const int64_t per_split = blocks * v->gemm.tile_n * v->gemm.tile_m * (int64_t)sizeof(float) * p->batch;
    int64_t wanted = 0;
    if (splits > 1 && !mgpu_mul_ok(per_split, splits, &wanted))
        wanted = INT64_MAX;
    plan->workspace_wanted = wanted == INT64_MAX ? MGPU_GEMM_WANTED_OVER_LIMIT : (size_t)wanted;
    const int64_t capacity = res->workspace_bytes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)res->workspace_bytes;
    plan->degraded = NULL;
    if (splits > 1 && wanted > capacity) {
        const int64_t fit = capacity / per_split;
        splits = fit >= 2 ? (fit < splits ? fit : splits) : 1;
        plan->degraded = splits > 1 ? "fewer split-K slices: the workspace is too small"
                                    : "no split-K: the workspace is too small";
    }
    plan->variant = variant;
    plan->small_m = 1;
    /* programmatic dependent launch (kernel side: griddepcontrol in
     * hopper/gemm_sm90_small_m.cuh): 17.2 against 18.1 us at 1 x 4096^2 bf16,
     * 53.6 against 54.3 at 1 x 8192^2, m = 16 and f16 alike (H100,
     * 2026-11-27, back to back; docs/decisions/021-gemm-small-m-narrow-tile.md,
     * amendment) */
    plan->programmatic = force && force->programmatic ? force->programmatic > 0 : PROGRAMMATIC_BY_DEFAULT;
    plan->splits = (int)splits;
    plan->workspace_bytes = splits > 1 ? (size_t)(per_split * splits) : 0;
    plan->grid_x = (unsigned)blocks;
    plan->grid_y = (unsigned)splits;
    plan->grid_z = (unsigned)p->batch;
    plan->grid = blocks * splits * p->batch;
    plan->args = base_args(p);
    plan->args.batch_count = (int32_t)p->batch;
    plan->args.splits = (int32_t)splits;
    plan->args.workspace = splits > 1 ? res->workspace : 0;
    plan->args.split_counters = splits > 1 ? res->split_counters : 0;
    if (ring) {
        /* maps {k, rows, batch}, boxes {64, tile rows, 1}; a broadcast
         * operand (batch stride 0) has one batch entry */
        const int a_bc = p->batch > 1 && p->stride_a == 0, b_bc = p->batch > 1 && p->stride_b == 0;
        operand_map(&plan->maps[MGPU_GEMM_MAP_A], p->a_dtype, p->a, 1, p->m, p->k, p->lda, p->stride_a,
                    a_bc ? 1 : p->batch, v->gemm.tile_m, 0);
        operand_map(&plan->maps[MGPU_GEMM_MAP_B], p->b_dtype, p->b, 1, p->n, p->k, p->ldb, p->stride_b,
                    b_bc ? 1 : p->batch, v->gemm.tile_n, 0);
        plan->use_map[MGPU_GEMM_MAP_A] = plan->use_map[MGPU_GEMM_MAP_B] = 1;
        plan->args.a_broadcast = a_bc;
        plan->args.b_broadcast = b_bc;
    }
}

/* Rank-3 map of an operand over {contiguous, strided, batch}, 128-byte
 * swizzled boxes 128 bytes wide (see gemm.c). */
static void operand_map(struct mgpu_tensor_map_desc *m, int dtype, uint64_t base, int k_major, int64_t rows,
                        int64_t k, int64_t ld, int64_t stride, int64_t batch, int tile_rows, int tile_k)
{
    const uint64_t esize = (uint64_t)mgpu_dtype_size(dtype);
    memset(m, 0, sizeof *m);
    m->type = mgpu_map_type_of(dtype);
    m->rank = 3;
    m->base = base;
    m->dims[0] = (uint64_t)(k_major ? k : rows);
    m->dims[1] = (uint64_t)(k_major ? rows : k);
    m->dims[2] = (uint64_t)batch;
    m->byte_strides[0] = (uint64_t)ld * esize;
    m->byte_strides[1] = batch > 1 ? (uint64_t)stride * esize : (uint64_t)ld * esize;
    m->box[0] = (uint32_t)(TMA_ROW_BYTES / esize);
    m->box[1] = (uint32_t)(k_major ? tile_rows : tile_k);
    m->box[2] = 1;
    m->swizzle_128b = 1;
    m->l2_promote = GEMM_L2_PROMOTE_BYTES;
}


static unsigned helper_grid(const struct mgpu_device_caps *caps, int64_t work_items, int threads)
{
    const int64_t need = mgpu_cdiv(work_items, threads);
    const int64_t cap = (int64_t)(caps->sm_count > 0 ? caps->sm_count : 1) * HELPER_BLOCKS_PER_SM;
    return (unsigned)(need < cap ? (need > 0 ? need : 1) : cap);
}

static void pack_launch(struct mgpu_gemm_pack_launch *out, const struct operand *o, uintptr_t src, int64_t ld,
                        int64_t stride, uint64_t dst, const struct mgpu_device_caps *caps, int threads)
{
    struct mgpu_gemm_pack_args *pa = &out->args;
    memset(pa, 0, sizeof *pa);
    pa->src = src;
    pa->dst = dst;
    pa->rows = o->rows;
    pa->cols = o->cols;
    pa->batch = o->batches;
    pa->ld_src = ld;
    pa->stride_src = stride;
    pa->ld_dst = o->packed_ld;
    pa->stride_dst = o->packed_ld * o->cols;
    pa->elem_bytes = o->esize;
    out->grid = helper_grid(caps, o->packed_ld * o->esize / PACK_BYTES * o->cols * o->batches, threads);
}

/* sm_100a split-K (kernels/blackwell/gemm_sm100_epilogue.cuh, split_k): the
 * rule of the sm_90a default (too few CTAs of tiles for `target`, at least
 * MIN_KTILES_PER_SPLIT k-tiles per slice, at most MAX_SPLITS), or the forced
 * factor clamped to the k-tiles. Not measured: no Blackwell GPU has run it. */
static int64_t sm100_splits(int64_t ctas, int64_t k_tiles, int64_t target, int force_splits)
{
    if (force_splits > 0)
        return force_splits < k_tiles ? force_splits : k_tiles;
    if (!(SPLIT_K_BY_DEFAULT && ctas * 2 <= target && k_tiles >= 2 * MIN_KTILES_PER_SPLIT))
        return 1;
    int64_t splits = target / ctas;
    if (splits > k_tiles / MIN_KTILES_PER_SPLIT)
        splits = k_tiles / MIN_KTILES_PER_SPLIT;
    return splits > MAX_SPLITS ? MAX_SPLITS : splits;
}

/* D columns per split counter: one per epilogue warp (32 columns) on sm_100a,
 * one per consumer warpgroup (64) on sm_90a. */
static int sm100_counter_cols(const struct mgpu_variant *v)
{
    return v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT ? SM100_EPI_COLS : EPI_COLS;
}

/* Bytes of fp32 partials per K slice: one slot per tile and consumer, the
 * tiles padded to whole clusters; -1 when beyond any workspace. */
static int64_t partial_bytes_per_split(const struct mgpu_gemm_problem *p, const struct mgpu_variant *v)
{
    const int64_t tiles_m = mgpu_cdiv(p->m, (int64_t)v->gemm.tile_m * v->gemm.cluster_m) * v->gemm.cluster_m;
    const int64_t tiles_n = mgpu_cdiv(p->n, (int64_t)v->gemm.tile_n * v->gemm.cluster_n) * v->gemm.cluster_n;
    int64_t tiles, bytes;
    if (!mgpu_mul3_ok(tiles_m, tiles_n, p->batch, &tiles) ||
        !mgpu_mul3_ok(tiles, (int64_t)v->gemm.tile_m * v->gemm.tile_n, (int64_t)sizeof(float), &bytes))
        return -1;
    return bytes;
}

/* The split-K tail (kernels/hopper/gemm_sm90_tail_split.cuh): the units
 * beyond the last full wave of the persistent grid, `tiles` = units mod
 * (CTAs or clusters at once), are shared out along K over every CTA, one
 * range of tiles * k_tiles / grid k-tiles each (ranges cross tile
 * boundaries), the partials summed in a fixed order through the workspace.
 * The busiest CTA then runs w tiles and one range instead of w + 1 tiles
 * (w full waves): 3000 x 3000 x 4000 on 66 clusters of 256 x 256, 144
 * units, 2 waves and 12 tail units, runs 2 x 63 + 12 k-tiles instead of
 * 3 x 63. The rows that have it: sm_90a, 16-bit, cooperative, two consumer
 * warpgroups (the 64 x 128, 128 x 128 and 256 x 128 rows, lone or in 2-CTA
 * clusters), no split-K. Taken where it cuts the busiest CTA's k-tiles by
 * TAIL_SPLIT_MIN_GAIN percent or more, a tile has TAIL_SPLIT_MIN_TILE_K
 * k-tiles or more and the tail is at most TAIL_SPLIT_MAX_SHARE percent of a
 * wave (and mgpu_gemm_tail_tiles finds a tail), or as
 * MGPU_FORCE_TAIL_SPLIT says (1: wherever the rows have it and there is a
 * tail, 0: never). Returns the tail tiles, 0 for none.
 * Measured on H100 (2026-11-27, bf16 TN, single launches, medians of 3
 * processes, tail forced on against the plan without it, ms): faster at
 * 3000 x 3000 x 4000 (63 k-tiles, 12 of 66 units in the tail) 0.1227 against 0.1384 and
 * 3000 x 3000 x 8000 (128 x 128, 125 k-tiles, 48 of 132) 0.2733 against
 * 0.2889; even at 3000^3 (47 k-tiles) 0.1211 against 0.1228 (its runs
 * spread 0.119-0.131); slower at every shape with 52 k-tiles or fewer
 * (3000 x 3000 x 1000 0.0700 against 0.0538, 3072^3 0.1005 against 0.0970,
 * 2560^3, 2500 x 4000 x 3000, 3300^3, 5000 x 5000 x 2000) and wherever the
 * tail was half a wave or more (4096^3 0.2014 against 0.1831, 4000^3,
 * 8192^3, 1024 x 28672 x 8192, 1536 x 4096 x 4096, 6000^3, 4500^3): the
 * tail's fixed costs (a tile waits for its slowest contributor, the partials' round trips) take
 * 20-30 us, and the last partial wave it replaces ran on few SMs, faster
 * than a full one (docs/decisions/038-gemm-tail-wave.md). */
#define TAIL_SPLIT_BY_DEFAULT 1
#define TAIL_SPLIT_MIN_GAIN 10     /* percent of the busiest CTA's k-tiles */
#define TAIL_SPLIT_MIN_TILE_K 60   /* k-tiles of one tile (k > 3776, 16-bit) */
#define TAIL_SPLIT_MAX_SHARE 40    /* percent of a wave in the tail */
static int64_t tail_split_tiles(const struct mgpu_gemm_problem *p, const struct mgpu_variant *v,
                                const struct mgpu_gemm_force *force, int64_t units, int64_t cluster,
                                int64_t k_tiles, int64_t sms)
{
    const int forced = force ? force->tail_split : 0;
    if (v->kind != MGPU_KIND_GEMM_SM90_PERSISTENT || mgpu_dtype_is_fp8(p->a_dtype) || v->threads != 384 ||
        v->gemm.shape_class == MGPU_GEMM_LARGE_PINGPONG || v->gemm.shape_class == MGPU_GEMM_LARGE_PINGPONG_CLUSTER ||
        forced < 0)
        return 0;
    const int64_t grid = sms / cluster; /* units at once */
    const int64_t tiles = mgpu_gemm_tail_tiles(units, grid, k_tiles), length = tiles * k_tiles;
    if (tiles == 0 || tiles * cluster * MGPU_GEMM_TAIL_COUNTERS > MGPU_SPLIT_COUNTERS)
        return 0;
    if (forced > 0)
        return tiles;
    if (!TAIL_SPLIT_BY_DEFAULT)
        return 0;
    /* k-tiles of the busiest CTA: w + 1 tiles without, w tiles and a range with */
    const int64_t waves = units / grid;
    const int64_t before = (waves + 1) * k_tiles, after = waves * k_tiles + mgpu_cdiv(length, grid);
    return k_tiles >= TAIL_SPLIT_MIN_TILE_K && tiles * 100 <= grid * TAIL_SPLIT_MAX_SHARE &&
                   (before - after) * 100 >= before * TAIL_SPLIT_MIN_GAIN
               ? tiles
               : 0;
}

/* Bytes of the split-K tail's partials: tiles + grid - 1 slots (one per
 * pair of a tail tile and a CTA whose range touches it) of one fp32 tile per
 * CTA of a cluster. Bounded: fewer than 2 x SM count slots of at most
 * 256 x 128 floats. */
static int64_t tail_split_bytes(const struct mgpu_variant *v, int64_t tiles, int64_t grid, int64_t cluster)
{
    return (tiles + grid - 1) * cluster * v->gemm.tile_m * v->gemm.tile_n * (int64_t)sizeof(float);
}

/* The persistent kernel's plan: split-K, packs, workspace, grid, band,
 * arguments and maps. 0; -1 with *status set (no pack kernel, or a forced
 * variant whose operand copies do not fit); PACKS_DO_NOT_FIT. */
#define PACKS_DO_NOT_FIT (-2)
static int plan_persistent(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, int variant,
                           const struct mgpu_gemm_force *force, const struct mgpu_gemm_resources *res,
                           int few_tiles, struct mgpu_gemm_plan *plan, mgpu_status *status)
{
    const struct mgpu_variant *v = &mgpu_variants[variant];
    const int force_splits = force ? force->splits : 0;
    const int64_t cluster = (int64_t)v->gemm.cluster_m * v->gemm.cluster_n;
    const int64_t k_tiles = mgpu_cdiv(p->k, v->gemm.tile_k);
    /* bounded by the C span check of validation: m * n * batch <= 2^56 */
    const int64_t units = mgpu_cdiv(mgpu_cdiv(p->m, v->gemm.tile_m), v->gemm.cluster_m) *
                          mgpu_cdiv(mgpu_cdiv(p->n, v->gemm.tile_n), v->gemm.cluster_n) * p->batch;
    const int64_t sms = caps->sm_count > 0 ? caps->sm_count : 1;
    /* Half the SMs for small m: B streams from memory there, half the SMs
     * already draw the bandwidth and each slice adds partials to move
     * (docs/decisions/003-split-k-in-one-launch.md). */
    const int64_t target = p->m <= SMALL_M ? sms / 2 : sms;
    int64_t splits = 1;
    if (v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT) {
        splits = sm100_splits(units * cluster, k_tiles, target, force_splits);
    } else if (force_splits > 0) {
        splits = force_splits < k_tiles ? force_splits : k_tiles;
    } else if (SPLIT_K_BY_DEFAULT && units * cluster * 2 <= target && k_tiles >= 2 * MIN_KTILES_PER_SPLIT &&
               (!few_tiles || k_tiles >= FEW_TILES_SPLIT_MIN_KTILES)) {
        splits = target / (units * cluster);
        if (splits > k_tiles / MIN_KTILES_PER_SPLIT)
            splits = k_tiles / MIN_KTILES_PER_SPLIT;
        if (splits > MAX_SPLITS)
            splits = MAX_SPLITS;
    }
    /* The kernel counts each tile's arrivals in the handle's split counters:
     * one per tile and 64-column consumer (sm_100a: 32-column epilogue warp). */
    const int64_t counters = units * cluster * (v->gemm.tile_n / sm100_counter_cols(v));
    if (splits > 1 && counters > MGPU_SPLIT_COUNTERS)
        splits = 1;
    int64_t tail = splits == 1 ? tail_split_tiles(p, v, force, units, cluster, k_tiles, sms) : 0;

    struct operand a = describe_operand(p->a, p->transa == MGPU_OP_N, p->m, p->k, p->lda, p->stride_a, p->batch,
                                        p->a_dtype, 0);
    struct operand b = describe_operand(p->b, p->transb == MGPU_OP_N, p->n, p->k, p->ldb, p->stride_b, p->batch,
                                        p->b_dtype, 1);
    const int64_t capacity = res->workspace_bytes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)res->workspace_bytes;
    int64_t packed = INT64_MAX; /* INT64_MAX: more than any workspace */
    if (a.packed_bytes >= 0 && b.packed_bytes >= 0 && !mgpu_add_ok(a.packed_bytes, b.packed_bytes, &packed))
        packed = INT64_MAX;
    const int packs_fit = packed < INT64_MAX && packed <= capacity;
    const int64_t per_split = partial_bytes_per_split(p, v);
    int64_t wanted = packed, partials = 0;
    if (splits > 1 && !(per_split >= 0 && mgpu_mul_ok(per_split, splits, &partials) && mgpu_add_ok(wanted, partials, &wanted)))
        wanted = INT64_MAX;
    const int64_t tail_bytes = tail > 0 ? tail_split_bytes(v, tail, sms / cluster, cluster) : 0;
    if (tail > 0 && !mgpu_add_ok(wanted, tail_bytes, &wanted))
        wanted = INT64_MAX;
    plan->workspace_wanted = wanted == INT64_MAX ? MGPU_GEMM_WANTED_OVER_LIMIT : (size_t)wanted;
    plan->pack_variant = -1;
    if (a.pack || b.pack) {
        const struct mgpu_lookup q = {.what = "GEMM operand pack", .of_op = is_pack_kind, .caps = caps,
                                      .fits = any_fits};
        plan->pack_variant = mgpu_registry_lookup(&q, NULL, status);
        if (plan->pack_variant < 0)
            return -1;
    }
    if (!packs_fit) {
        if (plan->forced)
            *status = mgpu_fail(MGPU_STATUS_INSUFFICIENT_WORKSPACE,
                                "MGPU_FORCE_VARIANT=%s needs %s bytes of workspace for its operand copies and the "
                                "handle has %zu (mgpu_reserve_workspace)",
                                v->name, a.packed_bytes < 0 || b.packed_bytes < 0 ? "more than 2^63" : "more",
                                res->workspace_bytes);
        return plan->forced ? -1 : PACKS_DO_NOT_FIT;
    }
    plan->degraded = NULL;
    if (splits > 1 && (wanted == INT64_MAX || wanted > capacity)) {
        /* give up K slices until the partials fit */
        const int64_t fit = per_split > 0 ? (capacity - packed) / per_split : 0;
        splits = fit >= 2 ? (fit < splits ? fit : splits) : 1;
        plan->degraded = splits > 1 ? "fewer split-K slices: the workspace is too small"
                                    : "no split-K: the workspace is too small";
    }
    if (tail > 0 && (wanted == INT64_MAX || wanted > capacity)) {
        tail = 0;
        plan->degraded = "no split-K tail: the workspace is too small";
    }
    partials = splits > 1 ? per_split * splits : tail > 0 ? tail_bytes : 0;

    plan->variant = variant;
    plan->persistent = 1;
    plan->splits = (int)splits;
    plan->tail_tiles = (int)tail;
    plan->pack_a = a.pack;
    plan->pack_b = b.pack;
    plan->workspace_bytes = (size_t)(packed + partials);
    const uint64_t ws = res->workspace;
    const uint64_t a_base = a.pack ? ws : p->a;
    const uint64_t b_base = b.pack ? ws + (uint64_t)a.packed_bytes : p->b;
    const int pack_threads = plan->pack_variant >= 0 ? mgpu_variants[plan->pack_variant].threads : 1;
    if (a.pack)
        pack_launch(&plan->pack[0], &a, p->a, p->lda, p->stride_a, a_base, caps, pack_threads);
    if (b.pack)
        pack_launch(&plan->pack[1], &b, p->b, p->ldb, p->stride_b, b_base, caps, pack_threads);

    const int64_t max_grid = sms / cluster * cluster;
    const int64_t want = units * splits * cluster;
    plan->grid = want < max_grid ? want : (max_grid > 0 ? max_grid : cluster);
    plan->band = choose_band(plan->grid / cluster, (int64_t)v->gemm.tile_m * v->gemm.cluster_m,
                             (int64_t)v->gemm.tile_n * v->gemm.cluster_n, mgpu_cdiv(mgpu_cdiv(p->m, v->gemm.tile_m), v->gemm.cluster_m),
                             force ? force->band : 0);
    plan->programmatic =
        programmatic_wanted(v, force, plan->grid, cluster, units * splits, mgpu_cdiv(k_tiles, splits), sms);

    struct mgpu_gemm_args *args = &plan->args;
    *args = base_args(p);
    const int64_t lda = a.pack ? a.packed_ld : p->lda, sta = a.pack ? a.packed_ld * a.cols : p->stride_a;
    const int64_t ldb = b.pack ? b.packed_ld : p->ldb, stb = b.pack ? b.packed_ld * b.cols : p->stride_b;
    args->a = a_base;
    args->b = b_base;
    args->lda = lda;
    args->ldb = ldb;
    args->stride_a = sta;
    args->stride_b = stb;
    args->batch_count = (int32_t)p->batch;
    args->band = plan->band;
    args->splits = plan->splits;
    args->a_broadcast = p->batch > 1 && p->stride_a == 0;
    args->b_broadcast = p->batch > 1 && p->stride_b == 0;
    args->workspace = ws + (uint64_t)packed;
    args->split_counters = plan->splits > 1 || plan->tail_tiles > 0 ? res->split_counters : 0;
    args->tail_split = plan->tail_tiles > 0;
    args->c_tma = mgpu_gemm_c_tma_eligible(p);
    args->fp8_no_promotion = force && force->fp8_no_promotion && mgpu_dtype_is_fp8(p->a_dtype);
    operand_map(&plan->maps[MGPU_GEMM_MAP_A], p->a_dtype, a_base, p->transa == MGPU_OP_T, p->m, p->k, lda, sta,
                a.batches, v->gemm.tile_m / v->gemm.cluster_n, v->gemm.tile_k);
    operand_map(&plan->maps[MGPU_GEMM_MAP_B], p->b_dtype, b_base, p->transb == MGPU_OP_N, p->n, p->k, ldb, stb,
                b.batches, v->gemm.tile_n / v->gemm.cluster_m, v->gemm.tile_k);
    plan->use_map[MGPU_GEMM_MAP_A] = plan->use_map[MGPU_GEMM_MAP_B] = 1;
    if (args->c_tma) {
        /* D as the persistent kernels store it: {m, n, batch}, box {128 bytes, 64 (sm_90a) or 32
         * (sm_100a: one epilogue warp's columns) columns, 1}. */
        struct mgpu_tensor_map_desc *c = &plan->maps[MGPU_GEMM_MAP_C];
        const uint64_t esize = (uint64_t)mgpu_dtype_size(p->c_dtype);
        memset(c, 0, sizeof *c);
        c->type = mgpu_map_type_of(p->c_dtype);
        c->rank = 3;
        c->base = p->c;
        c->dims[0] = (uint64_t)p->m;
        c->dims[1] = (uint64_t)p->n;
        c->dims[2] = (uint64_t)p->batch;
        c->byte_strides[0] = (uint64_t)p->ldc * esize;
        c->byte_strides[1] = p->batch > 1 ? (uint64_t)p->stride_c * esize : (uint64_t)p->ldc * esize;
        c->box[0] = (uint32_t)(TMA_ROW_BYTES / esize);
        c->box[1] = v->kind == MGPU_KIND_GEMM_SM100_PERSISTENT ? SM100_EPI_COLS : EPI_COLS;
        c->box[2] = 1;
        c->swizzle_128b = 1;
        plan->use_map[MGPU_GEMM_MAP_C] = 1;
    }
    return 0;
}

/* One CTA per tile (the portable kernel). */
static void plan_single(const struct mgpu_gemm_problem *p, int variant, struct mgpu_gemm_plan *plan)
{
    const struct mgpu_variant *v = &mgpu_variants[variant];
    plan->variant = variant;
    plan->splits = 1;
    plan->args = base_args(p);
    plan->grid_x = (unsigned)mgpu_cdiv(p->m, v->gemm.tile_m);
    plan->cols_per_launch = (int64_t)MAX_GRID_Y_TILES * v->gemm.tile_n;
    plan->batches_per_launch = MGPU_MAX_GRID_YZ;
}

void mgpu_gemm_plan_chunk(const struct mgpu_gemm_plan *plan, const struct mgpu_gemm_problem *p, int64_t col0,
                          int64_t batch0, struct mgpu_gemm_args *args, struct mgpu_tensor_map_desc *map_b,
                          unsigned *grid_y, unsigned *grid_z)
{
    const struct mgpu_variant *v = &mgpu_variants[plan->variant];
    const int64_t cols = p->n - col0 < plan->cols_per_launch ? p->n - col0 : plan->cols_per_launch;
    const int64_t batches = p->batch - batch0 < plan->batches_per_launch ? p->batch - batch0
                                                                            : plan->batches_per_launch;
    /* column col0 of op(B): column col0 of B (N) or row col0 of B (T) */
    const uint64_t b_offset = (uint64_t)(p->transb == MGPU_OP_N ? col0 * p->ldb : col0) *
                              (uint64_t)mgpu_dtype_size(p->b_dtype);
    *args = plan->args;
    args->batch_base = (int32_t)batch0;
    args->n = (int32_t)cols;
    args->c += (uint64_t)(col0 * p->ldc) * (uint64_t)mgpu_dtype_size(p->c_dtype);
    args->b += b_offset;
    if (p->bias && p->bias_mode == MGPU_BIAS_PER_COLUMN)
        args->bias += (uint64_t)col0 * (uint64_t)mgpu_dtype_size(p->bias_dtype);
    *map_b = plan->maps[MGPU_GEMM_MAP_B];
    if (plan->use_map[MGPU_GEMM_MAP_B]) {
        map_b->base += b_offset;
        map_b->dims[p->transb == MGPU_OP_N ? 1 : 0] = (uint64_t)cols;
    }
    *grid_y = (unsigned)mgpu_cdiv(cols, v->gemm.tile_n);
    *grid_z = (unsigned)batches;
}

/* ------------------------------------------------------------ selection memo
 *
 * The registry lookup and the shape class are most of a call's host time
 * (a profile against the fake driver: about 70 %). They depend on the
 * problem's sizes, dtypes, layouts, leading dimensions and strides, on the
 * pointers only through their offset in 128 bytes, on whether scales, a bias
 * or an activation are present, and on the device: the last SELECTION_MEMO
 * of them are kept per thread, keyed on exactly that. A forced variant is
 * never memoized. */
#define SELECTION_MEMO 8
struct selection_key {
    struct mgpu_gemm_problem p; /* A, B: offset in 128 bytes, C in 16; alpha, beta NULL */
    struct mgpu_device_caps caps;
};
struct selection_memo {
    int used;
    struct selection_key key;
    int variant;
    enum mgpu_gemm_shape_class want;
    int tma, decode_rows, decode_cols, decode_stages, few_tiles, narrow, half_rows, mid_rows, wave_rows;
};
static _Thread_local struct selection_memo selection_memo[SELECTION_MEMO];
static _Thread_local int selection_memo_next;

static void selection_key_of(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                             struct selection_key *k)
{
    memset(k, 0, sizeof *k); /* padding included: keys are compared with memcmp */
    k->p.transa = p->transa;
    k->p.transb = p->transb;
    k->p.m = p->m;
    k->p.n = p->n;
    k->p.k = p->k;
    k->p.batch = p->batch;
    k->p.a_dtype = p->a_dtype;
    k->p.b_dtype = p->b_dtype;
    k->p.c_dtype = p->c_dtype;
    k->p.a = p->a % TMA_ROW_BYTES; /* operands_off_lines */
    k->p.b = p->b % TMA_ROW_BYTES;
    k->p.c = p->c % TMA_ALIGN;
    k->p.lda = p->lda;
    k->p.ldb = p->ldb;
    k->p.ldc = p->ldc;
    k->p.stride_a = p->stride_a;
    k->p.stride_b = p->stride_b;
    k->p.stride_c = p->stride_c;
    k->p.scale_a = p->scale_a != 0;
    k->p.scale_b = p->scale_b != 0;
    k->p.scale_d = p->scale_d != 0;
    k->p.bias = p->bias != 0;
    k->p.bias_dtype = p->bias_dtype;
    k->p.bias_mode = p->bias_mode;
    k->p.bias_stride = p->bias_stride;
    k->p.activation = p->activation;
    k->caps.cc_major = caps->cc_major;
    k->caps.cc_minor = caps->cc_minor;
    k->caps.sm_count = caps->sm_count;
    k->caps.max_smem_per_block = caps->max_smem_per_block;
}

static int selection_recall(const struct selection_key *key, struct gemm_fit *fit)
{
    for (int i = 0; i < SELECTION_MEMO; i++) {
        const struct selection_memo *e = &selection_memo[i];
        if (e->used && memcmp(&e->key, key, sizeof *key) == 0) {
            fit->want = e->want;
            fit->tma = e->tma;
            fit->decode_rows = e->decode_rows;
            fit->decode_cols = e->decode_cols;
            fit->decode_stages = e->decode_stages;
            fit->few_tiles = e->few_tiles;
            fit->narrow = e->narrow;
            fit->half_rows = e->half_rows;
            fit->mid_rows = e->mid_rows;
            fit->wave_rows = e->wave_rows;
            return e->variant;
        }
    }
    return -1;
}

static void selection_keep(const struct selection_key *key, const struct gemm_fit *fit, int variant)
{
    struct selection_memo *e = &selection_memo[selection_memo_next];
    selection_memo_next = (selection_memo_next + 1) % SELECTION_MEMO;
    e->used = 1;
    e->key = *key;
    e->variant = variant;
    e->want = fit->want;
    e->tma = fit->tma;
    e->decode_rows = fit->decode_rows;
    e->decode_cols = fit->decode_cols;
    e->decode_stages = fit->decode_stages;
    e->few_tiles = fit->few_tiles;
    e->narrow = fit->narrow;
    e->half_rows = fit->half_rows;
    e->mid_rows = fit->mid_rows;
    e->wave_rows = fit->wave_rows;
}

int mgpu_plan_gemm(const struct mgpu_gemm_problem *problem, const struct mgpu_device_caps *caps,
                   const struct mgpu_gemm_force *force, const struct mgpu_gemm_resources *res,
                   struct mgpu_gemm_plan *plan, mgpu_status *status)
{
    /* alpha == 0: D = beta * C (+ the epilogue) without reading A and B, as BLAS does */
    struct mgpu_gemm_problem q = *problem;
    if (*q.alpha == 0.0f)
        q.k = 0;
    const struct mgpu_gemm_problem *p = &q;
    static const struct mgpu_gemm_resources none = {0, 0, 0};
    if (!res)
        res = &none;
    memset(plan, 0, sizeof *plan);
    plan->pack_variant = -1;
    struct gemm_fit fit = {.p = p, .persistent_ok = 1};
    struct mgpu_lookup lookup = {
        .what = "GEMM", .of_op = is_gemm_kind, .caps = caps, .force = force ? force->variant : NULL,
        .fits = gemm_fits, .ctx = &fit,
        .refusal = mgpu_gemm_needs_extensions(p) && !extensions_run_on(caps)
                       ? "fp8 inputs, scales, bias and activations run on compute capability 9.0 and 10.0 only"
                       : NULL,
    };
    const int memo = !(force && ((force->variant && force->variant[0]) || force->schedule != MGPU_SCHEDULE_DEFAULT ||
                                 force->tail_split != 0));
    struct selection_key key;
    int variant = -1;
    if (memo) {
        selection_key_of(p, caps, &key);
        variant = selection_recall(&key, &fit);
    }
    if (variant < 0) {
        fit.tma = mgpu_gemm_tma_eligible(p);
        wanted_shape(p, caps, &fit);
        wide_wanted(p, caps, force, &fit);
        if (caps->cc_major == 9 && caps->cc_minor == 0)
            wave_rows_wanted(p, caps, force, &fit);
        if (caps->cc_major == 9 && caps->cc_minor == 0)
            choose_schedule(p, force, &fit);
        variant = mgpu_registry_lookup(&lookup, &plan->forced, status);
        if (variant < 0)
            return -1;
        if (memo && !plan->forced)
            selection_keep(&key, &fit, variant);
    }
    const enum mgpu_kernel_kind kind = mgpu_variants[variant].kind;
    if (kind == MGPU_KIND_GEMM_SMALL_M_SM90 || kind == MGPU_KIND_GEMM_SMALL_M_TMA_SM90) {
        plan_small_m(p, caps, variant, force, res, plan);
        plan->shape_class = plan->forced ? "forced" : plan->splits > 1 ? "small m (decode), split-K" : "small m (decode)";
        return 0;
    }
    if (kind == MGPU_KIND_GEMM_SM90_PERSISTENT || kind == MGPU_KIND_GEMM_SM100_PERSISTENT) {
        const int planned = plan_persistent(p, caps, variant, force, res, fit.few_tiles && !plan->forced, plan, status);
        if (planned == 0) {
            const int small_m = p->m <= SMALL_M;
            const struct mgpu_variant *v = &mgpu_variants[plan->variant];
            if (kind == MGPU_KIND_GEMM_SM100_PERSISTENT) {
                plan->shape_class = plan->forced ? "forced"
                                    : v->gemm.shape_class == MGPU_GEMM_LARGE_CLUSTER
                                        ? (plan->splits > 1 ? "CTA pairs, split-K" : "large, CTA pairs")
                                    : small_m ? (plan->splits > 1 ? "small m, split-K" : "small m")
                                              : (plan->splits > 1 ? "few tiles, split-K" : "large, lone CTAs");
                return 0;
            }
            const int pp = v->gemm.shape_class == MGPU_GEMM_LARGE_PINGPONG ||
                           v->gemm.shape_class == MGPU_GEMM_LARGE_PINGPONG_CLUSTER;
            plan->shape_class = plan->forced       ? "forced"
                                : plan->splits > 1  ? (small_m ? "small m, split-K" : "few tiles, split-K")
                                : fit.few_tiles     ? (fit.want == MGPU_GEMM_LARGE ? "few tiles, large tile"
                                                                                   : "few tiles, smaller tile")
                                : small_m           ? (fit.half_rows ? "small m, 128-row tiles" : "small m")
                                : fit.half_rows     ? (plan->tail_tiles > 0 ? "large, 128-row tiles, split-K tail"
                                                                            : "large, 128-row tiles")
                                : fit.want == MGPU_GEMM_WIDE_192 || fit.want == MGPU_GEMM_WIDE_192_CLUSTER
                                    ? "large, 192 x 192 tiles"
                                : fit.mid_rows      ? (plan->tail_tiles > 0 ? "large, 192-row tiles, split-K tail"
                                                                            : "large, 192-row tiles")
                                : fit.want == MGPU_GEMM_WAVE || fit.want == MGPU_GEMM_WAVE_CLUSTER
                                    ? (plan->tail_tiles > 0 ? "large, whole-wave tiles, split-K tail"
                                                            : "large, whole-wave tiles")
                                : pp                ? "large, ping-pong"
                                : plan->tail_tiles > 0 ? "large, split-K tail"
                                                    : "large";
            return 0;
        }
        if (planned != PACKS_DO_NOT_FIT)
            return -1;
        /* the operand copies do not fit the workspace: a kernel that reads them as they are */
        const size_t wanted = plan->workspace_wanted;
        memset(plan, 0, sizeof *plan);
        plan->pack_variant = -1;
        fit.persistent_ok = 0;
        lookup.force = NULL;
        variant = mgpu_registry_lookup(&lookup, NULL, status);
        if (variant < 0)
            return -1;
        plan->workspace_wanted = wanted;
        plan->degraded = "the portable kernel: the operand copies do not fit the workspace";
    }
    plan_single(p, variant, plan);
    plan->shape_class = plan->forced ? "forced" : "portable";
    return 0;
}

int mgpu_gemm_workspace_wanted(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps,
                               const struct mgpu_gemm_force *force, size_t *wanted, mgpu_status *status)
{
    struct mgpu_gemm_plan plan;
    const struct mgpu_gemm_resources unlimited = {0, SIZE_MAX, 0};
    if (mgpu_plan_gemm(p, caps, force, &unlimited, &plan, status) < 0)
        return -1;
    *wanted = plan.workspace_wanted;
    return 0;
}

int mgpu_select_gemm(const struct mgpu_gemm_problem *p, const struct mgpu_device_caps *caps, const char *force,
                     mgpu_status *status)
{
    struct mgpu_gemm_plan plan;
    const struct mgpu_gemm_force forced = {.variant = force};
    const struct mgpu_gemm_resources unlimited = {0, SIZE_MAX, 0};
    return mgpu_plan_gemm(p, caps, &forced, &unlimited, &plan, status) < 0 ? -1 : plan.variant;
}
