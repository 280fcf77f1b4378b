/*
 * Handles: one per (thread of use, device), as with cuBLAS. A handle records
 * its device and context, that device's capabilities, the stream work goes
 * to, per-variant state that belongs to its context (the CUfunction of each
 * loaded kernel and whether its shared-memory limit was raised), and
 * everything a call may need on the device: the counters (split-K arrivals,
 * attention tiles, the gather error word), zeroed at creation, and the
 * workspace. Nothing is allocated after mgpu_create except by the explicit
 * workspace calls, so every operation can be captured into a CUDA graph.
 *
 * Live handles are kept in a process-wide set: a call with a pointer that is
 * no live handle (destroyed, or never one) gets INVALID_HANDLE without the
 * pointer being read.
 *
 * Contexts: with no current context the handle retains device 0's primary
 * context and makes it current; when the current context is a device's
 * primary context the handle retains it too, so that it stays alive while
 * the handle does. When the handle drops the last reference of a primary
 * context that is current on the destroying thread, it unsets it there, so
 * that a later mgpu_create does not find a dead context current.
 */
#include "runtime.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* The default workspace: split-K partials and packed operands. A split-K
 * plan takes at most one slice per SM (grid <= SM count) of one fp32 tile
 * of at most 256 x 128 (128 KiB): 132 SMs (H100) need 16.5 MiB, 148 (B200)
 * 18.5 MiB. What is left covers packed copies of operands TMA cannot read up
 * to about 16 MiB (a 4096 x 2048 bf16 matrix). 32 MiB is also cuBLAS's
 * default workspace on Hopper. Larger needs: mgpu_reserve_workspace. */
#define MGPU_DEFAULT_WORKSPACE_BYTES ((size_t)32 << 20)
#define WORKSPACE_ALIGN 256
#define MAX_DEVICES 64

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static mgpu_handle **live;    /* the live handles */
static size_t live_count, live_capacity;
/* per device ordinal: the primary context a handle of this process retained
 * (its CUcontext stays the same value when the context is re-created) */
static CUcontext primary_seen[MAX_DEVICES];

static int live_add(mgpu_handle *h)
{
    pthread_mutex_lock(&live_lock);
    int ok = 1;
    if (live_count == live_capacity) {
        const size_t cap = live_capacity ? 2 * live_capacity : 16;
        mgpu_handle **grown = realloc(live, cap * sizeof *grown);
        if (grown) {
            live = grown;
            live_capacity = cap;
        } else {
            ok = 0;
        }
    }
    if (ok)
        live[live_count++] = h;
    pthread_mutex_unlock(&live_lock);
    return ok;
}

/* 1 when h is live; with `remove`, takes it out of the set as well. */
static int live_find(const mgpu_handle *h, int remove)
{
    int found = 0;
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < live_count && h; i++) {
        if (live[i] != h)
            continue;
        found = 1;
        if (remove)
            live[i] = live[--live_count];
        break;
    }
    pthread_mutex_unlock(&live_lock);
    return found;
}

static void remember_primary(CUdevice dev, CUcontext ctx)
{
    if (dev < 0 || dev >= MAX_DEVICES)
        return;
    pthread_mutex_lock(&live_lock);
    primary_seen[dev] = ctx;
    pthread_mutex_unlock(&live_lock);
}

static int was_primary(CUdevice dev, CUcontext ctx)
{
    if (dev < 0 || dev >= MAX_DEVICES)
        return 0;
    pthread_mutex_lock(&live_lock);
    const int seen = primary_seen[dev] == ctx;
    pthread_mutex_unlock(&live_lock);
    return seen;
}

static mgpu_status invalid_handle(void)
{
    return mgpu_fail(MGPU_STATUS_INVALID_HANDLE,
                     "the handle is NULL, was destroyed, or is not a handle from mgpu_create");
}

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
    /* Peak DRAM bandwidth (two transfers a memory clock on each bus bit):
     * H100 SXM 3352 GB/s, H200 4915. Only a planning hint: 0 when the
     * driver does not report it. */
    int clock_khz = 0, bus_bits = 0;
    caps->dram_gbps = 0;
    if (d->cuDeviceGetAttribute(&clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) == CUDA_SUCCESS &&
        d->cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) == CUDA_SUCCESS &&
        clock_khz > 0 && bus_bits > 0)
        caps->dram_gbps = (int)(2 * (int64_t)clock_khz * bus_bits / 8 / 1000000);
    return MGPU_STATUS_SUCCESS;
}

/* Binds h to the current context (retaining it when it is a primary one) or,
 * with none current (or only a primary context that no longer lives), to
 * device 0's primary context, made current. */
static mgpu_status bind_context(const struct mgpu_driver *d, mgpu_handle *h)
{
    CUcontext current = NULL;
    CUresult r = d->cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuCtxGetCurrent");
    if (current) {
        r = d->cuCtxGetDevice(&h->device);
        if (r == CUDA_ERROR_CONTEXT_IS_DESTROYED || r == CUDA_ERROR_INVALID_CONTEXT) {
            current = NULL;
        } else if (r != CUDA_SUCCESS) {
            return mgpu_driver_fail(d, r, "cuCtxGetDevice");
        } else {
            unsigned flags = 0;
            int active = 0;
            r = d->cuDevicePrimaryCtxGetState(h->device, &flags, &active);
            if (r != CUDA_SUCCESS)
                return mgpu_driver_fail(d, r, "cuDevicePrimaryCtxGetState");
            if (active) {
                CUcontext primary = NULL;
                r = d->cuDevicePrimaryCtxRetain(&primary, h->device);
                if (r != CUDA_SUCCESS)
                    return mgpu_driver_fail(d, r, "cuDevicePrimaryCtxRetain");
                if (primary == current)
                    h->retained_primary = 1;
                else
                    d->cuDevicePrimaryCtxRelease(h->device);
            } else if (was_primary(h->device, current)) {
                current = NULL; /* a primary context whose last reference is gone */
            }
        }
    }
    if (current) {
        h->context = current;
        return MGPU_STATUS_SUCCESS;
    }
    /* No live current context: device 0's primary one, as the CUDA runtime would. */
    r = d->cuDeviceGet(&h->device, 0);
    if (r == CUDA_SUCCESS)
        r = d->cuDevicePrimaryCtxRetain(&h->context, h->device);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "retaining device 0's primary context");
    h->retained_primary = 1;
    r = d->cuCtxSetCurrent(h->context);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuCtxSetCurrent");
    return MGPU_STATUS_SUCCESS;
}

/* The counters (zeroed, and finished zeroing before any stream can use them)
 * and the default workspace. */
static mgpu_status allocate_device_state(const struct mgpu_driver *d, mgpu_handle *h)
{
    CUresult r = d->cuMemAlloc(&h->counters, MGPU_HANDLE_COUNTERS * sizeof(int32_t));
    if (r != CUDA_SUCCESS) {
        h->counters = 0;
        return mgpu_driver_fail(d, r, "cuMemAlloc (handle counters)");
    }
    r = d->cuMemsetD32Async(h->counters, 0, MGPU_HANDLE_COUNTERS, NULL);
    if (r == CUDA_SUCCESS)
        r = d->cuStreamSynchronize(NULL);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "zeroing the handle counters");
    r = d->cuMemAlloc(&h->workspace, MGPU_DEFAULT_WORKSPACE_BYTES);
    if (r != CUDA_SUCCESS) {
        h->workspace = 0;
        return mgpu_driver_fail(d, r, "cuMemAlloc (default workspace)");
    }
    h->workspace_bytes = MGPU_DEFAULT_WORKSPACE_BYTES;
    h->workspace_owned = 1;
    return MGPU_STATUS_SUCCESS;
}

/* Frees what h holds on the device and its context reference (h is not live). */
static void release(mgpu_handle *h)
{
    const struct mgpu_driver *d;
    if (mgpu_driver(&d) == MGPU_STATUS_SUCCESS && h->context) {
        /* cuMemFree needs the allocation's context current; the caller's is restored after. */
        CUcontext previous = NULL;
        if ((h->counters || (h->workspace && h->workspace_owned)) && d->cuCtxGetCurrent(&previous) == CUDA_SUCCESS &&
            d->cuCtxSetCurrent(h->context) == CUDA_SUCCESS) {
            if (h->counters)
                d->cuMemFree(h->counters);
            if (h->workspace && h->workspace_owned)
                d->cuMemFree(h->workspace);
            d->cuCtxSetCurrent(previous);
        }
        if (h->retained_primary) {
            d->cuDevicePrimaryCtxRelease(h->device);
            unsigned flags = 0;
            int active = 1;
            CUcontext current = NULL;
            if (d->cuDevicePrimaryCtxGetState(h->device, &flags, &active) == CUDA_SUCCESS && !active &&
                d->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == h->context)
                d->cuCtxSetCurrent(NULL);
        }
    }
    free(h->functions);
    free(h->smem_configured);
    free(h);
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
    if (!h->functions || !h->smem_configured)
        s = mgpu_fail(MGPU_STATUS_OUT_OF_MEMORY, "cannot allocate a handle");
    if (s == MGPU_STATUS_SUCCESS)
        s = bind_context(d, h);
    if (s == MGPU_STATUS_SUCCESS && h->retained_primary)
        remember_primary(h->device, h->context);
    if (s == MGPU_STATUS_SUCCESS)
        s = query_caps(d, h->device, &h->caps);
    if (s == MGPU_STATUS_SUCCESS) {
        int version = 0;
        h->programmatic_launch = d->cuDriverGetVersion(&version) == CUDA_SUCCESS && version >= 12030;
    }
    if (s == MGPU_STATUS_SUCCESS)
        s = allocate_device_state(d, h);
    if (s == MGPU_STATUS_SUCCESS && !live_add(h))
        s = mgpu_fail(MGPU_STATUS_OUT_OF_MEMORY, "cannot record the handle");
    if (s != MGPU_STATUS_SUCCESS) {
        release(h);
        return s;
    }
    *out = h;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_destroy(mgpu_handle *h)
{
    if (!h)
        return MGPU_STATUS_SUCCESS;
    if (!live_find(h, 1))
        return invalid_handle();
    release(h);
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_set_stream(mgpu_handle *h, void *stream)
{
    if (!live_find(h, 0))
        return invalid_handle();
    h->stream = (CUstream)stream;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_get_stream(const mgpu_handle *h, void **stream)
{
    if (!live_find(h, 0))
        return invalid_handle();
    if (!stream)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "stream is NULL");
    *stream = (void *)h->stream;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_handle_enter(mgpu_handle *h, const struct mgpu_driver **out)
{
    if (!live_find(h, 0))
        return invalid_handle();
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

uint64_t mgpu_handle_counter(const mgpu_handle *h, int first)
{
    return (uint64_t)h->counters + (uint64_t)first * sizeof(int32_t);
}

mgpu_status mgpu_handle_workspace(mgpu_handle *h, size_t bytes, CUdeviceptr *out)
{
    if (bytes > h->workspace_bytes)
        return mgpu_fail(MGPU_STATUS_INSUFFICIENT_WORKSPACE,
                         "this call needs %zu bytes of workspace and the handle has %zu; give it more with "
                         "mgpu_reserve_workspace(handle, %zu) or mgpu_set_workspace",
                         bytes, h->workspace_bytes, bytes);
    *out = h->workspace;
    return MGPU_STATUS_SUCCESS;
}

/* Waits for the work queued on the handle's stream (which may still use the
 * old workspace), then frees the old workspace if the handle owns it. */
static mgpu_status drop_workspace(const struct mgpu_driver *d, mgpu_handle *h)
{
    if (!h->workspace || !h->workspace_owned)
        return MGPU_STATUS_SUCCESS;
    CUresult r = d->cuStreamSynchronize(h->stream);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuStreamSynchronize (before freeing the old workspace)");
    r = d->cuMemFree(h->workspace);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuMemFree (old workspace)");
    h->workspace = 0;
    h->workspace_bytes = 0;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_set_workspace(mgpu_handle *h, void *workspace, size_t bytes)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (!workspace && bytes > 0)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "workspace is NULL but bytes = %zu", bytes);
    if ((uintptr_t)workspace % WORKSPACE_ALIGN)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "workspace %p is not %d-byte aligned", workspace,
                         WORKSPACE_ALIGN);
    s = drop_workspace(d, h);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    h->workspace = bytes ? (CUdeviceptr)(uintptr_t)workspace : 0;
    h->workspace_bytes = bytes;
    h->workspace_owned = 0;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_reserve_workspace(mgpu_handle *h, size_t bytes)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS || bytes <= h->workspace_bytes)
        return s;
    CUdeviceptr grown;
    CUresult r = d->cuMemAlloc(&grown, bytes);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuMemAlloc (workspace)");
    s = drop_workspace(d, h);
    if (s != MGPU_STATUS_SUCCESS) {
        d->cuMemFree(grown);
        return s;
    }
    h->workspace = grown;
    h->workspace_bytes = bytes;
    h->workspace_owned = 1;
    return MGPU_STATUS_SUCCESS;
}
