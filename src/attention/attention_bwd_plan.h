/*
 * The pure half of mgpu_attention_bwd: descriptor validation, the choice of
 * its three kernels (preprocess, main, postprocess) and the launch plan:
 * kernel arguments, tensor-map shapes, grids and the scratch layout of
 * kernels/abi/attention_bwd_abi.h with the workspace size it needs. Nothing
 * here touches a device, so tests run it with made-up capabilities;
 * attention_bwd.c borrows the workspace, encodes the maps and launches.
 */
#ifndef MGPU_SRC_ATTENTION_BWD_PLAN_H
#define MGPU_SRC_ATTENTION_BWD_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "attention_bwd_abi.h"
#include "attention_common.h"

/* One backward call after validation. `a` holds what the forward call would
 * hold (Q, K, V, O, LSE and their strides); the gradient tensors sit beside it. */
struct mgpu_attention_bwd_problem {
    struct mgpu_attention_problem a;
    uintptr_t dout, dq, dk, dv;
    mgpu_attention_strides do_strides, dq_strides, dk_strides, dv_strides;
    int deterministic;
    int force_pair_group; /* MGPU_FORCE_BWD_PAIR_GROUP: n >= 1 forces the sm_90a grid's pair_group
                           * (capped at batch * heads_q), 0 the planner's choice */
    int force_keys_down;  /* MGPU_FORCE_BWD_KEYS_DOWN: 1 / -1 forces the sm_90a grid's key_blocks_down
                           * to 1 / 0, 0 the planner's choice */
};

/* SUCCESS and *out filled when the call is valid and the build's kernels
 * could run it, else the status with its message set. need_pointers = 0
 * (mgpu_attention_bwd_workspace_size) skips the NULL checks; every other
 * rule still applies. A valid problem may be empty: mgpu_attention_problem_empty(&out->a). */
mgpu_status mgpu_attention_bwd_validate(const mgpu_attention_bwd_desc *desc, const void *q, const void *k,
                                        const void *v, const void *o, const void *dout, const float *lse, void *dq,
                                        void *dk, void *dv, int need_pointers, struct mgpu_attention_bwd_problem *out);

/* Everything the three launches need except the tensor maps themselves and
 * the workspace's address (mgpu_attention_bwd_place_scratch adds it). */
struct mgpu_attention_bwd_plan {
    int pre, main, post;                  /* indices into mgpu_variants */
    struct mgpu_attention_bwd_tile tile;
    struct mgpu_attention_bwd_args args;  /* scratch fields hold offsets until placed */
    /* rank 4: {head_dim, seq rows, heads, nbatch}, boxes of {64, block rows, 1, 1} */
    struct mgpu_tensor_map_desc q_map, k_map, v_map, do_map;
    /* split_dim: dq_accum, rank 2 fp32 {head_dim, rows}, box {dq_box_cols, 16}
     * (base placed with the scratch); else rank 0, not encoded */
    struct mgpu_tensor_map_desc dq_map;
    struct mgpu_attention_bwd_scratch scratch;
    size_t workspace_bytes;               /* scratch.total */
    unsigned pre_grid, main_grid, post_grid; /* 1-D grids */
};

/* Picks the kernels of a valid, non-empty problem for a device and plans the
 * launches. `force` (may be NULL) names a main-kernel variant as
 * MGPU_FORCE_VARIANT does; a name that is not an attention backward variant
 * is ignored. Returns 0, or -1 with *status set: ARCH_MISMATCH (no backward
 * kernels for this compute capability), NOT_SUPPORTED (none for this dtype /
 * head dim, or a forced variant that cannot run the call), INVALID_SIZE (a
 * grid of 2^31 or more CTAs, or a workspace the ABI cannot lay out). */
int mgpu_attention_bwd_plan(const struct mgpu_attention_bwd_problem *p, const struct mgpu_device_caps *caps,
                            const char *force, struct mgpu_attention_bwd_plan *plan, mgpu_status *status);

/* Turns the plan's scratch offsets into device addresses inside the
 * workspace at `base` (which holds at least plan->workspace_bytes), the
 * dq_accum map's base included. */
void mgpu_attention_bwd_place_scratch(struct mgpu_attention_bwd_plan *plan, uint64_t base);

#endif
