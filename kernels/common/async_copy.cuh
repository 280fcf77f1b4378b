/*
 * Device building blocks shared by the Hopper and Blackwell kernels: mbarrier
 * waits, TMA tile loads and stores, and the fences between the generic and
 * async proxies.
 *
 * They are thin names over CCCL's cuda::ptx wrappers, chosen so that a kernel's
 * main loop reads as its schedule: wait(full[s], phase); issue; arrive(empty[s]).
 * An mbarrier completes a phase when its expected arrivals and transaction bytes
 * have all come in; waiters name the phase parity they wait for.
 */
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <stdint.h>

namespace mgpu {

namespace ptx = cuda::ptx;

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t arrivals)
{
    ptx::mbarrier_init(bar, arrivals);
}

/* Makes barrier initialisation visible to the async proxy (TMA, tensor cores)
 * and to the other CTAs of the cluster. Call once after the inits, before a
 * block-wide (or cluster-wide) barrier. */
__device__ __forceinline__ void mbar_fence_init()
{
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
}

/* Spins until the phase with the given parity has completed. */
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
    }
}

__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    ptx::mbarrier_arrive(bar);
}

/* One arrival that also announces `bytes` of TMA traffic for this phase. */
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes)
{
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar, bytes);
}

/* TMA tile load of a rank-3 box at coordinates {c0, c1, c2} (innermost first),
 * completing `bytes` on `bar`. Out-of-bounds elements arrive as zeros and still
 * count towards the transaction bytes. */
__device__ __forceinline__ void tma_load_3d(void *smem_dst, const CUtensorMap *map, uint64_t *bar,
                                            int32_t c0, int32_t c1, int32_t c2)
{
    const int32_t coords[3] = {c0, c1, c2};
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_dst, map, coords, bar);
}

/* The same with a rank-4 box {c0, c1, c2, c3}. */
__device__ __forceinline__ void tma_load_4d(void *smem_dst, const CUtensorMap *map, uint64_t *bar, int32_t c0,
                                            int32_t c1, int32_t c2, int32_t c3)
{
    const int32_t coords[4] = {c0, c1, c2, c3};
    ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, smem_dst, map, coords, bar);
}

/* TMA tile load of a rank-3 box written to the same shared-memory offset of
 * every CTA of the cluster in `cta_mask`, completing its bytes on each
 * destination CTA's barrier at `bar`'s offset. */
__device__ __forceinline__ void tma_load_3d_multicast(void *smem_dst, const CUtensorMap *map, uint64_t *bar,
                                                      int32_t c0, int32_t c1, int32_t c2, uint16_t cta_mask)
{
    const int32_t coords[3] = {c0, c1, c2};
    ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem_dst, map, coords, bar, cta_mask);
}

/* TMA tile store of a rank-3 box from shared memory at {c0, c1, c2}; the
 * caller has fenced its shared-memory writes into the async proxy
 * (fence_smem_to_async). Stores are tracked in bulk groups per thread. */
__device__ __forceinline__ void tma_store_3d(const CUtensorMap *map, const void *smem_src, int32_t c0, int32_t c1,
                                             int32_t c2)
{
    const int32_t coords[3] = {c0, c1, c2};
    ptx::cp_async_bulk_tensor(ptx::space_global, ptx::space_shared, map, coords, smem_src);
}

/* TMA reduction (add) of a rank-2 box from shared memory (32-bit address of
 * the box, 128-byte aligned) into the map's tensor at {c0, c1}; elements
 * outside the tensor are skipped. The element type (and so the add) is the
 * map's. Tracked in bulk groups like the stores; the caller has fenced its
 * shared-memory writes into the async proxy (fence_smem_to_async). */
__device__ __forceinline__ void tma_reduce_add_2d(const CUtensorMap *map, uint32_t smem_src, int32_t c0, int32_t c1)
{
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];\n"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(smem_src)
                 : "memory");
}

/* Closes this thread's TMA stores issued since the last commit into one group. */
__device__ __forceinline__ void tma_store_commit()
{
    ptx::cp_async_bulk_commit_group();
}

/* Waits until at most N of this thread's store groups still read their
 * shared-memory source (the buffers of the others may be rewritten). */
template <int N>
__device__ __forceinline__ void tma_store_wait_read()
{
    ptx::cp_async_bulk_wait_group_read(ptx::n32_t<N>{});
}

/* Waits until every TMA store this thread issued has completed. */
__device__ __forceinline__ void tma_store_drain()
{
    ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
}

/* Hint the tensor map into the constant cache before the first load. */
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap *map)
{
    asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

/* Orders this thread's ordinary shared-memory writes before later async-proxy
 * (TMA store, wgmma, tcgen05) reads of the same memory. */
__device__ __forceinline__ void fence_smem_to_async()
{
    ptx::fence_proxy_async(ptx::space_shared);
}

/* Orders this thread's global-memory accesses through the generic proxy
 * (an acquire or release of a turn) against its accesses through the async
 * proxy (bulk reductions), either way. */
__device__ __forceinline__ void fence_global_async_proxy()
{
    ptx::fence_proxy_async(ptx::space_global);
}

/* One 16-byte copy from global to shared memory (cp.async, L2 only) of
 * which src_bytes (16 or 0) are read, the rest zero-filled. The writes are
 * the generic proxy's: an async-proxy reader fences after it has seen them
 * complete. */
__device__ __forceinline__ void cp_async_16(uint32_t smem_dst, uint64_t src, uint32_t src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_dst), "l"(src), "r"(src_bytes)
                 : "memory");
}

/* One arrival on bar once all of this thread's earlier cp.async copies have
 * completed; the barrier's expected arrival count includes it (.noinc). */
__device__ __forceinline__ void cp_async_arrive_noinc(uint64_t *bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(
                     static_cast<uint32_t>(__cvta_generic_to_shared(bar)))
                 : "memory");
}

/* Waits for all of this thread's cp.async copies. */
__device__ __forceinline__ void cp_async_wait_all()
{
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/* Shared-memory address as the 32-bit value PTX instructions take. */
__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

} // namespace mgpu
