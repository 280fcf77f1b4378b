/*
 * Several threads, each with its own handle and stream, make their first
 * mgpu_gemm calls at the same moment, so the images are loaded lazily under
 * contention. Every result must match cuBLAS. Skips (77) without a GPU.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

#include "check.h"
#include "gpu_util.h"

#define THREADS 8
#define DIM 384

struct job {
    int index;
    void *a, *b, *c;
    pthread_barrier_t *start;
    mgpu_status status;
    cudaError_t sync;
};

static void *worker(void *arg)
{
    struct job *j = arg;
    cudaSetDevice(0);
    cudaFree(0);
    mgpu_handle *h = NULL;
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    j->status = mgpu_create(&h);
    pthread_barrier_wait(j->start);
    if (j->status == MGPU_STATUS_SUCCESS)
        j->status = mgpu_set_stream(h, stream);
    const float one = 1.0f, zero = 0.0f;
    /* alternate layouts so that different kernels load at once; odd threads also take the portable path */
    const mgpu_operation ta = j->index & 1 ? MGPU_OP_N : MGPU_OP_T, tb = j->index & 2 ? MGPU_OP_T : MGPU_OP_N;
    const int64_t ld = j->index & 4 ? DIM + 1 : DIM;
    if (j->status == MGPU_STATUS_SUCCESS)
        j->status = mgpu_gemm(h, ta, tb, DIM, DIM, DIM, &one, j->a, MGPU_DTYPE_BF16, ld, j->b, MGPU_DTYPE_BF16, ld,
                              &zero, j->c, MGPU_DTYPE_F32, DIM);
    j->sync = cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    mgpu_destroy(h);
    return NULL;
}

int main(void)
{
    if (!gpu_available()) {
        printf("no CUDA device: skipped\n");
        return MGPU_TEST_SKIP;
    }
    cudaFree(0);
    cublasHandle_t cublas;
    cublasCreate(&cublas);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    struct job jobs[THREADS];
    pthread_t tid[THREADS];
    const size_t elems = (size_t)(DIM + 1) * DIM;
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (struct job){.index = i, .start = &start};
        cudaMalloc(&jobs[i].a, elems * 2);
        cudaMalloc(&jobs[i].b, elems * 2);
        cudaMalloc(&jobs[i].c, (size_t)DIM * DIM * 4);
        fill_normal(jobs[i].a, MGPU_DTYPE_BF16, elems, 10 + (uint64_t)i, 1.0f);
        fill_normal(jobs[i].b, MGPU_DTYPE_BF16, elems, 50 + (uint64_t)i, 1.0f);
        poison(jobs[i].c, (size_t)DIM * DIM * 4);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_create(&tid[i], NULL, worker, &jobs[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(tid[i], NULL);

    void *ref;
    cudaMalloc(&ref, (size_t)DIM * DIM * 4);
    for (int i = 0; i < THREADS; i++) {
        CHECK(jobs[i].status == MGPU_STATUS_SUCCESS, "thread %d: %s", i, mgpu_status_string(jobs[i].status));
        CHECK(jobs[i].sync == cudaSuccess, "thread %d: %s", i, cudaGetErrorString(jobs[i].sync));
        const float one = 1.0f, zero = 0.0f;
        const int ld = i & 4 ? DIM + 1 : DIM;
        cublasGemmEx(cublas, i & 1 ? CUBLAS_OP_N : CUBLAS_OP_T, i & 2 ? CUBLAS_OP_T : CUBLAS_OP_N, DIM, DIM, DIM,
                     &one, jobs[i].a, CUDA_R_16BF, ld, jobs[i].b, CUDA_R_16BF, ld, &zero, ref, CUDA_R_32F, DIM,
                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        cudaDeviceSynchronize();
        struct compare_result r = compare_matrices(jobs[i].c, ref, MGPU_DTYPE_F32, DIM, DIM, DIM, 0, 1);
        printf("thread %d: rel %.2e max %.2e\n", i, r.rel_err, r.max_err);
        CHECK(r.nan_count == 0 && r.rel_err < 1e-4, "thread %d: rel %.3e, %zu NaN", i, r.rel_err, r.nan_count);
        cudaFree(jobs[i].a);
        cudaFree(jobs[i].b);
        cudaFree(jobs[i].c);
    }
    cudaFree(ref);
    cublasDestroy(cublas);
    pthread_barrier_destroy(&start);
    return check_exit();
}
