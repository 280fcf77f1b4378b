/*
 * What the fake CUDA driver (fake_cuda.c) reports to the CPU tests, and how
 * they reach it: the library dlopens it as libcuda.so.1; a test looks its
 * functions up in the same loaded object (fake_cuda_open below).
 */
#ifndef MGPU_TESTS_FAKE_CUDA_H
#define MGPU_TESTS_FAKE_CUDA_H

#include <dlfcn.h>
#include <stddef.h>

struct fake_cuda_stats {
    long allocations;      /* cuMemAlloc calls that succeeded */
    long live_allocations; /* allocated and not freed */
    long synchronizations; /* cuStreamSynchronize calls */
    long launches;
    long maps_encoded;
    char last_kernel[128];
    unsigned last_grid[3];
    int last_programmatic; /* the last launch asked for programmatic stream serialization */
};

struct fake_cuda {
    void (*get_stats)(struct fake_cuda_stats *out);
    void (*set_capturing)(int on);
    int (*primary_refs)(void);
};

/* After the library has loaded the driver (any mgpu_create): 1 and *out set
 * when the loaded libcuda.so.1 is the fake. */
static inline int fake_cuda_open(struct fake_cuda *out)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return 0;
    *(void **)&out->get_stats = dlsym(lib, "fake_cuda_get_stats");
    *(void **)&out->set_capturing = dlsym(lib, "fake_cuda_set_capturing");
    *(void **)&out->primary_refs = dlsym(lib, "fake_cuda_primary_refs");
    return out->get_stats && out->set_capturing && out->primary_refs;
}

#endif
