/*
 * The few helpers every example uses, kept in one small header so that each
 * example shows only its own subject. Copy what you need into your program:
 *
 *   MGPU_CHECK(call)  every mgpu_ function returns an mgpu_status; on failure
 *                     print the status name and the library's message (what
 *                     exactly was wrong), then stop.
 *   CUDA_CHECK(call)  the same for the CUDA runtime.
 *   create_handle()   mgpu_create; on a machine without a driver or device it
 *                     reports NO_DRIVER / NO_DEVICE and exits with 77, the
 *                     "skipped" code of Meson and CTest. That is the part of
 *                     each example that runs without a GPU.
 *
 * Exit codes of the examples: 0 ran and checked its result on a GPU, 77 no
 * GPU (reported cleanly), 1 anything else.
 */
#ifndef MGPU_EXAMPLE_UTIL_H
#define MGPU_EXAMPLE_UTIL_H

#include <mgpukernels.h>

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MGPU_CHECK(call)                                                                            \
    do {                                                                                            \
        mgpu_status s_ = (call);                                                                    \
        if (s_ != MGPU_STATUS_SUCCESS) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, mgpu_status_string(s_), \
                    mgpu_last_error_message());                                                     \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

#define CUDA_CHECK(call)                                                                            \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));  \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

#define EXIT_NO_GPU 77

/* A handle on the current device (device 0 when nothing is current yet), or
 * exit(77) with the library's own words when this machine has no GPU. */
static inline mgpu_handle *create_handle(void)
{
    mgpu_handle *h = NULL;
    mgpu_status s = mgpu_create(&h);
    if (s == MGPU_STATUS_NO_DRIVER || s == MGPU_STATUS_NO_DEVICE) {
        const int v = mgpu_version();
        printf("libmgpukernels %d.%d.%d loaded; no GPU here: %s (%s)\n", v / 10000, v / 100 % 100, v % 100,
               mgpu_status_string(s), mgpu_last_error_message());
        exit(EXIT_NO_GPU);
    }
    MGPU_CHECK(s);
    return h;
}

/* bf16 is the upper half of an fp32 (rounded to nearest even). */
static inline uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Copies n host floats to a new device array of bf16. */
static inline void *upload_bf16(const float *x, size_t n)
{
    uint16_t *h = malloc(n * sizeof *h);
    void *d = NULL;
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        h[i] = f32_to_bf16(x[i]);
    CUDA_CHECK(cudaMalloc(&d, n * sizeof *h));
    CUDA_CHECK(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice));
    /* From pageable memory cudaMemcpy may return before the data has landed,
     * and work on a non-blocking stream (stream_graph.c) is not ordered after
     * the legacy default stream's copy: wait for it. */
    CUDA_CHECK(cudaDeviceSynchronize());
    free(h);
    return d;
}

#endif /* MGPU_EXAMPLE_UTIL_H */
