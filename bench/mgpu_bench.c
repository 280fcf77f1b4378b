/*
 * mgpu-bench: times mgpu_gemm against cuBLAS (cublasGemmEx, fp32 compute) in
 * the same process on the same GPU, on random normal data, and checks every
 * mgpu result against cuBLAS's before timing it.
 *
 *   mgpu-bench [--quick] [--dtype bf16|f16] [--layout TN|NN|NT|TT] [--reps N] [--json FILE]
 *
 * Each shape is timed with CUDA events around single launches, after warm-up,
 * alternating mgpu and cuBLAS, and the median of --reps runs is reported.
 * Operands are rotated among enough copies that the set exceeds 3x the L2
 * cache, so small problems are not measured out of cache. Without a GPU it
 * says so and exits with status 1.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "mgpukernels.h"

struct shape {
    int64_t m, n, k, batch; /* batch 0 means 1 (a plain mgpu_gemm call) */
};

static const struct shape full_shapes[] = {
    {4096, 4096, 4096, 0}, {8192, 8192, 8192, 0}, {8192, 4096, 4096, 0}, {8192, 6144, 4096, 0},
    {8192, 14336, 4096, 0}, {8192, 4096, 14336, 0}, {64, 4096, 4096, 0}, {128, 4096, 4096, 0},
    {64, 8192, 8192, 0}, {128, 8192, 8192, 0}, {4000, 4000, 4000, 0}, {8191, 8191, 8191, 0},
    {1024, 1024, 1024, 32},
};
static const struct shape quick_shapes[] = {
    {4096, 4096, 4096, 0}, {128, 4096, 4096, 0}, {4000, 4000, 4000, 0}, {8191, 8191, 8191, 0},
};

#define MAX_ROTATE 16

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
};

static struct timing run_shape(mgpu_handle *h, cublasHandle_t cb, struct shape s, mgpu_dtype t,
                               mgpu_operation ta, mgpu_operation tb, int reps, size_t l2_bytes)
{
    struct timing res = {0, 0, 0, 1};
    const int64_t lda = ta == MGPU_OP_N ? s.m : s.k, ldb = tb == MGPU_OP_N ? s.k : s.n, ldc = s.m;
    const int64_t batch = s.batch > 1 ? s.batch : 1;
    const size_t a_bytes = (size_t)(s.m * s.k * batch) * 2, b_bytes = (size_t)(s.k * s.n * batch) * 2;
    const size_t c_bytes = (size_t)(s.m * s.n * batch) * 2;
    size_t set = a_bytes + b_bytes + c_bytes;
    int copies = (int)((3 * l2_bytes + set - 1) / set);
    if (copies < 1)
        copies = 1;
    if (copies > MAX_ROTATE)
        copies = MAX_ROTATE;
    void *A[MAX_ROTATE], *B[MAX_ROTATE], *C[MAX_ROTATE];
    for (int i = 0; i < copies; i++) {
        A[i] = dalloc(a_bytes);
        B[i] = dalloc(b_bytes);
        C[i] = dalloc(c_bytes);
        fill_normal(A[i], t, a_bytes / 2, 100 + 3 * (uint64_t)i, 1.0f);
        fill_normal(B[i], t, b_bytes / 2, 101 + 3 * (uint64_t)i, 1.0f);
    }
    void *C_ref = dalloc(c_bytes);
    const cudaDataType ct = t == MGPU_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    const cublasOperation_t cta = ta == MGPU_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T;
    const cublasOperation_t ctb = tb == MGPU_OP_N ? CUBLAS_OP_N : CUBLAS_OP_T;

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

    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float *tm = malloc(sizeof(float) * (size_t)reps), *tc = malloc(sizeof(float) * (size_t)reps);
    const int warmup = 5;
    for (int r = -warmup; r < reps; r++) {
        int i = (r + warmup) % copies;
        cudaEventRecord(e0, 0);
        run_mgpu(h, s, t, ta, tb, A[i], lda, B[i], ldb, C[i], ldc);
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        if (r >= 0)
            cudaEventElapsedTime(&tm[r], e0, e1);
        cudaEventRecord(e0, 0);
        run_cublas(cb, s, ct, cta, ctb, A[i], lda, B[i], ldb, C[i], ldc);
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        if (r >= 0)
            cudaEventElapsedTime(&tc[r], e0, e1);
    }
    qsort(tm, (size_t)reps, sizeof(float), cmp_float);
    qsort(tc, (size_t)reps, sizeof(float), cmp_float);
    res.mgpu_ms = tm[reps / 2];
    res.cublas_ms = tc[reps / 2];
    free(tm);
    free(tc);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    for (int i = 0; i < copies; i++) {
        cudaFree(A[i]);
        cudaFree(B[i]);
        cudaFree(C[i]);
    }
    cudaFree(C_ref);
    return res;
}

int main(int argc, char **argv)
{
    int quick = 0, reps = 30;
    const char *json = NULL;
    mgpu_dtype dtypes[2] = {MGPU_DTYPE_BF16, MGPU_DTYPE_F16};
    int n_dtypes = 2;
    mgpu_operation ta = MGPU_OP_T, tb = MGPU_OP_N;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
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
            fprintf(stderr, "usage: %s [--quick] [--dtype bf16|f16] [--layout TN|NN|NT|TT] [--reps N] [--json FILE]\n",
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
    const struct shape *shapes = quick ? quick_shapes : full_shapes;
    const int n_shapes = quick ? (int)(sizeof quick_shapes / sizeof quick_shapes[0])
                               : (int)(sizeof full_shapes / sizeof full_shapes[0]);
    int failures = 0, first = 1;
    double log_ratio_sum = 0;
    int ratio_count = 0;
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
            printf("%-22s %-5s %10.3f %9.1f %10.3f %9.1f %6.3fx %9.2e %s\n", dims, dn, r.mgpu_ms,
                   flop / r.mgpu_ms / 1e9, r.cublas_ms, flop / r.cublas_ms / 1e9, ratio, r.rel_err,
                   r.ok ? "ok" : "FAILED");
            fflush(stdout);
            failures += !r.ok;
            log_ratio_sum += log(ratio);
            ratio_count++;
            if (jf) {
                fprintf(jf, "%s  {\"m\": %lld, \"n\": %lld, \"k\": %lld, \"batch\": %lld, \"dtype\": \"%s\", \"mgpu_ms\": %.5f, "
                            "\"cublas_ms\": %.5f, \"ratio\": %.4f, \"rel_err\": %.3e, \"ok\": %s}",
                        first ? "" : ",\n", (long long)s.m, (long long)s.n, (long long)s.k, (long long)(s.batch > 1 ? s.batch : 1), dn, r.mgpu_ms,
                        r.cublas_ms, ratio, r.rel_err, r.ok ? "true" : "false");
                first = 0;
            }
        }
    printf("geometric mean speedup vs cuBLAS: %.3fx over %d runs; %d check failure(s)\n",
           exp(log_ratio_sum / ratio_count), ratio_count, failures);
    if (jf) {
        fprintf(jf, "\n]}\n");
        fclose(jf);
    }
    cublasDestroy(cb);
    mgpu_destroy(h);
    return failures ? 1 : 0;
}
