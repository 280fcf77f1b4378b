/*
 * The thread index read by a volatile instruction, for warp-specialized
 * loops whose registers the accumulators (or a 24-register producer) need:
 * what derives from it is recomputed where it is used instead of being held
 * in registers across the loop.
 */
#pragma once

#include <stdint.h>

namespace mgpu {

__device__ __forceinline__ uint32_t opaque_tid_x()
{
    uint32_t tid;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
    return tid;
}

} // namespace mgpu
