/*
 * Declarations shared by the runtime's files; nothing here is exported.
 * The library is built with -fvisibility=hidden, so only MGPU_API functions
 * of include/mgpukernels.h leave the shared object.
 */
#ifndef MGPU_SRC_INTERNAL_H
#define MGPU_SRC_INTERNAL_H

#include <cuda.h>

#include "mgpukernels.h"
#include "registry.h"
#include "select.h"

/* ---- status.c */
mgpu_status mgpu_fail(mgpu_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int mgpu_log_enabled(void);
void mgpu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- driver.c: the CUDA driver API, loaded with dlopen on first use */
#define MGPU_DRIVER_FUNCTIONS(X)                                                                       \
    X(cuInit)                                                                                          \
    X(cuDriverGetVersion)                                                                              \
    X(cuGetErrorName)                                                                                  \
    X(cuGetErrorString)                                                                                \
    X(cuDeviceGet)                                                                                     \
    X(cuDeviceGetCount)                                                                                \
    X(cuDeviceGetAttribute)                                                                            \
    X(cuDevicePrimaryCtxRetain)                                                                        \
    X(cuDevicePrimaryCtxRelease)                                                                       \
    X(cuCtxGetCurrent)                                                                                 \
    X(cuCtxSetCurrent)                                                                                 \
    X(cuCtxGetDevice)                                                                                  \
    X(cuLibraryLoadData)                                                                               \
    X(cuLibraryGetKernel)                                                                              \
    X(cuKernelGetFunction)                                                                             \
    X(cuKernelSetAttribute)                                                                            \
    X(cuLaunchKernelEx)                                                                                \
    X(cuTensorMapEncodeTiled)                                                                          \
    X(cuMemAlloc)                                                                                      \
    X(cuMemFree)                                                                                       \
    X(cuMemAllocAsync)                                                                                 \
    X(cuMemFreeAsync)                                                                                  \
    X(cuMemsetD32Async)                                                                                \
    X(cuMemcpyDtoHAsync)                                                                               \
    X(cuStreamSynchronize)                                                                             \
    X(cuMemPoolCreate)                                                                                 \
    X(cuMemPoolDestroy)                                                                                \
    X(cuMemPoolSetAttribute)                                                                           \
    X(cuMemAllocFromPoolAsync)

struct mgpu_driver {
#define MGPU_DRIVER_MEMBER(name) __typeof__(name) *name;
    MGPU_DRIVER_FUNCTIONS(MGPU_DRIVER_MEMBER)
#undef MGPU_DRIVER_MEMBER
};

/* Loads libcuda.so.1 and cuInit()s it once per process. On success *out
 * points at the function table. NO_DRIVER or NO_DEVICE otherwise. */
mgpu_status mgpu_driver(const struct mgpu_driver **out);

/* Turns a failed driver call into DRIVER_ERROR (or OUT_OF_MEMORY / LAUNCH_FAILED
 * where that is what it means) with "<what>: CUDA_ERROR_X (text)". */
mgpu_status mgpu_driver_fail(const struct mgpu_driver *d, CUresult r, const char *what);

/* ---- handle.c */
struct mgpu_handle {
    unsigned magic;
    CUdevice device;
    CUcontext context;
    int retained_primary;        /* context is device's primary one, retained by us */
    CUstream stream;
    struct mgpu_device_caps caps;
    /* per variant, for this handle's context */
    CUfunction *functions;
    unsigned char *smem_configured;
    /* gather.c: the int32 the gather / scatter kernels OR index errors into;
     * 0 until the first such call allocates it */
    CUdeviceptr index_error_word;
    /* stream-ordered memory pool for scratch buffers (packed GEMM operands,
     * split-K partials); created on first use, see mgpu_scratch_alloc */
    CUmemoryPool scratch_pool;
    /* MGPU_HANDLE_COUNTERS int32 counters that kernels leave at zero (each
     * launch resets what it counted); 0 until the first call that needs them */
    CUdeviceptr counters;
    /* workspace (attention/workspace_shim.c, provisional): device memory lent
     * to calls that need scratch; owned (allocated by mgpu_reserve_workspace)
     * or the caller's (mgpu_set_workspace) */
    CUdeviceptr workspace;
    size_t workspace_bytes;
    int workspace_owned;
};

/* Checks the handle and that the calling thread's current context is on the
 * handle's device (making the handle's context current when none is). */
mgpu_status mgpu_handle_enter(mgpu_handle *h, const struct mgpu_driver **d);

/* Scratch device memory for work queued on the handle's stream: allocated and
 * freed in stream order from the handle's own pool, which keeps what it has
 * mapped (no release threshold), so steady-state calls reuse memory without
 * mapping it again and without any host synchronisation. */
mgpu_status mgpu_scratch_alloc(mgpu_handle *h, const struct mgpu_driver *d, size_t bytes, CUdeviceptr *out);
mgpu_status mgpu_scratch_free(mgpu_handle *h, const struct mgpu_driver *d, CUdeviceptr ptr);

/* ---- attention/workspace_shim.c (provisional): the handle's workspace.
 * SUCCESS with *out its base when it holds at least `bytes` (bytes == 0:
 * SUCCESS, *out may be 0), else INSUFFICIENT_WORKSPACE with the message
 * naming the bytes needed and held. */
mgpu_status mgpu_handle_workspace(mgpu_handle *h, size_t bytes, CUdeviceptr *out);
/* Frees an owned workspace (mgpu_destroy). */
void mgpu_workspace_release(mgpu_handle *h);

/* ---- gather.c: frees the handle's index error word, if any (mgpu_destroy) */
void mgpu_gather_release(mgpu_handle *h);

/* The handle's counters, allocated and zeroed on the handle's stream on first
 * use; *out is the address of counter `first`. Kernels leave them at zero, so
 * launches in stream order share them, which is why one handle's calls must
 * not run concurrently. */
#define MGPU_COUNTERS_SPLIT_K 0                           /* GEMM split-K arrivals, MGPU_SPLIT_COUNTERS */
#define MGPU_COUNTERS_ATTENTION MGPU_SPLIT_COUNTERS       /* attention's dynamic tile counter, 2 */
#define MGPU_HANDLE_COUNTERS (MGPU_COUNTERS_ATTENTION + 2)
mgpu_status mgpu_handle_counters(mgpu_handle *h, const struct mgpu_driver *d, int first, uint64_t *out);

/* ---- module.c: embedded images, loaded lazily and once */
mgpu_status mgpu_kernel_function(mgpu_handle *h, const struct mgpu_driver *d, int variant, CUfunction *out);

/* Launches a variant on the handle's stream with its block size, dynamic
 * shared memory and cluster shape from the registry. */
mgpu_status mgpu_launch(mgpu_handle *h, const struct mgpu_driver *d, int variant, unsigned grid_x, unsigned grid_y,
                        unsigned grid_z, void **params);

#endif
