/*
 * Context ownership on a real device: create, destroy, create on one thread
 * with no other holder of the primary context (no CUDA runtime call comes
 * first), then work on the second handle succeeds: its workspace can be
 * reserved and a GEMM matches cuBLAS. The first handle retained device 0's
 * primary context and made it current; its destroy dropped the last
 * reference, so the second handle must not find that dead context current.
 * Skips (77) without a device.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "check.h"
#include "gpu_util.h"
#include "mgpukernels.h"

int main(void)
{
    mgpu_handle *first = NULL, *second = NULL;
    const mgpu_status s = mgpu_create(&first); /* before any CUDA runtime call */
    if (s == MGPU_STATUS_NO_DRIVER || s == MGPU_STATUS_NO_DEVICE) {
        printf("no CUDA device (%s): skipped\n", mgpu_last_error_message());
        return MGPU_TEST_SKIP;
    }
    CHECK_STATUS(s, MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_destroy(first), MGPU_STATUS_SUCCESS);
    CHECK_STATUS(mgpu_create(&second), MGPU_STATUS_SUCCESS);
    if (!second)
        return check_exit();
    CHECK_STATUS(mgpu_reserve_workspace(second, (size_t)64 << 20), MGPU_STATUS_SUCCESS);

    const int64_t m = 256, n = 192, k = 320;
    void *a = NULL, *b = NULL, *c = NULL, *ref = NULL;
    CHECK(cudaMalloc(&a, (size_t)(m * k) * 2) == cudaSuccess && cudaMalloc(&b, (size_t)(k * n) * 2) == cudaSuccess &&
              cudaMalloc(&c, (size_t)(m * n) * 2) == cudaSuccess && cudaMalloc(&ref, (size_t)(m * n) * 2) == cudaSuccess,
          "cudaMalloc after the second handle: %s", cudaGetErrorString(cudaGetLastError()));
    fill_normal(a, MGPU_DTYPE_BF16, (size_t)(m * k), 1, 1.0f);
    fill_normal(b, MGPU_DTYPE_BF16, (size_t)(k * n), 2, 1.0f);
    const float one = 1.0f, zero = 0.0f;
    CHECK_STATUS(mgpu_gemm(second, MGPU_OP_T, MGPU_OP_N, m, n, k, &one, a, MGPU_DTYPE_BF16, k, b, MGPU_DTYPE_BF16, k,
                           &zero, c, MGPU_DTYPE_BF16, m),
                 MGPU_STATUS_SUCCESS);
    cublasHandle_t cublas;
    cublasCreate(&cublas);
    cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)m, (int)n, (int)k, &one, a, CUDA_R_16BF, (int)k, b,
                 CUDA_R_16BF, (int)k, &zero, ref, CUDA_R_16BF, (int)m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "kernels failed: %s", cudaGetErrorString(cudaGetLastError()));
    const struct compare_result r = compare_matrices(c, ref, MGPU_DTYPE_BF16, m, n, m, 0, 1);
    CHECK(r.nan_count == 0 && r.rel_err <= 1e-2, "GEMM on the second handle: rel err %.3g, %zu NaN", r.rel_err,
          r.nan_count);
    cublasDestroy(cublas);
    cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ref);
    CHECK_STATUS(mgpu_destroy(second), MGPU_STATUS_SUCCESS);
    return check_exit();
}
