/*
 * The handle's workspace: mgpu_set_workspace (caller memory),
 * mgpu_reserve_workspace (memory the handle allocates and owns) and the
 * internal mgpu_handle_workspace that operations call to borrow it.
 *
 * Provisional: a minimal version of the runtime's workspace calls with the
 * same names and meanings, kept in this one file (plus three fields of
 * struct mgpu_handle and the release call in mgpu_destroy) so that it can be
 * replaced by the runtime's implementation without touching its users.
 * There is no default workspace here: a handle holds none until one of the
 * two public calls gives it one.
 */
#include "internal.h"

#include <stdint.h>

#define WORKSPACE_ALIGN_BYTES 256

static int handle_valid(const mgpu_handle *h)
{
    return h && h->magic != 0;
}

/* Frees an owned workspace once the work queued on the handle's stream that
 * may use it has finished. The handle's context must be current. */
static mgpu_status free_owned(mgpu_handle *h, const struct mgpu_driver *d)
{
    if (!h->workspace_owned || !h->workspace)
        return MGPU_STATUS_SUCCESS;
    CUresult r = d->cuStreamSynchronize(h->stream);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuStreamSynchronize (freeing the workspace)");
    r = d->cuMemFree(h->workspace);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuMemFree (workspace)");
    h->workspace = 0;
    h->workspace_bytes = 0;
    h->workspace_owned = 0;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_set_workspace(mgpu_handle *h, void *ptr, size_t bytes)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (!ptr && bytes > 0)
        return mgpu_fail(MGPU_STATUS_NULL_POINTER, "mgpu_set_workspace: ptr is NULL with bytes = %zu", bytes);
    if ((uintptr_t)ptr % WORKSPACE_ALIGN_BYTES)
        return mgpu_fail(MGPU_STATUS_INVALID_VALUE, "mgpu_set_workspace: ptr %p is not %d-byte aligned", ptr,
                         WORKSPACE_ALIGN_BYTES);
    s = free_owned(h, d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    h->workspace = (CUdeviceptr)(uintptr_t)ptr;
    h->workspace_bytes = ptr ? bytes : 0;
    h->workspace_owned = 0;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_reserve_workspace(mgpu_handle *h, size_t bytes)
{
    const struct mgpu_driver *d;
    mgpu_status s = mgpu_handle_enter(h, &d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    if (h->workspace_owned && h->workspace_bytes >= bytes)
        return MGPU_STATUS_SUCCESS;
    if (bytes == 0)
        return MGPU_STATUS_SUCCESS;
    s = free_owned(h, d);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    CUdeviceptr ptr = 0;
    CUresult r = d->cuMemAlloc(&ptr, bytes);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuMemAlloc (workspace)");
    h->workspace = ptr;
    h->workspace_bytes = bytes;
    h->workspace_owned = 1;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_handle_workspace(mgpu_handle *h, size_t bytes, CUdeviceptr *out)
{
    if (!handle_valid(h))
        return mgpu_fail(MGPU_STATUS_INVALID_HANDLE, "the handle is NULL or was destroyed");
    if (bytes > h->workspace_bytes)
        return mgpu_fail(MGPU_STATUS_INSUFFICIENT_WORKSPACE,
                         "this call needs %zu bytes of workspace and the handle holds %zu; give it more with "
                         "mgpu_reserve_workspace or mgpu_set_workspace",
                         bytes, h->workspace_bytes);
    *out = h->workspace;
    return MGPU_STATUS_SUCCESS;
}

void mgpu_workspace_release(mgpu_handle *h)
{
    const struct mgpu_driver *d;
    if (!h->workspace_owned || !h->workspace || mgpu_driver(&d) != MGPU_STATUS_SUCCESS)
        return;
    /* cuMemFree needs the allocation's context current; restore the caller's after. */
    CUcontext previous = NULL;
    if (d->cuCtxGetCurrent(&previous) == CUDA_SUCCESS && d->cuCtxSetCurrent(h->context) == CUDA_SUCCESS) {
        d->cuMemFree(h->workspace);
        d->cuCtxSetCurrent(previous);
    }
    h->workspace = 0;
    h->workspace_bytes = 0;
    h->workspace_owned = 0;
}
