/*
 * The pure half of mgpu_attention_fwd: descriptor validation, variant
 * selection and the launch plan (kernel arguments, tensor-map shapes, grid)
 * by the rules of kernels/abi/attention_abi.h; the checks the backward
 * shares are in attention_common.c. Nothing here touches a
 * device, so tests run it with made-up device capabilities;
 * attention_fwd.c encodes the tensor maps and launches.
 */
#ifndef MGPU_SRC_ATTENTION_SELECT_H
#define MGPU_SRC_ATTENTION_SELECT_H

#include <stdint.h>

#include "dispatch.h"
#include "attention_abi.h"
#include "attention_common.h" /* struct mgpu_attention_problem, the checks shared with the backward */

/* SUCCESS and *out filled when the call is valid and a kernel could run it,
 * else the status with its message set. A valid problem may be empty
 * (nothing to compute): mgpu_attention_problem_empty() (attention_common.h)
 * says so. */
mgpu_status mgpu_attention_fwd_validate(const mgpu_attention_fwd_desc *desc, const void *q, const void *k,
                                        const void *v, void *o, float *lse, struct mgpu_attention_problem *out);

/* Picks the variant for a valid, non-empty problem. `force` (may be NULL)
 * names a variant as MGPU_FORCE_VARIANT does; a name that is not an attention
 * variant is ignored (it is meant for another operation). Returns the index
 * into mgpu_variants, or -1 with *status set to ARCH_MISMATCH or
 * NOT_SUPPORTED. */
int mgpu_select_attention_fwd(const struct mgpu_attention_problem *p, const struct mgpu_device_caps *caps,
                              const char *force, mgpu_status *status);

/* Everything a launch needs except the tensor maps themselves. */
struct mgpu_attention_plan {
    struct mgpu_attention_fwd_args args;
    /* rank 4: {head_dim, seq rows, heads, nbatch}, boxes of {64, block rows, 1, 1} */
    struct mgpu_tensor_map_desc q_map, k_map, v_map;
    unsigned grid;
    int dynamic; /* 1: the persistent grid takes tiles from the handle's counter (args.tile_counter) */
};

/* grid: persistent (min(tiles, SMs)) for fixed-length calls without window
 * masks and with at most 32 key blocks on variants that double-buffer Q
 * (causal ones with dynamic tiles and the heavy-first order); one CTA per
 * tile otherwise
 * (kernels/abi/attention_abi.h, "Launch"). */
void mgpu_attention_make_plan(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                              const struct mgpu_device_caps *caps, struct mgpu_attention_plan *out);

#endif
