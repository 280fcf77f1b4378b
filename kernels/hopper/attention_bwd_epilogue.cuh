/*
 * Hopper attention backward: what leaves the consumers for global memory.
 *
 *   - dQ of one query block (fp32, a consumer's column range, wgmma
 *     accumulator layout) is added into dq_accum once per (query block, key
 *     block): through a shared dQ buffer and the dQ writer's one bulk
 *     reduction per block (kDqWriter, head dims <= 128), or (head dims 192,
 *     256) through the stage's freed Q / dO column blocks and tensor bulk
 *     reductions (tmap_dq, 16-row boxes of 128 / 64 columns, one or two per
 *     consumer warp) by the split dims' dQ writer.
 *   - dK, dV of the key block at the end: 16-bit stores clipped to seqlen_k
 *     (group_size == 1) or fp32 vector reductions into dk_accum / dv_accum
 *     (GQA: every query head of the group adds its part).
 *   - Deterministic mode orders those adds with a semaphore per destination
 *     tile. The dQ writers take the turn themselves; for dK, dV one consumer
 *     thread waits (acquire) until the semaphore equals this CTA's turn, a
 *     named barrier over both consumers releases the others, all add, a
 *     second barrier, and the same thread stores turn + 1 (st.release.gpu).
 *     Every element then receives its adds in one fixed order.
 *
 * Accumulator fragment (m64nN, fp32) of thread t of a warpgroup: warp w = t / 32,
 * lane l = t % 32; d[i] sits at row 16 w + l / 4 + 8 ((i / 2) % 2), column
 * 8 (i / 4) + 2 (l % 4) + (i % 2). Pairs (d[i], d[i + 1]), i even, are adjacent
 * columns of one row.
 */
#pragma once

namespace mgpu {
namespace sm90 {

__device__ __forceinline__ void red_add_v2_f32(float *addr, float a, float b)
{
    asm volatile("red.relaxed.gpu.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(addr), "f"(a), "f"(b) : "memory");
}

/* Named barrier over `threads` threads that may reach it from different
 * instructions (the consumers' loops are two instantiations at head dim 192):
 * barrier.sync without .aligned (bar.sync is the .aligned form, which PTX
 * leaves undefined when the participants execute different instructions). */
__device__ __forceinline__ void bwd_barrier_sync(int id, int threads)
{
    asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/* Counts this thread in at named barrier `id` without waiting (the
 * non-.aligned barrier.arrive, as bwd_barrier_sync). */
__device__ __forceinline__ void bwd_barrier_arrive(int id, int threads)
{
    asm volatile("barrier.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ int ld_acquire_s32(const int *addr)
{
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(addr) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_s32(int *addr, int v)
{
    asm volatile("st.release.gpu.global.s32 [%0], %1;\n" ::"l"(addr), "r"(v) : "memory");
}

/* Consumer thread 0 (of both consumers) waits for `turn`; all 256 consumer
 * threads leave together. */
template <class Cfg>
__device__ __forceinline__ void ordered_acquire(const int *sem, int turn, int consumer_thread)
{
    if (consumer_thread == 0) {
        while (ld_acquire_s32(sem) != turn) {
        }
    }
    __syncwarp(); /* warp 0 reaches the barrier converged after thread 0's spin */
    bwd_barrier_sync(kBwdBarrierOrdered, Cfg::kConsumerThreads);
}

/* After the adds: all consumers meet, then thread 0 hands the turn on. Its
 * st.release.gpu is itself a release pattern (a GPU-scope fence, then the
 * store), cumulative over the other threads' adds that the barrier orders
 * before it: no separate fence.acq_rel.gpu (it was a second MEMBAR.GPU). */
template <class Cfg>
__device__ __forceinline__ void ordered_release(int *sem, int turn, int consumer_thread)
{
    __syncwarp();
    bwd_barrier_sync(kBwdBarrierOrdered, Cfg::kConsumerThreads);
    if (consumer_thread == 0)
        st_release_s32(sem, turn + 1);
}

/* Adds a 64-row accumulator fragment (kN columns) into an fp32 row-major
 * array: element (row, col) at base[row * kRowStride + col]; rows from row0. */
template <int kN, int kRowStride>
__device__ __forceinline__ void red_fragment(float *base, const float (&d)[kN / 2], int thread)
{
    const int warp = thread / 32, lane = thread % 32;
    const int row = 16 * warp + lane / 4, col = 2 * (lane % 4);
#pragma unroll
    for (int j = 0; j < kN / 8; ++j) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float *p = base + static_cast<int64_t>(row + 8 * h) * kRowStride + 8 * j + col;
            red_add_v2_f32(p, d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
    }
}

/* Stores a 64-row fragment (kN columns) as 16-bit pairs, times `scale`, rows
 * clipped to `rows`: element (row, col) at base[row * row_stride + col]. */
template <class Cfg, int kN>
__device__ __forceinline__ void store_fragment(typename Cfg::T *base, int64_t row_stride, int rows,
                                               const float (&d)[kN / 2], float scale, int thread)
{
    const int warp = thread / 32, lane = thread % 32;
    const int row = 16 * warp + lane / 4, col = 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        if (row + 8 * h < rows) {
            typename Cfg::T *p = base + static_cast<int64_t>(row + 8 * h) * row_stride + col;
#pragma unroll
            for (int j = 0; j < kN / 8; ++j)
                *reinterpret_cast<uint32_t *>(p + 8 * j) =
                    pack2<typename Cfg::T>(d[4 * j + 2 * h] * scale, d[4 * j + 2 * h + 1] * scale);
        }
    }
}

/*
 * dq_accum tiles (kernels/abi/attention_bwd_abi.h, mgpu_attention_bwd_dq_offset):
 * head dims <= 128 (the dQ writer) keep each query block's kBlockM x head_dim
 * fp32 tile in fragment order: consumer c's columns [col0, col0 + kN) start
 * at element kBlockM * col0 of the tile, and thread t's values d[4 q .. 4 q +
 * 3] sit at (q * 128 + t) * 4 from there. A warp's 16-byte pieces are then
 * contiguous (shared stores without bank conflicts) and the tile is one
 * contiguous range for a single bulk reduction. Head dims 192, 256 (bulk
 * tensor reductions of 16-row boxes) keep tiles row-major. The postprocess reads either back.
 */

/*
 * Stages one query block's dQ (this consumer's kN columns, head dims 192,
 * 256) in shared memory for attn_bwd_dq_split_writer, which adds it into the
 * row-major dq_accum tile with tensor bulk reductions (tmap_dq: fp32, no
 * swizzle, boxes of kDqBoxCols columns x 16 rows). The staging space is the
 * consumer's own 64-column blocks of the stage's Q and dO tiles, which
 * nothing reads once its dV and dK are complete (the other consumer reads
 * only its own blocks there, and both S^T and dP^T of the block were
 * complete before its bar(ds)): kN * 128 bytes in each, rows 0..31 in Q's,
 * 32..63 in dO's. Warp w stages rows 16 w .. 16 w + 15 as kN / kDqBoxCols
 * dense boxes (row-major, kDqBoxCols fp32 per row, box b holding columns
 * [b kDqBoxCols, (b + 1) kDqBoxCols); attn_bwd_split_box has the address).
 * Lane (r, p) = (lane / 4, lane % 4) stores the column pairs of group j = 4 g
 * + (k + r) % 4 at step k: the warp's 32 pairs then fall on every bank twice
 * (box rows are 128-byte multiples, so row-major stores of one column group
 * would put 8 rows on the same 8 banks). Returns once this thread's stores
 * are fenced for the async proxy; the caller's warp then arrives on
 * dq_full[s].
 */
template <class Cfg, int kN>
__device__ __forceinline__ void attn_bwd_stage_dq_split(uint32_t q_stage, uint32_t do_stage, int col0,
                                                        const float (&dq)[kN / 2])
{
    constexpr int kBoxCols = AttnBwdTile<Cfg::kHeadDim>::kDqBoxCols;
    constexpr int kBoxRows = MGPU_ATTENTION_BWD_DQ_BOX_ROWS;
    constexpr int kBoxes = kN / kBoxCols;
    constexpr int kBoxRowBytes = kBoxCols * 4;
    constexpr int kBoxBytes = kBoxRows * kBoxRowBytes;
    constexpr int kGroupsPerBox = kBoxCols / 32; /* 32-column groups g */
    static_assert(kN % 32 == 0 && 32 * kN * 4 == (kN / Cfg::kSwizzleElems) * Cfg::kQBlockBytes,
                  "32 rows of this consumer's dQ fill its column blocks of one stage tile");
    static_assert(kBoxCols % 32 == 0 && kN % kBoxCols == 0 && kBoxRows == 16, "whole boxes of one warp's 16 rows");
    const int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    int warp = thread / 32, lane = thread % 32;
    /* Opaque here: the staging addresses are recomputed at each block rather
     * than hoisted out of the consumer loop into registers that the dK, dV,
     * dQ and next-S^T accumulators need (they spilled). */
    asm volatile("" : "+r"(warp), "+r"(lane));
    const int r = lane / 4;
    const uint32_t region = (warp < 2 ? q_stage : do_stage) + (col0 / Cfg::kSwizzleElems) * Cfg::kQBlockBytes +
                            (warp % 2) * kBoxes * kBoxBytes;
    const uint32_t row_addr = region + r * kBoxRowBytes + 8 * (lane % 4);
    uint32_t off[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
        off[k] = row_addr + 32 * ((k + r) & 3);
#pragma unroll
    for (int g = 0; g < kN / 32; ++g) {
        const int g_off = (g / kGroupsPerBox) * kBoxBytes + (g % kGroupsPerBox) * 128;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float2 x[4];
#pragma unroll
            for (int t = 0; t < 4; ++t)
                x[t] = make_float2(dq[4 * (4 * g + t) + 2 * h], dq[4 * (4 * g + t) + 2 * h + 1]);
            if (r & 1) {
                const float2 t0 = x[0];
                x[0] = x[1];
                x[1] = x[2];
                x[2] = x[3];
                x[3] = t0;
            }
            if (r & 2) {
                const float2 t0 = x[0], t1 = x[1];
                x[0] = x[2];
                x[1] = x[3];
                x[2] = t0;
                x[3] = t1;
            }
#pragma unroll
            for (int k = 0; k < 4; ++k)
                st_shared_f32x2(off[k] + g_off + 8 * h * kBoxRowBytes, x[k].x, x[k].y);
        }
    }
    fence_smem_to_async(); /* the writer's bulk reductions read the boxes through the async proxy */
}

/* Shared-memory address of consumer c's warp w's first dQ box of a stage
 * (attn_bwd_reduce_dq_split's staging layout). */
template <class Cfg, int kC>
__device__ __forceinline__ uint32_t attn_bwd_split_box(uint32_t q_stage, uint32_t do_stage, int warp)
{
    constexpr int kCol0 = kC == 0 ? 0 : Cfg::kCols0;
    constexpr int kN = kC == 0 ? Cfg::kCols0 : Cfg::kCols1;
    constexpr int kBoxBytes = MGPU_ATTENTION_BWD_DQ_BOX_ROWS * kN * 4; /* all kN / kDqBoxCols boxes of the warp */
    return (warp < 2 ? q_stage : do_stage) + (kCol0 / Cfg::kSwizzleElems) * Cfg::kQBlockBytes + (warp % 2) * kBoxBytes;
}

/* The boxes of consumer kC (all its warps) of one stage into dq_accum rows
 * from row0. */
template <class Cfg, int kC>
__device__ __forceinline__ void attn_bwd_split_reduce_consumer(const CUtensorMap *dq_map, uint32_t q_stage,
                                                               uint32_t do_stage, int32_t row0)
{
    constexpr int kBoxCols = AttnBwdTile<Cfg::kHeadDim>::kDqBoxCols;
    constexpr int kCol0 = kC == 0 ? 0 : Cfg::kCols0;
    constexpr int kN = kC == 0 ? Cfg::kCols0 : Cfg::kCols1;
    constexpr int kBoxBytes = MGPU_ATTENTION_BWD_DQ_BOX_ROWS * kBoxCols * 4;
#pragma unroll
    for (int warp = 0; warp < Cfg::kWarpgroupThreads / 32; ++warp) {
        const uint32_t box = attn_bwd_split_box<Cfg, kC>(q_stage, do_stage, warp);
#pragma unroll
        for (int b = 0; b < kN / kBoxCols; ++b)
            tma_reduce_add_2d(dq_map, box + b * kBoxBytes, kCol0 + b * kBoxCols,
                              row0 + MGPU_ATTENTION_BWD_DQ_BOX_ROWS * warp);
    }
}

/*
 * The dQ writer of head dims 192, 256 (thread 32, warpgroup 0): per query
 * block, in the consumers' order,
 * waits until both consumers have staged its dQ in stage s's Q / dO tiles
 * (dq_full[s], 8 warp arrivals), adds every box with tensor bulk reductions,
 * and once they have read shared memory releases the stage to the producer
 * (q_empty[s], do_empty[s]: the writer's is then their only arrival).
 * Deterministic: before adding, waits (while the consumers go on) until
 * dq_semaphore equals this key block's turn; after releasing the stage, waits
 * for the adds to complete and hands the turn on.
 */
template <class Cfg>
__device__ __forceinline__ void attn_bwd_dq_split_writer(const mgpu_attention_bwd_args &a, const CUtensorMap *dq_map,
                                                         typename Cfg::SharedStorage &smem, const AttnBwdWork &w)
{
    const int count = w.m_block_end - w.m_block_begin;
    for (int i = 0, m = w.m_first; i < count; ++i, m += w.m_step) {
        const int s = i % Cfg::kStages;
        const uint32_t parity = (i / Cfg::kStages) & 1;
        int *sem = reinterpret_cast<int *>(a.dq_semaphore) + w.q_row0 / Cfg::kBlockM + m;
        const int turn = attn_bwd_dq_turn<Cfg>(a, w, m);
        if (a.deterministic) {
            while (ld_acquire_s32(sem) != turn) {
            }
            fence_global_async_proxy();
        }
        mbar_wait(&smem.dq_full[s], parity);
        const uint32_t q_stage = smem_u32(smem.q[s]), do_stage = smem_u32(smem.dout[s]);
        const int32_t row0 = static_cast<int32_t>(w.q_row0 + static_cast<int64_t>(m) * Cfg::kBlockM);
        attn_bwd_split_reduce_consumer<Cfg, 0>(dq_map, q_stage, do_stage, row0);
        attn_bwd_split_reduce_consumer<Cfg, 1>(dq_map, q_stage, do_stage, row0);
        ptx::cp_async_bulk_commit_group();
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
        mbar_arrive(&smem.q_empty[s]);
        mbar_arrive(&smem.do_empty[s]);
        if (a.deterministic) {
            /* complete, ordered before this thread's generic-proxy release (as attn_bwd_dq_writer) */
            ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
            fence_global_async_proxy();
            st_release_s32(sem, turn + 1);
        }
    }
    ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
}

/* Consumer side of the dQ writer: block i's dQ columns [col0, col0 + cols) into
 * dQ buffer i % kDqBuffers once the writer has read out its previous use
 * (attn_bwd_store_dq), then handed to the writer (attn_bwd_publish_dq: the
 * async-proxy fence, which waits for the stores, and the warp's arrival).
 * The deferred-dQ loop publishes a block's tile a little later, once its
 * stores have had time to complete. */
template <class Cfg, int kN>
__device__ __forceinline__ void attn_bwd_store_dq(typename Cfg::SharedStorage &smem, int i, int col0, int cols,
                                                  const float (&dq)[kN / 2])
{
    const int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    const int b = i % Cfg::kDqBuffers;
    MGPU_ATTN_BWD_TIMED(kBwdTlDqEmpty0 + static_cast<int>(opaque_tid_x()) / Cfg::kWarpgroupThreads - 1,
                        opaque_tid_x() % Cfg::kWarpgroupThreads == 0,
                        mbar_wait(&smem.dq_empty[b], ((i / Cfg::kDqBuffers) & 1) ^ 1));
    const uint32_t base = smem_u32(&smem.dq[b][Cfg::kBlockM * col0 + 4 * thread]);
#pragma unroll
    for (int q = 0; q < kN / 8; ++q) {
        if (8 * q < cols) /* the consumer's own columns (fewer than kN for consumer 1 at head dim 96) */
            st_shared_f32x4(base + q * 16 * Cfg::kWarpgroupThreads, dq[4 * q], dq[4 * q + 1], dq[4 * q + 2],
                            dq[4 * q + 3]);
    }
}

template <class Cfg>
__device__ __forceinline__ void attn_bwd_publish_dq(typename Cfg::SharedStorage &smem, int i)
{
    fence_smem_to_async(); /* the bulk reduction reads it through the async proxy */
    __syncwarp();
    if ((threadIdx.x % 32) == 0)
        mbar_arrive(&smem.dq_full[i % Cfg::kDqBuffers]);
}

template <class Cfg, int kN>
__device__ __forceinline__ void attn_bwd_stage_dq(typename Cfg::SharedStorage &smem, int i, int col0, int cols,
                                                  const float (&dq)[kN / 2])
{
    attn_bwd_store_dq<Cfg, kN>(smem, i, col0, cols, dq);
    attn_bwd_publish_dq<Cfg>(smem, i);
}

/*
 * The dQ writer (one thread of warpgroup 0): per query block, in the
 * consumers' order, waits for the block's buffer, adds the whole tile into
 * dq_accum with one bulk reduction and frees the buffer once the reduction
 * has read it. Deterministic: before adding, waits (while the consumers go
 * on) until dq_semaphore equals this key block's turn; after freeing the
 * buffer, waits for the adds to complete and hands the turn on.
 */
template <class Cfg>
__device__ __forceinline__ void attn_bwd_dq_writer(const mgpu_attention_bwd_args &a,
                                                   typename Cfg::SharedStorage &smem, const AttnBwdWork &w)
{
    const int count = w.m_block_end - w.m_block_begin;
    for (int i = 0, m = w.m_first; i < count; ++i, m += w.m_step) {
        const int b = i % Cfg::kDqBuffers;
        float *dst = reinterpret_cast<float *>(a.dq_accum) +
                     (w.q_row0 + static_cast<int64_t>(m) * Cfg::kBlockM) * Cfg::kHeadDim;
        int *sem = reinterpret_cast<int *>(a.dq_semaphore) + w.q_row0 / Cfg::kBlockM + m;
        const int turn = attn_bwd_dq_turn<Cfg>(a, w, m);
        if (a.deterministic) {
            MGPU_ATTN_BWD_TIMED(kBwdTlTurn, true, while (ld_acquire_s32(sem) != turn){});
            fence_global_async_proxy();
        }
        MGPU_ATTN_BWD_TIMED(kBwdTlDqFull, true, mbar_wait(&smem.dq_full[b], (i / Cfg::kDqBuffers) & 1));
        ptx::cp_reduce_async_bulk(ptx::space_global, ptx::space_shared, ptx::op_add, dst, &smem.dq[b][0],
                                  static_cast<uint32_t>(Cfg::kDqTileBytes));
        ptx::cp_async_bulk_commit_group();
        /* The buffer is free once the reduction has read it, in both modes:
         * the consumers refill it while the adds complete. */
        ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
        mbar_arrive(&smem.dq_empty[b]);
        if (a.deterministic) {
            /* The reduction's writes are complete, ordered before this
             * thread's generic-proxy accesses, then released at GPU scope by
             * the store itself (st.release, as in ordered_release). */
            MGPU_ATTN_BWD_TIMED(kBwdTlDqComplete, true, ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{}));
            fence_global_async_proxy();
            st_release_s32(sem, turn + 1);
        }
    }
    ptx::cp_async_bulk_wait_group(ptx::n32_t<0>{});
    MGPU_ATTN_BWD_STAMP(kBwdTlWriterDone, true);
}

/*
 * The key block's dK, dV of this consumer: rows [key0, key0 + 64) of the
 * block, columns [col0, col0 + kN). dK is multiplied by softmax_scale here.
 */
template <class Cfg, int kN>
__device__ __forceinline__ void attn_bwd_store_dkv(const mgpu_attention_bwd_args &a, const AttnBwdWork &w,
                                                   int key0, int col0, float (&dk)[kN / 2],
                                                   const float (&dv)[kN / 2], int consumer)
{
    const int thread = static_cast<int>(threadIdx.x) % Cfg::kWarpgroupThreads;
    const int consumer_thread = consumer * Cfg::kWarpgroupThreads + thread;
    const int first_key = w.n_block * Cfg::kBlockN + key0; /* within the sequence */
    if (a.group_size == 1) {
        const int rows = w.seqlen_k - first_key;
        const int64_t row = static_cast<int64_t>(w.k_offset) + first_key;
        const int64_t bk = a.cu_seqlens_q != 0 ? 0 : static_cast<int64_t>(w.batch) * a.dk_batch_stride;
        const int64_t bv = a.cu_seqlens_q != 0 ? 0 : static_cast<int64_t>(w.batch) * a.dv_batch_stride;
        typename Cfg::T *dk_base = reinterpret_cast<typename Cfg::T *>(a.dk) + bk + row * a.dk_seq_stride +
                                   static_cast<int64_t>(w.head_kv) * a.dk_head_stride + col0;
        typename Cfg::T *dv_base = reinterpret_cast<typename Cfg::T *>(a.dv) + bv + row * a.dv_seq_stride +
                                   static_cast<int64_t>(w.head_kv) * a.dv_head_stride + col0;
        store_fragment<Cfg, kN>(dk_base, a.dk_seq_stride, rows, dk, a.softmax_scale, thread);
        store_fragment<Cfg, kN>(dv_base, a.dv_seq_stride, rows, dv, 1.f, thread);
        return;
    }
#pragma unroll
    for (int i = 0; i < kN / 2; ++i)
        dk[i] *= a.softmax_scale;
    const int64_t elem = (w.k_row0 + first_key) * Cfg::kHeadDim + col0;
    float *dk_base = reinterpret_cast<float *>(a.dk_accum) + elem;
    float *dv_base = reinterpret_cast<float *>(a.dv_accum) + elem;
    if (a.deterministic) {
        int *sem = reinterpret_cast<int *>(a.dkv_semaphore) + w.k_row0 / Cfg::kBlockN + w.n_block;
        const int turn = w.head_q - w.head_kv * a.group_size;
        /* Both consumers add under one turn; consumer 0's thread 0 takes it. */
        ordered_acquire<Cfg>(sem, turn, consumer_thread);
        red_fragment<kN, Cfg::kHeadDim>(dk_base, dk, thread);
        red_fragment<kN, Cfg::kHeadDim>(dv_base, dv, thread);
        ordered_release<Cfg>(sem, turn, consumer_thread);
    } else {
        red_fragment<kN, Cfg::kHeadDim>(dk_base, dk, thread);
        red_fragment<kN, Cfg::kHeadDim>(dv_base, dv, thread);
    }
}

} // namespace sm90
} // namespace mgpu
