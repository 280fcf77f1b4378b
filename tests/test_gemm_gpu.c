/*
 * mgpu_gemm against cuBLAS (cublasGemmStridedBatchedEx with the same
 * arguments, fp32 compute) in the same process, on random normal inputs,
 * with C poisoned (NaN) whenever beta == 0. Each case checks the relative
 * Frobenius error, the max abs error, that no NaN came out, and that no byte
 * of C outside the m x n matrices changed. Skips (77) without a GPU.
 *
 * The cases walk every path of the planner (src/gemm/gemm_plan.c): the persistent
 * kernel with and without 2-CTA clusters (odd tile-column counts included),
 * TMA stores and the direct-store fallback (odd ldc), split-K (heuristic and
 * forced through MGPU_FORCE_SPLIT_K, bitwise reproducible), the operand pack
 * for odd leading dimensions, batch strides and pointers, broadcast batches,
 * the portable kernel for k == 0, and the small-m (decode) kernel
 * (MGPU_TEST_SMALL_M_ONLY=1: only its cases, for compute-sanitizer).
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "force.h"
#include "gpu_util.h"

struct gemm_case {
    mgpu_operation ta, tb;
    int64_t m, n, k, batch;
    mgpu_dtype ab, c;
    int64_t pad_a, pad_b, pad_c; /* added to the minimal leading dimensions */
    int64_t offset;              /* elements added to the A and B base pointers */
    int64_t extra_stride;        /* elements added to the minimal batch strides of A and B */
    int broadcast_a;             /* stride_a = 0 */
    float alpha, beta;
};

static cublasHandle_t cublas;
static mgpu_handle *handle;
/* MGPU_TEST_QUICK=1 leaves out the largest shapes (for runs under compute-sanitizer). */
static int quick;

static cudaDataType cuda_type(mgpu_dtype t)
{
    return t == MGPU_DTYPE_F16 ? CUDA_R_16F : t == MGPU_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static const char *tname(mgpu_dtype t)
{
    return t == MGPU_DTYPE_F16 ? "f16" : t == MGPU_DTYPE_BF16 ? "bf16" : "f32";
}

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 16) != cudaSuccess) {
        fprintf(stderr, "cudaMalloc(%zu) failed\n", bytes);
        exit(1);
    }
    return p;
}

/* Bytes of C outside the m x n matrices must be what they were before. */
static size_t changed_outside(const void *out_dev, const void *ref_dev, size_t bytes, const struct gemm_case *g,
                              int64_t ldc, int64_t stride_c)
{
    unsigned char *o = malloc(bytes), *r = malloc(bytes);
    cudaMemcpy(o, out_dev, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(r, ref_dev, bytes, cudaMemcpyDeviceToHost);
    size_t es = dtype_bytes(g->c), bad = 0;
    for (size_t e = 0; e < bytes / es; e++) {
        int64_t b = (int64_t)e / stride_c, rem = (int64_t)e % stride_c, j = rem / ldc, i = rem % ldc;
        int inside = b < g->batch && j < g->n && i < g->m;
        if (!inside && memcmp(o + e * es, r + e * es, es) != 0)
            bad++;
    }
    free(o);
    free(r);
    return bad;
}

static void run_case(const struct gemm_case *g)
{
    if (quick && (double)g->m * (double)g->n * (double)g->k > 1e9)
        return;
    const int64_t rows_a = g->ta == MGPU_OP_N ? g->m : g->k, cols_a = g->ta == MGPU_OP_N ? g->k : g->m;
    const int64_t rows_b = g->tb == MGPU_OP_N ? g->k : g->n, cols_b = g->tb == MGPU_OP_N ? g->n : g->k;
    const int64_t lda = (rows_a > 1 ? rows_a : 1) + g->pad_a, ldb = (rows_b > 1 ? rows_b : 1) + g->pad_b;
    const int64_t ldc = (g->m > 1 ? g->m : 1) + g->pad_c;
    const int64_t stride_a = g->broadcast_a ? 0 : lda * cols_a + g->extra_stride;
    const int64_t stride_b = ldb * cols_b + g->extra_stride, stride_c = ldc * g->n;
    const int64_t batch = g->batch;
    const size_t es = dtype_bytes(g->ab);
    const size_t a_elems = (size_t)(stride_a * (batch - 1) + lda * cols_a + g->offset);
    const size_t b_elems = (size_t)(stride_b * (batch - 1) + ldb * cols_b + g->offset);
    const size_t c_bytes = (size_t)(stride_c * batch) * dtype_bytes(g->c);
    static uint64_t seed = 1;

    unsigned char *a = dalloc(a_elems * es), *b = dalloc(b_elems * es);
    void *c = dalloc(c_bytes), *c_ref = dalloc(c_bytes);
    fill_normal(a, g->ab, a_elems, seed++, 1.0f);
    fill_normal(b, g->ab, b_elems, seed++, 1.0f);
    if (g->beta != 0.0f)
        fill_normal(c, g->c, c_bytes / dtype_bytes(g->c), seed++, 1.0f);
    else
        poison(c, c_bytes);
    cudaMemcpy(c_ref, c, c_bytes, cudaMemcpyDeviceToDevice);
    const void *A = a + g->offset * (int64_t)es, *B = b + g->offset * (int64_t)es;

    char label[200];
    snprintf(label, sizeof label, "%c%c m=%lld n=%lld k=%lld batch=%lld %s->%s pads=%lld,%lld,%lld off=%lld%s "
             "alpha=%g beta=%g", "NT"[g->ta], "NT"[g->tb], (long long)g->m, (long long)g->n, (long long)g->k,
             (long long)batch, tname(g->ab), tname(g->c), (long long)g->pad_a, (long long)g->pad_b,
             (long long)g->pad_c, (long long)g->offset, g->broadcast_a ? " bcastA" : "", g->alpha, g->beta);

    mgpu_status s;
    if (batch == 1 && !g->extra_stride)
        s = mgpu_gemm(handle, g->ta, g->tb, g->m, g->n, g->k, &g->alpha, A, g->ab, lda, B, g->ab, ldb, &g->beta, c,
                      g->c, ldc);
    else
        s = mgpu_gemm_strided_batched(handle, g->ta, g->tb, g->m, g->n, g->k, &g->alpha, A, g->ab, lda, stride_a,
                                      B, g->ab, ldb, stride_b, &g->beta, c, g->c, ldc, stride_c, batch);
    CHECK(s == MGPU_STATUS_SUCCESS, "%s: %s (%s)", label, mgpu_status_string(s), mgpu_last_error_message());
    cudaError_t e = cudaDeviceSynchronize();
    CHECK(e == cudaSuccess, "%s: kernel failed: %s", label, cudaGetErrorString(e));
    if (e != cudaSuccess)
        exit(1); /* the context is gone */

    cublasStatus_t cs = cublasGemmStridedBatchedEx(
        cublas, g->ta == MGPU_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, g->tb == MGPU_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T,
        (int)g->m, (int)g->n, (int)g->k, &g->alpha, A, cuda_type(g->ab), (int)lda, stride_a, B, cuda_type(g->ab),
        (int)ldb, stride_b, &g->beta, c_ref, cuda_type(g->c), (int)ldc, stride_c, (int)batch, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT);
    CHECK(cs == CUBLAS_STATUS_SUCCESS, "%s: cuBLAS failed (%d)", label, (int)cs);
    cudaDeviceSynchronize();

    if (g->m > 0 && g->n > 0 && batch > 0) {
        struct compare_result r = compare_matrices(c, c_ref, g->c, g->m, g->n, ldc, stride_c, batch);
        const double eps = dtype_eps(g->c);
        const double rel_limit = g->c == MGPU_DTYPE_F32 ? 1e-4 : 1e-2;
        const double max_limit = 4 * eps * (r.max_ref > 1 ? r.max_ref : 1) + 1e-6 * (double)g->k;
        printf("%-90s rel %.2e max %.2e (ref max %.1f)\n", label, r.rel_err, r.max_err, r.max_ref);
        CHECK(r.nan_count == 0, "%s: %zu non-finite outputs", label, r.nan_count);
        CHECK(r.rel_err <= rel_limit, "%s: relative error %.3e > %.1e", label, r.rel_err, rel_limit);
        CHECK(r.max_err <= max_limit, "%s: max error %.3e > %.3e", label, r.max_err, max_limit);
    }
    size_t bad = changed_outside(c, c_ref, c_bytes, g, ldc, stride_c);
    CHECK(bad == 0, "%s: %zu elements outside C's matrices differ from cuBLAS's buffer", label, bad);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(c_ref);
}

/* run_case with MGPU_FORCE_VARIANT / MGPU_FORCE_SPLIT_K set (NULL: unset). */
static void run_forced(const struct gemm_case *g, const char *variant, const char *splits)
{
    if (variant)
        force_setenv("MGPU_FORCE_VARIANT", variant);
    if (splits)
        force_setenv("MGPU_FORCE_SPLIT_K", splits);
    run_case(g);
    force_unsetenv("MGPU_FORCE_VARIANT");
    force_unsetenv("MGPU_FORCE_SPLIT_K");
}

/* A TN-only sm_90a row forced by name: edges (m = 300, n = 1147: partial tiles on both
 * sides), beta with fp32 out, direct stores (odd ldc), broadcast B, the row's own
 * shapes (`extra`), then split-K into 3 (fp32 out, batched) and 5 (16-bit out, batched)
 * slices: with 2-CTA clusters, n = 80 and 136 leave the cluster's second CTA a tile
 * outside D. */
static void run_tn_row(const char *name, mgpu_dtype t, const struct gemm_case *extra, unsigned n_extra)
{
    const mgpu_operation T = MGPU_OP_T, N = MGPU_OP_N;
    const struct gemm_case cases[] = {
        {T, N, 300, 1147, 200, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {T, N, 257, 129, 130, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 0.5f, -2.0f},
        {T, N, 129, 65, 64, 1, t, t, 0, 0, 1, 0, 0, 0, 1.0f, 1.0f},
        {T, N, 96, 80, 64, 3, t, t, 0, 0, 0, 0, 0, 1, 1.0f, 0.0f},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_forced(&cases[i], name, NULL);
    for (unsigned i = 0; i < n_extra; i++)
        run_forced(&extra[i], name, NULL);
    const struct gemm_case split = {T, N, 200, 136, 1000, 2, t, MGPU_DTYPE_F32, 8, 0, 4, 0, 0, 0, 1.0f, 0.5f};
    run_forced(&split, name, "3");
    const struct gemm_case split16 = {T, N, 65, 300, 777, 3, t, t, 0, 0, 0, 0, 0, 0, 2.0f, 0.0f};
    run_forced(&split16, name, "5");
}

/* The persistent kernel's paths, whatever the heuristic would pick: the
 * sm_90a variants on compute capability 9.0, the sm_100a ones (lone CTAs and
 * CTA pairs) on 10.0. A name of the other device's variants would be ignored. */
static void check_persistent_paths(mgpu_dtype t)
{
    int dev = 0, cc_major = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev);
    const int blackwell = cc_major == 10;
    /* schedule (cooperative ws, ping-pong pp) and tile of each entry name */
    const char *sm90_variants[][2] = {{"ws", "256x128x64_s4_c1"}, {"ws", "256x128x64_s4_c2"},
                                      {"ws", "128x128x64_s6_c1"}, {"ws", "64x128x64_s8_c1"},
                                      {"pp", "128x128x64_s6_c1"}, {"pp", "128x128x64_s6_c2"},
                                      {"ws", "192x128x64_s4_c1"}, {"ws", "192x128x64_s4_c2"}};
    const char *sm100_variants[][2] = {{"ws", "256x128x64_s4_c1"}, {"ws", "256x128x64_s6_c2"}};
    const char *const(*variants)[2] = blackwell ? sm100_variants : sm90_variants;
    const unsigned n_variants = blackwell ? 2 : 8;
    const char *layouts[4] = {"nn", "nt", "tn", "tt"};
    const mgpu_operation ops[2] = {MGPU_OP_N, MGPU_OP_T};
    char name[96];
    for (unsigned v = 0; v < n_variants; v++)
        for (int l = 0; l < 4; l++) {
            if (quick && (l == 0 || l == 3))
                continue; /* under compute-sanitizer: the nt and tn layouts cover both operand majornesses */
            if (!blackwell && v == 7 && l < 2)
                continue; /* the 192-row clusters need K-major A (tn, tt only) */
            const mgpu_operation ta = ops[l / 2], tb = ops[l % 2]; /* the name's letters */
            snprintf(name, sizeof name, "mgpu_gemm_%s_%s_%s_%s_%s", blackwell ? "sm100" : "sm90", variants[v][0],
                     t == MGPU_DTYPE_BF16 ? "bf16" : "f16", layouts[l], variants[v][1]);
            /* 9 tile columns: the cluster's last CTA computes a tile outside D */
            struct gemm_case edge = {ta, tb, 300, 1147, 200, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f};
            run_forced(&edge, name, NULL);
            struct gemm_case beta = {ta, tb, 257, 129, 130, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 0.5f, -2.0f};
            run_forced(&beta, name, NULL);
            /* odd ldc: direct stores instead of TMA stores */
            struct gemm_case odd_c = {ta, tb, 129, 65, 64, 1, t, t, 0, 0, 1, 0, 0, 0, 1.0f, 1.0f};
            run_forced(&odd_c, name, NULL);
            /* split-K, batched, fp32 and 16-bit out */
            struct gemm_case split = {ta, tb, 200, 136, 1000, 2, t, MGPU_DTYPE_F32, 8, 0, 4, 0, 0, 0, 1.0f, 0.5f};
            run_forced(&split, name, "3");
            struct gemm_case split16 = {ta, tb, 65, 300, 777, 3, t, t, 0, 0, 0, 0, 0, 0, 2.0f, 0.0f};
            run_forced(&split16, name, "5");
            /* batched with broadcast B (stride 0 read through TMA) */
            struct gemm_case bcast = {ta, tb, 96, 80, 64, 3, t, t, 0, 0, 0, 0, 0, 1, 1.0f, 0.0f};
            run_forced(&bcast, name, NULL);
        }
    if (!blackwell) {
        /* the 64 x 64 tile (one consumer warpgroup) with the small-m shapes it is for */
        snprintf(name, sizeof name, "mgpu_gemm_sm90_ws_%s_tn_64x64x64_s12_c1", t == MGPU_DTYPE_BF16 ? "bf16" : "f16");
        const struct gemm_case narrow[] = {
            {MGPU_OP_T, MGPU_OP_N, 64, 4096, 4096, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
            {MGPU_OP_T, MGPU_OP_N, 128, 4096, 4096, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f},
        };
        run_tn_row(name, t, narrow, 2);
        run_forced(&narrow[0], name, "2");
        /* the 192 x 192 tiles (three consumer warpgroups, one epilogue buffer each), lone CTAs
         * and 2-CTA clusters, with several tiles per CTA (169 tiles: 2 per CTA, 91 cluster units
         * on 66 clusters), also in two K slices */
        const struct gemm_case wide[] = {
            {MGPU_OP_T, MGPU_OP_N, 2400, 2400, 128, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
            {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 1000, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        };
        for (int c = 1; c <= 2; c++) {
            snprintf(name, sizeof name, "mgpu_gemm_sm90_ws_%s_tn_192x192x64_s4_c%d",
                     t == MGPU_DTYPE_BF16 ? "bf16" : "f16", c);
            run_tn_row(name, t, wide, quick ? 1 : 2);
            run_forced(&wide[0], name, "2");
        }
        /* the 224 x 128 tiles (wave_rows_wanted), lone CTAs and 2-CTA clusters: 424 rows end
         * inside the last epilogue box of 16-bit D, which overlaps the one before it (rows
         * 384..447 of which 416..447 are new), with beta reading C in place and through direct
         * stores (odd ldc); fp32 D (whole boxes of 32 rows); several tiles per CTA, the split-K
         * tail forced (two contributors' partials a tail tile) */
        const struct gemm_case wave[] = {
            {MGPU_OP_T, MGPU_OP_N, 424, 300, 256, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f},
            {MGPU_OP_T, MGPU_OP_N, 424, 300, 256, 1, t, t, 0, 0, 1, 0, 0, 0, 1.0f, 0.5f},
            {MGPU_OP_T, MGPU_OP_N, 448, 2000, 320, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 1.0f, -1.0f},
            {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 1000, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        };
        for (int c = 1; c <= 2; c++) {
            snprintf(name, sizeof name, "mgpu_gemm_sm90_ws_%s_tn_224x128x64_s4_c%d",
                     t == MGPU_DTYPE_BF16 ? "bf16" : "f16", c);
            run_tn_row(name, t, wave, quick ? 3 : 4);
            run_forced(&wave[0], name, "2");
            force_setenv("MGPU_FORCE_TAIL_SPLIT", "1");
            run_forced(&wave[3], name, NULL);
            force_unsetenv("MGPU_FORCE_TAIL_SPLIT");
        }
    }
    /* shape classes as the planner takes them on its own (small m, skinny n, packs, batches) */
    struct gemm_case heuristics[] = {
        {MGPU_OP_T, MGPU_OP_N, 64, 4096, 4096, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {MGPU_OP_N, MGPU_OP_N, 128, 4096, 4096, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f},
        {MGPU_OP_N, MGPU_OP_T, 4096, 128, 8192, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {MGPU_OP_T, MGPU_OP_N, 1031, 1025, 513, 1, t, t, 1, 3, 0, 0, 0, 0, 1.0f, 0.0f}, /* odd lda, ldb */
        {MGPU_OP_N, MGPU_OP_T, 1000, 999, 777, 1, t, t, 0, 0, 0, 1, 0, 0, 1.0f, 0.0f},  /* A, B offset by 1 */
        {MGPU_OP_T, MGPU_OP_N, 1024, 1024, 1024, 8, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {MGPU_OP_N, MGPU_OP_N, 300, 200, 520, 5, t, t, 3, 5, 0, 0, 3, 0, 1.0f, 0.0f},  /* odd batch strides */
        /* at most one wave of large tiles: 64- or 128-row tiles, no split */
        {MGPU_OP_T, MGPU_OP_N, 256, 256, 256, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {MGPU_OP_N, MGPU_OP_T, 1024, 1024, 1024, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f},
        {MGPU_OP_N, MGPU_OP_N, 2048, 2048, 2048, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {MGPU_OP_T, MGPU_OP_T, 1000, 4000, 1000, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        /* 171 large tiles, rows of A and B off 128-byte lines (400 bytes): 2-CTA clusters */
        {MGPU_OP_T, MGPU_OP_N, 2056, 2312, 200, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        /* 192 x 128 tiles (mid_rows_wanted): 2-CTA clusters (rows off 128-byte lines), K-major A;
         * lone CTAs, M-major A (3072: in place of the 128 x 128 tiles); odd sizes, both operands
         * packed (lone CTAs) */
        {MGPU_OP_T, MGPU_OP_N, 3000, 3000, 1000, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {MGPU_OP_N, MGPU_OP_N, 3072, 3072, 1024, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f},
        {MGPU_OP_T, MGPU_OP_T, 2999, 3001, 555, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        /* 224 x 128 tiles in 2-CTA clusters (wave_rows_wanted) */
        {MGPU_OP_T, MGPU_OP_N, 5000, 5000, 1000, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
    };
    for (unsigned i = 0; i < sizeof heuristics / sizeof heuristics[0]; i++)
        run_case(&heuristics[i]);
    /* the small-m / skinny-n shapes again through split-K */
    for (unsigned i = 0; i < 3; i++)
        run_forced(&heuristics[i], NULL, i == 2 ? "8" : "4");
}

/* The small-m (decode) kernel, sm_90a: m <= 16 TN as the planner takes it
 * (split-K by the SM count), forced slice counts (1: the epilogue straight
 * from the accumulators), edges of n (not a multiple of 128) and of K (a
 * partial last 32-element step), beta with fp32 and 16-bit out, batches
 * (one counter per column block and entry) and a broadcast A; each
 * through every row of the kernel (register form, tensor-map rings). */
static void check_small_m_paths(mgpu_dtype t)
{
    int dev = 0, cc_major = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev);
    if (cc_major != 9)
        return;
    const mgpu_operation T = MGPU_OP_T, N = MGPU_OP_N;
    struct gemm_case cases[] = {
        {T, N, 1, 4096, 4096, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {T, N, 16, 4096, 4096, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
        {T, N, 7, 1000, 1000, 1, t, MGPU_DTYPE_F32, 0, 0, 3, 0, 0, 0, 0.5f, -1.5f},
        {T, N, 16, 129, 8, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f},
        {T, N, 9, 300, 2056, 3, t, t, 8, 16, 0, 0, 8, 0, 1.0f, 0.0f},
        {T, N, 16, 520, 1024, 4, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 1, 2.0f, 1.0f},
        {T, N, 2, 8192, 8192, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
    };
    /* the planner's row above (a 128-column tensor-map ring where B's
     * columns are on 128-byte boundaries, else the register form); every
     * row by name: the register form and the rings */
    static const char *const row_names[] = {"sm90_%s_tn_m16", "tma_sm90_%s_tn_m16_n128_k64_s12",
                                            "tma_sm90_%s_tn_m16_n128_k64_s6", "tma_sm90_%s_tn_m16_n64_k64_s20",
                                            "tma_sm90_%s_tn_m16_n64_k64_s10", "tma_sm90_%s_tn_m16_n128_k128_s6"};
    enum { kRows = sizeof row_names / sizeof row_names[0] };
    char rows[kRows][96];
    for (int j = 0; j < kRows; j++) {
        char tail[64];
        snprintf(tail, sizeof tail, row_names[j], tname(t));
        snprintf(rows[j], sizeof rows[j], "mgpu_gemm_small_m_%s", tail);
    }
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (quick && i == 6)
            continue;
        run_case(&cases[i]);
        run_forced(&cases[i], NULL, "1");
        run_forced(&cases[i], NULL, i % 2 ? "3" : "7");
        for (int j = 0; j < kRows; j++) {
            run_forced(&cases[i], rows[j], NULL);
            run_forced(&cases[i], rows[j], j == 0 ? "1" : i % 2 ? "5" : "2");
        }
    }
}

/* The split-K tail (kernels/hopper/gemm_sm90_tail_split.cuh): shapes whose
 * units run past full waves of the persistent grid, as planned and with the
 * tail forced (MGPU_FORCE_TAIL_SPLIT=1): clusters and lone CTAs, the
 * 128 x 128 row, every layout, odd sizes, k off the k-tile, beta != 0, fp32
 * out through direct stores (odd ldc), packed operands, batches. Compute
 * capability 9.0 only (the sm_100a kernel has no tail; the names below are
 * sm_90a rows). */
static void check_tail_split(mgpu_dtype t)
{
    char v128[96], v64[96];
    snprintf(v128, sizeof v128, "mgpu_gemm_sm90_ws_%s_tt_128x128x64_s6_c1", tname(t));
    snprintf(v64, sizeof v64, "mgpu_gemm_sm90_ws_%s_tn_64x128x64_s8_c1", tname(t));
    const struct {
        struct gemm_case g;
        const char *variant;
    } cases[] = {
        /* 144 cluster units on 66 clusters: 2 waves and 12 tail units (planned at k = 4000) */
        {{MGPU_OP_T, MGPU_OP_N, 3000, 3000, 1000, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f}, NULL},
        {{MGPU_OP_T, MGPU_OP_N, 3000, 3000, 4000, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f}, NULL},
        /* lda 777: both operands packed; odd ldc: direct stores */
        {{MGPU_OP_N, MGPU_OP_N, 2500, 2900, 777, 1, t, MGPU_DTYPE_F32, 0, 0, 3, 0, 0, 0, 1.0f, 0.0f}, NULL},
        /* two batch entries, M- and N-major operands */
        {{MGPU_OP_N, MGPU_OP_T, 2000, 2000, 300, 2, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f}, NULL},
        /* 144 tiles of 128 x 128 on 132 CTAs: 12 tail tiles over 24 k-tiles */
        {{MGPU_OP_T, MGPU_OP_T, 1000, 2300, 1500, 1, t, t, 0, 0, 0, 0, 0, 0, 2.0f, -1.0f}, v128},
        /* 248 tiles of 64 x 128: 116 tail tiles over 4 k-tiles each (small enough for MGPU_TEST_QUICK) */
        {{MGPU_OP_T, MGPU_OP_N, 256, 7900, 200, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.5f}, v64},
        /* 512 tiles on 132 lone CTAs: 116 tail tiles */
        {{MGPU_OP_T, MGPU_OP_N, 4096, 4096, 4096, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 1.0f, 1.0f}, NULL},
    };
    for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_forced(&cases[i].g, cases[i].variant, NULL);
        force_setenv("MGPU_FORCE_TAIL_SPLIT", "1");
        run_forced(&cases[i].g, cases[i].variant, NULL);
        force_unsetenv("MGPU_FORCE_TAIL_SPLIT");
    }
}

/* Two runs on the same inputs give the same bits (A as transa says, B not
 * transposed, fp32 out; split-K forced to `splits` when given). */
static void check_same_bits(mgpu_operation transa, int64_t m, int64_t n, int64_t k, const char *splits,
                            unsigned seed)
{
    if (splits)
        force_setenv("MGPU_FORCE_SPLIT_K", splits);
    const int64_t lda = transa == MGPU_OP_T ? k : m;
    float one = 1.0f, zero = 0.0f;
    void *a = dalloc((size_t)(m * k * 2)), *b = dalloc((size_t)(k * n * 2));
    void *c1 = dalloc((size_t)(m * n * 4)), *c2 = dalloc((size_t)(m * n * 4));
    fill_normal(a, MGPU_DTYPE_BF16, (size_t)(m * k), seed, 1.0f);
    fill_normal(b, MGPU_DTYPE_BF16, (size_t)(k * n), seed + 1, 1.0f);
    CHECK_STATUS(mgpu_gemm(handle, transa, MGPU_OP_N, m, n, k, &one, a, MGPU_DTYPE_BF16, lda, b, MGPU_DTYPE_BF16,
                           k, &zero, c1, MGPU_DTYPE_F32, m), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_gemm(handle, transa, MGPU_OP_N, m, n, k, &one, a, MGPU_DTYPE_BF16, lda, b, MGPU_DTYPE_BF16,
                           k, &zero, c2, MGPU_DTYPE_F32, m), MGPU_STATUS_SUCCESS);
    float *h1 = malloc((size_t)(m * n * 4)), *h2 = malloc((size_t)(m * n * 4));
    cudaMemcpy(h1, c1, (size_t)(m * n * 4), cudaMemcpyDeviceToHost);
    cudaMemcpy(h2, c2, (size_t)(m * n * 4), cudaMemcpyDeviceToHost);
    CHECK(memcmp(h1, h2, (size_t)(m * n * 4)) == 0, "%sN %lldx%lldx%lld: two identical calls gave different bits",
          transa == MGPU_OP_T ? "T" : "N", (long long)m, (long long)n, (long long)k);
    free(h1);
    free(h2);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c1);
    cudaFree(c2);
    if (splits)
        force_unsetenv("MGPU_FORCE_SPLIT_K");
}

/* Split-K included: its reduction adds the K slices in a fixed order; so
 * does the split-K tail's (forced: 3000 x 3000 x 1000, six contributors a
 * tail tile; 4096^3, 116 tail tiles). */
static void check_deterministic(void)
{
    check_same_bits(MGPU_OP_N, 1000, 700, 3000, NULL, 77);
    check_same_bits(MGPU_OP_N, 1000, 700, 3000, "5", 77);
    check_same_bits(MGPU_OP_N, 64, 4096, 4096, "4", 77);
    check_same_bits(MGPU_OP_T, 16, 4096, 4096, NULL, 79);
    force_setenv("MGPU_FORCE_TAIL_SPLIT", "1");
    check_same_bits(MGPU_OP_T, 3000, 3000, 1000, NULL, 81);
    check_same_bits(MGPU_OP_N, 4096, 4096, 4096, NULL, 83);
    force_unsetenv("MGPU_FORCE_TAIL_SPLIT");
}

/* Calls the device can reject only at run time. */
static void check_runtime_statuses(void)
{
    float one = 1.0f, zero = 0.0f;
    void *buf = dalloc(4096);
    CHECK_STATUS(mgpu_gemm(handle, MGPU_OP_N, MGPU_OP_N, 0, 4, 4, &one, NULL, MGPU_DTYPE_F16, 1, NULL,
                           MGPU_DTYPE_F16, 4, &zero, NULL, MGPU_DTYPE_F16, 1), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_gemm(handle, MGPU_OP_N, MGPU_OP_N, 4, 4, 4, &one, buf, MGPU_DTYPE_F16, 3, buf,
                           MGPU_DTYPE_F16, 4, &zero, buf, MGPU_DTYPE_F16, 4), MGPU_STATUS_INVALID_LD);
    CHECK_STATUS(mgpu_gemm(handle, MGPU_OP_N, MGPU_OP_N, 4, 4, 4, &one, buf, MGPU_DTYPE_F16, 4, buf,
                           MGPU_DTYPE_BF16, 4, &zero, buf, MGPU_DTYPE_F16, 4), MGPU_STATUS_DTYPE_MISMATCH);
    /* A forced name that is no GEMM variant of this device is meant for another
     * operation or device: the call plans as if nothing were forced. */
    force_setenv("MGPU_FORCE_VARIANT", "mgpu_no_such_kernel");
    CHECK_STATUS(mgpu_gemm(handle, MGPU_OP_N, MGPU_OP_N, 4, 4, 4, &one, buf, MGPU_DTYPE_F16, 4, buf,
                           MGPU_DTYPE_F16, 4, &zero, buf, MGPU_DTYPE_F16, 4), MGPU_STATUS_SUCCESS);
    force_unsetenv("MGPU_FORCE_VARIANT");
    cudaFree(buf);
}

int main(void)
{
    if (!gpu_available()) {
        printf("no CUDA device: skipped\n");
        return MGPU_TEST_SKIP;
    }
    const char *q = getenv("MGPU_TEST_QUICK");
    quick = q && q[0] == '1';
    cudaFree(0); /* make the primary context current */
    if (mgpu_create(&handle) != MGPU_STATUS_SUCCESS) {
        fprintf(stderr, "mgpu_create: %s\n", mgpu_last_error_message());
        return 1;
    }
    cublasCreate(&cublas);
    /* MGPU_TEST_SMALL_M_ONLY=1: the small-m kernel's cases only (for compute-sanitizer runs of that kernel) */
    /* MGPU_TEST_TAIL_ONLY=1: the split-K tail's cases only (for compute-sanitizer runs of it) */
    const char *tail_only = getenv("MGPU_TEST_TAIL_ONLY");
    if (tail_only && tail_only[0] == '1') {
        check_tail_split(MGPU_DTYPE_BF16);
        cublasDestroy(cublas);
        mgpu_destroy(handle);
        return check_exit();
    }
    const char *only = getenv("MGPU_TEST_SMALL_M_ONLY");
    if (only && only[0] == '1') {
        check_small_m_paths(MGPU_DTYPE_BF16);
        check_small_m_paths(MGPU_DTYPE_F16);
        check_same_bits(MGPU_OP_T, 16, 4096, 4096, NULL, 79);
        cublasDestroy(cublas);
        mgpu_destroy(handle);
        return check_exit();
    }

    const mgpu_operation ops[2] = {MGPU_OP_N, MGPU_OP_T};
    const mgpu_dtype ins[2] = {MGPU_DTYPE_BF16, MGPU_DTYPE_F16};
    for (int d = 0; d < 2; d++) {
        mgpu_dtype t = ins[d];
        struct gemm_case basic[] = {
            {MGPU_OP_T, MGPU_OP_N, 1, 1, 1, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
            {MGPU_OP_N, MGPU_OP_N, 1, 4096, 4096, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
            {MGPU_OP_T, MGPU_OP_N, 4096, 4096, 4096, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
            {MGPU_OP_N, MGPU_OP_T, 4096, 4096, 4096, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
            {MGPU_OP_N, MGPU_OP_N, 513, 257, 384, 1, t, MGPU_DTYPE_F32, 8, 8, 3, 0, 0, 0, 0.5f, 0.0f},
        };
        for (unsigned i = 0; i < sizeof basic / sizeof basic[0]; i++)
            run_case(&basic[i]);
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                struct gemm_case cases[] = {
                    {ops[ta], ops[tb], 127, 129, 65, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
                    {ops[ta], ops[tb], 257, 255, 1000, 1, t, t, 0, 0, 0, 0, 0, 0, 1.5f, 0.5f},
                    {ops[ta], ops[tb], 65, 63, 1, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
                    {ops[ta], ops[tb], 64, 64, 64, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f},
                    {ops[ta], ops[tb], 200, 136, 129, 1, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 0, 0, 1.0f, -1.0f},
                    /* odd leading dimensions: the portable path */
                    {ops[ta], ops[tb], 127, 129, 65, 1, t, t, 1, 3, 5, 0, 0, 0, 1.0f, 0.0f},
                    /* 2-byte aligned pointers: the portable path */
                    {ops[ta], ops[tb], 100, 90, 80, 1, t, t, 0, 0, 0, 1, 0, 0, 1.0f, 0.25f},
                    /* batched: aligned, odd batch strides, broadcast A */
                    {ops[ta], ops[tb], 200, 300, 128, 3, t, t, 8, 0, 2, 0, 0, 0, 1.0f, 0.0f},
                    {ops[ta], ops[tb], 65, 70, 75, 4, t, MGPU_DTYPE_F32, 0, 0, 0, 0, 1, 0, 1.0f, 1.0f},
                    {ops[ta], ops[tb], 96, 80, 64, 3, t, t, 0, 0, 0, 0, 0, 1, 1.0f, 0.0f},
                };
                for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
                    run_case(&cases[i]);
            }
        check_persistent_paths(t);
        check_tail_split(t);
        check_small_m_paths(t);
        /* k == 0: D = beta * C */
        struct gemm_case k0 = {MGPU_OP_N, MGPU_OP_N, 33, 17, 0, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 2.0f};
        run_case(&k0);
        /* m == 0 and batch == 0: nothing changes */
        struct gemm_case m0 = {MGPU_OP_N, MGPU_OP_N, 0, 17, 5, 1, t, t, 0, 0, 0, 0, 0, 0, 1.0f, 0.0f};
        run_case(&m0);
    }
    check_deterministic();
    check_runtime_statuses();

    cublasDestroy(cublas);
    mgpu_destroy(handle);
    return check_exit();
}
