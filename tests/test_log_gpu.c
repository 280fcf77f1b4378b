/*
 * MGPU_LOG=1: each GEMM call prints its plan to stderr (variant, shape
 * class, split-K factor, grid, band, cluster, packing, store path), and
 * MGPU_FORCE_BAND / MGPU_FORCE_SPLIT_K show up in it. stderr is sent to a
 * temporary file for the calls and read back. Skips (77) without a GPU.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "force.h"
#include "gpu_util.h"

#define LOG_BYTES 8192

/* Runs one bf16 TN GEMM of m x n x k with stderr captured into `log`. */
static mgpu_status logged_gemm(mgpu_handle *h, int64_t m, int64_t n, int64_t k, int64_t lda, char *log)
{
    void *a = NULL, *b = NULL, *c = NULL;
    cudaMalloc(&a, (size_t)(lda * m + 8) * 2);
    cudaMalloc(&b, (size_t)(k * n) * 2);
    cudaMalloc(&c, (size_t)(m * n) * 2);
    fill_normal(a, MGPU_DTYPE_BF16, (size_t)(lda * m), 1, 1.0f);
    fill_normal(b, MGPU_DTYPE_BF16, (size_t)(k * n), 2, 1.0f);
    const float one = 1.0f, zero = 0.0f;

    fflush(stderr);
    const int saved = dup(STDERR_FILENO);
    FILE *tmp = tmpfile();
    dup2(fileno(tmp), STDERR_FILENO);
    const mgpu_status s = mgpu_gemm(h, MGPU_OP_T, MGPU_OP_N, m, n, k, &one, a, MGPU_DTYPE_BF16, lda, b,
                                    MGPU_DTYPE_BF16, k, &zero, c, MGPU_DTYPE_BF16, m);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    const size_t got = fread(log, 1, LOG_BYTES - 1, tmp);
    log[got] = 0;
    fclose(tmp);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "kernel failed");
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return s;
}

int main(void)
{
    if (!gpu_available()) {
        printf("no CUDA device: skipped\n");
        return MGPU_TEST_SKIP;
    }
    setenv("MGPU_LOG", "1", 1); /* read once, at the first call */
    cudaFree(0);
    mgpu_handle *h = NULL;
    CHECK_STATUS(mgpu_create(&h), MGPU_STATUS_SUCCESS);
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    const int hopper = major == 9 && minor == 0;
    char log[LOG_BYTES];

    /* A shape of one wave of large tiles: the planner's smaller tile (132 SMs),
     * 16 k-tiles per CTA: launched for programmatic dependent launch. */
    CHECK_STATUS(logged_gemm(h, 2048, 2048, 512, 512, log), MGPU_STATUS_SUCCESS);
    CHECK(strstr(log, "mgpu: gemm TN m=2048 n=2048 k=512 batch=1 bf16->bf16") != NULL, "no call line in: %s", log);
    if (hopper) {
        CHECK(strstr(log, "mgpu_gemm_sm90_ws_bf16_tn_128x128x64_s6_c1") != NULL, "no variant in: %s", log);
        CHECK(strstr(log, "[few tiles, smaller tile; split-k 1, grid 132, band 11, cluster 1x1, programmatic]") != NULL,
              "no plan in: %s", log);
    }

    /* Forced band and split-K, and an operand that needs packing (odd lda). */
    force_setenv("MGPU_FORCE_BAND", "3");
    force_setenv("MGPU_FORCE_SPLIT_K", "2");
    CHECK_STATUS(logged_gemm(h, 1024, 1024, 512, 513, log), MGPU_STATUS_SUCCESS);
    if (hopper)
        CHECK(strstr(log, "split-k 2, grid 132, band 3, cluster 1x1, A packed, programmatic]") != NULL,
              "forced plan not in: %s", log);
    force_unsetenv("MGPU_FORCE_BAND");
    force_unsetenv("MGPU_FORCE_SPLIT_K");

    /* Small m: the 64-row tile with split-K (16 tiles of 64 x 128), and the 64 x 64 tile
     * where its tiles make more than a quarter of a wave (64 of them) */
    CHECK_STATUS(logged_gemm(h, 64, 2048, 4096, 4096, log), MGPU_STATUS_SUCCESS);
    if (hopper)
        CHECK(strstr(log, "mgpu_gemm_sm90_ws_bf16_tn_64x128x64_s8_c1 [small m, split-K; split-k 4,") != NULL,
              "small-m plan not in: %s", log);
    CHECK_STATUS(logged_gemm(h, 64, 4096, 4096, 4096, log), MGPU_STATUS_SUCCESS);
    if (hopper)
        CHECK(strstr(log, "mgpu_gemm_sm90_ws_bf16_tn_64x64x64_s12_c1 [small m; split-k 1, grid 64,") != NULL,
              "small-m 64 x 64 plan not in: %s", log);
    mgpu_destroy(h);
    return check_exit();
}
