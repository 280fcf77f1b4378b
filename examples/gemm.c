/*
 * GEMM with the error checks a program should have.
 *
 * C (m x n, fp32) = A (m x k, bf16) * B (k x n, bf16), column-major like
 * cuBLAS. The inputs are small integers, so every product is exact in bf16
 * and fp32 and the result is compared for equality with a CPU loop.
 *
 * The pattern to copy: check every mgpu_ status (MGPU_CHECK in
 * example_util.h), and when a call fails print mgpu_status_string() and
 * mgpu_last_error_message(): the message says which argument was wrong and
 * why. A deliberately wrong call at the end shows such a message.
 *
 * Build:  cc gemm.c $(pkg-config --cflags --libs mgpukernels) -lcudart
 *         (add -I/-L for the CUDA toolkit when it is not on the default paths)
 * Run:    ./gemm    exits 0 (checked), 77 (no GPU) or 1 (error)
 */
#include "example_util.h"

int main(void)
{
    const int64_t m = 300, n = 200, k = 128; /* any sizes work; these are not tile multiples */
    mgpu_handle *h = create_handle();        /* exits 77 without a GPU */

    /* Host inputs: A[i + p*m] and B[p + j*k] (column-major), values in -2..2. */
    float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n), *c = malloc(sizeof(float) * m * n);
    if (!a || !b || !c)
        return 1;
    for (int64_t i = 0; i < m * k; i++)
        a[i] = (float)((i * 7) % 5 - 2);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = (float)((i * 3) % 5 - 2);

    void *dA = upload_bf16(a, (size_t)(m * k));
    void *dB = upload_bf16(b, (size_t)(k * n));
    float *dC = NULL;
    CUDA_CHECK(cudaMalloc((void **)&dC, sizeof(float) * m * n));

    /* The call: C = 1 * A * B + 0 * C (with beta == 0, C is not read). */
    const float alpha = 1.0f, beta = 0.0f;
    MGPU_CHECK(mgpu_gemm(h, MGPU_OP_N, MGPU_OP_N, m, n, k, &alpha, dA, MGPU_DTYPE_BF16, m, dB, MGPU_DTYPE_BF16, k,
                         &beta, dC, MGPU_DTYPE_F32, m));

    /* A status of SUCCESS means "queued". Errors of the kernel itself show up
     * at the next synchronisation, so check that too. */
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(c, dC, sizeof(float) * m * n, cudaMemcpyDeviceToHost));

    int64_t wrong = 0;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            float ref = 0.0f;
            for (int64_t p = 0; p < k; p++)
                ref += a[i + p * m] * b[p + j * k];
            wrong += c[i + j * m] != ref;
        }
    printf("gemm %lldx%lldx%lld: %lld of %lld elements wrong\n", (long long)m, (long long)n, (long long)k,
           (long long)wrong, (long long)(m * n));

    /* What a failure looks like: lda smaller than m. Handle a status the way
     * your program needs (here: print it and go on). */
    mgpu_status s = mgpu_gemm(h, MGPU_OP_N, MGPU_OP_N, m, n, k, &alpha, dA, MGPU_DTYPE_BF16, m - 1, dB,
                              MGPU_DTYPE_BF16, k, &beta, dC, MGPU_DTYPE_F32, m);
    printf("a call with lda = m - 1 returns %s: %s\n", mgpu_status_string(s), mgpu_last_error_message());

    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    MGPU_CHECK(mgpu_destroy(h));
    free(a);
    free(b);
    free(c);
    return wrong == 0 && s == MGPU_STATUS_INVALID_LD ? 0 : 1;
}
