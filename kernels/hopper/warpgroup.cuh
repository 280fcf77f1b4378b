/*
 * Warpgroup register reallocation on Hopper (sm_90a): a warp-specialized
 * kernel launches with an even register budget per thread, then its producer
 * warpgroup gives registers back (setmaxnreg.dec) and its consumer
 * warpgroups take them (setmaxnreg.inc). Every thread of a warpgroup executes
 * the instruction; the counts must be multiples of 8 in [24, 256].
 */
#pragma once

namespace mgpu {
namespace sm90 {

template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_dec()
{
    static_assert(kRegisters % 8 == 0 && kRegisters >= 24 && kRegisters <= 256, "setmaxnreg range");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_inc()
{
    static_assert(kRegisters % 8 == 0 && kRegisters >= 24 && kRegisters <= 256, "setmaxnreg range");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

} // namespace sm90
} // namespace mgpu
