/*
 * The CUDA driver API, loaded at run time with dlopen("libcuda.so.1").
 *
 * Linking libcuda directly would make the library fail to load on a machine
 * without an NVIDIA driver; loading it lazily lets every call answer such a
 * machine with MGPU_STATUS_NO_DRIVER instead. Entry points are resolved with
 * cuGetProcAddress at the CUDA 12.0 ABI, the oldest this library needs
 * (cuLibraryLoadData, cuTensorMapEncodeTiled).
 */
#include "internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define MGPU_DRIVER_ABI_VERSION 12000

static struct mgpu_driver driver;
static mgpu_status driver_status;
static char driver_message[256];
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

typedef CUresult (*get_proc_address_fn)(const char *, void **, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult *);

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        driver_status = MGPU_STATUS_NO_DRIVER;
        snprintf(driver_message, sizeof driver_message,
                 "the CUDA driver (libcuda.so.1) could not be loaded: %s", dlerror());
        return;
    }
    get_proc_address_fn get = (get_proc_address_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!get) {
        driver_status = MGPU_STATUS_NO_DRIVER;
        snprintf(driver_message, sizeof driver_message,
                 "the CUDA driver is older than CUDA 12 (no cuGetProcAddress_v2)");
        return;
    }
#define MGPU_RESOLVE(name)                                                                              \
    {                                                                                                   \
        CUdriverProcAddressQueryResult found;                                                           \
        void *fn = NULL;                                                                                \
        if (get(#name, &fn, MGPU_DRIVER_ABI_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=            \
                CUDA_SUCCESS ||                                                                         \
            !fn) {                                                                                      \
            driver_status = MGPU_STATUS_NO_DRIVER;                                                      \
            snprintf(driver_message, sizeof driver_message,                                             \
                     "the CUDA driver lacks %s (CUDA 12.0 or newer is needed)", #name);                 \
            return;                                                                                     \
        }                                                                                               \
        driver.name = (__typeof__(driver.name))fn;                                                      \
    }
    MGPU_DRIVER_FUNCTIONS(MGPU_RESOLVE)
#undef MGPU_RESOLVE

    CUresult r = driver.cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE) {
        driver_status = MGPU_STATUS_NO_DEVICE;
        snprintf(driver_message, sizeof driver_message, "the CUDA driver sees no device");
        return;
    }
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        driver.cuGetErrorName(r, &name);
        driver_status = r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE ? MGPU_STATUS_NO_DRIVER : MGPU_STATUS_DRIVER_ERROR;
        snprintf(driver_message, sizeof driver_message, "cuInit failed: %s", name);
        return;
    }
    driver_status = MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_driver(const struct mgpu_driver **out)
{
    pthread_once(&driver_once, load_driver);
    if (driver_status != MGPU_STATUS_SUCCESS)
        return mgpu_fail(driver_status, "%s", driver_message);
    *out = &driver;
    return MGPU_STATUS_SUCCESS;
}

mgpu_status mgpu_driver_fail(const struct mgpu_driver *d, CUresult r, const char *what)
{
    const char *name = "CUDA_ERROR_UNKNOWN", *text = "";
    d->cuGetErrorName(r, &name);
    d->cuGetErrorString(r, &text);
    mgpu_status s = MGPU_STATUS_DRIVER_ERROR;
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        s = MGPU_STATUS_OUT_OF_MEMORY;
    else if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES || r == CUDA_ERROR_INVALID_CLUSTER_SIZE ||
             r == CUDA_ERROR_NOT_SUPPORTED)
        s = MGPU_STATUS_LAUNCH_FAILED;
    return mgpu_fail(s, "%s: %s (%s)", what, name, text);
}
