/*
 * Per-warp tensor-memory pieces shared by the sm_100a attention kernels
 * (forward softmax / correction warpgroups, backward compute warpgroups):
 * the columns of one tcgen05.ld / st 32x32b.x32, and the warp's arrival on
 * a barrier once its lanes' tensor-memory stores have completed.
 */
#pragma once

#include <cuda/ptx>
#include <stdint.h>

#include "common/async_copy.cuh"

namespace mgpu {
namespace sm100 {

constexpr int kTmemLdCols = 32; /* columns per tcgen05.ld / st 32x32b.x32 */

/* One arrival per warp after every lane's tensor-memory stores completed. */
__device__ __forceinline__ void warp_arrive_after_tmem(uint64_t *bar, int lane)
{
    namespace ptx = cuda::ptx;
    ptx::tcgen05_wait_st();
    ptx::tcgen05_fence_before_thread_sync();
    __syncwarp();
    if (lane == 0)
        mbar_arrive(bar);
}

} // namespace sm100
} // namespace mgpu
