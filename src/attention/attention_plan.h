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
#include "attention_fwd_fp8_abi.h"
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

/* The decode entry of forward variant `fwd` (same dtype and head dim) for
 * the device: its index, or -1 when the registry has none (no error). */
int mgpu_select_attention_fwd_decode(const struct mgpu_variant *fwd, const struct mgpu_device_caps *caps);

/* The 64-row decode entry of sm_90a 16-bit forward variant `fwd` (same
 * dtype, head dim and stages) with key blocks of block_n rows (fwd's, or
 * MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N) for the device: its index, or
 * -1 when the registry has none (no error; head dims 64 and 128 with fwd's
 * key block, 128 with the short one). */
int mgpu_select_attention_fwd_decode64(const struct mgpu_variant *fwd, const struct mgpu_device_caps *caps,
                                       int block_n);

/* `force` (MGPU_FORCE_VARIANT, may be NULL) names a decode entry of `fwd`:
 * 64 (a 64-row one; *block_n, where not NULL, its key block), 128 (the
 * 128-row one); a decode entry of another dtype, head dim or tile: -1 (the
 * call cannot run it); anything else: 0. */
int mgpu_attention_fwd_decode_forced(const char *force, const struct mgpu_variant *fwd, int *block_n);

/* `force` (MGPU_FORCE_VARIANT, may be NULL) names the wide entry of `fwd`:
 * 1; a wide entry of another dtype or head dim (or of a forward variant
 * without one): -1 (the call cannot run it); anything else: 0. */
int mgpu_attention_fwd_wide_forced(const char *force, const struct mgpu_variant *fwd);

/* Everything a launch needs except the tensor maps themselves. */
struct mgpu_attention_plan {
    struct mgpu_attention_fwd_args args;
    /* rank 4: {head_dim, seq rows, heads, nbatch}, boxes of {64, block rows, 1, 1};
     * Q packed: rank 5 {head_dim, group, seq, heads_kv, nbatch}; K, V paged:
     * {head_dim, page_size, heads_kv, num_pages} (kernels/abi/attention_abi.h) */
    struct mgpu_tensor_map_desc q_map, k_map, v_map;
    unsigned grid;
    int dynamic; /* 1: the persistent grid takes tiles from the handle's counter (args.tile_counter) */
    size_t workspace_bytes; /* split calls: the partial buffers */
    unsigned combine_grid;  /* split calls: CTAs of the combine pass */
    int combine_early;      /* split calls: the combine is launched for programmatic dependent launch */
    int programmatic;       /* the main kernel is launched for programmatic dependent launch (inference calls) */
    int merge_in_kernel;    /* split calls: the last split of each work tile merges them in the main kernel
                               (args.split_counters: the handle's MGPU_COUNTERS_ATTENTION_SPLITS), no combine */
    /* 1: the variant's decode entry runs the call (kernels/abi/attention_abi.h,
     * "Decode entry"), on the grid decode_grid = {num_splits, tile_heads,
     * batch}; grid is then their product, one work tile per CTA. */
    int decode_entry;
    unsigned decode_grid[3];
    /* 1 (with decode_entry): the 64-row decode entry (one consumer
     * warpgroup); the plan's tiles, Q map and merge are its. */
    int decode64;
    /* with decode64: its key block, the forward variant's or
     * MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N (the plan's maps and splits
     * are then those of 64-row key blocks) */
    int decode64_block_n;
    /* 1: the wide entry (192 query rows, three consumer warpgroups) runs the
     * call; the plan's tiles, Q map and grid are its. */
    int wide;
};

/* What the planner may use beyond the problem: the handle's workspace, and
 * the forcing switches (MGPU_FORCE_PACK_GQA: 1 / -1 / 0 planner's choice;
 * MGPU_FORCE_NUM_SPLITS: n >= 1, 0 planner's choice; both still bounded by
 * what is valid: group sizes up to the query block, one split per key
 * block, 128 splits, the workspace; MGPU_FORCE_PAGED_GATHER: 1 / -1 / 0
 * planner's choice, paged calls of the sm_90a 16-bit forward only;
 * MGPU_FORCE_SPLIT_MERGE: 1 merge in the main kernel / -1 combine kernel /
 * 0 planner's choice, split calls only, in the main kernel only with at
 * most MGPU_SPLIT_COUNTERS work tiles; MGPU_ATTENTION_PDL: 1 / -1 / 0
 * planner's choice, whether the sm_90a 16-bit main kernel is launched for
 * programmatic dependent launch; MGPU_ATTENTION_DECODE_ENTRY: 1 / -1 / 0
 * planner's choice, whether a call with one query tile per (sequence, tile
 * head) runs the decode entry, 1 also for calls without the inference
 * features, never where the grid would not fit). */
struct mgpu_attention_fwd_choice {
    size_t workspace_bytes;
    int force_pack;
    int force_splits;
    int force_gather;
    int force_merge;
    int force_programmatic;
    int force_decode_entry;
    /* 1: the 64-row decode entry exists for the variant (the planner may
     * choose it for decode-entry calls of at most 64 rows); 0: never. */
    int decode64;
    /* MGPU_ATTENTION_DECODE64, or MGPU_FORCE_VARIANT naming a decode entry:
     * 1 the 64-row one wherever the rows fit, -1 the 128-row one, 0 the
     * planner's choice. */
    int force_decode64;
    /* MGPU_ATTENTION_MERGE16: 1 one merge warp a row (args.merge_splits_per_warp
     * 16) for every split call of 9 to 16 splits, -1 never (two warps a row),
     * 0 the planner's rule (merge_wide_wanted, attention_plan.c). */
    int force_merge16;
    /* MGPU_ATTENTION_SPLIT_FILL: -1 ("0") no split fill (the wave rule
     * alone), else the planner's rule (attention_plan.c, choose_splits). */
    int split_fill;
    /* 1: the 64-row decode entry with 64-row key blocks exists for the
     * variant (head dim 128); 0: never. */
    int decode64_short;
    /* MGPU_ATTENTION_DECODE64_SHORT, or MGPU_FORCE_VARIANT naming a 64-row
     * decode entry: 1 its 64-row key blocks wherever the 64-row entry runs,
     * -1 the forward's key block, 0 the planner's choice. */
    int force_decode64_short;
};

/* Passes of 8 warps in which one CTA merges the splits of a work tile's rows
 * (the combine's arithmetic: mgpu_attention_fwd_combine_warps warps a row). */
int64_t mgpu_attention_fwd_merge_passes(int64_t tile_rows, int num_splits);

/* Workspace bytes of the partial buffers of a call split num_splits ways. */
size_t mgpu_attention_fwd_split_bytes(const struct mgpu_attention_problem *p, int num_splits);

/* grid: persistent (min(tiles, SMs)) for fixed-length calls without window
 * masks and with at most 32 key blocks on variants that double-buffer Q
 * (causal ones with dynamic tiles and the heavy-first order); one CTA per
 * tile otherwise
 * (kernels/abi/attention_abi.h, "Launch"). */
void mgpu_attention_make_plan(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                              const struct mgpu_device_caps *caps, struct mgpu_attention_plan *out);

/* The same with the workspace and forcing of `choice` (make_plan: no
 * workspace, so never split; packing by the planner). GQA packing: when an
 * unpacked query tile would be mostly padding (short queries, group <= 128).
 * Key splits: when the work tiles fill less than 80 % of the SMs, one per
 * key block if a wave then holds them all, else the fewest splits whose
 * last wave is within 85 % of the best, or half the SMs' worth for long
 * packed GQA caches (every SM's on a device with more DRAM bandwidth than
 * an H100's; choose_splits), at most one per key block and 128,
 * then as many as the workspace holds, none without keys. Their merge:
 * in the main kernel's last split of each tile when that CTA merges the
 * tile's rows in one pass of 8 warps (few rows and splits), else the
 * combine kernel (mgpu_attention_fwd_merge_passes); calls of 9 to 16 splits
 * whose tiles of 5 to 8 rows would take a combine that cannot be launched
 * early give each row one merge warp of all its splits
 * (args.merge_splits_per_warp) and so merge in one pass in the kernel
 * (decision 056). Decode-entry calls of at
 * most 64 rows take the 64-row decode entry where choice->decode64 says it
 * exists and its rule holds (plan->decode64; the plan's tiles are then its),
 * with its 64-row key blocks where choice->decode64_short says they exist
 * and short caches fill more than a wave (plan->decode64_block_n); paged
 * calls at head dim 64 on few tiles take it split for two CTAs an SM. */
void mgpu_attention_make_plan_ex(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                                 const struct mgpu_device_caps *caps, const struct mgpu_attention_fwd_choice *choice,
                                 struct mgpu_attention_plan *out);

/* The wide entry of sm_90a 16-bit forward variant `fwd` (same dtype, head
 * dim, key block and stages) for the device: its index, or -1 when the
 * registry has none (no error; head dim 64 only). */
int mgpu_select_attention_fwd_wide(const struct mgpu_variant *fwd, const struct mgpu_device_caps *caps);

/* Replaces *plan (made by mgpu_attention_make_plan_ex for `v` with `choice`)
 * by the same call on the wide entry's 192-row tiles (plan->wide) where that
 * entry can run it: a plan of the main kernel (not the decode entry) without
 * any inference feature (GQA packing, key splits, seqused_k, paged K/V),
 * the 192-row plan likewise, and where it pays: force 1 (MGPU_ATTENTION_WIDE
 * or MGPU_FORCE_VARIANT naming the entry) always, -1 never, 0 the planner's
 * rule (wide_pays, attention_plan.c: the queries padded to 192-row tiles at most 12.5 %
 * more than to 128-row ones, 4 % with a causal or window mask). The caller knows that the entry exists. */
void mgpu_attention_fwd_plan_wide(const struct mgpu_attention_problem *p, const struct mgpu_variant *v,
                                  const struct mgpu_device_caps *caps, const struct mgpu_attention_fwd_choice *choice,
                                  int force, struct mgpu_attention_plan *plan);

/* Sets args.o_partial / lse_partial at the start of the workspace (split calls). */
void mgpu_attention_fwd_place_partials(struct mgpu_attention_plan *plan, uint64_t workspace);

/* mgpu_kv_cache_append's checks; SUCCESS with out->vectors 0 when there is
 * nothing to write. */
mgpu_status mgpu_kv_cache_append_validate(const mgpu_kv_cache_append_desc *desc, const void *k_new, const void *v_new,
                                          void *k_cache, void *v_cache, struct mgpu_kv_cache_append_args *out);

/* fp8 forward (attention_fp8.c). The descriptor's fp8 fields into *p:
 * INVALID_VALUE for bad values; called after the inference fields. */
mgpu_status mgpu_attention_fwd_check_fp8_fields(const mgpu_attention_fwd_desc *desc, struct mgpu_attention_problem *p);
/* What the fp8 kernel cannot do (NOT_SUPPORTED): after the shared kernel rules. */
mgpu_status mgpu_attention_fwd_check_fp8_rules(const struct mgpu_attention_problem *p);
/* The fp8 variant's plan: descale arguments, Q / K / V maps over bytes. */
void mgpu_attention_fwd_plan_fp8(const struct mgpu_attention_problem *p, struct mgpu_attention_plan *plan);

/* fp8 calls with V^T from the workspace (abi/attention_fwd_fp8_abi.h, "V^T
 * from the workspace"): the bytes of that buffer, 0 when the call does not
 * fit its layout (then the kernel that transposes V itself runs). */
size_t mgpu_attention_fwd_fp8_vt_bytes(const struct mgpu_attention_problem *p);
/* The plan of the fp8 variant turned into that of its V^T twin: the V map
 * over the buffer at `workspace`; *vt and grid: the pre-pass's parameter and
 * grid. */
void mgpu_attention_fwd_plan_fp8_vt(const struct mgpu_attention_problem *p, uint64_t workspace,
                                    struct mgpu_attention_plan *plan, struct mgpu_attention_fwd_fp8_vt_args *vt,
                                    unsigned grid[3]);
/* Whether V^T from the workspace repays its pre-pass: at least
 * VT_MIN_QUERY_TILES (attention_fp8.c) query tiles read each KV head's V. */
int mgpu_attention_fwd_fp8_vt_pays(const struct mgpu_attention_problem *p);
/* The V^T twin of the fp8 variant for O's dtype (or the one `force`, may be
 * NULL, names) and the pre-pass (*transpose); -1 with *status set when absent. */
int mgpu_select_attention_fwd_fp8_vt(int dtype, const struct mgpu_device_caps *caps, const char *force,
                                     int *transpose, mgpu_status *status);

/* The combine and KV-append helper variants for a dtype (-1 with *status set when absent). */
int mgpu_select_attention_fwd_combine(int dtype, const struct mgpu_device_caps *caps, mgpu_status *status);
int mgpu_select_kv_cache_append(const struct mgpu_device_caps *caps, mgpu_status *status);

#endif
