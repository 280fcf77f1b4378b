/*
 * libmgpukernels: precompiled GPU kernels for NVIDIA Hopper (sm_90a) and
 * Blackwell (sm_100a), called from C the way cuBLAS is.
 *
 * This is the whole public API. Every function returns an mgpu_status; on
 * failure, mgpu_last_error_message() says in words what exactly was wrong
 * (the message is per thread and kept until the next failing call on that
 * thread). The library never aborts, exits or prints, except that MGPU_LOG=1
 * in the environment prints each kernel choice to stderr.
 *
 * Pointers named "device" are CUDA device addresses (CUdeviceptr values, or
 * what cudaMalloc returns) in the handle's context. Work is queued on the
 * handle's stream; a returned MGPU_STATUS_SUCCESS means the work was queued,
 * not that it finished.
 *
 * Thread safety: distinct handles may be used from distinct threads at once.
 * One handle must not be used by two threads at the same time.
 *
 * Support matrix:
 *
 *   operation          sm_90a (cc 9.0)              sm_100a (cc 10.0)
 *   mgpu_gemm           fp16/bf16 in, fp32 accum,    same; not yet run on hardware
 *                       fp16/bf16/fp32 out
 *
 * Other compute capabilities get MGPU_STATUS_ARCH_MISMATCH.
 */
#ifndef MGPUKERNELS_H
#define MGPUKERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define MGPU_API
#elif defined(__GNUC__)
#define MGPU_API __attribute__((visibility("default")))
#else
#define MGPU_API
#endif

#define MGPU_VERSION_MAJOR 0
#define MGPU_VERSION_MINOR 1
#define MGPU_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, as mgpu_version() returns it. */
#define MGPU_VERSION_NUMBER (MGPU_VERSION_MAJOR * 10000 + MGPU_VERSION_MINOR * 100 + MGPU_VERSION_PATCH)

/* The version of the library actually loaded; compare with MGPU_VERSION_NUMBER. */
MGPU_API int mgpu_version(void);

/* ------------------------------------------------------------------ status */

typedef enum mgpu_status {
    MGPU_STATUS_SUCCESS = 0,
    MGPU_STATUS_INVALID_HANDLE = 1,     /* NULL or destroyed handle */
    MGPU_STATUS_NULL_POINTER = 2,       /* a required pointer argument is NULL */
    MGPU_STATUS_INVALID_SIZE = 3,       /* negative size, or a size beyond what is supported */
    MGPU_STATUS_INVALID_LD = 4,         /* leading dimension or batch stride too small */
    MGPU_STATUS_INVALID_VALUE = 5,      /* an enum argument out of range */
    MGPU_STATUS_UNSUPPORTED_DTYPE = 6,  /* a dtype this operation does not take */
    MGPU_STATUS_DTYPE_MISMATCH = 7,     /* dtypes that must agree do not */
    MGPU_STATUS_WRONG_DEVICE = 8,       /* the current context's device is not the handle's */
    MGPU_STATUS_NO_DRIVER = 9,          /* libcuda.so.1 could not be loaded or is too old */
    MGPU_STATUS_NO_DEVICE = 10,         /* the driver sees no CUDA device */
    MGPU_STATUS_ARCH_MISMATCH = 11,     /* no kernel in this build for this device */
    MGPU_STATUS_DRIVER_ERROR = 12,      /* a CUDA driver call failed; the message names it */
    MGPU_STATUS_OUT_OF_MEMORY = 13,     /* host or device allocation failed */
    MGPU_STATUS_LAUNCH_FAILED = 14,     /* the driver refused a kernel launch */
    MGPU_STATUS_NOT_SUPPORTED = 15,     /* valid arguments this build has no kernel for */
    MGPU_STATUS_INDEX_OUT_OF_RANGE = 16,/* reserved for indexed operations */
    MGPU_STATUS_INTERNAL_ERROR = 17     /* a bug in the library; please report it */
} mgpu_status;

/* A static English name for a status ("MGPU_STATUS_INVALID_LD"); never NULL. */
MGPU_API const char *mgpu_status_string(mgpu_status status);

/* What the last failing call on this thread found wrong; "" when none failed. */
MGPU_API const char *mgpu_last_error_message(void);

/* ------------------------------------------------------------------- types */

typedef enum mgpu_dtype {
    MGPU_DTYPE_F16 = 0,
    MGPU_DTYPE_BF16 = 1,
    MGPU_DTYPE_F32 = 2
} mgpu_dtype;

/* As cuBLAS's cublasOperation_t: N uses the matrix as stored, T its transpose. */
typedef enum mgpu_operation {
    MGPU_OP_N = 0,
    MGPU_OP_T = 1
} mgpu_operation;

/* ------------------------------------------------------------------ handle */

typedef struct mgpu_handle mgpu_handle;

/*
 * Creates a handle bound to the device of the calling thread's current CUDA
 * context. With no current context, the primary context of device 0 is
 * retained and made current, as the CUDA runtime would. The handle starts on
 * the default (NULL) stream.
 *
 * Returns SUCCESS, NULL_POINTER (out is NULL), NO_DRIVER, NO_DEVICE,
 * DRIVER_ERROR or OUT_OF_MEMORY. On failure *out is set to NULL.
 */
MGPU_API mgpu_status mgpu_create(mgpu_handle **out);

/* Releases a handle. NULL is accepted and does nothing. Returns SUCCESS. */
MGPU_API mgpu_status mgpu_destroy(mgpu_handle *handle);

/* Sets the stream (a CUstream or cudaStream_t; NULL for the legacy default
 * stream) on which later calls queue work. Returns SUCCESS or INVALID_HANDLE. */
MGPU_API mgpu_status mgpu_set_stream(mgpu_handle *handle, void *stream);

/* The stream set by mgpu_set_stream. Returns SUCCESS, INVALID_HANDLE or NULL_POINTER. */
MGPU_API mgpu_status mgpu_get_stream(const mgpu_handle *handle, void **stream);

/* -------------------------------------------------------------------- GEMM */

/*
 * D = alpha * op(A) * op(B) + beta * C, written over C, with the semantics of
 * cuBLAS's cublasGemmEx: column-major storage, op(A) is m x k, op(B) is k x n,
 * C is m x n.
 *
 *   a_type, b_type: MGPU_DTYPE_F16 or MGPU_DTYPE_BF16, equal to each other.
 *   c_type:         MGPU_DTYPE_F16, MGPU_DTYPE_BF16 or MGPU_DTYPE_F32.
 *   Products are accumulated in fp32; alpha and beta are host floats.
 *   lda >= max(1, transa == N ? m : k); ldb >= max(1, transb == N ? k : n);
 *   ldc >= max(1, m).
 *   When beta == 0, C is not read (it may hold NaN). When k == 0, D = beta * C.
 *   When m == 0 or n == 0 nothing is done and SUCCESS is returned.
 *   m, n, k <= 2^31 - 1.
 *
 * Any leading dimension and any element-aligned pointer are accepted. The
 * tensor-core path needs 16-byte aligned A and B and leading dimensions that
 * are multiples of 8 elements; other inputs take a slower exact path (see
 * docs/api.md).
 *
 * Returns SUCCESS, INVALID_HANDLE, NULL_POINTER, INVALID_SIZE, INVALID_LD,
 * INVALID_VALUE, UNSUPPORTED_DTYPE, DTYPE_MISMATCH, WRONG_DEVICE,
 * ARCH_MISMATCH, DRIVER_ERROR or LAUNCH_FAILED.
 */
MGPU_API mgpu_status mgpu_gemm(mgpu_handle *handle, mgpu_operation transa, mgpu_operation transb,
                               int64_t m, int64_t n, int64_t k, const float *alpha,
                               const void *A, mgpu_dtype a_type, int64_t lda,
                               const void *B, mgpu_dtype b_type, int64_t ldb,
                               const float *beta, void *C, mgpu_dtype c_type, int64_t ldc);

/*
 * batch_count independent products, as cublasGemmStridedBatchedEx: matrix i
 * of each operand starts stride elements after matrix i - 1. Strides may be 0
 * for A and B (broadcast); stride_c must keep the C matrices apart
 * (stride_c >= ldc * n) unless batch_count == 1. batch_count == 0 does nothing.
 *
 * Returns what mgpu_gemm returns, plus INVALID_SIZE for a negative
 * batch_count and INVALID_LD for negative or overlapping strides.
 */
MGPU_API mgpu_status mgpu_gemm_strided_batched(mgpu_handle *handle, mgpu_operation transa,
                                               mgpu_operation transb, int64_t m, int64_t n, int64_t k,
                                               const float *alpha,
                                               const void *A, mgpu_dtype a_type, int64_t lda, int64_t stride_a,
                                               const void *B, mgpu_dtype b_type, int64_t ldb, int64_t stride_b,
                                               const float *beta,
                                               void *C, mgpu_dtype c_type, int64_t ldc, int64_t stride_c,
                                               int64_t batch_count);

#ifdef __cplusplus
}
#endif

#endif /* MGPUKERNELS_H */
