/*
 * Fused epilogues of mgpu_gemm_ex (bias per row or per column, ReLU, GELU,
 * operand and output scales) against cuBLAS: cublasGemmStridedBatchedEx
 * computes alpha * scale_a * scale_b * op(A) op(B) + beta * C in fp32 from the
 * same fp16 / bf16 inputs, and the host adds the bias, applies the activation
 * (GELU in double precision, tanh form) and the output scale. Outputs are
 * poisoned (NaN) when beta == 0; every case checks the relative Frobenius
 * error, the max abs error, NaNs, and that nothing outside D changed. The
 * cases walk each path that carries an epilogue: the persistent kernel with
 * TMA stores and with direct stores (odd m or ldc), the 128-row tile, the
 * 2-CTA cluster variant, split-K (the reduction applies the epilogue), the
 * portable kernel (forced, and k == 0), batches with per-batch biases.
 * Thresholds are mgpu_gemm's (test_gemm_gpu.c): 1e-2 relative for 16-bit
 * outputs, 1e-4 for fp32. Runs on compute capability 9.0 and 10.0 (on 10.0
 * every sm_100a 16-bit variant is also forced, with split-K); skips (77)
 * without a GPU; on other devices checks that the call is refused.
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

#define NO_BIAS (-1)

struct epi_case {
    mgpu_operation ta, tb;
    int64_t m, n, k, batch;
    mgpu_dtype ab, c;
    int64_t pad_c;        /* added to ldc */
    float alpha, beta;
    int bias_mode;        /* MGPU_BIAS_PER_ROW / _PER_COLUMN, or NO_BIAS */
    mgpu_dtype bias_type; /* c or F32 */
    int bias_per_batch;   /* 1: a separate bias per batch (bias_batch_stride = its length) */
    mgpu_activation act;
    float scale_a, scale_b, scale_d; /* 0: no pointer (1) */
    const char *force_variant, *force_splits;
};

static cublasHandle_t cublas;
static mgpu_handle *handle;
static int quick; /* MGPU_TEST_QUICK=1: no shape above 1e9 multiply-adds (compute-sanitizer runs) */

static cudaDataType cuda_type(mgpu_dtype t)
{
    return t == MGPU_DTYPE_F16 ? CUDA_R_16F : t == MGPU_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static const char *act_name(mgpu_activation a)
{
    return a == MGPU_ACTIVATION_RELU ? "relu" : a == MGPU_ACTIVATION_GELU ? "gelu" : "none";
}

static float *device_scalar(float v)
{
    float *p = ref_dalloc(sizeof(float));
    ref_upload(p, &v, sizeof v);
    return p;
}

static void run_case(const struct epi_case *g)
{
    if (quick && (double)g->m * (double)g->n * (double)g->k * (double)g->batch > 1e9)
        return;
    const int64_t m = g->m, n = g->n, k = g->k, batch = g->batch;
    const int64_t rows_a = g->ta == MGPU_OP_N ? m : k, cols_a = g->ta == MGPU_OP_N ? k : m;
    const int64_t rows_b = g->tb == MGPU_OP_N ? k : n, cols_b = g->tb == MGPU_OP_N ? n : k;
    const int64_t lda = rows_a > 1 ? rows_a : 1, ldb = rows_b > 1 ? rows_b : 1, ldc = (m > 1 ? m : 1) + g->pad_c;
    const int64_t stride_a = lda * cols_a, stride_b = ldb * cols_b, stride_c = ldc * n;
    const size_t c_elems = (size_t)(stride_c * batch), c_bytes = c_elems * ref_dtype_bytes(g->c);
    const int64_t bias_len = g->bias_mode == MGPU_BIAS_PER_COLUMN ? n : m;
    const int64_t bias_stride = g->bias_per_batch ? bias_len : 0;
    const size_t bias_elems = (size_t)(bias_len * (g->bias_per_batch ? batch : 1));
    static uint64_t seed = 101;

    char label[256];
    snprintf(label, sizeof label,
             "%c%c m=%lld n=%lld k=%lld batch=%lld %s->%s ldc+%lld alpha=%g beta=%g bias=%s%s%s act=%s "
             "scales=%g,%g,%g%s%s%s",
             "NT"[g->ta], "NT"[g->tb], (long long)m, (long long)n, (long long)k, (long long)batch,
             ref_dtype_name(g->ab), ref_dtype_name(g->c), (long long)g->pad_c, g->alpha, g->beta,
             g->bias_mode == NO_BIAS ? "none" : g->bias_mode == MGPU_BIAS_PER_ROW ? "row" : "column",
             g->bias_mode == NO_BIAS ? "" : g->bias_type == MGPU_DTYPE_F32 ? "/f32" : "/out",
             g->bias_per_batch ? "/per-batch" : "", act_name(g->act), g->scale_a, g->scale_b, g->scale_d,
             g->force_variant ? " forced " : "", g->force_variant ? g->force_variant : "",
             g->force_splits ? " split-k forced" : "");

    const size_t es = ref_dtype_bytes(g->ab);
    void *a = ref_dalloc((size_t)(stride_a * batch) * es), *b = ref_dalloc((size_t)(stride_b * batch) * es);
    fill_normal(a, g->ab, (size_t)(stride_a * batch), seed++, 1.0f);
    fill_normal(b, g->ab, (size_t)(stride_b * batch), seed++, 1.0f);
    void *hc = malloc(c_bytes + 4);
    float *fc = malloc(c_elems * sizeof(float) + 4);
    if (g->beta != 0.0f)
        ref_fill_normal(hc, fc, g->c, c_elems, seed++, 1.0f);
    else {
        memset(hc, 0xff, c_bytes); /* NaN in every output dtype */
        memset(fc, 0, c_elems * sizeof(float));
    }
    void *hbias = malloc(bias_elems * 4 + 4);
    float *fbias = malloc(bias_elems * sizeof(float) + 4);
    ref_fill_normal(hbias, fbias, g->bias_type, bias_elems, seed++, 1.0f);
    void *c = ref_dalloc(c_bytes), *bias = ref_dalloc(bias_elems * ref_dtype_bytes(g->bias_type));
    ref_upload(c, hc, c_bytes);
    ref_upload(bias, hbias, bias_elems * ref_dtype_bytes(g->bias_type));
    float *sa = g->scale_a ? device_scalar(g->scale_a) : NULL, *sb = g->scale_b ? device_scalar(g->scale_b) : NULL;
    float *sd = g->scale_d ? device_scalar(g->scale_d) : NULL;

    mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
    d.transa = g->ta;
    d.transb = g->tb;
    d.m = m;
    d.n = n;
    d.k = k;
    d.alpha = g->alpha;
    d.beta = g->beta;
    d.A = a;
    d.a_type = g->ab;
    d.lda = lda;
    d.stride_a = stride_a;
    d.B = b;
    d.b_type = g->ab;
    d.ldb = ldb;
    d.stride_b = stride_b;
    d.C = c;
    d.c_type = g->c;
    d.ldc = ldc;
    d.stride_c = stride_c;
    d.batch_count = batch;
    d.scale_a = sa;
    d.scale_b = sb;
    d.scale_d = sd;
    d.activation = g->act;
    if (g->bias_mode != NO_BIAS) {
        d.bias = bias;
        d.bias_type = g->bias_type;
        d.bias_mode = (mgpu_bias_mode)g->bias_mode;
        d.bias_batch_stride = bias_stride;
    }
    if (g->force_variant)
        force_setenv("MGPU_FORCE_VARIANT", g->force_variant);
    if (g->force_splits)
        force_setenv("MGPU_FORCE_SPLIT_K", g->force_splits);
    mgpu_status s = mgpu_gemm_ex(handle, &d);
    force_unsetenv("MGPU_FORCE_VARIANT");
    force_unsetenv("MGPU_FORCE_SPLIT_K");
    CHECK(s == MGPU_STATUS_SUCCESS, "%s: %s (%s)", label, mgpu_status_string(s), mgpu_last_error_message());
    cudaError_t e = cudaDeviceSynchronize();
    CHECK(e == cudaSuccess, "%s: kernel failed: %s", label, cudaGetErrorString(e));
    if (e != cudaSuccess)
        exit(1);

    /* reference: cuBLAS in fp32 into an fp32 copy of C, then bias, activation, scale on the host */
    float *rc = ref_dalloc(c_elems * sizeof(float));
    const float ref_alpha = g->alpha * (g->scale_a ? g->scale_a : 1.0f) * (g->scale_b ? g->scale_b : 1.0f);
    if (k > 0) {
        ref_upload(rc, fc, c_elems * sizeof(float));
        cublasStatus_t cs = cublasGemmStridedBatchedEx(
            cublas, g->ta == MGPU_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T, g->tb == MGPU_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T,
            (int)m, (int)n, (int)k, &ref_alpha, a, cuda_type(g->ab), (int)lda, stride_a, b, cuda_type(g->ab),
            (int)ldb, stride_b, &g->beta, rc, CUDA_R_32F, (int)ldc, stride_c, (int)batch, CUBLAS_COMPUTE_32F,
            CUBLAS_GEMM_DEFAULT);
        CHECK(cs == CUBLAS_STATUS_SUCCESS, "%s: cuBLAS failed (%d)", label, (int)cs);
        cudaDeviceSynchronize();
    } else {
        for (size_t i = 0; i < c_elems; i++)
            fc[i] *= g->beta;
        ref_upload(rc, fc, c_elems * sizeof(float));
    }
    float *ref = malloc(c_elems * sizeof(float) + 4);
    ref_download(ref, rc, c_elems * sizeof(float));
    for (int64_t bi = 0; bi < batch; bi++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                const size_t idx = (size_t)(bi * stride_c + j * ldc + i);
                float bv = 0.0f;
                if (g->bias_mode != NO_BIAS)
                    bv = fbias[(g->bias_mode == MGPU_BIAS_PER_COLUMN ? j : i) + bi * bias_stride];
                ref[idx] = ref_finish(ref[idx], bv, g->act, g->scale_d ? g->scale_d : 1.0f);
            }

    struct compare_result r = ref_compare(c, g->c, ref, m, n, ldc, stride_c, batch);
    const double eps = ldexp(1.0, g->c == MGPU_DTYPE_F32 ? -24 : g->c == MGPU_DTYPE_BF16 ? -8 : -11);
    const double rel_limit = g->c == MGPU_DTYPE_F32 ? 1e-4 : 1e-2;
    const double max_limit = 4 * eps * (r.max_ref > 1 ? r.max_ref : 1) + 1e-6 * (double)k;
    printf("%-150s rel %.2e max %.2e (ref max %.1f)\n", label, r.rel_err, r.max_err, r.max_ref);
    CHECK(r.nan_count == 0, "%s: %zu non-finite outputs", label, r.nan_count);
    CHECK(r.rel_err <= rel_limit, "%s: relative error %.3e > %.1e", label, r.rel_err, rel_limit);
    CHECK(r.max_err <= max_limit, "%s: max error %.3e > %.3e", label, r.max_err, max_limit);
    size_t bad = ref_changed_outside(c, hc, c_bytes, g->c, m, n, ldc, stride_c, batch);
    CHECK(bad == 0, "%s: %zu elements outside D changed", label, bad);

    free(hc);
    free(fc);
    free(hbias);
    free(fbias);
    free(ref);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaFree(bias);
    cudaFree(rc);
    cudaFree(sa);
    cudaFree(sb);
    cudaFree(sd);
}

/* GELU at the edge of fp32's range: A = c, B = -c with 64 c^2 about
 * -2e38, so every accumulator is about -2e38 and, with an output scale of 4,
 * scale * x overflows while the scaled GELU (exactly -0 there) does not.
 * Every output must be zero, none NaN: the planner's tile, the 256-row and
 * the ping-pong ones, 16-bit and fp32 outputs. */
static void check_gelu_range_edge(mgpu_dtype t, const char *const *variants, int n_variants)
{
    const int64_t m = 264, n = 136, k = 64;
    const float cv = 1.768e18f;
    uint32_t bits;
    memcpy(&bits, &cv, sizeof bits);
    /* bf16: the float's top half; f16 cannot hold c, so this case is bf16 only */
    const uint16_t pos = (uint16_t)(bits >> 16), neg = (uint16_t)(pos | 0x8000u);
    uint16_t *ha = malloc((size_t)(m * k) * 2), *hb = malloc((size_t)(n * k) * 2);
    for (int64_t i = 0; i < m * k; i++)
        ha[i] = pos;
    for (int64_t i = 0; i < n * k; i++)
        hb[i] = neg;
    void *a = ref_dalloc((size_t)(m * k) * 2), *b = ref_dalloc((size_t)(n * k) * 2);
    ref_upload(a, ha, (size_t)(m * k) * 2);
    ref_upload(b, hb, (size_t)(n * k) * 2);
    float *zero = calloc((size_t)(m * n), sizeof(float));
    float *sd = device_scalar(4.0f);
    const mgpu_dtype outs[2] = {t, MGPU_DTYPE_F32};
    for (int oi = 0; oi < 2; oi++) {
        void *c = ref_dalloc((size_t)(m * n) * 4);
        for (int vi = -1; vi < n_variants; vi++) {
            mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
            d.transa = MGPU_OP_T;
            d.transb = MGPU_OP_N;
            d.m = m;
            d.n = n;
            d.k = k;
            d.A = a;
            d.B = b;
            d.a_type = d.b_type = t;
            d.lda = d.ldb = k;
            d.C = c;
            d.c_type = outs[oi];
            d.ldc = m;
            d.scale_d = sd;
            d.activation = MGPU_ACTIVATION_GELU;
            cudaMemset(c, 0xff, (size_t)(m * n) * 4); /* NaN in every output dtype */
            if (vi >= 0)
                force_setenv("MGPU_FORCE_VARIANT", variants[vi]);
            const mgpu_status s = mgpu_gemm_ex(handle, &d);
            force_unsetenv("MGPU_FORCE_VARIANT");
            CHECK(s == MGPU_STATUS_SUCCESS, "GELU range edge (%s): %s (%s)", vi >= 0 ? variants[vi] : "planner",
                  mgpu_status_string(s), mgpu_last_error_message());
            CHECK(cudaDeviceSynchronize() == cudaSuccess, "GELU range edge: kernel failed");
            const struct compare_result r = ref_compare(c, outs[oi], zero, m, n, m, m * n, 1);
            printf("GELU range edge, %s -> %s, %s: %zu non-finite, max |out| %.2e\n", ref_dtype_name(t),
                   ref_dtype_name(outs[oi]), vi >= 0 ? variants[vi] : "planner", r.nan_count, r.max_err);
            CHECK(r.nan_count == 0 && r.max_err == 0.0,
                  "GELU range edge (%s -> %s, %s): %zu non-finite outputs, max |out| %.3e, want all 0",
                  ref_dtype_name(t), ref_dtype_name(outs[oi]), vi >= 0 ? variants[vi] : "planner", r.nan_count,
                  r.max_err);
        }
        cudaFree(c);
    }
    free(ha);
    free(hb);
    free(zero);
    cudaFree(a);
    cudaFree(b);
    cudaFree(sd);
}

/* Calls refused before any kernel runs. */
static void check_statuses(void)
{
    void *buf = ref_dalloc(1 << 16);
    mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
    d.m = d.n = d.k = 32;
    d.A = d.B = d.C = buf;
    d.lda = d.ldb = d.ldc = 32;
    d.bias = buf;
    d.bias_type = MGPU_DTYPE_F16; /* neither C's dtype (bf16) nor fp32 */
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_UNSUPPORTED_DTYPE);
    d.bias_type = MGPU_DTYPE_F32;
    d.bias_mode = (mgpu_bias_mode)7;
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_INVALID_VALUE);
    d.bias_mode = MGPU_BIAS_PER_ROW;
    d.activation = (mgpu_activation)9;
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_INVALID_VALUE);
    d.activation = MGPU_ACTIVATION_RELU;
    d.scale_a = (const float *)((char *)buf + 2);
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_INVALID_VALUE);
    d.scale_a = NULL;
    d.bias_batch_stride = -1;
    CHECK_STATUS(mgpu_gemm_ex(handle, &d), MGPU_STATUS_INVALID_LD);
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
        d.a_type = d.b_type = d.c_type = MGPU_DTYPE_BF16;
        d.activation = MGPU_ACTIVATION_GELU;
        const mgpu_status s = ref_run_small(handle, d);
        CHECK(s == MGPU_STATUS_NOT_SUPPORTED || s == MGPU_STATUS_ARCH_MISMATCH,
              "fused epilogues off compute capability 9.0 / 10.0: %s (%s), want NOT_SUPPORTED or ARCH_MISMATCH",
              mgpu_status_string(s), mgpu_last_error_message());
        CHECK(mgpu_last_error_message()[0] != '\0', "fused epilogues refused without a message");
        printf("fused epilogues run on compute capability 9.0 and 10.0 only; this device refuses them: %s\n",
               mgpu_last_error_message());
        cublasDestroy(cublas);
        mgpu_destroy(handle);
        return check_exit();
    }

    const mgpu_operation N = MGPU_OP_N, T = MGPU_OP_T;
    const mgpu_dtype ins[2] = {MGPU_DTYPE_BF16, MGPU_DTYPE_F16};
    const int ROW = MGPU_BIAS_PER_ROW, COL = MGPU_BIAS_PER_COLUMN;
    const mgpu_activation RELU = MGPU_ACTIVATION_RELU, GELU = MGPU_ACTIVATION_GELU, NONE = MGPU_ACTIVATION_NONE;
    const mgpu_dtype F32 = MGPU_DTYPE_F32;
    for (int di = 0; di < (quick ? 1 : 2); di++) { /* under compute-sanitizer: bf16 inputs only */
        const mgpu_dtype t = ins[di];
        char v256[96], v256c2[96], v128[96], vpp[96], vppc2[96], v64n[96];
        snprintf(v256, sizeof v256, "mgpu_gemm_sm90_ws_%s_tn_256x128x64_s4_c1", ref_dtype_name(t));
        snprintf(v256c2, sizeof v256c2, "mgpu_gemm_sm90_ws_%s_nt_256x128x64_s4_c2", ref_dtype_name(t));
        snprintf(v128, sizeof v128, "mgpu_gemm_sm90_ws_%s_nn_128x128x64_s6_c1", ref_dtype_name(t));
        snprintf(vpp, sizeof vpp, "mgpu_gemm_sm90_pp_%s_tn_128x128x64_s6_c1", ref_dtype_name(t));
        snprintf(vppc2, sizeof vppc2, "mgpu_gemm_sm90_pp_%s_nt_128x128x64_s6_c2", ref_dtype_name(t));
        snprintf(v64n, sizeof v64n, "mgpu_gemm_sm90_ws_%s_tn_64x64x64_s12_c1", ref_dtype_name(t));
        struct epi_case cases[] = {
            /* persistent kernel, TMA stores (m * element size a multiple of 16 bytes) */
            {T, N, 264, 136, 200, 1, t, t, 0, 1.5f, 0.5f, ROW, F32, 0, RELU, 0, 0, 0, NULL, NULL},
            {T, N, 264, 136, 200, 1, t, t, 0, 1.0f, 0.0f, COL, t, 0, GELU, 0, 0, 0, NULL, NULL},
            {N, T, 512, 384, 256, 1, t, F32, 0, 1.0f, 0.0f, ROW, F32, 0, GELU, 0, 0, 0, NULL, NULL},
            {N, N, 520, 257, 300, 1, t, t, 0, 1.0f, -1.0f, COL, F32, 0, NONE, 0, 0, 0, NULL, NULL},
            /* direct stores: odd m, odd ldc */
            {T, N, 257, 129, 130, 1, t, F32, 0, 1.0f, -1.0f, COL, F32, 0, GELU, 0, 0, 0, NULL, NULL},
            {T, T, 129, 65, 64, 1, t, t, 1, 1.0f, 1.0f, ROW, t, 0, RELU, 0, 0, 0, NULL, NULL},
            /* scales alone and with an epilogue */
            {T, N, 512, 512, 512, 1, t, t, 0, 1.0f, 1.0f, NO_BIAS, F32, 0, NONE, 0.5f, 3.0f, 0.25f, NULL, NULL},
            {N, T, 300, 200, 520, 1, t, F32, 0, 0.75f, 0.5f, ROW, F32, 0, GELU, 0.37f, 1.9f, 0.61f, NULL, NULL},
            /* batches: one bias for all, a bias per batch */
            {T, N, 200, 96, 64, 3, t, t, 0, 1.0f, 1.0f, ROW, F32, 1, GELU, 0, 0, 0, NULL, NULL},
            {N, N, 96, 200, 128, 4, t, F32, 0, 1.0f, 0.0f, COL, F32, 1, RELU, 0, 0, 0, NULL, NULL},
            {T, N, 264, 136, 96, 2, t, t, 0, 1.0f, 0.0f, COL, t, 0, RELU, 0, 0, 0, NULL, NULL},
            /* forced variants: 256-row tile, 2-CTA cluster, 128-row tile */
            {T, N, 300, 1147, 200, 1, t, t, 0, 1.0f, 0.0f, ROW, F32, 0, GELU, 0, 0, 0, v256, NULL},
            {N, T, 300, 1147, 200, 1, t, t, 0, 1.0f, 0.5f, COL, t, 0, RELU, 0, 0, 0, v256c2, NULL},
            {N, N, 257, 129, 130, 2, t, F32, 0, 0.5f, -2.0f, ROW, F32, 1, GELU, 2.0f, 0, 0, v128, NULL},
            /* ping-pong: whole tiles per warpgroup, lone CTAs and 2-CTA clusters, split-K */
            {T, N, 300, 1147, 200, 1, t, t, 0, 1.0f, 0.5f, ROW, F32, 0, GELU, 0, 0, 0, vpp, NULL},
            {N, T, 300, 1147, 200, 2, t, F32, 0, 0.5f, -1.0f, COL, F32, 1, RELU, 0.5f, 2.0f, 1.5f, vppc2, NULL},
            {T, N, 257, 136, 1000, 2, t, F32, 4, 1.0f, 0.5f, ROW, F32, 1, GELU, 0.5f, 2.0f, 1.5f, vpp, "3"},
            /* the 64 x 64 tile (one consumer warpgroup, TN): row and column bias, scales, split-K */
            {T, N, 100, 1147, 200, 1, t, t, 0, 1.0f, 0.5f, ROW, F32, 0, GELU, 0.5f, 2.0f, 1.5f, v64n, NULL},
            {T, N, 128, 300, 520, 2, t, t, 0, 0.5f, -1.0f, COL, t, 1, RELU, 0, 0, 0, v64n, NULL},
            {T, N, 64, 136, 1000, 2, t, F32, 4, 1.0f, 0.5f, ROW, F32, 1, GELU, 0.5f, 2.0f, 1.5f, v64n, "3"},
            /* split-K: the reduction applies scales, beta, bias and activation */
            {T, N, 200, 136, 1000, 2, t, F32, 4, 1.0f, 0.5f, ROW, F32, 1, GELU, 0.5f, 2.0f, 1.5f, NULL, "3"},
            {N, T, 65, 300, 777, 3, t, t, 0, 2.0f, 0.0f, COL, t, 0, RELU, 0, 0, 0, NULL, "5"},
            {T, N, 64, 4096, 4096, 1, t, t, 0, 1.0f, 0.0f, COL, F32, 0, GELU, 0, 0, 0, NULL, NULL}, /* heuristic */
            /* the small-m (decode) kernel, m <= 16 TN: split (heuristic) and unsplit (forced) */
            {T, N, 16, 1000, 1024, 1, t, t, 0, 1.0f, 0.5f, ROW, F32, 0, GELU, 0, 0, 0, NULL, NULL},
            {T, N, 9, 520, 2048, 2, t, F32, 0, 0.75f, 0.5f, COL, F32, 1, RELU, 0.5f, 2.0f, 1.5f, NULL, NULL},
            {T, N, 1, 4096, 512, 1, t, t, 0, 1.0f, 0.0f, COL, t, 0, GELU, 0.5f, 0, 2.0f, NULL, "1"},
            /* the portable kernel: forced, and k == 0 */
            {T, N, 127, 129, 65, 1, t, t, 0, 1.0f, 0.25f, ROW, F32, 0, RELU, 0.5f, 0, 2.0f,
             "mgpu_gemm_portable_sm90_64x64", NULL},
            {N, T, 100, 90, 80, 2, t, F32, 3, 1.0f, 1.0f, COL, F32, 1, GELU, 0, 0, 0, "mgpu_gemm_portable_sm90_64x64",
             NULL},
            {N, N, 33, 17, 0, 1, t, t, 0, 1.0f, 2.0f, COL, t, 0, GELU, 0, 0, 0.5f, NULL, NULL},
            {N, N, 33, 17, 0, 1, t, F32, 0, 1.0f, 0.0f, ROW, F32, 0, RELU, 0, 0, 0, NULL, NULL},
            /* large */
            {T, N, 4096, 4096, 4096, 1, t, t, 0, 1.0f, 0.0f, ROW, t, 0, GELU, 0, 0, 0, NULL, NULL},
        };
        for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case(&cases[i]); /* on 10.0 the sm90 names are ignored: the planner's picks, split-K forced */
        if (t == MGPU_DTYPE_BF16) {
            const char *const edge_variants[2] = {v256, vpp};
            check_gelu_range_edge(t, edge_variants, cc == 90 ? 2 : 0);
        }
        if (cc == 100) {
            /* every sm_100a layout, lone CTAs and CTA pairs, forced: TMA and
             * direct stores, both bias modes and dtypes, batches, scales */
            const char *const layouts[4] = {"tn", "nn", "tt", "nt"};
            const mgpu_operation la[4] = {T, N, T, N}, lb[4] = {N, N, T, T};
            for (int li = 0; li < 4; li++)
                for (int c2 = 0; c2 < 2; c2++) {
                    char name[96];
                    snprintf(name, sizeof name, "mgpu_gemm_sm100_ws_%s_%s_256x128x64_s%d_c%d", ref_dtype_name(t),
                             layouts[li], c2 ? 6 : 4, c2 ? 2 : 1);
                    struct epi_case forced[] = {
                        {la[li], lb[li], 300, 1147, 200, 1, t, t, 0, 1.0f, 0.5f, ROW, F32, 0, GELU, 0, 0, 0, name, NULL},
                        {la[li], lb[li], 257, 129, 130, 2, t, F32, 0, 0.5f, -2.0f, COL, F32, 1, RELU, 2.0f, 0.5f, 0.25f,
                         name, NULL},
                        {la[li], lb[li], 264, 136, 200, 3, t, t, 1, 1.0f, 1.0f, COL, t, 1, GELU, 0, 0, 0, name, NULL},
                        /* split-K: partials parked per epilogue warp, summed by the tile's last unit */
                        {la[li], lb[li], 200, 300, 1000, 2, t, F32, 4, 1.0f, 0.5f, ROW, F32, 1, GELU, 0.5f, 2.0f, 1.5f,
                         name, "3"},
                    };
                    for (unsigned i = 0; i < sizeof forced / sizeof forced[0]; i++)
                        if (!quick || i == 0)
                            run_case(&forced[i]);
                }
        }
    }
    check_statuses();

    cublasDestroy(cublas);
    mgpu_destroy(handle);
    return check_exit();
}
