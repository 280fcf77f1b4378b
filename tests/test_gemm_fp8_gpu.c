/*
 * fp8 GEMM (mgpu_gemm_ex with e4m3 / e5m2 inputs, TN) against a higher-
 * precision reference: the fp8 inputs are decoded to fp32 on the host
 * (exactly: every fp8 value is an fp32 value) and multiplied by cuBLAS in
 * fp32 (cublasGemmEx, CUDA_R_32F, CUBLAS_COMPUTE_32F) with alpha times the
 * operand scales; the output scale, bias and activation are applied on the
 * host. Outputs are poisoned (NaN) before each call when beta == 0; each
 * case checks the relative Frobenius error, the max abs error, that no NaN
 * came out and that nothing outside D changed. Skips (77) without a GPU; on
 * a GPU other than compute capability 9.0 or 10.0 it checks that the call is
 * refused. On 10.0 every sm_100a kind::f8f6f4 variant is also forced.
 *
 * Error budget (why the limits are what they are). The inputs are exact
 * fp8 values and the reference multiplies the same values in fp32, so input
 * quantization is not part of the error. What remains:
 *   - the tensor cores sum an fp8 wgmma chain with fewer bits than fp32
 *     (about 2^-13 relative); the kernel adds each 128-element chunk of K
 *     into an fp32 accumulator, so this term stays near 1e-4 whatever K is
 *     (without that promotion it grows with K: the 256 x 256 x 16384 case
 *     runs once more with the kernel's debugging switch
 *     MGPU_DEBUG_FP8_NO_PROMOTION and must then fail the limit). On compute
 *     capability 10.0 the tensor cores accumulate in fp32 tensor memory
 *     without promotion (docs/decisions/014-sm100-fp8-accumulation.md; no
 *     switch there): the same limit holds if that accumulation is as wide as
 *     fp32, and the long-K cases are its check;
 *   - rounding D to its dtype: 2^-8 (bf16), 2^-11 (fp16), 2^-24 (fp32).
 * Limit: relative error <= FP8_ACCUM_REL + 2 eps(out); max abs error <= 8
 * times that times max |ref| (catches single wrong elements of large size).
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
#include "test_gemm_ref.h"

#define FP8_ACCUM_REL 1e-3 /* the fp8 accumulation term of the budget above, with ~10x margin */
#define MAX_ERR_FACTOR 8.0

struct fp8_case {
    int64_t m, n, k, batch;
    mgpu_dtype a, b, c;
    float alpha, beta;
    float scale_a, scale_b, scale_d; /* 0: no pointer (1) */
    int64_t pad;                     /* added to lda and ldb (0: the minimal k) */
    const char *force_variant;       /* MGPU_FORCE_VARIANT, or NULL */
    const char *force_splits;        /* MGPU_FORCE_SPLIT_K, or NULL */
    mgpu_activation act;
    int bias;                        /* 1: an fp32 per-row bias */
};
/* run_case with MGPU_DEBUG_FP8_NO_PROMOTION set: the error must then be at
 * least NO_PROMOTION_FACTOR times that of the promoted run of the same case
 * just before (H100, K = 16384, fp32 output: 1.25e-4 / 8.3e-5 promoted
 * against 5.4e-4 / 3.3e-4 without, e4m3 / e5m2) */
static int no_promotion;
static double promoted_rel_err;
#define NO_PROMOTION_FACTOR 3.0

static cublasHandle_t cublas;
static mgpu_handle *handle;
static int quick; /* MGPU_TEST_QUICK=1: no shape above 1e9 multiply-adds (compute-sanitizer runs) */

static double out_eps(mgpu_dtype t)
{
    return t == MGPU_DTYPE_F32 ? ldexp(1.0, -24) : t == MGPU_DTYPE_BF16 ? ldexp(1.0, -8) : ldexp(1.0, -11);
}

static float *device_scalar(float v)
{
    float *p = ref_dalloc(sizeof(float));
    ref_upload(p, &v, sizeof v);
    return p;
}

static void run_case(const struct fp8_case *g)
{
    if (quick && (double)g->m * (double)g->n * (double)g->k * (double)g->batch > 1e9)
        return;
    const int64_t m = g->m, n = g->n, k = g->k, batch = g->batch;
    const int64_t lda = (k > 1 ? k : 1) + g->pad, ldb = (k > 1 ? k : 1) + g->pad, ldc = m;
    const int64_t stride_a = lda * m, stride_b = ldb * n, stride_c = ldc * n;
    const size_t a_elems = (size_t)(stride_a * batch), b_elems = (size_t)(stride_b * batch);
    const size_t c_elems = (size_t)(stride_c * batch), c_bytes = c_elems * ref_dtype_bytes(g->c);
    static uint64_t seed = 11;

    char label[256];
    snprintf(label, sizeof label,
             "fp8 %s x %s -> %s m=%lld n=%lld k=%lld batch=%lld pad=%lld alpha=%g beta=%g scales=%g,%g,%g%s%s%s%s%s",
             ref_dtype_name(g->a), ref_dtype_name(g->b), ref_dtype_name(g->c), (long long)m, (long long)n,
             (long long)k, (long long)batch, (long long)g->pad, g->alpha, g->beta, g->scale_a, g->scale_b, g->scale_d,
             g->bias ? " row-bias" : "",
             g->act == MGPU_ACTIVATION_RELU ? " relu" : g->act == MGPU_ACTIVATION_GELU ? " gelu" : "",
             g->force_variant ? " forced " : "", g->force_variant ? g->force_variant : "",
             g->force_splits ? " split-k forced" : "");

    /* host inputs: fp8 bytes and their exact float values */
    uint8_t *ha = malloc(a_elems + 1), *hb = malloc(b_elems + 1);
    float *fa = malloc(a_elems * sizeof(float) + 4), *fb = malloc(b_elems * sizeof(float) + 4);
    ref_fill_normal(ha, fa, g->a, a_elems, seed++, 1.0f);
    ref_fill_normal(hb, fb, g->b, b_elems, seed++, 1.0f);
    void *hc = malloc(c_bytes + 4);
    float *fc = malloc(c_elems * sizeof(float) + 4);
    if (g->beta != 0.0f)
        ref_fill_normal(hc, fc, g->c, c_elems, seed++, 1.0f);
    else {
        memset(hc, 0xff, c_bytes); /* NaN in every output dtype: unwritten elements fail */
        for (size_t i = 0; i < c_elems; i++)
            fc[i] = 0.0f;
    }
    float *fbias = malloc((size_t)m * sizeof(float) + 4);
    ref_fill_normal(fbias, NULL, MGPU_DTYPE_F32, (size_t)m, seed++, 1.0f);

    uint8_t *da = ref_dalloc(a_elems), *db = ref_dalloc(b_elems);
    void *dc = ref_dalloc(c_bytes);
    float *dbias = ref_dalloc((size_t)m * sizeof(float));
    ref_upload(da, ha, a_elems);
    ref_upload(db, hb, b_elems);
    ref_upload(dc, hc, c_bytes);
    ref_upload(dbias, fbias, (size_t)m * sizeof(float));
    float *sa = g->scale_a ? device_scalar(g->scale_a) : NULL, *sb = g->scale_b ? device_scalar(g->scale_b) : NULL;
    float *sd = g->scale_d ? device_scalar(g->scale_d) : NULL;

    mgpu_gemm_desc desc = MGPU_GEMM_DESC_INIT;
    desc.transa = MGPU_OP_T;
    desc.transb = MGPU_OP_N;
    desc.m = m, desc.n = n, desc.k = k;
    desc.alpha = g->alpha, desc.beta = g->beta;
    desc.A = da, desc.a_type = g->a, desc.lda = lda, desc.stride_a = stride_a;
    desc.B = db, desc.b_type = g->b, desc.ldb = ldb, desc.stride_b = stride_b;
    desc.C = dc, desc.c_type = g->c, desc.ldc = ldc, desc.stride_c = stride_c;
    desc.batch_count = batch;
    desc.scale_a = sa, desc.scale_b = sb, desc.scale_d = sd;
    desc.activation = g->act;
    if (g->bias) {
        desc.bias = dbias;
        desc.bias_type = MGPU_DTYPE_F32;
        desc.bias_mode = MGPU_BIAS_PER_ROW;
    }
    if (g->force_variant)
        force_setenv("MGPU_FORCE_VARIANT", g->force_variant);
    if (g->force_splits)
        force_setenv("MGPU_FORCE_SPLIT_K", g->force_splits);
    if (no_promotion)
        force_setenv("MGPU_DEBUG_FP8_NO_PROMOTION", "1");
    mgpu_status s = mgpu_gemm_ex(handle, &desc);
    force_unsetenv("MGPU_FORCE_VARIANT");
    force_unsetenv("MGPU_FORCE_SPLIT_K");
    force_unsetenv("MGPU_DEBUG_FP8_NO_PROMOTION");
    CHECK(s == MGPU_STATUS_SUCCESS, "%s: %s (%s)", label, mgpu_status_string(s), mgpu_last_error_message());
    cudaError_t e = cudaDeviceSynchronize();
    CHECK(e == cudaSuccess, "%s: kernel failed: %s", label, cudaGetErrorString(e));
    if (e != cudaSuccess)
        exit(1); /* the context is gone */

    /* reference: fp32 GEMM of the decoded inputs, then the epilogue on the host */
    float *ra = ref_dalloc(a_elems * sizeof(float)), *rb = ref_dalloc(b_elems * sizeof(float));
    float *rc = ref_dalloc(c_elems * sizeof(float));
    ref_upload(ra, fa, a_elems * sizeof(float));
    ref_upload(rb, fb, b_elems * sizeof(float));
    ref_upload(rc, fc, c_elems * sizeof(float));
    const float ref_alpha = g->alpha * (g->scale_a ? g->scale_a : 1.0f) * (g->scale_b ? g->scale_b : 1.0f);
    if (k > 0) {
        cublasStatus_t cs = cublasGemmStridedBatchedEx(
            cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)m, (int)n, (int)k, &ref_alpha, ra, CUDA_R_32F, (int)lda, stride_a,
            rb, CUDA_R_32F, (int)ldb, stride_b, &g->beta, rc, CUDA_R_32F, (int)ldc, stride_c, (int)batch,
            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        CHECK(cs == CUBLAS_STATUS_SUCCESS, "%s: cuBLAS failed (%d)", label, (int)cs);
    } else {
        for (size_t i = 0; i < c_elems; i++)
            fc[i] *= g->beta;
        ref_upload(rc, fc, c_elems * sizeof(float));
    }
    cudaDeviceSynchronize();
    float *ref = malloc(c_elems * sizeof(float) + 4);
    ref_download(ref, rc, c_elems * sizeof(float));
    for (int64_t bi = 0; bi < batch; bi++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                const size_t idx = (size_t)(bi * stride_c + j * ldc + i);
                ref[idx] = ref_finish(ref[idx], g->bias ? fbias[i] : 0.0f, g->act, g->scale_d ? g->scale_d : 1.0f);
            }

    struct compare_result r = ref_compare(dc, g->c, ref, m, n, ldc, stride_c, batch);
    const double rel_limit = FP8_ACCUM_REL + 2 * out_eps(g->c);
    const double max_limit = MAX_ERR_FACTOR * rel_limit * (r.max_ref > 1 ? r.max_ref : 1);
    printf("%-150s rel %.2e max %.2e (ref max %.1f)\n", label, r.rel_err, r.max_err, r.max_ref);
    CHECK(r.nan_count == 0, "%s: %zu non-finite outputs", label, r.nan_count);
    if (no_promotion) {
        /* the same check without the promotion must fail: the long-K case detects its absence */
        printf("%-150s without promotion: rel %.2e >= %.1f x promoted %.2e expected\n", label, r.rel_err,
               NO_PROMOTION_FACTOR, promoted_rel_err);
        CHECK(r.rel_err >= NO_PROMOTION_FACTOR * promoted_rel_err,
              "%s: without promotion the relative error %.3e is not %.1f x the promoted run's %.3e", label, r.rel_err,
              NO_PROMOTION_FACTOR, promoted_rel_err);
    } else {
        promoted_rel_err = r.rel_err;
        CHECK(r.rel_err <= rel_limit, "%s: relative error %.3e > %.2e", label, r.rel_err, rel_limit);
        CHECK(r.max_err <= max_limit, "%s: max error %.3e > %.3e", label, r.max_err, max_limit);
    }
    size_t bad = ref_changed_outside(dc, hc, c_bytes, g->c, m, n, ldc, stride_c, batch);
    CHECK(bad == 0, "%s: %zu elements outside D changed", label, bad);

    free(ha), free(hb), free(fa), free(fb), free(hc), free(fc), free(fbias), free(ref);
    cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dbias), cudaFree(ra), cudaFree(rb), cudaFree(rc);
    cudaFree(sa), cudaFree(sb), cudaFree(sd);
}

/* Statuses of fp8 calls the API refuses (no kernel runs). */
static void check_statuses(void)
{
    void *buf = ref_dalloc(1 << 16);
    mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
    d.transa = MGPU_OP_N; /* fp8 needs TN */
    d.transb = MGPU_OP_N;
    d.m = d.n = d.k = 32;
    d.A = d.B = d.C = buf;
    d.a_type = d.b_type = MGPU_DTYPE_E4M3;
    d.c_type = MGPU_DTYPE_BF16;
    d.lda = d.ldb = d.ldc = 32;
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_NOT_SUPPORTED);
    d.transa = MGPU_OP_T;
    d.c_type = MGPU_DTYPE_E4M3;
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_UNSUPPORTED_DTYPE);
    d.c_type = MGPU_DTYPE_BF16;
    d.b_type = MGPU_DTYPE_BF16;
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_DTYPE_MISMATCH);
    CHECK_STATUS(mgpu_gemm_ex(handle, NULL), MGPU_STATUS_NULL_POINTER);
    d.struct_size = 0;
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_INVALID_VALUE);
    cudaFree(buf);
}

int main(void)
{
    if (!gpu_available()) {
        printf("no CUDA device: skipped\n");
        return MGPU_TEST_SKIP;
    }
    const int cc = ref_test_start(&handle, &cublas, &quick);
    if (!cc) {
        /* Devices without GEMM kernels refuse these calls with a status. */
        mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
        d.transa = MGPU_OP_T;
        d.transb = MGPU_OP_N;
        d.a_type = d.b_type = MGPU_DTYPE_E4M3;
        d.c_type = MGPU_DTYPE_BF16;
        const mgpu_status s = ref_run_small(handle, d);
        CHECK(s == MGPU_STATUS_NOT_SUPPORTED || s == MGPU_STATUS_ARCH_MISMATCH,
              "fp8 GEMM off compute capability 9.0 / 10.0: %s (%s), want NOT_SUPPORTED or ARCH_MISMATCH",
              mgpu_status_string(s), mgpu_last_error_message());
        CHECK(mgpu_last_error_message()[0] != '\0', "fp8 GEMM refused without a message");
        printf("fp8 GEMM runs on compute capability 9.0 and 10.0 only; this device refuses it: %s\n",
               mgpu_last_error_message());
        cublasDestroy(cublas);
        mgpu_destroy(handle);
        return check_exit();
    }

    const mgpu_dtype fp8[2] = {MGPU_DTYPE_E4M3, MGPU_DTYPE_E5M2};
    const mgpu_dtype outs[3] = {MGPU_DTYPE_BF16, MGPU_DTYPE_F16, MGPU_DTYPE_F32};
    const mgpu_activation none = MGPU_ACTIVATION_NONE;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int o = 0; o < 3; o++) {
                if (quick && o > 0 && (a != 0 || b != 0))
                    continue; /* under compute-sanitizer: every output dtype once (e4m3), every pair once */
                const mgpu_dtype ta = fp8[a], tb = fp8[b], tc = outs[o];
                struct fp8_case cases[] = {
                    {1, 1, 32, 1, ta, tb, tc, 1.0f, 0.0f, 0, 0, 0, 0, NULL, NULL, none, 0},
                    /* k not a multiple of 32 (nor of 16 bytes: A and B are packed, the pad is zero) */
                    {127, 129, 65, 1, ta, tb, tc, 1.0f, 0.0f, 0.5f, 0.25f, 2.0f, 0, NULL, NULL, none, 0},
                    /* k tail read through TMA zero fill (ld padded to 16 bytes, no pack) */
                    {127, 129, 65, 1, ta, tb, tc, 1.0f, 0.0f, 0, 0, 0, 15, NULL, NULL, none, 0},
                    /* scales that are not powers of two, beta != 0 */
                    {300, 200, 520, 1, ta, tb, tc, 0.75f, 0.5f, 0.37f, 1.9f, 0.61f, 8, NULL, NULL, none, 0},
                    {4096, 4096, 4096, 1, ta, tb, tc, 1.0f, 0.0f, 0.5f, 2.0f, 1.0f, 0, NULL, NULL, none, 0},
                };
                for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
                    run_case(&cases[i]);
            }
    /* long K: the two-level accumulation keeps the error of K = 16384 at the short-K level */
    for (int a = 0; a < 2; a++)
        for (int o = 0; o < 3; o++) {
            struct fp8_case longk = {256, 256, 16384, 1, fp8[a], fp8[a], outs[o], 1.0f, 0.0f, 0, 0, 0, 0, NULL, NULL,
                                     none, 0};
            run_case(&longk);
        }
    /* the long-K case shows the promotion at work (a debugging switch of the sm_90a kernel turns
     * it off): the promoted and unpromoted runs of one case, fp32 output, the second at least
     * NO_PROMOTION_FACTOR times less accurate.
     * The sm_100a kernel has no promotion to switch off (decision 014). */
    for (int a = 0; a < (cc == 90 ? 2 : 0); a++) {
        struct fp8_case longk = {256, 256, 16384, 1, fp8[a], fp8[a], MGPU_DTYPE_F32, 1.0f, 0.0f, 0, 0, 0, 0, NULL,
                                 NULL, none, 0};
        run_case(&longk);
        no_promotion = 1;
        run_case(&longk);
        no_promotion = 0;
    }
    /* every path: the 128-row tile, split-K (reduction applies scales and epilogue), batches,
     * the portable kernel (k == 0 and forced), bias + activation */
    const mgpu_dtype e4 = MGPU_DTYPE_E4M3, e5 = MGPU_DTYPE_E5M2, bf = MGPU_DTYPE_BF16, f32 = MGPU_DTYPE_F32;
    struct fp8_case paths[] = {
        {64, 4096, 4096, 1, e4, e4, bf, 1.0f, 0.0f, 0.5f, 0.5f, 4.0f, 0, NULL, NULL, none, 0}, /* small m: split-K */
        {1000, 700, 3000, 1, e4, e5, f32, 1.0f, 0.5f, 0.3f, 0.7f, 1.5f, 8, NULL, "5", MGPU_ACTIVATION_GELU, 1},
        {200, 136, 1000, 3, e5, e4, bf, 2.0f, 0.0f, 0.5f, 0, 0, 0, NULL, "3", MGPU_ACTIVATION_RELU, 1},
        {513, 300, 700, 2, e4, e4, MGPU_DTYPE_F16, 1.0f, 1.0f, 0.25f, 0.5f, 2.0f, 0,
         "mgpu_gemm_sm90_ws_e4m3_tn_128x128x128_s6_c1", NULL, MGPU_ACTIVATION_GELU, 1},
        /* 128-row tiles in 2-CTA clusters; one and an even number of k-tiles */
        {513, 300, 700, 2, e4, e4, bf, 1.0f, 1.0f, 0.25f, 0.5f, 2.0f, 0,
         "mgpu_gemm_sm90_ws_e4m3_tn_128x128x128_s6_c2", NULL, MGPU_ACTIVATION_GELU, 1},
        {300, 520, 128, 1, e4, e4, f32, 1.0f, 0.0f, 0, 0, 0, 0, "mgpu_gemm_sm90_ws_e4m3_tn_128x128x128_s6_c2", NULL,
         none, 0},
        {300, 520, 4096, 1, e4, e4, f32, 1.0f, 0.0f, 0, 0, 0, 0, "mgpu_gemm_sm90_ws_e4m3_tn_128x128x128_s6_c2", "3",
         none, 0},
        {513, 300, 700, 2, e5, e5, bf, 1.0f, 1.0f, 0.25f, 0.5f, 2.0f, 0, "mgpu_gemm_sm90_ws_e5m2_tn_192x128x128_s4_c1",
         NULL, MGPU_ACTIVATION_RELU, 1},
        /* 2-CTA clusters: 3 tile columns (the cluster's last CTA computes a tile outside D), with and without split-K */
        {513, 300, 700, 2, e4, e5, bf, 1.0f, 1.0f, 0.25f, 0.5f, 2.0f, 0,
         "mgpu_gemm_sm90_ws_e4m3xe5m2_tn_192x128x128_s4_c2", NULL, MGPU_ACTIVATION_GELU, 1},
        {700, 520, 2000, 1, e4, e4, f32, 1.0f, 0.0f, 0.5f, 0.5f, 1.0f, 0, "mgpu_gemm_sm90_ws_e4m3_tn_192x128x128_s4_c2",
         "3", none, 0},
        {127, 129, 65, 2, e4, e5, f32, 1.0f, 0.5f, 0.5f, 0.25f, 2.0f, 0, "mgpu_gemm_portable_sm90_64x64", NULL,
         MGPU_ACTIVATION_GELU, 1},
        {33, 17, 0, 1, e4, e4, bf, 1.0f, 2.0f, 0.5f, 0.5f, 3.0f, 0, NULL, NULL, MGPU_ACTIVATION_RELU, 1}, /* k == 0 */
    };
    for (unsigned i = 0; i < sizeof paths / sizeof paths[0]; i++)
        run_case(&paths[i]);  /* on 10.0 the sm90 names are ignored: the planner's picks, split-K forced */
    if (cc == 100) {
        /* every sm_100a kind::f8f6f4 variant forced (lone CTAs and CTA pairs),
         * with edges in m, n, k, scales, beta, bias and activations, batches */
        const char *const pair_names[4] = {"e4m3", "e4m3xe5m2", "e5m2xe4m3", "e5m2"};
        const mgpu_dtype pair_a[4] = {e4, e4, e5, e5}, pair_b[4] = {e4, e5, e4, e5};
        for (int pi = 0; pi < 4; pi++)
            for (int c2 = 0; c2 < 2; c2++) {
                char name[96];
                snprintf(name, sizeof name, "mgpu_gemm_sm100_ws_%s_tn_256x128x128_s%d_c%d", pair_names[pi],
                         c2 ? 6 : 4, c2 ? 2 : 1);
                struct fp8_case forced[] = {
                    {513, 300, 700, 2, pair_a[pi], pair_b[pi], bf, 1.0f, 1.0f, 0.25f, 0.5f, 2.0f, 0, name, NULL,
                     MGPU_ACTIVATION_GELU, 1},
                    {127, 129, 65, 1, pair_a[pi], pair_b[pi], f32, 1.0f, 0.5f, 0.5f, 0.25f, 2.0f, 0, name, NULL,
                     MGPU_ACTIVATION_RELU, 1},
                    {1000, 700, 3000, 1, pair_a[pi], pair_b[pi], MGPU_DTYPE_F16, 1.0f, 0.0f, 0.3f, 0.7f, 1.5f, 8, name,
                     NULL, none, 0},
                    /* split-K: the last unit of a tile sums the slices and applies the epilogue */
                    {200, 300, 3000, 2, pair_a[pi], pair_b[pi], bf, 1.0f, 0.5f, 0.5f, 2.0f, 1.5f, 0, name, "5",
                     MGPU_ACTIVATION_GELU, 1},
                };
                for (unsigned i = 0; i < sizeof forced / sizeof forced[0]; i++)
                    if (!quick || i == 0)
                        run_case(&forced[i]);
            }
    }
    check_statuses();

    cublasDestroy(cublas);
    mgpu_destroy(handle);
    return check_exit();
}
