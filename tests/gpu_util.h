/*
 * Helpers the GPU tests and mgpu-bench share: device detection, random
 * normal fp16/bf16 data, NaN poisoning, and comparison against a reference
 * output (relative Frobenius error, max abs error, NaN count).
 */
#ifndef MGPU_TESTS_GPU_UTIL_H
#define MGPU_TESTS_GPU_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mgpukernels.h"

/* 1 when the CUDA runtime sees a device. */
int gpu_available(void);

size_t dtype_bytes(mgpu_dtype t);

/* Fills `count` elements at device address `dev` with N(0, scale^2) values
 * drawn from `seed`. */
void fill_normal(void *dev, mgpu_dtype t, size_t count, uint64_t seed, float scale);

/* Sets every byte to 0xff: NaN in fp16, bf16 and fp32. */
void poison(void *dev, size_t bytes);

struct compare_result {
    double rel_err;   /* ||out - ref|| / ||ref|| */
    double max_err;   /* max |out - ref| */
    double max_ref;   /* max |ref| */
    size_t nan_count; /* non-finite outputs where the reference is finite */
};

/* Compares the m x n column-major matrices (leading dimensions ldo, ldr) of
 * `batch` matrices `stride` elements apart. */
/* Running sums of a comparison, element by element: compare_add(sums, out,
 * ref) for each pair, then compare_total. A non-finite output counts in
 * nan_count where the reference is finite (and enters no sum). */
struct compare_sums {
    struct compare_result r;
    double num, den; /* sum of (out - ref)^2, sum of ref^2 */
};
void compare_add(struct compare_sums *s, double out, double ref);
struct compare_result compare_total(const struct compare_sums *s);

struct compare_result compare_matrices(const void *out_dev, const void *ref_dev, mgpu_dtype t, int64_t m,
                                       int64_t n, int64_t ld, int64_t stride, int64_t batch);

/* One element at host address p, as float / from float (round to nearest even). */
float host_load_elem(const void *p, mgpu_dtype t);
void host_store_elem(void *p, mgpu_dtype t, float value);

/* Unit roundoff of a dtype's storage: 2^-8 for bf16, 2^-11 for fp16, 2^-24 for fp32. */
double dtype_eps(mgpu_dtype t);

#endif
