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
 *   mgpu_gemm           fp16/bf16 in, fp32 accum,    same (persistent tcgen05 kernel,
 *                       fp16/bf16/fp32 out, any      CTA pairs; any layout, alignment,
 *                       layout, alignment, batch;    batch; split-K). NOT YET RUN ON
 *                       split-K for few tiles        HARDWARE: compiled and SASS-checked only
 *   mgpu_gemm_ex        + fp8 (e4m3/e5m2, TN) in,    same (tcgen05 kind::f8f6f4, epilogue
 *                       scales, bias, ReLU/GELU      fused in the epilogue warpgroup).
 *                                                    NOT YET RUN ON HARDWARE
 *   mgpu_gather         any element size (1/2/4/8),  same kernels, plus TMA gather4 for
 *                       int32/int64 indices          16-byte aligned rows; gather4 not
 *                                                    yet run on hardware
 *   mgpu_scatter_add    fp32/bf16/fp16, atomic or    same kernels
 *                       deterministic (sorted)
 *   mgpu_attention_fwd  fp16/bf16, head dim 64, 96,  same features, paged K/V cache and
 *                       128, 192, 256; causal,       seqused_k included (FA4-style tcgen05
 *                       windows, soft-cap, GQA,      kernel, S / P / O in tensor memory),
 *                       varlen, LSE; decode (GQA     except the decode planning (no GQA
 *                       packing, key splits),        packing, no key splits: one unsplit
 *                       paged K/V cache,             CTA per query tile) and e4m3 Q/K/V
 *                       seqused_k; e4m3 Q/K/V        (NOT_SUPPORTED). NOT YET RUN ON
 *                       with descales (d 128)        HARDWARE: compiled and SASS-checked only
 *   mgpu_kv_cache_append  16-bit K/V rows into a     same kernel (architecture-neutral).
 *                       paged or contiguous cache    NOT YET RUN ON HARDWARE
 *   mgpu_attention_bwd  as the forward, plus a       same head dims (64..256), all
 *                       deterministic mode           features and the deterministic mode
 *                                                    (FA4-style tcgen05 kernel, S^T / dP^T /
 *                                                    dK / dV in tensor memory; 192, 256:
 *                                                    head dim split over two CTAs). NOT YET
 *                                                    RUN ON HARDWARE: compiled and
 *                                                    SASS-checked only
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
    MGPU_STATUS_INVALID_HANDLE = 1,     /* NULL, destroyed, or not a handle from mgpu_create */
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
    MGPU_STATUS_INDEX_OUT_OF_RANGE = 16,/* an index was outside the table (mgpu_check_index_errors) */
    MGPU_STATUS_INTERNAL_ERROR = 17,    /* a bug in the library; please report it */
    MGPU_STATUS_INSUFFICIENT_WORKSPACE = 18 /* the handle's workspace is smaller than the call needs */
} mgpu_status;

/* A static English name for a status ("MGPU_STATUS_INVALID_LD"); never NULL. */
MGPU_API const char *mgpu_status_string(mgpu_status status);

/* What the last failing call on this thread found wrong; "" when none failed. */
MGPU_API const char *mgpu_last_error_message(void);

/* ------------------------------------------------------------------- types */

typedef enum mgpu_dtype {
    MGPU_DTYPE_F16 = 0,
    MGPU_DTYPE_BF16 = 1,
    MGPU_DTYPE_F32 = 2,
    MGPU_DTYPE_E4M3 = 3, /* fp8: 1 sign, 4 exponent, 3 mantissa bits (CUDA_R_8F_E4M3); GEMM inputs only */
    MGPU_DTYPE_E5M2 = 4  /* fp8: 1 sign, 5 exponent, 2 mantissa bits (CUDA_R_8F_E5M2); GEMM inputs only */
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
 * retained and made current, as the CUDA runtime would; when the current
 * context is a device's primary context, the handle retains it as well, so
 * it lives as long as the handle. The handle starts on the default (NULL)
 * stream.
 *
 * The handle allocates here, once, everything its calls may need on the
 * device: a few counters and the index error word (zeroed before this call
 * returns), and a default workspace of 32 MiB (see mgpu_set_workspace).
 * After that no operation allocates, synchronises or otherwise breaks CUDA
 * graph capture, so every operation may be captured into a graph and
 * replayed. The one exception is a kernel image's first load, which happens
 * at the first call that needs it: make each call once outside capture (a
 * warm-up) before capturing it.
 *
 * Returns SUCCESS, NULL_POINTER (out is NULL), NO_DRIVER, NO_DEVICE,
 * DRIVER_ERROR or OUT_OF_MEMORY. On failure *out is set to NULL.
 */
MGPU_API mgpu_status mgpu_create(mgpu_handle **out);

/* Releases a handle, its device memory (not a workspace given with
 * mgpu_set_workspace) and its reference to a primary context; when that was
 * the context's last reference and the context is current on the calling
 * thread, it is unset there. NULL is accepted and does nothing.
 *
 * Returns SUCCESS, or INVALID_HANDLE for a pointer that is no live handle
 * (destroyed already, or never returned by mgpu_create); nothing is freed
 * then. */
MGPU_API mgpu_status mgpu_destroy(mgpu_handle *handle);

/*
 * The workspace: device memory the handle lends its calls for split-K
 * partial sums and for aligned copies of GEMM operands that TMA cannot read.
 * The handle allocates 32 MiB at mgpu_create. A call whose best plan needs
 * more takes a plan that fits instead (fewer or no split-K slices; an
 * unaligned operand then goes through the slower kernel that needs no copy)
 * and MGPU_LOG=1 says so; a workspace never makes a GEMM fail. The
 * attention backward takes its scratch from it too and has no smaller plan:
 * with less than mgpu_attention_bwd_workspace_size says, it returns
 * MGPU_STATUS_INSUFFICIENT_WORKSPACE and writes nothing.
 *
 * mgpu_set_workspace: the handle uses the caller's device memory from now on
 * (as cublasSetWorkspace): `workspace` 256-byte aligned, `bytes` long, owned
 * and freed by the caller, who keeps it alive and unused by other work while
 * calls queued through this handle run. NULL with bytes == 0 leaves the
 * handle without a workspace. A workspace the handle had allocated is freed
 * after waiting for the handle's stream.
 *
 * mgpu_reserve_workspace: makes sure the handle has at least `bytes` of
 * workspace; when it has less, the handle allocates `bytes` (synchronously),
 * waits for its stream and frees its old workspace.
 *
 * Both wait for the handle's stream and (may) allocate: call them outside
 * CUDA graph capture, as with cuBLAS.
 *
 * mgpu_set_workspace returns SUCCESS, INVALID_HANDLE, NULL_POINTER
 * (workspace NULL with bytes > 0), INVALID_VALUE (workspace not 256-byte
 * aligned), WRONG_DEVICE, NO_DRIVER or DRIVER_ERROR (waiting for the stream
 * or freeing the old workspace failed). mgpu_reserve_workspace returns
 * SUCCESS, INVALID_HANDLE, WRONG_DEVICE, NO_DRIVER, OUT_OF_MEMORY or
 * DRIVER_ERROR.
 */
MGPU_API mgpu_status mgpu_set_workspace(mgpu_handle *handle, void *workspace, size_t bytes);
MGPU_API mgpu_status mgpu_reserve_workspace(mgpu_handle *handle, size_t bytes);

/* Sets the stream (a CUstream or cudaStream_t; NULL for the legacy default
 * stream) on which later calls queue work. Returns SUCCESS or INVALID_HANDLE.
 *
 * Work queued through one handle must not run concurrently: some kernels
 * (split-K GEMM, causal attention) share small counters that the handle owns
 * and that each launch leaves at zero for the next. Switching streams is fine
 * once the work queued on the old one is ordered before the new one (or has
 * finished); for concurrent streams use one handle each, as with a cuBLAS
 * handle's workspace. */
MGPU_API mgpu_status mgpu_set_stream(mgpu_handle *handle, void *stream);

/* The stream set by mgpu_set_stream. Returns SUCCESS, INVALID_HANDLE or NULL_POINTER. */
MGPU_API mgpu_status mgpu_get_stream(const mgpu_handle *handle, void **stream);

/* -------------------------------------------------------------------- GEMM */

/*
 * D = alpha * op(A) * op(B) + beta * C, written over C, with the semantics of
 * cuBLAS's cublasGemmEx: column-major storage, op(A) is m x k, op(B) is k x n,
 * C is m x n.
 *
 *   a_type, b_type: MGPU_DTYPE_F16 or MGPU_DTYPE_BF16, equal to each other;
 *                   or fp8 (MGPU_DTYPE_E4M3 / MGPU_DTYPE_E5M2, any pair) with
 *                   transa = T and transb = N, as in mgpu_gemm_ex without scales.
 *   c_type:         MGPU_DTYPE_F16, MGPU_DTYPE_BF16 or MGPU_DTYPE_F32.
 *   Products are accumulated in fp32; alpha and beta are host floats.
 *   lda >= max(1, transa == N ? m : k); ldb >= max(1, transb == N ? k : n);
 *   ldc >= max(1, m).
 *   When beta == 0, C is not read (it may hold NaN). When k == 0, D = beta * C.
 *   When m == 0 or n == 0 nothing is done and SUCCESS is returned.
 *   When alpha == 0, A and B are not read (as reference BLAS; a NaN in them
 *   does not reach D): D = beta * C. cuBLAS 13 differs here: it multiplies,
 *   so NaN or Inf in A or B gives NaN in D.
 *   Limits: m, n, k <= 2^31 - 1; leading dimensions <= 2^48; each of A, B
 *   and C spans at most 2^56 bytes from its first to its last element (over
 *   all batches). Nothing else limits the sizes.
 *
 * Any leading dimension and any element-aligned pointer are accepted. The
 * tensor-core kernels read A and B through TMA, which needs 16-byte aligned
 * bases and leading dimensions that are multiples of 16 bytes; other
 * operands are first copied into an aligned workspace (see docs/api.md).
 *
 * Returns SUCCESS, INVALID_HANDLE, NULL_POINTER, INVALID_SIZE, INVALID_LD,
 * INVALID_VALUE, UNSUPPORTED_DTYPE, DTYPE_MISMATCH, WRONG_DEVICE,
 * ARCH_MISMATCH, NOT_SUPPORTED (fp8 in a layout other than TN, or on a
 * device other than compute capability 9.0), NO_DRIVER, DRIVER_ERROR or
 * LAUNCH_FAILED; INSUFFICIENT_WORKSPACE only when MGPU_FORCE_VARIANT forces
 * a kernel whose operand copies do not fit the handle's workspace (without
 * it, a small workspace only makes the plan slower: see mgpu_set_workspace).
 * Checks run in this order: the handle, then the arguments, then the device.
 */
MGPU_API mgpu_status mgpu_gemm(mgpu_handle *handle, mgpu_operation transa, mgpu_operation transb,
                               int64_t m, int64_t n, int64_t k, const float *alpha,
                               const void *A, mgpu_dtype a_type, int64_t lda,
                               const void *B, mgpu_dtype b_type, int64_t ldb,
                               const float *beta, void *C, mgpu_dtype c_type, int64_t ldc);

/*
 * Bytes of handle workspace the preferred plan of this mgpu_gemm call wants
 * (0 when it wants none), as cublasLt's workspace query: the aligned copies
 * of operands TMA cannot read (an A or B whose base is not 16-byte aligned
 * or whose leading dimension is not a multiple of 16 bytes) and the fp32
 * split-K partials of shapes with too few tiles for the device. The
 * arguments are mgpu_gemm's without alpha, beta and the data: pointers are
 * not read, but their alignment decides the copies, so pass the ones the
 * call will use. alpha is taken as nonzero (alpha == 0 needs nothing).
 * MGPU_FORCE_VARIANT / MGPU_FORCE_SPLIT_K count as they count for the call.
 * Call mgpu_reserve_workspace(handle, bytes) (outside graph capture) when
 * the handle has less; a call that does not get it still runs, on a slower
 * plan (see mgpu_set_workspace). For strided batches, use
 * mgpu_gemm_ex_workspace_size with batch_count in the descriptor.
 *
 * Returns SUCCESS, INVALID_HANDLE, NULL_POINTER (bytes, or a NULL A, B or
 * C as mgpu_gemm), the argument statuses of mgpu_gemm (INVALID_SIZE,
 * INVALID_LD, INVALID_VALUE, UNSUPPORTED_DTYPE, DTYPE_MISMATCH), and from
 * the plan ARCH_MISMATCH or NOT_SUPPORTED as mgpu_gemm would. Checks run in
 * mgpu_gemm's order. *bytes is written only on SUCCESS.
 */
MGPU_API mgpu_status mgpu_gemm_workspace_size(mgpu_handle *handle, mgpu_operation transa, mgpu_operation transb,
                                              int64_t m, int64_t n, int64_t k,
                                              const void *A, mgpu_dtype a_type, int64_t lda,
                                              const void *B, mgpu_dtype b_type, int64_t ldb,
                                              const void *C, mgpu_dtype c_type, int64_t ldc, size_t *bytes);

/*
 * batch_count independent products, as cublasGemmStridedBatchedEx: matrix i
 * of each operand starts stride elements after matrix i - 1. Strides may be 0
 * for A and B (broadcast); stride_c must keep the C matrices apart
 * (stride_c >= ldc * n) unless batch_count == 1. batch_count == 0 does nothing.
 * Limits: batch_count <= 2^31 - 1, strides <= 2^48 elements.
 *
 * Returns what mgpu_gemm returns, plus INVALID_SIZE for a batch_count that
 * is negative or above 2^31 - 1, and INVALID_LD for negative, overlapping
 * or too large strides.
 */
MGPU_API mgpu_status mgpu_gemm_strided_batched(mgpu_handle *handle, mgpu_operation transa,
                                               mgpu_operation transb, int64_t m, int64_t n, int64_t k,
                                               const float *alpha,
                                               const void *A, mgpu_dtype a_type, int64_t lda, int64_t stride_a,
                                               const void *B, mgpu_dtype b_type, int64_t ldb, int64_t stride_b,
                                               const float *beta,
                                               void *C, mgpu_dtype c_type, int64_t ldc, int64_t stride_c,
                                               int64_t batch_count);

/*
 * The extended GEMM, as cuBLASLt's cublasLtMatmul with its scale pointers and
 * bias / activation epilogues:
 *
 *   D = scale_d * act(alpha * scale_a * scale_b * op(A) * op(B) + beta * C + bias)
 *
 * written over C (column-major, cuBLAS conventions, strided batches as in
 * mgpu_gemm_strided_batched). Everything of mgpu_gemm and
 * mgpu_gemm_strided_batched is available (they are this call with no scales,
 * no bias and no activation), plus:
 *
 *   fp8 inputs: a_type and b_type each MGPU_DTYPE_E4M3 or MGPU_DTYPE_E5M2
 *     (mixed pairs allowed), only with transa = MGPU_OP_T and
 *     transb = MGPU_OP_N ("TN": both operands K-major, the one fp8 layout
 *     cuBLASLt takes on Hopper); other layouts get NOT_SUPPORTED. c_type is
 *     F16, BF16 or F32 (fp8 output is not supported). Products are summed in
 *     fp32: on compute capability 9.0 the tensor cores' fp8 sums are added
 *     into a separate fp32 accumulator every 128 elements of K, so long K
 *     stays accurate; on 10.0 the tensor cores accumulate in fp32 tensor
 *     memory over the whole of K.
 *     fp16/bf16 A and B must still have equal dtypes.
 *   scale_a, scale_b, scale_d: DEVICE pointers to one float each, read when
 *     the kernel runs (like cuBLASLt's CUBLASLT_MATMUL_DESC_{A,B,D}_SCALE_POINTER,
 *     so scales computed on the GPU need no host round trip); NULL means 1.
 *     Any input dtype may use them. scale_d multiplies the final value, after
 *     the activation.
 *   bias: device vector added after alpha * ... + beta * C and before the
 *     activation. MGPU_BIAS_PER_ROW: bias[i] is added to row i of D (length
 *     m; cuBLASLt's convention); MGPU_BIAS_PER_COLUMN: bias[j] to column j
 *     (length n). bias_type is c_type or MGPU_DTYPE_F32. Batch b reads
 *     bias + b * bias_batch_stride (elements; 0: one bias for every batch).
 *   activation: MGPU_ACTIVATION_RELU (max(x, 0)) or MGPU_ACTIVATION_GELU
 *     (tanh approximation, as CUBLASLT_EPILOGUE_GELU:
 *     0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))).
 *
 * alpha and beta are host floats in the descriptor. The descriptor carries
 * its size in its first field: start from MGPU_GEMM_DESC_INIT (alpha 1,
 * beta 0, batch_count 1, no scales, no bias, no activation), then set fields.
 *
 * Alignment: any element-aligned pointer and any leading dimension are
 * accepted, as for mgpu_gemm (fp8 operands whose leading dimension or base
 * is not a multiple of 16 bytes are first packed into an aligned
 * workspace). bias must be aligned to its element, the scales to 4 bytes.
 *
 * Support: compute capability 9.0 and 10.0 run everything above (the 10.0
 * kernels are compiled and checked, not yet run on hardware).
 *
 * Returns what mgpu_gemm_strided_batched returns, plus NULL_POINTER (desc),
 * INVALID_VALUE (struct_size; activation or bias_mode not one of their
 * enums; bias_type not an mgpu_dtype; bias or a scale pointer misaligned),
 * DTYPE_MISMATCH (fp8 paired with a 16-bit operand), UNSUPPORTED_DTYPE (fp8
 * output; bias_type neither c_type nor F32), INVALID_LD (bias_batch_stride
 * negative or above 2^48) and
 * NOT_SUPPORTED (fp8 in a layout other than TN; MGPU_FORCE_VARIANT naming a
 * variant that cannot do the call).
 */

typedef enum mgpu_activation {
    MGPU_ACTIVATION_NONE = 0,
    MGPU_ACTIVATION_RELU = 1,
    MGPU_ACTIVATION_GELU = 2  /* tanh approximation, as CUBLASLT_EPILOGUE_GELU */
} mgpu_activation;

typedef enum mgpu_bias_mode {
    MGPU_BIAS_PER_ROW = 0,    /* length m: bias[i] added to every element of row i */
    MGPU_BIAS_PER_COLUMN = 1  /* length n: bias[j] added to every element of column j */
} mgpu_bias_mode;

typedef struct mgpu_gemm_desc {
    size_t struct_size;            /* sizeof(mgpu_gemm_desc), set by MGPU_GEMM_DESC_INIT */
    mgpu_operation transa, transb;
    int64_t m, n, k;
    float alpha, beta;             /* host values */
    const void *A;                 /* device */
    mgpu_dtype a_type;
    int64_t lda, stride_a;         /* elements; stride_a used when batch_count > 1 (0: broadcast) */
    const void *B;                 /* device */
    mgpu_dtype b_type;
    int64_t ldb, stride_b;
    void *C;                       /* device; D is written over it */
    mgpu_dtype c_type;
    int64_t ldc, stride_c;
    int64_t batch_count;           /* 1 for a single product */
    const float *scale_a;          /* device pointer to one float, or NULL (1) */
    const float *scale_b;          /* device pointer to one float, or NULL (1) */
    const float *scale_d;          /* device pointer to one float, or NULL (1) */
    const void *bias;              /* device vector, or NULL (no bias) */
    mgpu_dtype bias_type;          /* c_type or MGPU_DTYPE_F32 */
    mgpu_bias_mode bias_mode;
    int64_t bias_batch_stride;     /* elements between the biases of consecutive batches; 0: shared */
    mgpu_activation activation;
} mgpu_gemm_desc;

#define MGPU_GEMM_DESC_INIT                                                                                  \
    {sizeof(mgpu_gemm_desc), MGPU_OP_N, MGPU_OP_N, 0, 0, 0, 1.0f, 0.0f, NULL, MGPU_DTYPE_BF16, 0, 0, NULL,   \
     MGPU_DTYPE_BF16, 0, 0, NULL, MGPU_DTYPE_BF16, 0, 0, 1, NULL, NULL, NULL, NULL, MGPU_DTYPE_F32,           \
     MGPU_BIAS_PER_ROW, 0, MGPU_ACTIVATION_NONE}

/* D = scale_d * act(alpha * scale_a * scale_b * op(A) op(B) + beta * C + bias)
 * as described above the mgpu_activation enum; statuses are listed there. */
MGPU_API mgpu_status mgpu_gemm_ex(mgpu_handle *handle, const mgpu_gemm_desc *desc);

/* Bytes of handle workspace the preferred plan of mgpu_gemm_ex(handle,
 * desc) wants (0: none), as mgpu_gemm_workspace_size, for any batch_count
 * and the descriptor's alpha (0 needs nothing). Returns SUCCESS,
 * INVALID_HANDLE, NULL_POINTER (desc or bytes), what mgpu_gemm_ex returns
 * for the descriptor before it launches, and INVALID_SIZE when the need
 * would exceed 2^63 bytes. *bytes is written only on SUCCESS. */
MGPU_API mgpu_status mgpu_gemm_ex_workspace_size(mgpu_handle *handle, const mgpu_gemm_desc *desc, size_t *bytes);

/* ------------------------------------------------------- gather / scatter */

/*
 * Row gather and its inverse (see docs/gather.md):
 *
 *   mgpu_gather:       dst[i, :]         = src[index[i], :]     0 <= i < n_indices
 *   mgpu_scatter_add:  dst[index[i], :] += src[i, :]            0 <= i < n_indices
 *
 * Matrices are row-major with an explicit distance in BYTES from one row to
 * the next (the "row stride"), so a row may be a slice of a wider row. The
 * indexed side is the "table" (src for gather, dst for scatter_add); its row
 * count bounds the indices.
 *
 * Out-of-range indices (index < 0 or index >= table rows) never cause an
 * out-of-bounds access: gather writes zeros to dst row i, scatter_add skips
 * src row i, and both set a flag in a device word owned by the handle. The
 * call itself still returns SUCCESS (it cannot know without waiting for the
 * GPU); call mgpu_check_index_errors() to learn about it.
 *
 * Descriptors carry their own size in their first field so that later
 * versions can add fields: start from the _INIT macro, then set the fields.
 */

typedef enum mgpu_index_type {
    MGPU_INDEX_I32 = 0, /* int32_t indices */
    MGPU_INDEX_I64 = 1  /* int64_t indices */
} mgpu_index_type;

typedef struct mgpu_gather_desc {
    size_t struct_size;         /* sizeof(mgpu_gather_desc), set by MGPU_GATHER_DESC_INIT */
    const void *src;            /* device: src_rows rows; may be NULL when src_rows == 0 */
    int64_t src_rows;           /* rows of src; indices must lie in [0, src_rows) */
    int64_t src_row_stride;     /* bytes from one src row to the next, >= row_elems * elem_size */
    void *dst;                  /* device: n_indices rows */
    int64_t dst_row_stride;     /* bytes from one dst row to the next, >= row_elems * elem_size */
    const void *index;          /* device: n_indices indices of index_type */
    mgpu_index_type index_type;
    int64_t n_indices;          /* rows to gather (rows of dst) */
    int64_t row_elems;          /* elements per row */
    int elem_size;              /* bytes per element: 1, 2, 4 or 8 (the bytes are copied verbatim) */
} mgpu_gather_desc;

#define MGPU_GATHER_DESC_INIT {sizeof(mgpu_gather_desc), NULL, 0, 0, NULL, 0, NULL, MGPU_INDEX_I32, 0, 0, 0}

/*
 * dst[i, :] = src[index[i], :] for 0 <= i < n_indices, copying row_elems
 * elements of elem_size bytes per row. Any alignment of src, dst and the
 * strides is accepted; 16-byte aligned addresses, strides and row lengths
 * take the fast kernels (see docs/gather.md for which kernel runs when).
 * src and dst must occupy disjoint address ranges, and neither may overlap
 * the index array. Bytes of dst between rows (stride padding) are never
 * written. n_indices == 0 or row_elems == 0 does nothing and returns SUCCESS
 * whatever the strides and pointers (index_type and elem_size are checked).
 * An out-of-range index gives a zero dst row and is reported by
 * mgpu_check_index_errors(). Limits: sizes, row counts and row strides
 * are at most 2^48; src and dst each span at most 2^56 bytes from their
 * first to their last byte.
 *
 * Returns SUCCESS, INVALID_HANDLE, NULL_POINTER (desc, or a needed pointer),
 * INVALID_VALUE (struct_size, index_type, elem_size not 1/2/4/8, overlapping
 * arrays), INVALID_SIZE (negative or too large sizes or spans), INVALID_LD
 * (a row stride smaller than a row, or too large), WRONG_DEVICE, NO_DRIVER,
 * NO_DEVICE, ARCH_MISMATCH, NOT_SUPPORTED (MGPU_FORCE_VARIANT names a gather
 * variant that cannot do this call), DRIVER_ERROR or LAUNCH_FAILED.
 */
MGPU_API mgpu_status mgpu_gather(mgpu_handle *handle, const mgpu_gather_desc *desc);

typedef enum mgpu_scatter_mode {
    /* Atomic additions in the destination's precision, any index order. The
     * order of additions to one row is unspecified, so sums over duplicate
     * indices may differ in rounding from run to run (fp32 included). */
    MGPU_SCATTER_ATOMIC = 0,
    /* Deterministic: index[] must be sorted ascending. Each destination row
     * is read once, its run of duplicate indices summed in fp32 in index
     * order and written once: bitwise reproducible. Unsorted input gives an
     * undefined result and is reported by mgpu_check_index_errors(). */
    MGPU_SCATTER_SORTED = 1
} mgpu_scatter_mode;

typedef struct mgpu_scatter_add_desc {
    size_t struct_size;         /* sizeof(mgpu_scatter_add_desc), set by MGPU_SCATTER_ADD_DESC_INIT */
    const void *src;            /* device: n_indices rows */
    int64_t src_row_stride;     /* bytes, >= row_elems * element size */
    void *dst;                  /* device: dst_rows rows, updated in place; may be NULL when dst_rows == 0 */
    int64_t dst_rows;           /* rows of dst; indices must lie in [0, dst_rows) */
    int64_t dst_row_stride;     /* bytes, >= row_elems * element size */
    const void *index;          /* device: n_indices indices of index_type */
    mgpu_index_type index_type;
    int64_t n_indices;          /* rows of src */
    int64_t row_elems;          /* elements per row */
    mgpu_dtype dtype;           /* of src and dst: MGPU_DTYPE_F32, BF16 or F16 */
    mgpu_scatter_mode mode;
} mgpu_scatter_add_desc;

#define MGPU_SCATTER_ADD_DESC_INIT \
    {sizeof(mgpu_scatter_add_desc), NULL, 0, NULL, 0, 0, NULL, MGPU_INDEX_I32, 0, 0, MGPU_DTYPE_F32, MGPU_SCATTER_ATOMIC}

/*
 * dst[index[i], :] += src[i, :] for 0 <= i < n_indices, in place. Both
 * matrices hold `dtype`; src, dst and both strides must be multiples of the
 * element size. Atomic mode accumulates in dst's precision (bf16/fp16 round
 * at every addition); sorted mode sums each run in fp32 and rounds once.
 * src, dst and index must not overlap. n_indices == 0 or row_elems == 0
 * does nothing. Out-of-range indices skip their src row and are reported by
 * mgpu_check_index_errors().
 *
 * Returns what mgpu_gather returns, with UNSUPPORTED_DTYPE for a dtype other
 * than F32/BF16/F16, and INVALID_VALUE for an unknown mode or pointers or
 * strides not aligned to the element size.
 */
MGPU_API mgpu_status mgpu_scatter_add(mgpu_handle *handle, const mgpu_scatter_add_desc *desc);

/*
 * Reports index problems of every mgpu_gather / mgpu_scatter_add queued on
 * this handle since the last check, then clears the record. It synchronises
 * the handle's current stream first (work queued through this handle on a
 * stream set earlier must be finished by the caller).
 *
 * Returns SUCCESS (no problem, or no gather / scatter_add since the last
 * check), INDEX_OUT_OF_RANGE (some index was < 0 or >= the table's rows: the
 * affected gather rows were zero-filled, scatter rows skipped), INVALID_VALUE
 * (a MGPU_SCATTER_SORTED call got indices that were not sorted ascending; its
 * result is undefined; takes precedence), INVALID_HANDLE, WRONG_DEVICE or
 * DRIVER_ERROR (the stream reported an error of earlier work).
 */
MGPU_API mgpu_status mgpu_check_index_errors(mgpu_handle *handle);

/* ------------------------------------------------------- attention forward */

/*
 * Flash attention forward (see docs/attention.md). For each sequence b,
 * query head h and query row i:
 *
 *   O[b, i, h, :] = sum_j softmax_j(s(i, j)) V[b, j, h / (heads_q / heads_kv), :]
 *   s(i, j)       = softmax_scale * <Q[b, i, h, :], K[b, j, h / (heads_q / heads_kv), :]>
 *                   (with softcap > 0: softcap * tanh(s / softcap))
 *
 * over the keys j the mask allows. Masks are aligned to the bottom-right
 * corner (the FlashAttention convention): with diag = seqlen_k - seqlen_q of
 * the sequence, key j is allowed for row i when
 *   (window_right < 0 or j <= i + diag + window_right) and
 *   (window_left  < 0 or j >= i + diag - window_left);
 * causal is window_right = 0 (a smaller non-negative window_right is kept).
 * A row that no key is allowed for gets O = 0 and LSE = +infinity.
 *
 * Layout. Q, K, V and O hold `dtype` in (batch, seq, head, dim) order, the
 * dim contiguous, with element strides per tensor. Q and O have heads_q
 * heads, K and V heads_kv. All-zero strides mean the dense layout:
 * {seq * heads * head_dim, heads * head_dim, head_dim}.
 *
 * Variable length (cu_seqlens_q != NULL): the sequences are packed one after
 * another along the seq dimension, Q and O with total_q rows, K and V with
 * total_k rows; cu_seqlens_q and cu_seqlens_k are int32 device arrays of
 * batch + 1 offsets, non-decreasing, starting at 0 and ending at total_q /
 * total_k (both given, or neither). seqlen_q and seqlen_k are then the
 * longest sequence of each (no sequence may be longer); batch strides are
 * ignored. The offsets are read by the kernel, not checked.
 *
 * LSE (lse != NULL): fp32, natural log, log(sum_j exp(s(i, j))) over the
 * allowed keys, the layout the backward pass reads:
 *   fixed length  lse[(b * heads_q + h) * seqlen_q + i]        [batch][heads_q][seqlen_q]
 *   varlen        lse[h * total_q + cu_seqlens_q[b] + i]        [heads_q][total_q]
 *
 * Inference. seqused_k (fixed length only): sequence b attends to its first
 * seqused_k[b] keys (0 allowed: O = 0, LSE = +infinity); seqlen_k is their
 * upper bound. Decode steps (few query rows) are planned differently, with
 * the same results: the query heads sharing a KV head are packed into one
 * tile (each K/V byte is read once per sequence), and when the tiles cannot
 * fill the GPU the keys are split across CTAs whose partial results a
 * second small kernel merges in a fixed order (deterministic). Splitting
 * uses the handle's workspace, (head_dim + 1) * 4 bytes per query row and
 * split; with less workspace the call uses fewer splits (never fails).
 * MGPU_LOG=1 prints the choice; MGPU_FORCE_PACK_GQA=0/1 and
 * MGPU_FORCE_NUM_SPLITS=n force it (tests and benchmarks).
 *
 * Paged K/V (block_table != NULL; fixed-length queries, cu_seqlens NULL):
 * k and v point to caches of num_pages pages, each page_size rows of
 * heads_kv heads: element (page, row, head, dim) at
 *   page * k_strides.batch + row * k_strides.seq + head * k_strides.head + dim
 * (all-zero strides: dense [num_pages][page_size][heads_kv][head_dim]).
 * Key j of sequence b is row j % page_size of page
 * block_table[b * max_blocks_per_seq + j / page_size]; seqused_k gives each
 * sequence's length (required), seqlen_k their maximum, at most
 * max_blocks_per_seq * page_size. page_size is a positive multiple of 16
 * (engines use 16 ... 256; a page of 128 or more rows moves a key block in
 * one TMA box for head dims up to 128). Entries must lie in [0, num_pages)
 * (read by the kernel, not checked); the table holds at most 2^31 - 1 of
 * them (batch * max_blocks_per_seq). Rows of a cache past a sequence's
 * length may hold anything (NaN included): they are masked, and their V
 * rows zeroed in shared memory before use.
 * mgpu_kv_cache_append writes new rows into such caches. seqused_k, paged
 * caches and mgpu_kv_cache_append run on compute capability 9.0 and 10.0
 * (10.0 not yet run on hardware); the decode planning (packing, splits) is
 * 9.0's only: on 10.0 a decode step runs unpacked and unsplit, one CTA per
 * query tile (same results, no workspace used).
 *
 * fp8 (qkv_fp8 = 1; compute capability 9.0): Q, K and V hold e4m3
 * (MGPU_DTYPE_E4M3, one byte per element), O holds dtype (F16 or BF16), the
 * softmax runs in fp32 (FlashAttention-3's fp8 forward). With descale
 * factors qd, kd, vd (the values the inputs were divided by when quantised)
 *   s(i, j) = softmax_scale * qd * kd * <Q[b, i, h, :], K[b, j, h_kv, :]>
 *   O[b, i, h, :] = vd * sum_j softmax_j(s(i, j)) V[b, j, h_kv, :]
 * (soft-cap on s as above; the LSE is that of these s). Each factor is
 * read from its fp32 device array at [b * descale_batch_stride +
 * h_kv * descale_head_stride], h_kv the query head's KV head (so 0, 0: one
 * factor per tensor; 0, 1: one per KV head; heads_kv, 1: per sequence and
 * KV head, FlashAttention-3's layout); a NULL array means 1. Strides are
 * in elements of Q, K and V (bytes), multiples of 16, bases 16-byte
 * aligned; O's rules are unchanged. fp8 calls take head_dim 128, fixed
 * length or varlen, causal, windows, soft-cap, GQA and LSE; paged K/V and
 * seqused_k get NOT_SUPPORTED, and they are never packed or split.
 * Probabilities enter P V as e4m3 (3 mantissa bits): O is accurate to a few
 * percent of its size, not to 16-bit rounding (docs/attention.md). Where
 * the handle's workspace holds a transposed copy of V (heads_kv x 128 x
 * (keys rounded up to 128) bytes, per sequence; varlen: heads_kv x 128 x
 * 128 (floor(total_k / 128) + batch)) and the call has at least 16 query
 * tiles of 128 rows per KV head, an fp8 call first writes that copy there
 * (one more kernel on the stream) and runs faster; otherwise it runs
 * without (same results). The default 32 MiB holds it for 32 MiB of V.
 *
 * Descriptors carry their size in their first field: start from
 * MGPU_ATTENTION_FWD_DESC_INIT, then set the fields.
 */

typedef struct mgpu_attention_strides {
    int64_t batch, seq, head;   /* elements; the dim stride is 1 */
} mgpu_attention_strides;

typedef struct mgpu_attention_fwd_desc {
    size_t struct_size;         /* sizeof(mgpu_attention_fwd_desc), set by MGPU_ATTENTION_FWD_DESC_INIT */
    int64_t batch;              /* sequences */
    int64_t seqlen_q, seqlen_k; /* per sequence; varlen: the longest */
    int64_t heads_q, heads_kv;  /* heads_q a multiple of heads_kv (GQA; MQA: heads_kv = 1) */
    int64_t head_dim;           /* 64, 96, 128, 192 or 256 */
    mgpu_dtype dtype;           /* of Q, K, V, O: MGPU_DTYPE_F16 or MGPU_DTYPE_BF16 */
    float softmax_scale;        /* > 0; 0 means 1 / sqrt(head_dim) */
    int causal;                 /* 0 or 1 */
    int window_left;            /* keys allowed left of the diagonal; -1: unbounded */
    int window_right;           /* keys allowed right of the diagonal; -1: unbounded */
    float softcap;              /* logit soft-cap; 0: off */
    const int32_t *cu_seqlens_q;/* device, batch + 1 offsets, or NULL (fixed length) */
    const int32_t *cu_seqlens_k;/* device, batch + 1 offsets, or NULL */
    int64_t total_q, total_k;   /* varlen only: rows of the packed Q / O and K / V */
    mgpu_attention_strides q_strides, k_strides, v_strides, o_strides;
    /* Inference (decode) fields; see "Paged K/V" above. All 0/NULL: off. */
    const int32_t *seqused_k;   /* device, batch key counts (each <= seqlen_k), or NULL */
    const int32_t *block_table; /* device, [batch][max_blocks_per_seq] page indices, or NULL */
    int64_t max_blocks_per_seq; /* entries per sequence of block_table */
    int64_t page_size;          /* rows per page: a positive multiple of 16 */
    int64_t num_pages;          /* pages of the K and V caches */
    /* fp8 inputs; see "fp8" above. All 0/NULL: off (Q, K, V hold dtype). */
    int qkv_fp8;                /* 1: Q, K, V hold MGPU_DTYPE_E4M3; dtype is O's (F16 or BF16) */
    const float *q_descale;     /* device fp32 factors, or NULL (1) */
    const float *k_descale;
    const float *v_descale;
    int64_t descale_batch_stride; /* elements: factor of (sequence b, KV head h) at */
    int64_t descale_head_stride;  /* [b * batch_stride + h * head_stride]; 0, 0: one per tensor */
} mgpu_attention_fwd_desc;

#define MGPU_ATTENTION_FWD_DESC_INIT                                                                      \
    {sizeof(mgpu_attention_fwd_desc), 0, 0, 0, 0, 0, 0, MGPU_DTYPE_BF16, 0.0f, 0, -1, -1, 0.0f, NULL, NULL, \
     0, 0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, NULL, NULL, 0, 0, 0, 0, NULL, NULL, NULL, 0, 0}

/* struct_size of descriptors made before the inference fields existed; the
 * library still takes them (the fields then read as 0 / NULL). */
#define MGPU_ATTENTION_FWD_DESC_SIZE_V1 offsetof(mgpu_attention_fwd_desc, seqused_k)
/* struct_size of descriptors made before the fp8 fields existed (taken too). */
#define MGPU_ATTENTION_FWD_DESC_SIZE_V2 offsetof(mgpu_attention_fwd_desc, qkv_fp8)

/*
 * O = attention(Q, K, V) as described above; q, k, v, o are device pointers,
 * lse a device pointer to fp32 or NULL. O and LSE are written, nothing else.
 * batch == 0 or seqlen_q == 0 (varlen: total_q == 0) does nothing.
 *
 * The kernels read Q, K and V through TMA and store O in 16-byte vectors, so
 * q, k, v and o must be 16-byte aligned and every batch / seq / head stride
 * a multiple of 8 elements; lse must be 4-byte aligned. Calls that break
 * these rules, or ask for another head dim, get NOT_SUPPORTED (with the rule
 * in the message): there is no slower fallback for attention yet.
 *
 * Returns SUCCESS, INVALID_HANDLE, NULL_POINTER (desc, or q / k / v / o when
 * there is work), INVALID_VALUE (struct_size, causal not 0/1, a window below
 * -1, softmax_scale or softcap negative or not finite, only one of the
 * cu_seqlens given, lse not 4-byte aligned), INVALID_SIZE (a negative size,
 * seqlen_k == 0 or head_dim <= 0 with queries to answer, heads_q not a
 * multiple of heads_kv, sizes above 2^31 - 1, more than 2^31 - 1 query
 * tiles: ceil(seqlen_q / 128) * heads_q * batch, dense strides (all-zero
 * strides) that overflow int64), INVALID_LD (a negative
 * stride, one >= 2^39 elements, or a zero stride along a dimension with
 * more than one entry),
 * UNSUPPORTED_DTYPE (dtype not F16/BF16), NOT_SUPPORTED (head dim, alignment
 * or stride rules above; MGPU_FORCE_VARIANT naming an attention variant that
 * cannot do this call; fp8 with a head dim other than 128, a paged cache or
 * seqused_k, or on compute capability 10.0), INVALID_VALUE also for fp8
 * fields: qkv_fp8 not 0/1, descale arrays without qkv_fp8 or not 4-byte
 * aligned, descale strides negative or overflowing, WRONG_DEVICE, NO_DRIVER,
 * NO_DEVICE, ARCH_MISMATCH
 * (devices other than compute capability 9.0 and 10.0), DRIVER_ERROR or
 * LAUNCH_FAILED.
 */
MGPU_API mgpu_status mgpu_attention_fwd(mgpu_handle *handle, const mgpu_attention_fwd_desc *desc, const void *q,
                                        const void *k, const void *v, void *o, float *lse);

/*
 * KV-cache append: writes seqlen_new new rows per sequence into K and V
 * caches laid out as for paged attention above. Row j of sequence b of
 * k_new / v_new ([batch][seqlen_new][heads_kv][head_dim] through
 * new_strides; all-zero: dense) goes to position pos = cache_seqlens[b] + j:
 * row pos % page_size of page block_table[b * max_blocks_per_seq +
 * pos / page_size]. With block_table NULL the caches are contiguous:
 * sequence b is page b (num_pages >= batch) of page_size rows. Positions
 * past the table (pos >= max_blocks_per_seq * page_size, or page_size
 * without a table) are skipped. cache_seqlens (int32, device) is read, not
 * updated: attend with seqused_k[b] = cache_seqlens[b] + seqlen_new.
 * One small kernel on the handle's stream; nothing allocated.
 */
typedef struct mgpu_kv_cache_append_desc {
    size_t struct_size;         /* sizeof(mgpu_kv_cache_append_desc), set by MGPU_KV_CACHE_APPEND_DESC_INIT */
    int64_t batch, seqlen_new, heads_kv, head_dim;
    mgpu_dtype dtype;           /* MGPU_DTYPE_F16 or MGPU_DTYPE_BF16 */
    const int32_t *cache_seqlens; /* device, batch entries: rows already in each sequence */
    const int32_t *block_table; /* device, [batch][max_blocks_per_seq], or NULL (contiguous) */
    int64_t max_blocks_per_seq;
    int64_t page_size;          /* rows per page (contiguous: per sequence) */
    int64_t num_pages;
    mgpu_attention_strides new_strides;   /* of k_new and v_new: {batch, seq, head} */
    mgpu_attention_strides cache_strides; /* of k_cache and v_cache: {page, row, head} */
} mgpu_kv_cache_append_desc;

#define MGPU_KV_CACHE_APPEND_DESC_INIT \
    {sizeof(mgpu_kv_cache_append_desc), 0, 0, 0, 0, MGPU_DTYPE_BF16, NULL, NULL, 0, 0, 0, {0, 0, 0}, {0, 0, 0}}

/*
 * Returns SUCCESS (also with nothing to write), INVALID_HANDLE,
 * NULL_POINTER (desc; the tensors or cache_seqlens when there is work),
 * INVALID_VALUE (struct_size; cache_seqlens / block_table not 4-byte
 * aligned), INVALID_SIZE (negative sizes, page_size < 1, num_pages < batch
 * without a table, sizes above 2^31 - 1), INVALID_LD (negative strides),
 * UNSUPPORTED_DTYPE, NOT_SUPPORTED (head_dim not a multiple of 8; bases or
 * strides not 16-byte aligned), ARCH_MISMATCH, DRIVER_ERROR or LAUNCH_FAILED.
 */
MGPU_API mgpu_status mgpu_kv_cache_append(mgpu_handle *handle, const mgpu_kv_cache_append_desc *desc,
                                          const void *k_new, const void *v_new, void *k_cache, void *v_cache);

/* ------------------------------------------------------ attention backward */

/*
 * Flash attention backward (see docs/attention.md): the gradients dQ, dK, dV
 * of the forward above, given its inputs Q, K, V, its output O, the LSE it
 * wrote and dO = dLoss/dO. With P the softmax probabilities of the forward
 * (recomputed from Q, K and the LSE, 0 where the mask removes a key):
 *
 *   dV[j]  = sum_i P[i, j] dO[i]                   D[i]  = <dO[i], O[i]>
 *   dP[i, j] = <dO[i], V[j]>                       dS[i, j] = P[i, j] (dP[i, j] - D[i])
 *   dQ[i]  = softmax_scale * sum_j dS'[i, j] K[j]  dK[j] = softmax_scale * sum_i dS'[i, j] Q[i]
 *
 * per sequence and query head, with dS' = dS, or with softcap > 0 dS times
 * the soft-cap's derivative 1 - tanh^2(s / softcap). dK and dV of a KV head
 * are summed over the heads_q / heads_kv query heads that share it (GQA,
 * MQA). Products accumulate in fp32; dQ, dK, dV are rounded once to dtype.
 *
 * The descriptor mirrors mgpu_attention_fwd_desc field for field (same
 * masks, scale, soft-cap, GQA, varlen and stride conventions; give the
 * values of the forward call) and adds strides for dO, dQ, dK, dV (all-zero:
 * dense, dO and dQ like Q, dK and dV like K) and `deterministic`:
 *
 *   deterministic = 0: dQ is summed over key blocks (and, for GQA, dK and dV
 *                      over the query heads of a group) with fp32 atomics,
 *                      whose order varies, so these may differ in their last
 *                      bits from run to run;
 *   deterministic = 1: the key blocks add into dQ in a fixed order: dQ, dK
 *                      and dV are bitwise identical from run to run (same
 *                      device, same build, same call), at a small cost in
 *                      speed.
 *
 * `lse` is the fp32 array the forward wrote for the same call (the layout
 * described above mgpu_attention_fwd_desc); rows whose LSE is +infinity (no
 * allowed key) get zero gradients. Start from MGPU_ATTENTION_BWD_DESC_INIT.
 */
typedef struct mgpu_attention_bwd_desc {
    size_t struct_size;         /* sizeof(mgpu_attention_bwd_desc), set by MGPU_ATTENTION_BWD_DESC_INIT */
    int64_t batch;              /* sequences */
    int64_t seqlen_q, seqlen_k; /* per sequence; varlen: the longest */
    int64_t heads_q, heads_kv;  /* heads_q a multiple of heads_kv (GQA; MQA: heads_kv = 1) */
    int64_t head_dim;           /* 64, 96, 128, 192 or 256 */
    mgpu_dtype dtype;           /* of Q, K, V, O, dO, dQ, dK, dV: MGPU_DTYPE_F16 or MGPU_DTYPE_BF16 */
    float softmax_scale;        /* > 0; 0 means 1 / sqrt(head_dim) */
    int causal;                 /* 0 or 1 */
    int window_left;            /* keys allowed left of the diagonal; -1: unbounded */
    int window_right;           /* keys allowed right of the diagonal; -1: unbounded */
    float softcap;              /* logit soft-cap; 0: off */
    const int32_t *cu_seqlens_q;/* device, batch + 1 offsets, or NULL (fixed length) */
    const int32_t *cu_seqlens_k;/* device, batch + 1 offsets, or NULL */
    int64_t total_q, total_k;   /* varlen only: rows of the packed Q / O / dO / dQ and K / V / dK / dV */
    mgpu_attention_strides q_strides, k_strides, v_strides, o_strides;
    mgpu_attention_strides do_strides, dq_strides, dk_strides, dv_strides;
    int deterministic;          /* 0 or 1, see above */
} mgpu_attention_bwd_desc;

#define MGPU_ATTENTION_BWD_DESC_INIT                                                                      \
    {sizeof(mgpu_attention_bwd_desc), 0, 0, 0, 0, 0, 0, MGPU_DTYPE_BF16, 0.0f, 0, -1, -1, 0.0f, NULL, NULL, \
     0, 0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, 0}

/*
 * Bytes of handle workspace mgpu_attention_bwd needs for this descriptor on
 * the handle's device (pointers are not looked at; sizes, dtype, head dim,
 * GQA, varlen and deterministic are). 0 for a call with nothing to do. Give
 * the handle at least this much with mgpu_reserve_workspace or
 * mgpu_set_workspace before the call. The need grows with
 * batch * heads_q * seqlen_q * head_dim (the fp32 dQ accumulator) and, with
 * heads_q > heads_kv, batch * heads_q * seqlen_k * head_dim (the per-query-
 * head dK and dV partials); docs/attention.md gives the formula.
 *
 * Returns SUCCESS, INVALID_HANDLE, NULL_POINTER (desc or bytes), the
 * descriptor statuses of mgpu_attention_bwd (INVALID_VALUE, INVALID_SIZE,
 * INVALID_LD, UNSUPPORTED_DTYPE, NOT_SUPPORTED), ARCH_MISMATCH, and
 * INVALID_SIZE when the workspace would exceed SIZE_MAX.
 */
MGPU_API mgpu_status mgpu_attention_bwd_workspace_size(mgpu_handle *handle, const mgpu_attention_bwd_desc *desc,
                                                       size_t *bytes);

/*
 * dQ, dK, dV of attention(Q, K, V) as described above. q, k, v, o, dout,
 * dq, dk, dv are device pointers of `dtype`; lse the forward's fp32 LSE
 * (device). dq, dk and dv are written in full (rows of key positions no
 * query sees get dK = dV = 0), nothing else of the caller's memory is; they
 * must not overlap the inputs or each other. Scratch comes from the
 * handle's workspace (mgpu_attention_bwd_workspace_size). The work is
 * queued on the handle's stream as three kernels (preprocess, main,
 * postprocess); it allocates nothing and may be captured in a CUDA graph.
 * batch == 0, heads_q == 0 or seqlen_q == 0 (varlen: total_q == 0) does
 * nothing, as for the forward call (dK and dV are then not written); in a
 * varlen batch, the keys of a sequence without queries get dK = dV = 0.
 *
 * The alignment rules of mgpu_attention_fwd apply to all eight tensors (16-
 * byte aligned bases, strides multiples of 8 elements; lse 4-byte aligned).
 *
 * Returns SUCCESS, INVALID_HANDLE, NULL_POINTER (desc, or a tensor or lse
 * when there is work), INVALID_VALUE (struct_size, causal or deterministic
 * not 0/1, a window below -1, softmax_scale or softcap negative or not
 * finite, only one of the cu_seqlens given, lse not 4-byte aligned),
 * INVALID_SIZE (a negative size, seqlen_k == 0 or head_dim <= 0 with queries
 * to answer, heads_q not a multiple of heads_kv, sizes above 2^31 - 1, a
 * workspace beyond SIZE_MAX), INVALID_LD (a negative stride, one >= 2^39
 * elements, or a zero stride along a dimension with more than one entry),
 * UNSUPPORTED_DTYPE (dtype not F16/BF16), NOT_SUPPORTED (head dim,
 * alignment or stride rules; MGPU_FORCE_VARIANT naming an attention backward
 * variant that cannot do this call), INSUFFICIENT_WORKSPACE (the handle's workspace is smaller
 * than mgpu_attention_bwd_workspace_size; nothing is written), WRONG_DEVICE,
 * NO_DRIVER, NO_DEVICE, ARCH_MISMATCH (devices other than compute
 * capability 9.0 and 10.0, or one the build has no kernels for), DRIVER_ERROR or
 * LAUNCH_FAILED. Every status but DRIVER_ERROR and LAUNCH_FAILED is
 * returned before anything is queued.
 */
MGPU_API mgpu_status mgpu_attention_bwd(mgpu_handle *handle, const mgpu_attention_bwd_desc *desc, const void *q,
                                        const void *k, const void *v, const void *o, const void *dout,
                                        const float *lse, void *dq, void *dk, void *dv);

#ifdef __cplusplus
}
#endif

#endif /* MGPUKERNELS_H */
