/*
 * The two pieces of a CTA pair (the two CTAs of a cluster that share one
 * tcgen05.mma.cta_group::2) that CCCL's cuda::ptx does not offer in the form
 * the collective GEMM needs:
 *
 *   leader_barrier   the shared::cluster address of the barrier at the same
 *                    offset in the pair's even ("leader") CTA, where the MMA
 *                    is issued and waits;
 *   tma_load_3d_pair a TMA tile load into this CTA's own shared memory whose
 *                    transaction bytes complete on that leader barrier
 *                    (.cta_group::2 lets the barrier live in the peer CTA).
 *                    cuda::ptx's .cta_group::2 load takes a shared::cta
 *                    barrier address, which cannot name the peer's barrier.
 *
 * Written from the PTX ISA (cp.async.bulk.tensor, mapa). NOT RUN ON
 * BLACKWELL HARDWARE: compiled and SASS-checked only (UTMALDG).
 */
#pragma once

#include <cuda.h>
#include <stdint.h>

#include "common/async_copy.cuh"

namespace mgpu {
namespace sm100 {

/* Address, in the cluster window, of `bar`'s counterpart in CTA `rank`. */
__device__ __forceinline__ uint32_t cluster_smem_addr(const void *p, uint32_t rank)
{
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_u32(p)), "r"(rank));
    return remote;
}

/* The barrier at `bar`'s offset in the leader (even) CTA of this CTA's pair. */
__device__ __forceinline__ uint32_t leader_barrier(const uint64_t *bar, uint32_t my_rank)
{
    return cluster_smem_addr(bar, my_rank & ~1u);
}

/* TMA tile load of a rank-3 box at {c0, c1, c2} into this CTA's shared memory
 * at `smem_dst`, completing its bytes on the barrier at cluster address
 * `bar_cluster` (this CTA's or its pair peer's). */
__device__ __forceinline__ void tma_load_3d_pair(void *smem_dst, const CUtensorMap *map, uint32_t bar_cluster,
                                                 int32_t c0, int32_t c1, int32_t c2)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.cta_group::2"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n"
                 :
                 : "r"(smem_u32(smem_dst)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar_cluster)
                 : "memory");
}

} // namespace sm100
} // namespace mgpu
