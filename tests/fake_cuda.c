/*
 * A fake CUDA driver for CPU tests: built as libcuda.so.1 in its own folder
 * and found first through LD_LIBRARY_PATH, so that the library's dlopen
 * picks it up on any machine. It answers the entry points the runtime
 * resolves with a make-believe device (compute capability 9.0, or
 * FAKE_CUDA_CC such as "10.0"; 132 SMs),
 * keeps a primary context with a reference count, hands out host memory as
 * device memory, runs no kernel (it counts launches and remembers the last
 * kernel's name), and can pretend a stream capture is under way: then what
 * capture forbids (allocation, synchronisation) fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, as the real driver's does.
 *
 * FAKE_CUDA_MODE in the environment: unset or "ok"; "stub" (cuInit answers
 * CUDA_ERROR_STUB_LIBRARY, as the toolkit's stub does); "missing" (an entry
 * point cannot be resolved). Tests read and steer it through fake_cuda_*
 * (dlsym on the already loaded library).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

static struct fake_cuda_stats stats;
static int capturing;
static int primary_refs;
static int primary_alive;
static int primary_storage;
#define PRIMARY ((CUcontext)&primary_storage)
static _Thread_local CUcontext current;

#define EXPORT __attribute__((visibility("default")))

EXPORT void fake_cuda_get_stats(struct fake_cuda_stats *out)
{
    *out = stats;
}

EXPORT void fake_cuda_set_capturing(int on)
{
    capturing = on;
}

EXPORT int fake_cuda_primary_refs(void)
{
    return primary_refs;
}

static CUresult context_ok(void)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (current == PRIMARY && !primary_alive)
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return CUDA_SUCCESS;
}

static CUresult fake_cuInit(unsigned flags)
{
    (void)flags;
    const char *mode = getenv("FAKE_CUDA_MODE");
    return mode && strcmp(mode, "stub") == 0 ? CUDA_ERROR_STUB_LIBRARY : CUDA_SUCCESS;
}

static CUresult fake_cuDriverGetVersion(int *v)
{
    const char *version = getenv("FAKE_CUDA_DRIVER_VERSION"); /* read at every call */
    *v = version && version[0] ? atoi(version) : 12080;
    return CUDA_SUCCESS;
}

static CUresult fake_cuGetErrorName(CUresult r, const char **name)
{
    switch (r) {
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: *name = "CUDA_ERROR_CONTEXT_IS_DESTROYED"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *name = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: *name = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    default: *name = "CUDA_ERROR_FAKE"; break;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuGetErrorString(CUresult r, const char **text)
{
    (void)r;
    *text = "fake driver";
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetCount(int *count)
{
    *count = 1;
    return CUDA_SUCCESS;
}

/* The device's compute capability: FAKE_CUDA_CC ("9.0", "10.0") or 9.0. */
static int fake_cc(void)
{
    const char *cc = getenv("FAKE_CUDA_CC");
    int major = 0, minor = 0;
    if (cc != NULL && sscanf(cc, "%d.%d", &major, &minor) == 2 && major > 0 && minor >= 0 && minor < 10)
        return 10 * major + minor;
    return 90;
}

static CUresult fake_cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
    (void)dev;
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = fake_cc() / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = fake_cc() % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 232448; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    (void)dev;
    primary_refs++;
    primary_alive = 1;
    *ctx = PRIMARY;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev)
{
    (void)dev;
    if (primary_refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--primary_refs == 0)
        primary_alive = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    (void)dev;
    *flags = 0;
    *active = primary_alive;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetCurrent(CUcontext *ctx)
{
    *ctx = current;
    return CUDA_SUCCESS;
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx)
{
    current = ctx;
    return CUDA_SUCCESS;
}

/* As the real driver: the device of a current primary context, alive or not. */
static CUresult fake_cuCtxGetDevice(CUdevice *dev)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jit_options,
                                       void **jit_values, unsigned n_jit, CUlibraryOption *options, void **values,
                                       unsigned n_options)
{
    (void)code, (void)jit_options, (void)jit_values, (void)n_jit, (void)options, (void)values, (void)n_options;
    *lib = (CUlibrary)&primary_storage;
    return CUDA_SUCCESS;
}

/* The kernel (and its function) is its name. */
static CUresult fake_cuLibraryGetKernel(CUkernel *kernel, CUlibrary lib, const char *name)
{
    (void)lib;
    *kernel = (CUkernel)(uintptr_t)name;
    return CUDA_SUCCESS;
}

static CUresult fake_cuKernelGetFunction(CUfunction *fn, CUkernel kernel)
{
    *fn = (CUfunction)(uintptr_t)kernel;
    return context_ok() == CUDA_SUCCESS ? CUDA_SUCCESS : context_ok();
}

static CUresult fake_cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel kernel, CUdevice dev)
{
    (void)attr, (void)value, (void)kernel, (void)dev;
    return CUDA_SUCCESS;
}

static CUresult fake_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction fn, void **params, void **extra)
{
    (void)params, (void)extra;
    CUresult r = context_ok();
    if (r != CUDA_SUCCESS)
        return r;
    if (config->gridDimX == 0 || config->gridDimY == 0 || config->gridDimZ == 0 || config->gridDimY > 65535 ||
        config->gridDimZ > 65535)
        return CUDA_ERROR_INVALID_VALUE;
    stats.launches++;
    strncpy(stats.last_kernel, (const char *)(uintptr_t)fn, sizeof stats.last_kernel - 1);
    stats.last_grid[0] = config->gridDimX;
    stats.last_grid[1] = config->gridDimY;
    stats.last_grid[2] = config->gridDimZ;
    stats.last_programmatic = 0;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
            stats.last_programmatic = config->attrs[i].value.programmaticStreamSerializationAllowed != 0;
    return CUDA_SUCCESS;
}

static CUresult fake_cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType type, cuuint32_t rank,
                                            void *base, const cuuint64_t *dims, const cuuint64_t *strides,
                                            const cuuint32_t *box, const cuuint32_t *elem_strides,
                                            CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                            CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill)
{
    (void)type, (void)base, (void)strides, (void)elem_strides, (void)interleave, (void)swizzle, (void)l2, (void)fill;
    if (rank < 1 || rank > 5)
        return CUDA_ERROR_INVALID_VALUE;
    for (cuuint32_t i = 0; i < rank; i++)
        if (dims[i] == 0 || box[i] == 0 || box[i] > 256)
            return CUDA_ERROR_INVALID_VALUE;
    memset(map, 0, sizeof *map);
    stats.maps_encoded++;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *ptr, size_t bytes)
{
    CUresult r = context_ok();
    if (r != CUDA_SUCCESS)
        return r;
    if (capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (bytes > ((size_t)1 << 40))
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stats.allocations++;
    stats.live_allocations++;
    *ptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemFree(CUdeviceptr ptr)
{
    if (capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    free((void *)(uintptr_t)ptr);
    stats.live_allocations--;
    return CUDA_SUCCESS;
}

static CUresult fake_cuMemsetD32Async(CUdeviceptr ptr, unsigned value, size_t count, CUstream stream)
{
    (void)stream;
    uint32_t *p = (uint32_t *)(uintptr_t)ptr;
    for (size_t i = 0; i < count; i++)
        p[i] = value;
    return context_ok();
}

static CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    (void)stream;
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return context_ok();
}

static CUresult fake_cuStreamSynchronize(CUstream stream)
{
    (void)stream;
    if (capturing)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    stats.synchronizations++;
    return context_ok();
}

#define ENTRY(name) {#name, (void *)fake_##name}
static const struct {
    const char *name;
    void *fn;
} entries[] = {
    ENTRY(cuInit), ENTRY(cuDriverGetVersion), ENTRY(cuGetErrorName), ENTRY(cuGetErrorString), ENTRY(cuDeviceGet),
    ENTRY(cuDeviceGetCount), ENTRY(cuDeviceGetAttribute), ENTRY(cuDevicePrimaryCtxRetain),
    ENTRY(cuDevicePrimaryCtxRelease), ENTRY(cuDevicePrimaryCtxGetState), ENTRY(cuCtxGetCurrent),
    ENTRY(cuCtxSetCurrent), ENTRY(cuCtxGetDevice), ENTRY(cuLibraryLoadData), ENTRY(cuLibraryGetKernel),
    ENTRY(cuKernelGetFunction), ENTRY(cuKernelSetAttribute), ENTRY(cuLaunchKernelEx), ENTRY(cuTensorMapEncodeTiled),
    ENTRY(cuMemAlloc), ENTRY(cuMemFree), ENTRY(cuMemsetD32Async), ENTRY(cuMemcpyDtoHAsync),
    ENTRY(cuStreamSynchronize),
};

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **fn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    (void)version, (void)flags;
    const char *mode = getenv("FAKE_CUDA_MODE");
    if (mode && strcmp(mode, "missing") == 0 && strcmp(symbol, "cuTensorMapEncodeTiled") == 0) {
        *fn = NULL;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entries[i].name, symbol) == 0) {
            *fn = entries[i].fn;
            if (status)
                *status = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    *fn = NULL;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}
