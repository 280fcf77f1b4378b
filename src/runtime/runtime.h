/*
 * The shared runtime of every operation: the CUDA driver table, handles and
 * what they own on the device, kernel loading, tensor-map encoding and
 * launches. Operation files (gemm.c, gather.c, attention_fwd.c) include this
 * header; planning files include only dispatch.h. Nothing here is exported:
 * the library is built with -fvisibility=hidden, so only the MGPU_API
 * functions of include/mgpukernels.h leave the shared object.
 */
#ifndef MGPU_SRC_RUNTIME_RUNTIME_H
#define MGPU_SRC_RUNTIME_RUNTIME_H

#include <cuda.h>

#include "dispatch.h"

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
    X(cuDevicePrimaryCtxGetState)                                                                      \
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
    X(cuMemsetD32Async)                                                                                \
    X(cuMemcpyDtoHAsync)                                                                               \
    X(cuStreamSynchronize)

struct mgpu_driver {
#define MGPU_DRIVER_MEMBER(name) __typeof__(name) *name;
    MGPU_DRIVER_FUNCTIONS(MGPU_DRIVER_MEMBER)
#undef MGPU_DRIVER_MEMBER
};

/* Loads libcuda.so.1 and cuInit()s it once per process. On success *out
 * points at the function table. NO_DRIVER, NO_DEVICE or DRIVER_ERROR otherwise. */
mgpu_status mgpu_driver(const struct mgpu_driver **out);

/* Turns a failed driver call into DRIVER_ERROR (or OUT_OF_MEMORY / LAUNCH_FAILED
 * where that is what it means) with "<what>: CUDA_ERROR_X (text)". */
mgpu_status mgpu_driver_fail(const struct mgpu_driver *d, CUresult r, const char *what);

/* ---- handle.c */

struct mgpu_handle {
    CUdevice device;
    CUcontext context;
    int retained_primary;        /* context is the device's primary one, retained by this handle */
    CUstream stream;
    struct mgpu_device_caps caps;
    /* the driver (12.3 on) records programmatic launches as programmatic
     * graph edges under stream capture: mgpu_launch_programmatic uses them */
    int programmatic_launch;
    /* per variant, for this handle's context */
    CUfunction *functions;
    unsigned char *smem_configured;
    /* MGPU_HANDLE_COUNTERS int32, zeroed at creation */
    CUdeviceptr counters;
    /* the workspace: the handle's own (allocated at creation or by
     * mgpu_reserve_workspace) or the caller's (mgpu_set_workspace) */
    CUdeviceptr workspace;
    size_t workspace_bytes;
    int workspace_owned;
};

/* Checks that h is a live handle (INVALID_HANDLE otherwise) and that the
 * calling thread's current context is the handle's (making it current when
 * none is). Every entry point that takes a handle starts here. */
mgpu_status mgpu_handle_enter(mgpu_handle *h, const struct mgpu_driver **d);

/* The device address of counter `first` of the handle's counters. */
uint64_t mgpu_handle_counter(const mgpu_handle *h, int first);

/* The handle's workspace for an operation that needs `bytes` of it: *out is
 * its base (256-byte aligned), or INSUFFICIENT_WORKSPACE with a message
 * naming the bytes needed. Operations never allocate. */
mgpu_status mgpu_handle_workspace(mgpu_handle *h, size_t bytes, CUdeviceptr *out);

/* ---- module.c: embedded images, loaded lazily and once */
mgpu_status mgpu_kernel_function(mgpu_handle *h, const struct mgpu_driver *d, int variant, CUfunction *out);

/* ---- launch.c */

/* Encodes a tensor map described by a plan; `what` names it in messages. */
mgpu_status mgpu_encode_tensor_map(const struct mgpu_driver *d, const struct mgpu_tensor_map_desc *m,
                                   const char *what, CUtensorMap *out);

/* Launches a variant on the handle's stream with its block size, dynamic
 * shared memory and cluster shape from the registry. */
mgpu_status mgpu_launch(mgpu_handle *h, const struct mgpu_driver *d, int variant, unsigned grid_x, unsigned grid_y,
                        unsigned grid_z, void **params);
/* The same with programmatic stream serialization (programmatic dependent
 * launch): the grid may start while the stream's previous grid is still
 * running, as soon as that grid's CTAs have all signalled
 * (griddepcontrol.launch_dependents) or exited. Only for kernels that
 * execute griddepcontrol.wait before any global memory access. Handles of
 * drivers before 12.3 get an ordinary launch. */
mgpu_status mgpu_launch_programmatic(mgpu_handle *h, const struct mgpu_driver *d, int variant, unsigned grid_x,
                                     unsigned grid_y, unsigned grid_z, void **params);

#endif
