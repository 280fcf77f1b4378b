/*
 * Embedded kernel images, loaded on first use.
 *
 * Each image (one cubin per group of variants) is loaded with
 * cuLibraryLoadData the first time any of its kernels is needed, once per
 * process, under a mutex; libraries are context-independent, so one load
 * serves every context and device. The CUfunction of a kernel does belong to
 * a context, so it is cached per handle, as is raising the kernel's dynamic
 * shared-memory limit on the handle's device.
 */
#include "runtime.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static CUlibrary *libraries; /* per image, NULL until loaded */
static CUkernel *kernels;    /* per variant, NULL until looked up */

static mgpu_status load_kernel(const struct mgpu_driver *d, int variant, CUkernel *out)
{
    mgpu_status s = MGPU_STATUS_SUCCESS;
    pthread_mutex_lock(&load_lock);
    if (!libraries) {
        libraries = calloc((size_t)mgpu_image_count + 1, sizeof *libraries);
        kernels = calloc((size_t)mgpu_variant_count + 1, sizeof *kernels);
        if (!libraries || !kernels) {
            free(libraries);
            free(kernels);
            libraries = NULL;
            kernels = NULL;
            s = mgpu_fail(MGPU_STATUS_OUT_OF_MEMORY, "cannot allocate the kernel cache");
            goto out;
        }
    }
    if (!kernels[variant]) {
        const struct mgpu_variant *v = &mgpu_variants[variant];
        const struct mgpu_image *img = &mgpu_images[v->image];
        if (!libraries[v->image]) {
            CUresult r = d->cuLibraryLoadData(&libraries[v->image], img->data, NULL, NULL, 0, NULL, NULL, 0);
            if (r != CUDA_SUCCESS) {
                libraries[v->image] = NULL;
                s = mgpu_driver_fail(d, r, "cuLibraryLoadData");
                goto out;
            }
            mgpu_log("loaded image %s (%zu bytes)", img->name, img->size);
        }
        CUresult r = d->cuLibraryGetKernel(&kernels[variant], libraries[v->image], v->name);
        if (r != CUDA_SUCCESS) {
            kernels[variant] = NULL;
            s = mgpu_driver_fail(d, r, "cuLibraryGetKernel");
            goto out;
        }
    }
    *out = kernels[variant];
out:
    pthread_mutex_unlock(&load_lock);
    return s;
}

mgpu_status mgpu_kernel_function(mgpu_handle *h, const struct mgpu_driver *d, int variant, CUfunction *out)
{
    if (h->functions[variant]) {
        *out = h->functions[variant];
        return MGPU_STATUS_SUCCESS;
    }
    CUkernel kernel = NULL;
    mgpu_status s = load_kernel(d, variant, &kernel);
    if (s != MGPU_STATUS_SUCCESS)
        return s;
    const struct mgpu_variant *v = &mgpu_variants[variant];
    if (!h->smem_configured[variant] && v->smem_bytes > 0) {
        CUresult r = d->cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v->smem_bytes,
                                             kernel, h->device);
        if (r != CUDA_SUCCESS)
            return mgpu_driver_fail(d, r, "cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    }
    h->smem_configured[variant] = 1;
    CUfunction fn;
    CUresult r = d->cuKernelGetFunction(&fn, kernel);
    if (r != CUDA_SUCCESS)
        return mgpu_driver_fail(d, r, "cuKernelGetFunction");
    h->functions[variant] = fn;
    *out = fn;
    return MGPU_STATUS_SUCCESS;
}
