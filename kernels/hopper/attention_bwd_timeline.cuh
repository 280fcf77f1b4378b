/*
 * A debug timeline of the Hopper attention backward's main kernel, compiled
 * in only with -DMGPU_ATTN_BWD_TIMELINE (never in the library's build: every
 * macro below is then the bare statement or nothing, and the kernels are
 * unchanged).
 *
 * CTA c (blockIdx.x) owns 32 uint64 words at the workspace's lse_log2 scratch
 * (its offset 0) + 512 MiB: give the handle a workspace of at least 512 MiB +
 * 256 bytes a CTA (mgpu_set_workspace), zero the words before a call and read
 * them back after it (bench/attention_bwd_timeline.py).
 *   words 0..7:   %globaltimer (ns) of the events of attn_bwd_timeline_event;
 *   words 8..15, 20..27: SM cycles (clock64) spent in the waits and steps of
 *                 attn_bwd_timeline_wait, summed over the CTA's blocks (one
 *                 thread of each role);
 *   words 16..19: the SM, the key block, the (sequence, query head) pair, the
 *                 number of query blocks.
 */
#pragma once

#include <stdint.h>

#include "abi/attention_bwd_abi.h"

namespace mgpu {
namespace sm90 {

enum attn_bwd_timeline_event {
    kBwdTlEntry = 0,         /* thread 0: the kernel's first instruction */
    kBwdTlLoopBegin = 1,     /* consumer 0, thread 0: K, V and the first S^T are in */
    kBwdTlLoopEnd0 = 2,      /* consumer 0, thread 0: its last dQ staged */
    kBwdTlLoopEnd1 = 3,      /* consumer 1, thread 0: its last dQ staged */
    kBwdTlDkvStored = 4,     /* consumer 0, thread 0: its dK, dV stored */
    kBwdTlWriterDone = 5,    /* dQ writer: its last reduction complete */
    kBwdTlProducerDone = 6,  /* producer: its last load issued */
};

/* Words 8..15 and 20..27: SM cycles of one thread of a role, summed over the CTA's blocks. */
enum attn_bwd_timeline_wait {
    kBwdTlTurn = 8,          /* dQ writer: deterministic turns */
    kBwdTlDqFull = 9,        /* dQ writer: the consumers' tiles */
    kBwdTlDqComplete = 10,   /* dQ writer: its reductions complete (deterministic) */
    kBwdTlDqEmpty0 = 11,     /* consumer c, thread 0: a free dQ buffer (11 + c) */
    kBwdTlStageEmpty = 13,   /* producer: free Q / dO stages */
    kBwdTlAnnounce0 = 14,    /* consumer c, thread 0: the other's announcement (14 + c) */
    kBwdTlDoFull = 20,       /* consumer 0, thread 0: dO of the block */
    kBwdTlQFull = 21,        /* consumer 0, thread 0: Q of the next block */
    kBwdTlDqStores = 22,     /* consumer 0, thread 0: its dQ tile's shared-memory stores */
    kBwdTlWaitDpt = 23,      /* consumer 0, thread 0: wgmma wait for dP^T */
    kBwdTlWaitDkv = 24,      /* consumer 0, thread 0: wgmma wait for dV, dK */
    kBwdTlWaitDq = 25,       /* consumer 0, thread 0: wgmma wait for dQ(i - 1) */
    kBwdTlWaitSt = 26,       /* consumer 0, thread 0: wgmma wait for S^T(i + 1) */
};

#ifdef MGPU_ATTN_BWD_TIMELINE
/* The stamps' base, written alike by every CTA's thread 0 before its __syncthreads. */
__device__ uint64_t *attn_bwd_tl_base;

__device__ __forceinline__ uint64_t *attn_bwd_timeline_words()
{
    return attn_bwd_tl_base + 32 * uint64_t(blockIdx.x);
}
__device__ __forceinline__ void attn_bwd_stamp(int event)
{
    uint64_t gt;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
    attn_bwd_timeline_words()[event] = gt;
}
__device__ __forceinline__ void attn_bwd_timeline_begin(const mgpu_attention_bwd_args &a, int n_block, int pair,
                                                        int blocks)
{
    attn_bwd_tl_base = reinterpret_cast<uint64_t *>(a.lse_log2 + (uint64_t(512) << 20));
    uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    uint64_t *at = attn_bwd_timeline_words();
    at[16] = sm;
    at[17] = static_cast<uint64_t>(n_block);
    at[18] = static_cast<uint64_t>(pair);
    at[19] = static_cast<uint64_t>(blocks);
    attn_bwd_stamp(kBwdTlEntry);
}
/* Thread 0, before the barrier set-up's __syncthreads. */
#define MGPU_ATTN_BWD_TIMELINE_BEGIN(args, n_block, pair, blocks)                                                     \
    ::mgpu::sm90::attn_bwd_timeline_begin((args), (n_block), (pair), (blocks))
#define MGPU_ATTN_BWD_STAMP(event, who)                                                                                \
    do {                                                                                                               \
        if (who)                                                                                                       \
            ::mgpu::sm90::attn_bwd_stamp(event);                                                                       \
    } while (0)
/* Runs the statement; `who` adds its SM cycles to word `slot`. */
#define MGPU_ATTN_BWD_TIMED(slot, who, ...)                                                                            \
    do {                                                                                                               \
        const long long attn_bwd_tl_t0 = clock64();                                                                    \
        __VA_ARGS__;                                                                                                   \
        if (who)                                                                                                       \
            atomicAdd(reinterpret_cast<unsigned long long *>(::mgpu::sm90::attn_bwd_timeline_words() + (slot)),       \
                      static_cast<unsigned long long>(clock64() - attn_bwd_tl_t0));                                    \
    } while (0)
/* The consumer's steps (words 20..26) only with -DMGPU_ATTN_BWD_TIMELINE_STEPS as well: their
 * clock reads cost the head-dim-128 consumers registers (the loop then spills and runs slower). */
#ifdef MGPU_ATTN_BWD_TIMELINE_STEPS
#define MGPU_ATTN_BWD_TIMED_STEP(slot, who, ...) MGPU_ATTN_BWD_TIMED(slot, who, __VA_ARGS__)
#else
#define MGPU_ATTN_BWD_TIMED_STEP(slot, who, ...)                                                                       \
    do {                                                                                                               \
        __VA_ARGS__;                                                                                                   \
    } while (0)
#endif
#else
#define MGPU_ATTN_BWD_TIMELINE_BEGIN(args, n_block, pair, blocks)                                                     \
    do {                                                                                                               \
    } while (0)
#define MGPU_ATTN_BWD_STAMP(event, who)                                                                                \
    do {                                                                                                               \
    } while (0)
#define MGPU_ATTN_BWD_TIMED(slot, who, ...)                                                                            \
    do {                                                                                                               \
        __VA_ARGS__;                                                                                                   \
    } while (0)
#define MGPU_ATTN_BWD_TIMED_STEP(slot, who, ...) MGPU_ATTN_BWD_TIMED(slot, who, __VA_ARGS__)
#endif

} // namespace sm90
} // namespace mgpu
