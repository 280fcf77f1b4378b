/*
 * How the ABI headers declare their small functions (shared-memory sizes,
 * tile counts): `static inline` for the C runtime and generator, and
 * `static constexpr __host__ __device__` under nvcc, so that a kernel can use
 * the same function in its constant expressions and on the device.
 */
#ifndef MGPU_KERNELS_ABI_ABI_FN_H
#define MGPU_KERNELS_ABI_ABI_FN_H

#ifdef __CUDACC__
#define MGPU_ABI_FN static constexpr __host__ __device__ inline
#else
#define MGPU_ABI_FN static inline
#endif

#endif
