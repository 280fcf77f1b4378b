/*
 * Handles: one per (thread of use, device), as with cuBLAS. A handle records
 * its device and context, that device's capabilities, the stream work goes
 * to, and per-variant state that belongs to its context (the CUfunction of
 * each loaded kernel and whether its shared-memory limit was raised).
 */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>

#define MGPU_HANDLE_MAGIC 0x6d677075u /* "mgpu" */

static mgpu_status query_caps(const struct mgpu_driver *d, CUdevice dev, struct mgpu_device_caps *caps)
{
    static const CUdevice_attribute attrs[4] = {
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    };
    int *fields[4] = {&caps->cc_major, &caps->cc_minor, &caps->sm_count, &caps->max_smem_per_block};
    for (int i = 0; i < 4; i++) {
        CUresult r = d->cuDeviceGetAttribute(fields[i], attrs[i], dev);
        if (r != CUDA_SUCCESS)
            return mgpu_driver_fail(d, r, "cuDeviceGetAttribute");
    }
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_create(mgpu_handle **out)
{
    if (!out)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "out is NULL");
    *out = NULL;
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_driver(&d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;

    mgpu_handle *h = calloc(1, sizeof *h);
    if (!h)
        return mgpu_fail(MGPU_STATUS_OUT_OF_MEMORY, "cannot allocate a handle");
    h->functions = calloc((size_t)mgpu_variant_count + 1, sizeof *h->functions);
    h->smem_configured = calloc((size_t)mgpu_variant_count + 1, 1);
    if (!h->functions || !h->smem_configured) {
        mgpu_destroy(h);
        return mgpu_fail(MGPU_STATUS_OUT_OF_MEMORY, "cannot allocate a handle");
    }

    CUresult r = d->cuCtxGetCurrent(&h->context);
    if (r != CUDA_SUCCESS) {
        mgpu_destroy(h);
        return mgpu_driver_fail(d, r, "cuCtxGetCurrent");
    }
    if (h->context) {
        r = d->cuCtxGetDevice(&h->device);
    } else {
        /* No current context: use device 0's primary context, as the CUDA runtime would. */
        r = d->cuDeviceGet(&h->device, 0);
        if (r == CUDA_SUCCESS)
            r = d->cuDevicePrimaryCtxRetain(&h->context, h->device);
        if (r == CUDA_SUCCESS) {
            h->retained_primary = 1;
            r = d->cuCtxSetCurrent(h->context);
        }
    }
    if (r != CUDA_SUCCESS) {
        mgpu_destroy(h);
        return mgpu_driver_fail(d, r, "binding the handle to a device");
    }
    s = query_caps(d, h->device, &h->caps);
    if (s != MGPU_STATUS_SUCCESS) {
        mgpu_destroy(h);
        return s;
    }
    h->magic = MGPU_HANDLE_MAGIC;
    *out = h;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_scratch_alloc(mgpu_handle *h, const struct mgpu_driver *d, size_t bytes, CUdeviceptr *out)
{
    if (!h->scratch_pool) {
        CUmemPoolProps props = {
            .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
            .handleTypes = CU_MEM_HANDLE_TYPE_NONE,
            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = (int)h->device},
        };
        CUresult r = d->cuMemPoolCreate(&h->scratch_pool, &props);
        if (r != CUDA_SUCCESS) {
            h->scratch_pool = NULL;
            return mgpu_driver_fail(d, r, "cuMemPoolCreate (scratch pool)");
        }
        cuuint64_t keep_everything = UINT64_MAX;
        r = d->cuMemPoolSetAttribute(h->scratch_pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything);
        if (r != CUDA_SUCCESS)
            return mgpu_driver_fail(d, r, "cuMemPoolSetAttribute (release threshold)");
    }
    CUresult r = d->cuMemAllocFromPoolAsync(out, bytes, h->scratch_pool, h->stream);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuMemAllocFromPoolAsync (scratch)");
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_scratch_free(mgpu_handle *h, const struct mgpu_driver *d, CUdeviceptr ptr)
{
    CUresult r = d->cuMemFreeAsync(ptr, h->stream);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuMemFreeAsync (scratch)");
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_handle_counters(mgpu_handle *h, const struct mgpu_driver *d, int first, uint64_t *out)
{
    if (!h->counters) {
        CUdeviceptr counters;
        CUresult r = d->cuMemAlloc(&counters, MGPU_HANDLE_COUNTERS * sizeof(int32_t));
        if (r != CUDA_SUCCESS)
            return mgpu_driver_fail(d, r, "cuMemAlloc(handle counters)");
        r = d->cuMemsetD32Async(counters, 0, MGPU_HANDLE_COUNTERS, h->stream);
        if (r != CUDA_SUCCESS) {
            d->cuMemFree(counters);
            return mgpu_driver_fail(d, r, "cuMemsetD32Async(handle counters)");
        }
        h->counters = counters;
    }
    *out = (uint64_t)h->counters + (uint64_t)first * sizeof(int32_t);
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_destroy(mgpu_handle *h)
{
    if (!h)
        return MGPU_STATUS_SUCCESS;
    const struct mgpu_driver *d;
    /* Returns at once; the pool's memory is released when the work still
     * queued on it has finished. */
    if (h->scratch_pool && mgpu_driver(&d) == MGPU_STATUS_SUCCESS)
        d->cuMemPoolDestroy(h->scratch_pool);
    mgpu_gather_release(h);
    mgpu_workspace_release(h);
    if (h->counters && mgpu_driver(&d) == MGPU_STATUS_SUCCESS) {
        /* cuMemFree needs the allocation's context current; restore the caller's after. */
        CUcontext previous = NULL;
        if (d->cuCtxGetCurrent(&previous) == CUDA_SUCCESS && d->cuCtxSetCurrent(h->context) == CUDA_SUCCESS) {
            d->cuMemFree(h->counters);
            d->cuCtxSetCurrent(previous);
        }
    }
    if (h->retained_primary && mgpu_driver(&d) == MGPU_STATUS_SUCCESS)
        d->cuDevicePrimaryCtxRelease(h->device);
    h->magic = 0;
    free(h->functions);
    free(h->smem_configured);
    free(h);
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_set_stream(mgpu_handle *h, void *stream)
{
    if (!h || h->magic != MGPU_HANDLE_MAGIC)
        return mgpu_fail(MGPU_STATUS_INVALID_HANDLE, "the handle is NULL or was destroyed");
    h->stream = (CUstream)stream;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_get_stream(const mgpu_handle *h, void **stream)
{
    if (!h || h->magic != MGPU_HANDLE_MAGIC)
        return mgpu_fail(MGPU_STATUS_INVALID_HANDLE, "the handle is NULL or was destroyed");
    if (!stream)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "stream is NULL");
    *stream = (void *)h->stream;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_handle_enter(mgpu_handle *h, const struct mgpu_driver **out)
{
    if (!h || h->magic != MGPU_HANDLE_MAGIC)
        return mgpu_fail(MGPU_STATUS_INVALID_HANDLE, "the handle is NULL or was destroyed");
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_driver(&d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    CUcontext current;
    CUresult r = d->cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuCtxGetCurrent");
    if (!current) {
        r = d->cuCtxSetCurrent(h->context);
        if (r != CUDA_SUCCESS)
            return mgpu_driver_fail(d, r, "cuCtxSetCurrent");
    } else if (current != h->context) {
        CUdevice dev;
        r = d->cuCtxGetDevice(&dev);
        if (r != CUDA_SUCCESS)
            return mgpu_driver_fail(d, r, "cuCtxGetDevice");
        if (dev != h->device)
            return mgpu_fail(MGPU_STATUS_WRONG_DEVICE,
                             "the handle was created on device %d but the current context is on device %d",
                             (int)h->device, (int)dev);
        return mgpu_fail(MGPU_STATUS_WRONG_DEVICE,
                         "the current context is not the one the handle was created in (same device %d); "
                         "create a handle in this context",
                         (int)dev);
    }
    *out = d;
    return MGPU_STATUS_SUCCESS;
}
