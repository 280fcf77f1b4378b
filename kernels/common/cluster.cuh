/*
 * Thread-block-cluster building blocks (sm_90 and later): this CTA's rank in
 * its cluster, a cluster-wide barrier, and an mbarrier arrival on a peer CTA's
 * barrier. The first two are CCCL's cuda::ptx; the remote arrival is inline
 * PTX because cuda::ptx offers it only at cluster scope (see below).
 */
#pragma once

#include <cuda/ptx>
#include <stdint.h>

#include "common/async_copy.cuh"

namespace mgpu {

__device__ __forceinline__ uint32_t cluster_rank()
{
    return ptx::get_sreg_cluster_ctarank();
}

/* Every thread of every CTA of the cluster arrives and waits. */
__device__ __forceinline__ void cluster_sync()
{
    ptx::barrier_cluster_arrive();
    ptx::barrier_cluster_wait();
}

/* Arrives on the barrier at the same shared-memory offset in CTA `rank` of the
 * cluster. Release at CTA scope is enough: the arrival only says that this
 * warp's wgmma reads of a stage have completed (wait_group), and the peer's
 * producer overwrites the stage through TMA after observing it. Cluster scope
 * (the only one cuda::ptx::mbarrier_arrive offers for a shared::cluster
 * address) would put a GPU-wide fence (MEMBAR.ALL.GPU + ERRBAR) before every
 * arrival: measured, it made the 2-CTA GEMM 2.3x slower (ncu: 46 % of warp
 * samples stalled on the fence). */
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t *bar, uint32_t rank)
{
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

} // namespace mgpu
