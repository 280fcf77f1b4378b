/*
 * A debug timeline of the split (decode) forward, compiled in only with
 * -DMGPU_ATTN_FWD_TIMELINE (never in the library's build: every stamp below
 * is then empty and the kernels are unchanged).
 *
 * Stamp e of CTA c writes %globaltimer (ns) to word 32 c + e and the SM's
 * clock64 to word 32 c + 16 + e of a uint64 array at the split partials'
 * base + 32 MiB (a.o_partial, the handle's workspace: give the handle a
 * workspace of at least 32 MiB + 256 bytes a CTA, mgpu_set_workspace, and
 * read it back after the call). Calls without splits write nothing.
 * Events: attn_fwd_timeline_event.
 */
#pragma once

#include <stdint.h>

#include "abi/attention_abi.h"

namespace mgpu {
namespace sm90 {

enum attn_fwd_timeline_event {
    kTlEntry = 0,        /* thread 0: the kernel's first instruction */
    kTlBarriersSet = 1,  /* thread 0: after the barrier set-up's __syncthreads */
    kTlGridDepDone = 2,  /* thread 0: griddep_wait returned */
    kTlQIssued = 3,      /* producer leader: the tile's Q load issued */
    kTlKvIssued = 4,     /* producer leader: the tile's last K / V load issued */
    kTlQFull = 5,        /* consumer 0, thread 0: Q (and the tile) seen */
    kTlKFull = 6,        /* consumer 0, thread 0: S of the first key block computed */
    kTlScores = 7,       /* consumer 0, thread 0: the first block's softmax done */
    kTlKeyLoopDone = 8,  /* consumer 0, thread 0: the last P V completed */
    kTlPartialDone = 9,  /* consumer 0, thread 0: partial O / LSE stored */
    kTlCounted = 10,     /* consumer 0, thread 0: the split counted in (merge or not decided) */
    kTlMerged = 11,      /* consumer 0, thread 0: the merge done (last split only) */
};

#ifdef MGPU_ATTN_FWD_TIMELINE
__device__ __forceinline__ void attn_fwd_stamp(const mgpu_attention_fwd_args &a, int event)
{
    if (a.o_partial == 0)
        return;
    uint64_t gt;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(gt));
    const uint64_t ck = clock64();
    uint64_t *at = reinterpret_cast<uint64_t *>(a.o_partial + (uint64_t(32) << 20)) + 32 * uint64_t(blockIdx.x);
    at[event] = gt;
    at[16 + event] = ck;
}
#define MGPU_ATTN_FWD_STAMP(args, event, who)                                                                         \
    do {                                                                                                               \
        if (who)                                                                                                       \
            ::mgpu::sm90::attn_fwd_stamp((args), (event));                                                             \
    } while (0)
#else
#define MGPU_ATTN_FWD_STAMP(args, event, who)                                                                          \
    do {                                                                                                               \
    } while (0)
#endif

} // namespace sm90
} // namespace mgpu
