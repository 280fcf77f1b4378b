/*
 * The CUDA driver API, loaded at run time with dlopen("libcuda.so.1").
 *
 * Linking libcuda directly would make the library fail to load on a machine
 * without an NVIDIA driver; loading it lazily lets every call answer such a
 * machine with MGPU_STATUS_NO_DRIVER instead. Entry points are resolved with
 * cuGetProcAddress at the CUDA 12.0 ABI, the oldest this library needs
 * (cuLibraryLoadData, cuTensorMapEncodeTiled).
 *
 * A libcuda.so.1 that is not a working driver says so by name and path: the
 * CUDA toolkit's stub library (cuInit answers CUDA_ERROR_STUB_LIBRARY), or a
 * library that lacks the entry points (a stub of another kind, or a driver
 * older than CUDA 12.0).
 */
#include "runtime.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>

#define MGPU_DRIVER_ABI_VERSION 12000

static struct mgpu_driver driver;
static mgpu_status driver_status;
static char driver_message[256];
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

typedef CUresult (*get_proc_address_fn)(const char *, void **, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult *);

/* Where the dynamic linker found libcuda.so.1. */
static const char *library_path(void *lib)
{
    struct link_map *map = NULL;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0])
        return map->l_name;
    return "libcuda.so.1";
}

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        driver_status = MGPU_STATUS_NO_DRIVER;
        snprintf(driver_message, sizeof driver_message,
                 "the CUDA driver (libcuda.so.1) could not be loaded: %s", dlerror());
        return;
    }
    const char *path = library_path(lib);
    get_proc_address_fn get = (get_proc_address_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!get) {
        driver_status = MGPU_STATUS_NO_DRIVER;
        snprintf(driver_message, sizeof driver_message,
                 "%s has no cuGetProcAddress_v2: it is a stub library or a driver older than CUDA 12.0, not a "
                 "usable CUDA driver", path);
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
                     "%s lacks %s: it is a stub or incompatible library, or a driver older than CUDA "  \
                     "12.0, not a usable CUDA driver", path, #name);                                    \
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
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        driver_status = MGPU_STATUS_NO_DRIVER;
        snprintf(driver_message, sizeof driver_message,
                 "%s is the CUDA toolkit's stub library, not a driver (cuInit: CUDA_ERROR_STUB_LIBRARY); the "
                 "dynamic linker found it before the real libcuda.so.1 (check LD_LIBRARY_PATH)", path);
        return;
    }
    if (r != CUDA_SUCCESS) {
        const char *name = "?";
        driver.cuGetErrorName(r, &name);
        driver_status = r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
                            ? MGPU_STATUS_NO_DRIVER
                            : MGPU_STATUS_DRIVER_ERROR;
        snprintf(driver_message, sizeof driver_message, "cuInit of %s failed: %s", path, name);
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
