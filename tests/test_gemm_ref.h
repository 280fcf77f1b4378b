/*
 * Host-side helpers of the fp8 and epilogue GEMM tests (test_gemm_fp8_gpu.c,
 * test_gemm_epilogue_gpu.c): element conversions to and from fp8, fp16 and
 * bf16 (round to nearest even), the epilogue applied to a reference on the
 * host, and comparison of a device output of any dtype against a float
 * reference.
 */
#ifndef MGPU_TESTS_TEST_GEMM_REF_H
#define MGPU_TESTS_TEST_GEMM_REF_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>

#include "gpu_util.h"
#include "mgpukernels.h"

/* Bytes of one element, fp8 included. */
size_t ref_dtype_bytes(mgpu_dtype t);
const char *ref_dtype_name(mgpu_dtype t);

/* One element of a host buffer of dtype t as a float, and a float rounded
 * (to nearest even; fp8 saturates at its largest finite value) into one. */
float ref_load(const void *host, mgpu_dtype t, size_t i);
void ref_store(void *host, mgpu_dtype t, size_t i, float v);

/* `count` N(0, scale^2) values rounded to dtype t, written to host (in t)
 * and, if `as_float` is not NULL, their exact float values. */
void ref_fill_normal(void *host, float *as_float, mgpu_dtype t, size_t count, uint64_t seed, float scale);

/* The epilogue after alpha * acc + beta * C: bias, activation, output scale. */
float ref_finish(float v, float bias, mgpu_activation act, float scale_d);

/* Compares `batch` m x n column-major matrices: out (device, dtype t,
 * leading dimension ld, batch stride) against ref (host floats, same
 * layout). */
struct compare_result ref_compare(const void *out_dev, mgpu_dtype t, const float *ref, int64_t m, int64_t n,
                                  int64_t ld, int64_t stride, int64_t batch);

/* Elements of the device buffer (bytes long, dtype t) outside the m x n
 * matrices that differ from `before` (a host copy taken before the call). */
size_t ref_changed_outside(const void *dev, const void *before, size_t bytes, mgpu_dtype t, int64_t m, int64_t n,
                           int64_t ld, int64_t stride, int64_t batch);

/* The start of the fp8 and epilogue GPU tests, after gpu_available():
 * reads MGPU_TEST_QUICK, makes the primary context current, creates the
 * handle and cuBLAS (exits with status 1 if the handle cannot be made).
 * Returns 90 on compute capability 9.0 and 100 on 10.0, where those
 * features run; 0 elsewhere. */
int ref_test_start(mgpu_handle **handle, cublasHandle_t *cublas, int *quick);

/* Runs `desc` (dtypes, ops and epilogue set by the caller) as a 32 x 32 x 32
 * call on scratch buffers and returns its status. */
mgpu_status ref_run_small(mgpu_handle *handle, mgpu_gemm_desc desc);

void *ref_dalloc(size_t bytes);
void ref_upload(void *dev, const void *host, size_t bytes);
void ref_download(void *host, const void *dev, size_t bytes);

#endif
