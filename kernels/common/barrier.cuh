/*
 * Named barriers (bar.sync / bar.arrive with an id), the one place the kernels
 * get them from. A warp-specialized kernel uses them where __syncthreads()
 * would stall the wrong warps: a consumer warpgroup syncing its own 128
 * threads (epilogue buffers, split-K arrival) or two warpgroups passing a
 * turn back and forth (attention's ping-pong: one side arrives, the other
 * syncs). Id 0 is __syncthreads(); each kernel names the ids it uses.
 * `threads` is a multiple of 32: every thread of the named warps takes part.
 */
#pragma once

#include <stdint.h>

namespace mgpu {

/* Waits until `threads` threads have arrived at barrier `id` (this one included). */
__device__ __forceinline__ void named_barrier_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/* Counts this thread in at barrier `id` without waiting. */
__device__ __forceinline__ void named_barrier_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/* named_barrier_sync that also returns, in every thread, whether `pred` was
 * true in any of them (bar.red.or). */
__device__ __forceinline__ bool named_barrier_sync_or(int id, int threads, bool pred)
{
    uint32_t any;
    asm volatile("{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\tbar.red.or.pred q, %2, %3, p;\n\t"
                 "selp.u32 %0, 1, 0, q;\n\t}\n"
                 : "=r"(any)
                 : "r"(static_cast<uint32_t>(pred)), "r"(id), "r"(threads)
                 : "memory");
    return any != 0;
}

} // namespace mgpu
