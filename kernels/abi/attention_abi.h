/*
 * The contract between the runtime (src/) and the attention forward kernels.
 *
 * Plain C so that both the C11 runtime and the CUDA C++ kernels include it. The
 * whole of struct mgpu_attention_fwd_params is the kernel's single parameter,
 * passed by value as `const __grid_constant__`, so its layout is the ABI: three
 * TMA tensor maps (Q, K, V) built by the runtime, then the scalar arguments.
 *
 * Problem. For each sequence b, query head h and query row i:
 *     O[b, i, h, :] = softmax_j(score(i, j)) V[b, j, h / group_size, :]
 *     score(i, j)   = softmax_scale * <Q[b, i, h, :], K[b, j, h / group_size, :]>
 *                     (with soft-cap: softcap * tanh(that / softcap))
 * over the keys j allowed by the mask below. Q, K, V, O are 16-bit (fp16 or bf16,
 * fixed by the variant) in (batch, seq, head, dim) order, dim contiguous.
 *
 * Mask (FlashAttention convention, aligned to the bottom-right corner): with
 * diag = seqlen_k - seqlen_q (of this sequence), key j is allowed for row i iff
 *     j < seqlen_k
 *     and (window_right < 0 or j <= i + diag + window_right)
 *     and (window_left  < 0 or j >= i + diag - window_left)
 * causal != 0 means window_right = 0 (combined with a smaller non-negative
 * window_right if one is given). Rows with no allowed key get O = 0 and
 * LSE = +infinity (so that exp(s - LSE) = 0 in the backward pass).
 *
 * LSE (optional, lse != 0): fp32, natural log, log(sum_j exp(score(i, j))),
 * element (b, h, i) at
 *     lse[b * lse_batch_stride + h * lse_head_stride + row]
 *   fixed length: row = i; the runtime sets lse_head_stride = seqlen_q,
 *                 lse_batch_stride = heads_q * seqlen_q  -> [batch][heads_q][seqlen_q]
 *   varlen:       row = cu_seqlens_q[b] + i; lse_head_stride = total_q,
 *                 lse_batch_stride = 0                    -> [heads_q][total_q]
 * This is the layout the backward pass reads.
 *
 * Variable length (cu_seqlens_q != 0): Q and O are packed (total_q, heads, dim),
 * K and V packed (total_k, heads_kv, dim); cu_seqlens_q / cu_seqlens_k are int32
 * device arrays of batch + 1 non-decreasing offsets starting at 0 (both must be
 * given together). seqlen_q / seqlen_k are then the maxima over the batch
 * (seqlen_q sizes the grid); the per-sequence lengths come from the offsets.
 * The batch strides are ignored.
 *
 * ---- What the runtime builds -------------------------------------------------
 *
 * Tensor maps (cuTensorMapEncodeTiled), one per Q, K, V, all rank 4:
 *   dataType      CU_TENSOR_MAP_DATA_TYPE_FLOAT16 or _BFLOAT16
 *   globalAddress Q / K / V base (16-byte aligned)
 *   globalDim     {head_dim, seq, heads, nbatch}
 *                   fixed length: seq = seqlen_q (Q) or seqlen_k (K, V), nbatch = batch
 *                   varlen:       seq = total_q (Q) or total_k (K, V),  nbatch = 1
 *                 heads = heads_q for Q, heads_kv for K and V
 *   globalStrides (bytes, the 3 outer dims) {seq_stride, head_stride, batch_stride} * 2
 *                   (varlen: batch_stride -> any multiple of 16, e.g. seq * seq_stride * 2)
 *   boxDim        {64, kBlockM, 1, 1} for Q, {64, kBlockN, 1, 1} for K and V
 *                 (64 elements = one 128-byte swizzle row; the kernel issues
 *                 ceil(head_dim / 64) boxes per tile; the part beyond head_dim
 *                 of the last box arrives as zeros, e.g. head_dim 96)
 *   elementStrides {1, 1, 1, 1}
 *   interleave    CU_TENSOR_MAP_INTERLEAVE_NONE
 *   swizzle       CU_TENSOR_MAP_SWIZZLE_128B
 *   l2Promotion   CU_TENSOR_MAP_L2_PROMOTION_L2_256B
 *   oobFill       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (zeros)
 * Rows past the end of a sequence: fixed length they are out of bounds (zeros);
 * varlen the kernel adds the sequence's offset to the row coordinate, so rows
 * past its end read the next sequence (finite data), which the kernel masks
 * (keys) or never stores (queries); past total_* they are zeros.
 * kBlockM / kBlockN per head dim: AttnFwdTile<head_dim> in
 * kernels/hopper/attention_fwd_tile_size.cuh (also listed in the variant table).
 *
 * Launch. Work tiles: tiles = ceil(seqlen_q / kBlockM) * heads_q * batch
 * (seqlen_q: the maximum for varlen). The kernel is persistent-capable: CTA c
 * starts with tile c and takes further tiles (c + gridDim.x, ..., or from
 * tile_counter) in the order of kernels/hopper/attention_fwd_tile_scheduler.cuh,
 * so any grid.x >= 1 is correct. Use
 *   grid  = {min(tiles, SMs), 1, 1} (persistent) for fixed-length calls without
 *           window masks, with short key loops (the runtime's threshold,
 *           src/attention/attention_plan.c), on variants with q_stages = 2 (see above),
 *           causal ones with tile_counter and lpt_group set; otherwise
 *           {tiles, 1, 1} (one tile per CTA, the hardware hands CTAs out as
 *           SMs free up). tiles < 2^31.
 *   block = {384, 1, 1}     (1 producer + 2 consumer warpgroups), no cluster
 *   dynamic shared memory = AttnFwdConfig<T, D>::kSmemBytes (set
 *   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES once per function).
 *
 * GQA packing (pack_gqa = 1; group_size <= kBlockM). A tile serves the
 * group_size query heads of one KV head: tile row r = query (r / group_size)
 * of the tile, head (head_kv * group_size + r % group_size), so all heads of a
 * group walk the same K/V blocks and each K/V byte is read once per tile.
 * tile_heads = heads_kv, tile_queries = floor(kBlockM / group_size); rows
 * r >= tile_queries * group_size of the tile are padding (never stored). Q is
 * read through a rank-5 map {head_dim, group_size, seq, heads_kv, nbatch}
 * (strides {head, seq, group_size * head, batch} * 2 bytes) with box
 * {64, group_size, tile_queries, 1, 1}: the packed tile is one box per 64
 * columns. The mask, O and LSE use the query and head of each row.
 * Unpacked: tile_heads = heads_q, tile_queries = kBlockM, Q's map as above.
 *
 * Split keys (num_splits > 1). Tile t of the grid is (split t % num_splits,
 * work tile t / num_splits); a split takes the key blocks
 * [begin + split * per, min(end, begin + (split + 1) * per)) of its work tile,
 * per = ceil((end - begin) / num_splits). It writes its normalised O in fp32
 * and its LSE (-infinity for rows without keys) to
 *     o_partial[(split * partial_rows + row) * head_dim + d], lse_partial[split * partial_rows + row]
 * with row the LSE index of the query row (the layout above, lse_*_stride),
 * and writes nothing to O or lse. The splits of each row are then merged in
 * a fixed order (deterministic: the same bits whichever way) into O (dtype)
 * and LSE (when lse != 0), either
 *   - by the combine kernel (hopper/attention_fwd_combine.cuh, same args,
 *     grid below), launched after the main kernel (split_counters 0), or
 *   - in the main kernel (split_counters != 0): after writing its partials,
 *     each split CTA counts itself in at split_counters[t / num_splits]
 *     (release / acquire at GPU scope); the last of a work tile's splits
 *     resets that counter to 0 and merges the tile's rows, reading every
 *     split's partials from L2. The counters are 0 before the launch and
 *     again after it (graph replays find them so); one work tile per CTA
 *     (grid = tiles * num_splits, no persistent grid), tiles <= the counters.
 *
 * Decode entry (sm_90a 16-bit: mgpu_attention_fwd_decode_sm90_<dtype>_d<D>,
 * hopper/attention_fwd_decode_sm90.cuh). The same arguments, tensor maps,
 * block and shared memory as the forward kernel of its dtype and head dim,
 * for calls with one query tile per (sequence, tile head), i.e.
 * ceil(seqlen_q / tile_queries) = 1 (seqlen_q: the maximum for varlen):
 *   grid = {num_splits, tile_heads, batch} (each <= 65535 past x), one work
 *          tile per CTA, (split, tile head, sequence) = blockIdx; tile_counter
 *          and lpt_group 0; work tile t / num_splits of "Split keys" is
 *          blockIdx.z * tile_heads + blockIdx.y (its split counter).
 * Every other field means what it means above. Its 64-row variant
 * (mgpu_attention_fwd_decode64_sm90_<dtype>_d<D>_n<block_n>, head dims 64 and
 * 128 with the forward's key block, 128 also with 64-row key blocks): one
 * consumer warpgroup, block {MGPU_ATTENTION_FWD_DECODE64_THREADS, 1, 1},
 * kBlockM = MGPU_ATTENTION_FWD_DECODE64_BLOCK_M wherever the paragraphs above
 * say kBlockM (the Q map's box, tile_queries, group_size <= 64), its own
 * shared memory (the formula with block_m 64); with splits merged in the
 * kernel (split_counters) its 4 warps merge a tile's rows, so the runtime
 * gives it counters only where mgpu_attention_fwd_merge_warps(num_splits,
 * merge_splits_per_warp) <= 4.
 *
 * Wide entry (sm_90a 16-bit: mgpu_attention_fwd_wide_sm90_<dtype>_d<D>, head
 * dim 64): the forward kernel with kBlockM = MGPU_ATTENTION_FWD_WIDE_BLOCK_M
 * (three consumer warpgroups of 64 rows), block
 * {MGPU_ATTENTION_FWD_WIDE_THREADS, 1, 1}, its own shared memory (the
 * formula with block_m 192), for calls with none of the inference features
 * (pack_gqa 0, num_splits 1, seqused_k and block_table 0; it traps on any
 * other): kBlockM is 192 wherever the paragraphs above say kBlockM (the Q
 * map's box, tile_queries, the tile count); grid, persistent grid and
 * dynamic tiles as "Launch" says.
 *
 * Paged K/V (block_table != 0; fixed-length queries, no cu_seqlens). K and V
 * are caches [num_pages][page_size][heads_kv][head_dim] (batch strides =
 * page strides); key row j of sequence b lives in page
 * block_table[b * block_table_stride + j / page_size], row j % page_size.
 * Their tensor maps are {head_dim, page_size, heads_kv, num_pages} with box
 * {64, page_box_rows, 1, 1}; a key block is kBlockN / page_box_rows boxes.
 * Pages past the sequence's last (ceil(seqlen / page_size) - 1) are never
 * looked up: rows of the last block beyond the sequence come from its last
 * page again and are masked.
 * With paged_gather = 1 (16-bit sm_90a forward, head dims 64 and 128; the
 * other variants ignore it) the producer warpgroup's 128
 * threads load a key block instead as 16-byte cp.async copies from paged_k /
 * paged_v (k_* / v_* strides, batch stride = page stride) into the same
 * 128-byte-swizzled tiles, rows past the sequence zero-filled; k_full and
 * v_full then count 128 arrivals (cp.async.mbarrier.arrive.noinc, no
 * transaction bytes), and the consumers fence the generic-proxy writes
 * before their wgmma reads. The tensor maps of K and V are then unused.
 * paged_gather calls launch one CTA per tile and split (no persistent grid,
 * tile_counter 0), as every paged call does.
 *
 * seqused_k (!= 0, not varlen): sequence b has seqused_k[b] keys (the mask's
 * seqlen_k of that sequence); seqlen_k is their upper bound.
 *
 * Validation the runtime must do (the kernel trusts these):
 *   - head_dim equals the variant's; heads_q % heads_kv == 0, group_size = heads_q / heads_kv
 *   - Q, K, V base addresses 16-byte aligned; seq/head/batch strides of Q, K, V
 *     multiples of 8 elements (16 bytes) and < 2^39 elements (TMA stride limit 2^40 B)
 *   - O: base 16-byte aligned, seq/head/batch strides multiples of 8 elements
 *     (the epilogue stores 16-byte vectors)
 *   - lse 4-byte aligned when given
 *   - seqlen_q >= 1, seqlen_k >= 1 (fixed length); total sizes < 2^31
 *   - softmax_scale > 0 finite; softcap >= 0 (0 = off); scale_log2 = softmax_scale * log2(e)
 *   - cu_seqlens_q and cu_seqlens_k both given or both 0, 4-byte aligned
 * src/attention/attention_plan.c does all of this; inputs that break the alignment
 * rules get MGPU_STATUS_NOT_SUPPORTED there (docs/attention.md) and never
 * reach the kernel.
 */
#ifndef MGPU_KERNELS_ABI_ATTENTION_ABI_H
#define MGPU_KERNELS_ABI_ATTENTION_ABI_H

#include <cuda.h>
#include <stdint.h>

#include "abi_fn.h"

/* Every variant: query rows per work tile (kBlockM), threads per CTA and
 * stages of K and V; the generated units check them against the kernel's
 * configuration. */
#define MGPU_ATTENTION_FWD_BLOCK_M 128
#define MGPU_ATTENTION_FWD_THREADS 384
#define MGPU_ATTENTION_FWD_STAGES 2
/* The decode entry's 64-row variant: one consumer warpgroup ("Decode entry"). */
#define MGPU_ATTENTION_FWD_DECODE64_BLOCK_M 64
#define MGPU_ATTENTION_FWD_DECODE64_THREADS 256
/* Its rows at head dim 128 come with the forward's key block and with
 * 64-row key blocks: two CTAs of the latter fit an SM. */
#define MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N 64
/* The wide entry: 192 query rows, three consumer warpgroups ("Wide entry"). */
#define MGPU_ATTENTION_FWD_WIDE_BLOCK_M 192
#define MGPU_ATTENTION_FWD_WIDE_THREADS 512

/* The supported head dims, X(arg, head_dim) for each (one variant per head dim
 * and dtype), and the key block (keys per K / V tile) of a head dim; why
 * these: hopper/attention_fwd_tile_size.cuh. */
#define MGPU_ATTENTION_FWD_HEAD_DIMS(X, arg) X(arg, 64) X(arg, 96) X(arg, 128) X(arg, 192) X(arg, 256)
#define MGPU_ATTENTION_FWD_BLOCK_N(head_dim) ((head_dim) <= 128 ? 128 : (head_dim) <= 192 ? 112 : 80)

/* Shared memory of a variant: Q tiles (q_stages of them), `stages` K and V
 * tiles, every tile's head dim padded to whole 128-byte swizzle rows, plus
 * 1 KiB of barriers and 1 KiB for aligning the base. Q is double-buffered
 * (q_stages = 2, what makes a persistent grid pay) where that fits in the
 * 227 KiB a Hopper CTA may use, i.e. head dims up to 128. The generator sizes
 * the variants with this, the runtime derives the grid from it, the kernel
 * takes its Q stages from it, and the generated units check it against the
 * kernel's own count. */
#define MGPU_ATTENTION_FWD_SMEM_LIMIT (227 * 1024)
#define MGPU_ATTENTION_FWD_SWIZZLE_ROW_ELEMS 64
#define MGPU_ATTENTION_FWD_SWIZZLE_ROW_BYTES 128
#define MGPU_ATTENTION_FWD_SMEM_OVERHEAD 2048

MGPU_ABI_FN int mgpu_attention_fwd_smem_bytes(int block_m, int block_n, int head_dim, int stages, int q_stages)
{
    const int dim_rows = (head_dim + MGPU_ATTENTION_FWD_SWIZZLE_ROW_ELEMS - 1) / MGPU_ATTENTION_FWD_SWIZZLE_ROW_ELEMS;
    return dim_rows * MGPU_ATTENTION_FWD_SWIZZLE_ROW_BYTES * (q_stages * block_m + 2 * stages * block_n) +
           MGPU_ATTENTION_FWD_SMEM_OVERHEAD;
}

MGPU_ABI_FN int mgpu_attention_fwd_q_stages(int block_m, int block_n, int head_dim, int stages)
{
    return mgpu_attention_fwd_smem_bytes(block_m, block_n, head_dim, stages, 2) <= MGPU_ATTENTION_FWD_SMEM_LIMIT ? 2
                                                                                                                : 1;
}

/* ---- Blackwell (sm_100a) variants: the same parameters, another tiling ----
 * (kernels/blackwell/attention_fwd_sm100.cuh). A CTA owns block_m query rows
 * as q_tiles = block_m / 128 tiles of 128 (one softmax warpgroup each, one
 * row per thread) and walks the keys block_n at a time. Tensor memory (512
 * columns of fp32) holds per Q tile an S / P block (block_n columns) and an
 * O accumulator (head_dim columns): q_tiles * (block_n + head_dim) <= 512.
 *   head dim   block_m  block_n  TMEM columns        threads
 *      64..128     256      128  2 * (128 + d) <= 512  512
 *          192     256       64  2 * (64 + 192) = 512  512
 *          256     128       64  64 + 256 = 320        384
 * Threads: q_tiles softmax warpgroups, one correction warpgroup, one warpgroup
 * holding the TMA warp and the MMA warp. One work tile (block_m rows of one
 * head of one sequence) per CTA: the runtime launches grid = {tiles, 1, 1}
 * with tiles = ceil(seqlen_q / block_m) * heads_q * batch and leaves
 * tile_counter and lpt_group 0; of the inference fields it sets
 * tile_heads = heads_q, tile_queries = block_m, num_splits = 1 (no GQA
 * packing, no splits), and seqused_k and the paged K/V fields as above
 * (page_box_rows = gcd(page_size, block_n) of this kernel's block_n; the
 * TMA warp then looks up a key block's boxes with all its lanes). The Q
 * tensor map's box is {64, block_m, 1, 1}.
 * Shared memory: Q (block_m rows), `stages` K and V tiles (block_n rows), every
 * tile's head dim padded to whole 128-byte swizzle rows, plus 5 KiB (barriers,
 * per-row softmax messages, base alignment). */
#define MGPU_ATTENTION_FWD_SM100_BLOCK_M(head_dim) ((head_dim) <= 192 ? 256 : 128)
#define MGPU_ATTENTION_FWD_SM100_BLOCK_N(head_dim) ((head_dim) <= 128 ? 128 : 64)
#define MGPU_ATTENTION_FWD_SM100_STAGES 2
#define MGPU_ATTENTION_FWD_SM100_THREADS(head_dim) (128 * (MGPU_ATTENTION_FWD_SM100_BLOCK_M(head_dim) / 128 + 2))
#define MGPU_ATTENTION_FWD_SM100_SMEM_OVERHEAD 5120

MGPU_ABI_FN int mgpu_attention_fwd_sm100_smem_bytes(int block_m, int block_n, int head_dim, int stages)
{
    const int dim_rows = (head_dim + MGPU_ATTENTION_FWD_SWIZZLE_ROW_ELEMS - 1) / MGPU_ATTENTION_FWD_SWIZZLE_ROW_ELEMS;
    return dim_rows * MGPU_ATTENTION_FWD_SWIZZLE_ROW_BYTES * (block_m + 2 * stages * block_n) +
           MGPU_ATTENTION_FWD_SM100_SMEM_OVERHEAD;
}

struct mgpu_attention_fwd_args {
    int32_t batch;            /* number of sequences */
    int32_t seqlen_q;         /* varlen: maximum over the batch */
    int32_t seqlen_k;         /* varlen: maximum over the batch (informational) */
    int32_t heads_q;
    int32_t heads_kv;
    int32_t head_dim;         /* equals the variant's head dim */
    int32_t group_size;       /* heads_q / heads_kv (GQA; MQA: heads_q) */
    int32_t causal;           /* 0 or 1 */
    int32_t window_left;      /* < 0: unbounded */
    int32_t window_right;     /* < 0: unbounded (causal caps it at 0) */
    float softmax_scale;      /* usually 1 / sqrt(head_dim) */
    float scale_log2;         /* softmax_scale * log2(e) */
    float softcap;            /* 0: off; else scores become softcap * tanh(scores / softcap) */
    int32_t lpt_group;        /* > 0: causal tile order, heavy query blocks first across groups of this
                                 many (batch, head) pairs; 0: query block fastest */
    /* Strides in elements (batch strides ignored for varlen). */
    int64_t q_batch_stride, q_seq_stride, q_head_stride;
    int64_t k_batch_stride, k_seq_stride, k_head_stride;
    int64_t v_batch_stride, v_seq_stride, v_head_stride;
    int64_t o_batch_stride, o_seq_stride, o_head_stride;
    uint64_t o;               /* device address of O (written) */
    uint64_t lse;             /* device address of the fp32 LSE, or 0 */
    int64_t lse_batch_stride; /* in elements, see above */
    int64_t lse_head_stride;
    uint64_t cu_seqlens_q;    /* int32[batch + 1] device address, or 0 */
    uint64_t cu_seqlens_k;    /* int32[batch + 1] device address, or 0 */
    /* Persistent grid with tiles handed out at run time: two int32 counters
     * (tiles taken beyond the first gridDim.x, CTAs done), 0 between launches
     * (the last CTA to finish resets them). 0: CTA c takes tiles c, c + grid, ... */
    uint64_t tile_counter;

    /* ---- Inference features (see "GQA packing", "Split keys", "Paged K/V" above). */
    int32_t pack_gqa;          /* 1: a tile's rows are (query, head of the group) pairs */
    int32_t tile_heads;        /* heads a tile index runs over: heads_q, or heads_kv when packed */
    int32_t tile_queries;      /* queries per tile: kBlockM, or kBlockM / group_size when packed */
    int32_t num_splits;        /* >= 1: CTAs sharing the key blocks of one tile */
    uint64_t o_partial;        /* num_splits > 1: fp32 [num_splits][partial_rows][head_dim] */
    uint64_t lse_partial;      /* num_splits > 1: fp32 [num_splits][partial_rows] */
    int64_t partial_rows;      /* rows of the call, indexed as the LSE: batch * heads_q * seqlen_q or
                                  heads_q * total_q */
    uint64_t seqused_k;        /* int32[batch] device: keys of each sequence (<= seqlen_k), or 0 */
    uint64_t block_table;      /* int32[batch][block_table_stride] device: pages of each sequence, or 0 */
    int32_t block_table_stride;/* entries per sequence (max_blocks_per_seq) */
    int32_t page_size;         /* rows per page */
    int32_t page_box_rows;     /* rows per TMA box of a paged K / V load: gcd(page_size, kBlockN) */
    int32_t num_pages;         /* pages of the caches (the tensor maps' outer extent) */
    int32_t paged_gather;      /* 1: the producer warpgroup gathers paged K / V rows with cp.async
                                  (sm_90a 16-bit forward; "Paged K/V" above); 0: TMA boxes */
    int32_t paged_reserved;    /* 0 */
    uint64_t paged_k, paged_v; /* paged_gather: device addresses of the K and V caches */

    /* ---- fp8 inputs (the ATTENTION_FWD_FP8_SM90 kind, abi/attention_fwd_fp8_abi.h); 0 elsewhere. */
    uint64_t q_descale, k_descale, v_descale; /* fp32 device arrays, or 0 (factor 1) */
    int64_t descale_batch_stride;             /* elements; factor of (b, kv head h): [b * batch + h * head] */
    int64_t descale_head_stride;

    /* ---- Split keys merged in the main kernel (after the fp8 fields, which keep their offsets). */
    uint64_t split_counters;  /* num_splits > 1: int32[work tiles] device counters, 0 between launches: the
                                 last split of a work tile merges its splits ("Split keys" above); 0: the
                                 combine kernel merges them */
    int32_t merge_splits_per_warp; /* num_splits > 1: most splits of a row one merge warp takes, in both
                                      merges (mgpu_attention_fwd_merge_warps): 0 (read as
                                      MGPU_ATTENTION_FWD_COMBINE_SPLITS_PER_WARP) or
                                      MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP */
    int32_t merge_reserved;   /* 0 */
};

/* The combine pass of split calls (hopper/attention_fwd_combine.cuh) takes
 * struct mgpu_attention_fwd_args itself: block {MGPU_ATTENTION_FWD_COMBINE_THREADS,
 * 1, 1}, no dynamic shared memory, grid {ceil(partial_rows / rows per CTA), 1, 1}.
 * A row's splits are shared by mgpu_attention_fwd_merge_warps(num_splits,
 * merge_splits_per_warp) warps (the fewest, a power of two up to 8, that
 * leave each warp at most merge_splits_per_warp splits, 0 meaning
 * MGPU_ATTENTION_FWD_COMBINE_SPLITS_PER_WARP; past 8 times that, 8 warps of
 * ceil(splits / 8)), so a CTA merges 8 / warps rows: a call with few rows
 * and many splits (batch-1 decode) still reads its partials with many loads
 * in flight. The main kernel's merge ("Split keys") shares a row's splits
 * the same way: the same sums in the same order. A warp loads the partial O
 * of 8 of its splits at a time, so a warp of up to 16 splits
 * (MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP, which the runtime gives
 * calls of 9 to 16 splits whose tiles of 5 to 8 rows would take a combine
 * that cannot start early, so that they merge in one pass of 8 warps; every
 * call of 9 to 16 splits under MGPU_ATTENTION_MERGE16=1) loads them in two
 * rounds. */
#define MGPU_ATTENTION_FWD_COMBINE_THREADS 256
#define MGPU_ATTENTION_FWD_COMBINE_WARPS (MGPU_ATTENTION_FWD_COMBINE_THREADS / 32)
#define MGPU_ATTENTION_FWD_COMBINE_SPLITS_PER_WARP 8
#define MGPU_ATTENTION_FWD_MERGE_WIDE_SPLITS_PER_WARP 16

MGPU_ABI_FN int mgpu_attention_fwd_merge_warps(int num_splits, int splits_per_warp)
{
    const int per = splits_per_warp > 0 ? splits_per_warp : MGPU_ATTENTION_FWD_COMBINE_SPLITS_PER_WARP;
    int warps = 1;
    while (warps < MGPU_ATTENTION_FWD_COMBINE_WARPS && num_splits > per * warps)
        warps *= 2;
    return warps;
}

/* The warps of a row with the default split share (merge_splits_per_warp 0). */
MGPU_ABI_FN int mgpu_attention_fwd_combine_warps(int num_splits)
{
    return mgpu_attention_fwd_merge_warps(num_splits, 0);
}

MGPU_ABI_FN int mgpu_attention_fwd_combine_rows_per_cta(int num_splits)
{
    return MGPU_ATTENTION_FWD_COMBINE_WARPS / mgpu_attention_fwd_combine_warps(num_splits);
}

/* Most splits of one work tile (the combine reads them all per row). */
#define MGPU_ATTENTION_FWD_MAX_SPLITS 128

/*
 * KV-cache append (hopper/attention_fwd_kv_append.cuh, mgpu_kv_cache_append):
 * row j < seqlen_new of sequence b of K_new / V_new ([batch][seqlen_new]
 * [heads_kv][head_dim] through their strides) goes to cache position
 * pos = cache_seqlens[b] + j: page block_table[b * block_table_stride +
 * pos / page_size] (block_table 0: page b), row pos % page_size of the
 * caches [pages][page_size][heads_kv][head_dim] (batch stride = page
 * stride). Positions whose page index is >= block_table_stride (block_table
 * 0: pos >= page_size) are skipped. One thread per 16-byte vector:
 * 2 * batch * seqlen_new * heads_kv * head_dim / 8 vectors, grid
 * ceil(vectors / MGPU_KV_APPEND_THREADS) (< 2^31), 16-bit elements, bases
 * and strides 16-byte aligned (the runtime checks).
 */
#define MGPU_KV_APPEND_THREADS 256

struct mgpu_kv_cache_append_args {
    int32_t batch, seqlen_new, heads_kv, head_dim;
    int32_t page_size, block_table_stride;
    uint64_t k_new, v_new, k_cache, v_cache; /* device addresses */
    uint64_t block_table, cache_seqlens;     /* int32 device arrays (block_table may be 0) */
    int64_t vectors;                         /* 2 * batch * seqlen_new * heads_kv * head_dim / 8 */
    /* Strides in elements: {batch, seq, head} of K_new, V_new, and {page, row, head} of the caches. */
    int64_t k_new_strides[3], v_new_strides[3], k_cache_strides[3], v_cache_strides[3];
};

struct mgpu_attention_fwd_params {
    CUtensorMap tmap_q;       /* see above: rank 4, box {64, kBlockM, 1, 1} */
    CUtensorMap tmap_k;       /* box {64, kBlockN, 1, 1} */
    CUtensorMap tmap_v;       /* box {64, kBlockN, 1, 1} */
    struct mgpu_attention_fwd_args args;
};

#endif
