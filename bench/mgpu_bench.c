/*
 * mgpu-bench: times mgpu_gemm against cuBLAS (cublasGemmEx, fp32 compute) in
 * the same process on the same GPU, on random normal data, and checks every
 * mgpu result against cuBLAS's before timing it.
 *
 *   mgpu-bench [--quick | --small | --models | --shape M,N,K[,BATCH] ...] [--dtype bf16|f16]
 *              [--layout TN|NN|NT|TT] [--reps N] [--overhead] [--json FILE]
 *   mgpu-bench --fp8 [--epilogue] [--shape M,N,K ...] [--reps N] [--json FILE]
 *
 * --small runs the small and medium shapes (256^3 .. 2048^3, 1024 x 4096 x
 * 1024, m = 1 / 16 / 64 / 128 with n = k = 4096 and 8192, 32 x 1024^3);
 * --models the projection layers of Llama-3 8B and 70B and Mixtral 8x7B
 * (QKV, O, gate / up, down; m = tokens = 1, 16, 128, 1024, 4096, 16384; A
 * holds the activations, B the weights, both K-major); --shape may be given
 * several times. --overhead adds, per shape, the host time of one call
 * (200 calls queued back to back, wall clock / 200, both libraries) and
 * the device time per call in that back-to-back loop (CUDA events / 200).
 *
 * --fp8 times mgpu_gemm_ex with e4m3 inputs (TN, bf16 output, per-tensor
 * scale pointers) against cuBLASLt's fp8 cublasLtMatmul with the same
 * arguments; --epilogue times bf16 TN with a per-row bias and GELU
 * (mgpu_gemm_ex) against cuBLASLt's CUBLASLT_EPILOGUE_GELU_BIAS. With either
 * flag only those sections run, on 8192^3 and 8192 x 14336 x 4096, or on the
 * --shape arguments when there are any (their batch is ignored).
 *
 * Each shape is timed with CUDA events around single launches, after warm-up,
 * alternating mgpu and cuBLAS, and the median of --reps runs is reported.
 * Operands are rotated among enough copies that the set exceeds 3x the L2
 * cache, so small problems are not measured out of cache. Without a GPU it
 * says so and exits with status 1.
 */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_util.h"
#include "mgpukernels.h"
#include "test_gemm_ref.h"

struct shape {
    int64_t m, n, k, batch; /* batch 0 means 1 (a plain mgpu_gemm call) */
};

static const struct shape full_shapes[] = {
    {4096, 4096, 4096, 0},  {4096, 8192, 4096, 0},  {8192, 8192, 8192, 0},  {8192, 4096, 4096, 0},
    {8192, 6144, 4096, 0},  {8192, 14336, 4096, 0}, {8192, 4096, 14336, 0}, {64, 4096, 4096, 0},
    {128, 4096, 4096, 0},   {64, 8192, 8192, 0},    {128, 8192, 8192, 0},   {4000, 4000, 4000, 0},
    {8191, 8191, 8191, 0},  {1024, 1024, 1024, 32},
};
/* Small and medium problems (docs/performance.md, "Small and medium shapes"). */
static const struct shape small_shapes[] = {
    {256, 256, 256, 0},   {512, 512, 512, 0},   {1024, 1024, 1024, 0}, {2048, 2048, 2048, 0},
    {1024, 4096, 1024, 0}, {1, 4096, 4096, 0},  {16, 4096, 4096, 0},   {1, 8192, 8192, 0},
    {16, 8192, 8192, 0},  {64, 4096, 4096, 0},  {128, 4096, 4096, 0},  {64, 8192, 8192, 0},
    {128, 8192, 8192, 0}, {1024, 1024, 1024, 32},
};
/* Projection layers (n = output features, k = input features) of real
 * models; each runs at every entry of model_tokens as m. Mixtral 8x7B's
 * attention and expert layers have Llama-3 8B's sizes (one expert's
 * gate / up and down). */
struct model_layer {
    const char *name;
    int64_t n, k;
};
static const struct model_layer model_layers[] = {
    {"llama3-8b/mixtral qkv", 6144, 4096},   {"llama3-8b/mixtral o", 4096, 4096},
    {"llama3-8b/mixtral gate,up", 14336, 4096}, {"llama3-8b/mixtral down", 4096, 14336},
    {"llama3-70b qkv", 10240, 8192},         {"llama3-70b o", 8192, 8192},
    {"llama3-70b gate,up", 28672, 8192},     {"llama3-70b down", 8192, 28672},
};
static const int64_t model_tokens[] = {1, 16, 128, 1024, 4096, 16384};
#define N_MODEL_SHAPES ((int)(sizeof model_layers / sizeof model_layers[0] * sizeof model_tokens / sizeof model_tokens[0]))
#define MAX_SHAPE_ARGS 64
static const struct shape quick_shapes[] = {
    {4096, 4096, 4096, 0}, {128, 4096, 4096, 0}, {4000, 4000, 4000, 0}, {8191, 8191, 8191, 0},
};

#define MAX_ROTATE 16

/* The "large shapes" of the summary line: m > 128 with leading dimensions
 * the TMA reads directly (8191^3, which runs behind an operand pack, and
 * the small-m rows are summarised apart: docs/performance.md, "GEMM, fp16 / bf16"). */
static int is_large(struct shape s)
{
    return s.m > 128 && s.m % 8 == 0 && s.k % 8 == 0;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        fprintf(stderr, "mgpu-bench: cudaMalloc(%zu) failed\n", bytes);
        exit(1);
    }
    return p;
}

/* One call of each library: mgpu_gemm / cublasGemmEx, or their strided-batched forms. */
static mgpu_status run_mgpu(mgpu_handle *h, struct shape s, mgpu_dtype t, mgpu_operation ta, mgpu_operation tb,
                            const void *A, int64_t lda, const void *B, int64_t ldb, void *C, int64_t ldc)
{
    const float one = 1.0f, zero = 0.0f;
    if (s.batch > 1)
        return mgpu_gemm_strided_batched(h, ta, tb, s.m, s.n, s.k, &one, A, t, lda, s.m * s.k, B, t, ldb,
                                         s.k * s.n, &zero, C, t, ldc, s.m * s.n, s.batch);
    return mgpu_gemm(h, ta, tb, s.m, s.n, s.k, &one, A, t, lda, B, t, ldb, &zero, C, t, ldc);
}

/* What a user following docs/api.md does before timing (or capturing) a
 * call: ask for the workspace its preferred plan wants and reserve it when
 * the handle has less. The handle starts with 32 MiB. */
static size_t bench_workspace = (size_t)32 << 20;

static void reserve_for(mgpu_handle *h, mgpu_status st, size_t need)
{
    if (st != MGPU_STATUS_SUCCESS) {
        fprintf(stderr, "mgpu-bench: workspace query: %s: %s\n", mgpu_status_string(st), mgpu_last_error_message());
        return;
    }
    if (need <= bench_workspace)
        return;
    st = mgpu_reserve_workspace(h, need);
    if (st != MGPU_STATUS_SUCCESS) {
        fprintf(stderr, "mgpu-bench: mgpu_reserve_workspace(%zu): %s: %s\n", need, mgpu_status_string(st),
                mgpu_last_error_message());
        return;
    }
    bench_workspace = need;
    printf("workspace reserved: %.1f MiB\n", (double)need / (1 << 20));
}

static void reserve_mgpu(mgpu_handle *h, struct shape s, mgpu_dtype t, mgpu_operation ta, mgpu_operation tb,
                         const void *A, int64_t lda, const void *B, int64_t ldb, const void *C, int64_t ldc)
{
    size_t need = 0;
    mgpu_status st;
    if (s.batch > 1) {
        mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
        d.transa = ta;
        d.transb = tb;
        d.m = s.m;
        d.n = s.n;
        d.k = s.k;
        d.A = A;
        d.a_type = t;
        d.lda = lda;
        d.stride_a = s.m * s.k;
        d.B = B;
        d.b_type = t;
        d.ldb = ldb;
        d.stride_b = s.k * s.n;
        d.C = (void *)C;
        d.c_type = t;
        d.ldc = ldc;
        d.stride_c = s.m * s.n;
        d.batch_count = s.batch;
        st = mgpu_gemm_ex_workspace_size(h, &d, &need);
    } else {
        st = mgpu_gemm_workspace_size(h, ta, tb, s.m, s.n, s.k, A, t, lda, B, t, ldb, C, t, ldc, &need);
    }
    reserve_for(h, st, need);
}

static void run_cublas(cublasHandle_t cb, struct shape s, cudaDataType ct, cublasOperation_t ta,
                       cublasOperation_t tb, const void *A, int64_t lda, const void *B, int64_t ldb, void *C,
                       int64_t ldc)
{
    const float one = 1.0f, zero = 0.0f;
    if (s.batch > 1)
        cublasGemmStridedBatchedEx(cb, ta, tb, (int)s.m, (int)s.n, (int)s.k, &one, A, ct, (int)lda, s.m * s.k, B,
                                   ct, (int)ldb, s.k * s.n, &zero, C, ct, (int)ldc, s.m * s.n, (int)s.batch,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
        cublasGemmEx(cb, ta, tb, (int)s.m, (int)s.n, (int)s.k, &one, A, ct, (int)lda, B, ct, (int)ldb, &zero, C,
                     ct, (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

struct timing {
    double mgpu_ms, cublas_ms, rel_err;
    int ok;
    /* --overhead: per library (0 mgpu, 1 cuBLAS), microseconds per call of
     * the back-to-back loop: host wall clock, device (events) */
    double host_us[2], loop_us[2];
};

static int measure_overhead;

/* Random normal 16-bit operands for the timed problems: a pool of
 * POOL_ELEMS values per dtype, generated once on the host, copied out from
 * an offset that depends on the seed (wrapping around). Matrices of the
 * model shapes (up to 235 M elements) would otherwise take seconds each to
 * generate; the values are the same distribution, never zeros. */
#define POOL_ELEMS ((size_t)1 << 24)
static void fill_pooled(void *dev, mgpu_dtype t, size_t count, uint64_t seed)
{
    static void *pool[2];
    const int which = t == MGPU_DTYPE_BF16;
    if (!pool[which]) {
        pool[which] = malloc(POOL_ELEMS * 2 + 4);
        ref_fill_normal(pool[which], NULL, t, POOL_ELEMS, 12345 + (uint64_t)which, 1.0f);
    }
    size_t at = (size_t)(seed * 7919u) % POOL_ELEMS, done = 0;
    while (done < count) {
        const size_t piece = count - done < POOL_ELEMS - at ? count - done : POOL_ELEMS - at;
        cudaMemcpy((char *)dev + done * 2, (const char *)pool[which] + at * 2, piece * 2, cudaMemcpyHostToDevice);
        done += piece;
        at = 0;
    }
}

/* Copies of a problem's operands (`set` bytes each) to rotate among so that
 * together they are at least 3x the L2: no run finds its operands in cache. */
static int rotate_copies(size_t set, size_t l2_bytes)
{
    const int copies = (int)((3 * l2_bytes + set - 1) / set);
    return copies < 1 ? 1 : copies > MAX_ROTATE ? MAX_ROTATE : copies;
}

/* Times mgpu's call, run(ctx, copy, 0), against the peer's, run(ctx, copy, 1),
 * alternating, single launches between CUDA events, on operand copy
 * round % copies: WARMUP rounds, then the median of `reps` of each into
 * res->mgpu_ms and res->cublas_ms. */
#define WARMUP 5
static void time_alternating(void (*run)(void *ctx, int copy, int peer), void *ctx, int copies, int reps,
                             struct timing *res)
{
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float *t[2] = {malloc(sizeof(float) * (size_t)reps), malloc(sizeof(float) * (size_t)reps)};
    for (int r = -WARMUP; r < reps; r++)
        for (int peer = 0; peer < 2; peer++) {
            cudaEventRecord(e0, 0);
            run(ctx, (r + WARMUP) % copies, peer);
            cudaEventRecord(e1, 0);
            cudaEventSynchronize(e1);
            if (r >= 0)
                cudaEventElapsedTime(&t[peer][r], e0, e1);
        }
    for (int peer = 0; peer < 2; peer++)
        qsort(t[peer], (size_t)reps, sizeof(float), cmp_float);
    res->mgpu_ms = t[0][reps / 2];
    res->cublas_ms = t[1][reps / 2];
    free(t[0]);
    free(t[1]);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
}

/* --overhead: OVERHEAD_CALLS calls of each library queued back to back:
 * host wall clock per call (what a call costs the CPU) and device time per
 * call (events around the loop: the GPU's own time when the host keeps
 * ahead). */
#define OVERHEAD_CALLS 200
static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void time_overhead(void (*run)(void *ctx, int copy, int peer), void *ctx, int copies, struct timing *res)
{
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int peer = 0; peer < 2; peer++) {
        for (int i = 0; i < 10; i++)
            run(ctx, i % copies, peer);
        cudaDeviceSynchronize();
        cudaEventRecord(e0, 0);
        const double t0 = now_us();
        for (int i = 0; i < OVERHEAD_CALLS; i++)
            run(ctx, i % copies, peer);
        const double t1 = now_us();
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        res->host_us[peer] = (t1 - t0) / OVERHEAD_CALLS;
        res->loop_us[peer] = 1e3 * (double)ms / OVERHEAD_CALLS;
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
}

/* One GEMM of run_shape on operand copy i: mgpu's (peer 0) or cuBLAS's (peer 1). */
struct gemm_pair {
    mgpu_handle *h;
    cublasHandle_t cb;
    struct shape s;
    mgpu_dtype t;
    mgpu_operation ta, tb;
    cudaDataType ct;
    cublasOperation_t cta, ctb;
    void **A, **B, **C;
    int64_t lda, ldb, ldc;
};

static void run_gemm_pair(void *ctx, int i, int peer)
{
    const struct gemm_pair *g = ctx;
    if (peer)
        run_cublas(g->cb, g->s, g->ct, g->cta, g->ctb, g->A[i], g->lda, g->B[i], g->ldb, g->C[i], g->ldc);
    else
        run_mgpu(g->h, g->s, g->t, g->ta, g->tb, g->A[i], g->lda, g->B[i], g->ldb, g->C[i], g->ldc);
}

static struct timing run_shape(mgpu_handle *h, cublasHandle_t cb, struct shape s, mgpu_dtype t,
                               mgpu_operation ta, mgpu_operation tb, int reps, size_t l2_bytes)
{
    struct timing res = {.ok = 1};
    const int64_t lda = ta == MGPU_OP_N ? s.m : s.k, ldb = tb == MGPU_OP_N ? s.k : s.n, ldc = s.m;
    const int64_t batch = s.batch > 1 ? s.batch : 1;
    const size_t a_bytes = (size_t)(s.m * s.k * batch) * 2, b_bytes = (size_t)(s.k * s.n * batch) * 2;
    const size_t c_bytes = (size_t)(s.m * s.n * batch) * 2;
    const int copies = rotate_copies(a_bytes + b_bytes + c_bytes, l2_bytes);
    void *A[MAX_ROTATE], *B[MAX_ROTATE], *C[MAX_ROTATE];
    for (int i = 0; i < copies; i++) {
        A[i] = dalloc(a_bytes);
        B[i] = dalloc(b_bytes);
        C[i] = dalloc(c_bytes);
        fill_pooled(A[i], t, a_bytes / 2, 100 + 3 * (uint64_t)i);
        fill_pooled(B[i], t, b_bytes / 2, 101 + 3 * (uint64_t)i);
    }
    void *C_ref = dalloc(c_bytes);
    const cudaDataType ct = t == MGPU_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const cublasOperation_t cta = ta == MGPU_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T;
    const cublasOperation_t ctb = tb == MGPU_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T;

    reserve_mgpu(h, s, t, ta, tb, A[0], lda, B[0], ldb, C[0], ldc);
    /* check first */
    poison(C[0], c_bytes);
    mgpu_status st = run_mgpu(h, s, t, ta, tb, A[0], lda, B[0], ldb, C[0], ldc);
    if (st != MGPU_STATUS_SUCCESS) {
        fprintf(stderr, "mgpu-bench: mgpu_gemm: %s: %s\n", mgpu_status_string(st), mgpu_last_error_message());
        res.ok = 0;
    }
    run_cublas(cb, s, ct, cta, ctb, A[0], lda, B[0], ldb, C_ref, ldc);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "mgpu-bench: a kernel failed\n");
        exit(1);
    }
    struct compare_result cr = compare_matrices(C[0], C_ref, t, s.m, s.n, ldc, s.m * s.n, batch);
    res.rel_err = cr.rel_err;
    if (cr.nan_count || cr.rel_err > 1e-2)
        res.ok = 0;

    struct gemm_pair pair = {h, cb, s, t, ta, tb, ct, cta, ctb, A, B, C, lda, ldb, ldc};
    time_alternating(run_gemm_pair, &pair, copies, reps, &res);
    if (measure_overhead)
        time_overhead(run_gemm_pair, &pair, copies, &res);
    for (int i = 0; i < copies; i++) {
        cudaFree(A[i]);
        cudaFree(B[i]);
        cudaFree(C[i]);
    }
    cudaFree(C_ref);
    return res;
}

/* ------------------------------------------------------------ cuBLASLt comparisons (--fp8, --epilogue) */

static const struct shape lt_shapes[] = {{8192, 8192, 8192, 0}, {8192, 14336, 4096, 0}};
#define LT_WORKSPACE_BYTES ((size_t)64 << 20) /* what cuBLASLt may use; its heuristic picks within it */

enum lt_kind { LT_FP8, LT_GELU_BIAS };

/* One operand set of a comparison: A (k x m, TN), B (k x n), D (m x n, bf16). */
struct lt_buffers {
    void *a, *b, *d;
};

struct lt_problem {
    enum lt_kind kind;
    struct shape s;
    float *scale_a, *scale_b; /* fp8: device scalars */
    void *bias;               /* GELU_BIAS: bf16, length m */
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulHeuristicResult_t algo;
    void *workspace;
};

static int lt_setup(struct lt_problem *p)
{
    const int fp8 = p->kind == LT_FP8;
    const cudaDataType in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    int ok = cublasLtCreate(&p->lt) == CUBLAS_STATUS_SUCCESS &&
             cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS &&
             cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) ==
                 CUBLAS_STATUS_SUCCESS &&
             cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n) ==
                 CUBLAS_STATUS_SUCCESS;
    if (ok && fp8)
        ok = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &p->scale_a,
                                            sizeof p->scale_a) == CUBLAS_STATUS_SUCCESS &&
             cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &p->scale_b,
                                            sizeof p->scale_b) == CUBLAS_STATUS_SUCCESS;
    if (ok && !fp8) {
        const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
        const cudaDataType bias_type = CUDA_R_16BF;
        ok = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) ==
                 CUBLAS_STATUS_SUCCESS &&
             cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->bias, sizeof p->bias) ==
                 CUBLAS_STATUS_SUCCESS &&
             cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                            sizeof bias_type) == CUBLAS_STATUS_SUCCESS;
    }
    ok = ok &&
         cublasLtMatrixLayoutCreate(&p->la, in, (uint64_t)p->s.k, (uint64_t)p->s.m, p->s.k) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatrixLayoutCreate(&p->lb, in, (uint64_t)p->s.k, (uint64_t)p->s.n, p->s.k) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatrixLayoutCreate(&p->ld, CUDA_R_16BF, (uint64_t)p->s.m, (uint64_t)p->s.n, p->s.m) ==
             CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulPreference_t pref;
    const size_t ws = LT_WORKSPACE_BYTES;
    int found = 0;
    ok = ok && cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) ==
             CUBLAS_STATUS_SUCCESS &&
         cublasLtMatmulAlgoGetHeuristic(p->lt, p->op, p->la, p->lb, p->ld, p->ld, pref, 1, &p->algo, &found) ==
             CUBLAS_STATUS_SUCCESS &&
         found > 0;
    if (ok)
        cublasLtMatmulPreferenceDestroy(pref);
    p->workspace = ok ? dalloc(LT_WORKSPACE_BYTES) : NULL;
    if (!ok)
        fprintf(stderr, "mgpu-bench: cuBLASLt has no algorithm for this %s problem\n", fp8 ? "fp8" : "GELU_BIAS");
    return ok;
}

static void lt_teardown(struct lt_problem *p)
{
    cudaFree(p->workspace);
    cublasLtMatrixLayoutDestroy(p->la);
    cublasLtMatrixLayoutDestroy(p->lb);
    cublasLtMatrixLayoutDestroy(p->ld);
    cublasLtMatmulDescDestroy(p->op);
    cublasLtDestroy(p->lt);
}

static void lt_run(const struct lt_problem *p, const struct lt_buffers *x)
{
    const float one = 1.0f, zero = 0.0f;
    cublasLtMatmul(p->lt, p->op, &one, x->a, p->la, x->b, p->lb, &zero, x->d, p->ld, x->d, p->ld, &p->algo.algo,
                   p->workspace, LT_WORKSPACE_BYTES, 0);
}

static mgpu_status mgpu_run_lt_query(mgpu_handle *h, const struct lt_problem *p, const struct lt_buffers *x,
                                     size_t *need)
{
    mgpu_gemm_desc d = MGPU_GEMM_DESC_INIT;
    const mgpu_dtype in = p->kind == LT_FP8 ? MGPU_DTYPE_E4M3 : MGPU_DTYPE_BF16;
    d.transa = MGPU_OP_T;
    d.transb = MGPU_OP_N;
    d.m = p->s.m;
    d.n = p->s.n;
    d.k = p->s.k;
    d.A = x->a;
    d.a_type = in;
    d.lda = p->s.k;
    d.B = x->b;
    d.b_type = in;
    d.ldb = p->s.k;
    d.C = x->d;
    d.c_type = MGPU_DTYPE_BF16;
    d.ldc = p->s.m;
    if (p->kind == LT_FP8) {
        d.scale_a = p->scale_a;
        d.scale_b = p->scale_b;
    } else {
        d.bias = p->bias;
        d.bias_type = MGPU_DTYPE_BF16;
        d.bias_mode = MGPU_BIAS_PER_ROW;
        d.activation = MGPU_ACTIVATION_GELU;
    }
    return need ? mgpu_gemm_ex_workspace_size(h, &d, need) : mgpu_gemm_ex(h, &d);
}

/* mgpu_gemm_ex on one problem (need NULL), or its workspace query. */
static mgpu_status mgpu_run_lt(mgpu_handle *h, const struct lt_problem *p, const struct lt_buffers *x)
{
    return mgpu_run_lt_query(h, p, x, NULL);
}

/* Random normal values of dtype t written to the device. */
static void fill_any(void *dev, mgpu_dtype t, size_t count, uint64_t seed)
{
    void *host = malloc(count * ref_dtype_bytes(t) + 4);
    ref_fill_normal(host, NULL, t, count, seed, 1.0f);
    ref_upload(dev, host, count * ref_dtype_bytes(t));
    free(host);
}

/* One call of run_lt_shape on operand copy i: mgpu_gemm_ex (peer 0) or cuBLASLt (peer 1). */
struct lt_pair {
    mgpu_handle *h;
    const struct lt_problem *p;
    const struct lt_buffers *x;
};

static void run_lt_pair(void *ctx, int i, int peer)
{
    const struct lt_pair *l = ctx;
    if (peer)
        lt_run(l->p, &l->x[i]);
    else
        mgpu_run_lt(l->h, l->p, &l->x[i]);
}

static struct timing run_lt_shape(mgpu_handle *h, enum lt_kind kind, struct shape s, int reps, size_t l2_bytes)
{
    struct timing res = {.ok = 1};
    const mgpu_dtype in = kind == LT_FP8 ? MGPU_DTYPE_E4M3 : MGPU_DTYPE_BF16;
    const size_t es = ref_dtype_bytes(in);
    const size_t a_bytes = (size_t)(s.m * s.k) * es, b_bytes = (size_t)(s.k * s.n) * es;
    const size_t d_bytes = (size_t)(s.m * s.n) * 2;
    const int copies = rotate_copies(a_bytes + b_bytes + d_bytes, l2_bytes);
    struct lt_buffers x[MAX_ROTATE];
    for (int i = 0; i < copies; i++) {
        x[i].a = dalloc(a_bytes);
        x[i].b = dalloc(b_bytes);
        x[i].d = dalloc(d_bytes);
        fill_any(x[i].a, in, a_bytes / es, 200 + 3 * (uint64_t)i);
        fill_any(x[i].b, in, b_bytes / es, 201 + 3 * (uint64_t)i);
    }
    struct lt_problem p = {.kind = kind, .s = s};
    const float half = 0.5f, two = 2.0f; /* scales != 1 that leave the product's range alone */
    p.scale_a = dalloc(sizeof(float));
    p.scale_b = dalloc(sizeof(float));
    ref_upload(p.scale_a, &half, sizeof half);
    ref_upload(p.scale_b, &two, sizeof two);
    p.bias = dalloc((size_t)s.m * 2);
    fill_any(p.bias, MGPU_DTYPE_BF16, (size_t)s.m, 7);
    if (!lt_setup(&p)) {
        res.ok = 0;
        return res;
    }

    /* check first: the same call of both libraries, bf16 outputs */
    struct lt_buffers ref = x[0];
    ref.d = dalloc(d_bytes);
    size_t need = 0;
    reserve_for(h, mgpu_run_lt_query(h, &p, &x[0], &need), need);
    poison(x[0].d, d_bytes);
    mgpu_status st = mgpu_run_lt(h, &p, &x[0]);
    if (st != MGPU_STATUS_SUCCESS) {
        fprintf(stderr, "mgpu-bench: mgpu_gemm_ex: %s: %s\n", mgpu_status_string(st), mgpu_last_error_message());
        res.ok = 0;
    }
    lt_run(&p, &ref);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "mgpu-bench: a kernel failed\n");
        exit(1);
    }
    struct compare_result cr = compare_matrices(x[0].d, ref.d, MGPU_DTYPE_BF16, s.m, s.n, s.m, s.m * s.n, 1);
    res.rel_err = cr.rel_err;
    if (cr.nan_count || cr.rel_err > 1e-2)
        res.ok = 0;
    cudaFree(ref.d);

    struct lt_pair pair = {h, &p, x};
    time_alternating(run_lt_pair, &pair, copies, reps, &res);
    lt_teardown(&p);
    for (int i = 0; i < copies; i++) {
        cudaFree(x[i].a);
        cudaFree(x[i].b);
        cudaFree(x[i].d);
    }
    cudaFree(p.scale_a);
    cudaFree(p.scale_b);
    cudaFree(p.bias);
    return res;
}

/* The --fp8 / --epilogue sections: a table row per shape, ratio = cuBLASLt time / mgpu time. */
static int run_lt_sections(mgpu_handle *h, int fp8, int epilogue, const struct shape *given, int n_given, int reps,
                           size_t l2_bytes, FILE *jf, int *first, double *log_ratio_sum, int *ratio_count)
{
    const struct shape *shapes = n_given ? given : lt_shapes;
    const unsigned n_shapes = n_given ? (unsigned)n_given : (unsigned)(sizeof lt_shapes / sizeof lt_shapes[0]);
    int failures = 0;
    for (int sec = 0; sec < 2; sec++) {
        if ((sec == 0 && !fp8) || (sec == 1 && !epilogue))
            continue;
        const enum lt_kind kind = sec == 0 ? LT_FP8 : LT_GELU_BIAS;
        const char *what = sec == 0 ? "e4m3" : "bf16+bias+gelu";
        for (unsigned i = 0; i < n_shapes; i++) {
            const struct shape s = shapes[i];
            struct timing r = run_lt_shape(h, kind, s, reps, l2_bytes);
            const double flop = 2.0 * (double)s.m * (double)s.n * (double)s.k;
            const double ratio = r.ok ? r.cublas_ms / r.mgpu_ms : 0;
            char dims[40];
            snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)s.m, (long long)s.n, (long long)s.k);
            printf("%-22s %-14s %10.3f %9.1f %10.3f %9.1f %6.3fx %9.2e %s (vs cuBLASLt)\n", dims, what, r.mgpu_ms,
                   flop / r.mgpu_ms / 1e9, r.cublas_ms, flop / r.cublas_ms / 1e9, ratio, r.rel_err,
                   r.ok ? "ok" : "FAILED");
            fflush(stdout);
            failures += !r.ok;
            if (r.ok) {
                *log_ratio_sum += log(ratio);
                (*ratio_count)++;
            }
            if (jf) {
                fprintf(jf,
                        "%s  {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"batch\": 1, \"dtype\": \"%s\", \"peer\": "
                        "\"cuBLASLt\", \"mgpu_ms\": %.5f, \"cublas_ms\": %.5f, \"ratio\": %.4f, \"rel_err\": %.3e, "
                        "\"ok\": %s}",
                        *first ? "" : ",\n", (long long)s.m, (long long)s.n, (long long)s.k, what, r.mgpu_ms,
                        r.cublas_ms, ratio, r.rel_err, r.ok ? "true" : "false");
                *first = 0;
            }
        }
    }
    return failures;
}

int main(int argc, char **argv)
{
    int quick = 0, small = 0, models = 0, reps = 30, fp8 = 0, epilogue = 0;
    struct shape given[MAX_SHAPE_ARGS];
    int n_given = 0;
    const char *json = NULL;
    mgpu_dtype dtypes[2] = {MGPU_DTYPE_BF16, MGPU_DTYPE_F16};
    int n_dtypes = 2;
    mgpu_operation ta = MGPU_OP_T, tb = MGPU_OP_N;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--fp8") == 0) {
            fp8 = 1;
        } else if (strcmp(argv[i], "--epilogue") == 0) {
            epilogue = 1;
        } else if (strcmp(argv[i], "--small") == 0) {
            small = 1;
        } else if (strcmp(argv[i], "--models") == 0) {
            models = 1;
        } else if (strcmp(argv[i], "--overhead") == 0) {
            measure_overhead = 1;
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            long long m, n, k, b = 0;
            const int got = sscanf(argv[++i], "%lld,%lld,%lld,%lld", &m, &n, &k, &b);
            if (got < 3 || m < 1 || n < 1 || k < 1 || b < 0) {
                fprintf(stderr, "mgpu-bench: --shape wants M,N,K or M,N,K,BATCH (positive), got '%s'\n", argv[i]);
                return 2;
            }
            if (n_given == MAX_SHAPE_ARGS) {
                fprintf(stderr, "mgpu-bench: at most %d --shape arguments\n", MAX_SHAPE_ARGS);
                return 2;
            }
            given[n_given++] = (struct shape){m, n, k, b};
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json = argv[++i];
        } else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
            i++;
            dtypes[0] = strcmp(argv[i], "f16") == 0 ? MGPU_DTYPE_F16 : MGPU_DTYPE_BF16;
            n_dtypes = 1;
        } else if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc && strlen(argv[i + 1]) == 2) {
            i++;
            ta = argv[i][0] == 'N' ? MGPU_OP_N : MGPU_OP_T;
            tb = argv[i][1] == 'N' ? MGPU_OP_N : MGPU_OP_T;
        } else {
            fprintf(stderr,
                    "usage: %s [--quick | --small | --models | --shape M,N,K[,BATCH] ...] [--dtype bf16|f16] "
                    "[--layout TN|NN|NT|TT] [--fp8] [--epilogue] [--reps N] [--overhead] [--json FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    if (!gpu_available()) {
        fprintf(stderr, "mgpu-bench: no CUDA device found; this program needs an NVIDIA GPU "
                        "(Hopper sm_90 or Blackwell sm_100).\n");
        return 1;
    }
    cudaFree(0);
    struct cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    mgpu_handle *h;
    if (mgpu_create(&h) != MGPU_STATUS_SUCCESS) {
        fprintf(stderr, "mgpu-bench: mgpu_create: %s\n", mgpu_last_error_message());
        return 1;
    }
    cublasHandle_t cb;
    cublasCreate(&cb);
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (jf)
        fprintf(jf, "{\"device\": \"%s\", \"layout\": \"%c%c\", \"results\": [\n", prop.name, "NT"[ta], "NT"[tb]);

    printf("device: %s (cc %d.%d, %d SMs), layout %c%c, median of %d runs\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, "NT"[ta], "NT"[tb], reps);
    printf("%-22s %-5s %10s %9s %10s %9s %7s %9s %s\n", "m x n x k", "dtype", "mgpu ms", "TFLOP/s", "cuBLAS ms",
           "TFLOP/s", "ratio", "rel err", "check");
    struct shape model_shapes[N_MODEL_SHAPES];
    const char *shape_names[N_MODEL_SHAPES];
    const int n_tokens = (int)(sizeof model_tokens / sizeof model_tokens[0]);
    for (int i = 0; i < N_MODEL_SHAPES; i++) {
        const struct model_layer *l = &model_layers[i / n_tokens];
        model_shapes[i] = (struct shape){model_tokens[i % n_tokens], l->n, l->k, 0};
        shape_names[i] = l->name;
    }
    const struct shape *shapes = n_given ? given
                                 : models ? model_shapes
                                 : small  ? small_shapes
                                 : quick  ? quick_shapes
                                          : full_shapes;
    const int n_shapes = fp8 || epilogue ? 0
                         : n_given       ? n_given
                         : models        ? N_MODEL_SHAPES
                         : small         ? (int)(sizeof small_shapes / sizeof small_shapes[0])
                         : quick         ? (int)(sizeof quick_shapes / sizeof quick_shapes[0])
                                         : (int)(sizeof full_shapes / sizeof full_shapes[0]);
    int failures = 0, first = 1;
    double log_ratio_sum = 0, log_large_sum = 0;
    int ratio_count = 0, large_count = 0;
    failures += run_lt_sections(h, fp8, epilogue, given, n_given, reps, (size_t)prop.l2CacheSize, jf, &first,
                                &log_ratio_sum, &ratio_count);
    for (int d = 0; d < n_dtypes; d++)
        for (int i = 0; i < n_shapes; i++) {
            struct shape s = shapes[i];
            struct timing r = run_shape(h, cb, s, dtypes[d], ta, tb, reps, (size_t)prop.l2CacheSize);
            double flop = 2.0 * (double)s.m * (double)s.n * (double)s.k * (double)(s.batch > 1 ? s.batch : 1);
            double ratio = r.cublas_ms / r.mgpu_ms;
            char dims[40];
            if (s.batch > 1)
                snprintf(dims, sizeof dims, "%lldx(%lldx%lldx%lld)", (long long)s.batch, (long long)s.m,
                         (long long)s.n, (long long)s.k);
            else
                snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)s.m, (long long)s.n, (long long)s.k);
            const char *dn = dtypes[d] == MGPU_DTYPE_BF16 ? "bf16" : "f16";
            printf("%-22s %-5s %10.3f %9.1f %10.3f %9.1f %6.3fx %9.2e %s%s%s\n", dims, dn, r.mgpu_ms,
                   flop / r.mgpu_ms / 1e9, r.cublas_ms, flop / r.cublas_ms / 1e9, ratio, r.rel_err,
                   r.ok ? "ok" : "FAILED", models && !n_given ? "  " : "", models && !n_given ? shape_names[i] : "");
            if (measure_overhead)
                printf("  overhead: host %.1f us/call (cuBLAS %.1f), back-to-back %.1f us/call (cuBLAS %.1f)\n",
                       r.host_us[0], r.host_us[1], r.loop_us[0], r.loop_us[1]);
            fflush(stdout);
            failures += !r.ok;
            log_ratio_sum += log(ratio);
            ratio_count++;
            if (is_large(s)) {
                log_large_sum += log(ratio);
                large_count++;
            }
            if (jf) {
                fprintf(jf, "%s  {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"batch\": %lld, \"dtype\": \"%s\", \"mgpu_ms\": %.5f, "
                            "\"cublas_ms\": %.5f, \"ratio\": %.4f, \"rel_err\": %.3e, \"ok\": %s",
                        first ? "" : ",\n", (long long)s.m, (long long)s.n, (long long)s.k, (long long)(s.batch > 1 ? s.batch : 1), dn, r.mgpu_ms,
                        r.cublas_ms, ratio, r.rel_err, r.ok ? "true" : "false");
                if (models && !n_given)
                    fprintf(jf, ", \"layer\": \"%s\"", shape_names[i]);
                if (measure_overhead)
                    fprintf(jf, ", \"host_us\": [%.2f, %.2f], \"loop_us\": [%.2f, %.2f]", r.host_us[0], r.host_us[1],
                            r.loop_us[0], r.loop_us[1]);
                fputc('}', jf);
                first = 0;
            }
        }
    printf("geometric mean speedup vs cuBLAS%s: %.3fx over %d runs; %d check failure(s)\n",
           fp8 || epilogue ? "Lt" : "", ratio_count ? exp(log_ratio_sum / ratio_count) : 0.0, ratio_count, failures);
    if (large_count)
        printf("geometric mean over the %d large-shape runs (m > 128, operands TMA can read): %.3fx\n", large_count,
               exp(log_large_sum / large_count));
    if (jf) {
        fprintf(jf, "\n]}\n");
        fclose(jf);
    }
    cublasDestroy(cb);
    mgpu_destroy(h);
    return failures ? 1 : 0;
}
