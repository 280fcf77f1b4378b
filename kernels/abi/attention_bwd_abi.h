/*
 * The contract between the runtime (src/attention/) and the attention backward
 * kernels: the main kernel (kernels/hopper/attention_bwd_sm90.cuh) and the
 * preprocess / postprocess kernels.
 *
 * Plain C so that the C11 runtime, the generator and the CUDA C++ kernels all
 * include it. struct mgpu_attention_bwd_params is the main kernel's single
 * parameter, passed by value as `const __grid_constant__`; the preprocess and
 * postprocess kernels take struct mgpu_attention_bwd_args (the same fields).
 *
 * ---- Problem ------------------------------------------------------------------
 *
 * The forward pass (kernels/abi/attention_abi.h) computed, per sequence b,
 * query head h, query row i:
 *     s(i, j) = softmax_scale * <Q[b,i,h,:], K[b,j,hk,:]>       hk = h / group_size
 *               (soft-cap: softcap * tanh(that / softcap))
 *     P(i, j) = exp(s(i, j) - LSE[b,h,i])  over the keys the mask allows (else 0)
 *     O[b,i,h,:] = sum_j P(i, j) V[b,j,hk,:]
 * The backward pass computes, from dO = dL/dO:
 *     D(i)    = sum_d dO[b,i,h,d] O[b,i,h,d]                          (preprocess)
 *     dP(i,j) = <dO[b,i,h,:], V[b,j,hk,:]>
 *     dS(i,j) = P(i,j) (dP(i,j) - D(i)) * c(i,j)    c = 1, or with soft-cap
 *                                                   c = 1 - tanh^2(...) of that score
 *     dQ[b,i,h,:]  = softmax_scale * sum_j dS(i,j) K[b,j,hk,:]
 *     dK[b,j,hk,:] = softmax_scale * sum_{h in group, i} dS(i,j) Q[b,i,h,:]
 *     dV[b,j,hk,:] =                 sum_{h in group, i} P(i,j) dO[b,i,h,:]
 * Masks, varlen, GQA, dtypes and the (batch, seq, head, dim) element order are
 * those of the forward ABI; the mask is aligned to the bottom-right corner.
 *
 * ---- The three launches (in this order, on one stream) -------------------------
 *
 * 1. preprocess (runtime + kernel owned by the host side), per query row:
 *      lse_log2[row] = LSE * log2(e)   (+infinity stays +infinity)
 *      dpsum[row]    = D(i) in fp32
 *    and for the padding rows of each sequence's last query block
 *    (rows seqlen_q(b) .. round_up(seqlen_q(b), block_m) - 1):
 *      lse_log2 = +infinity, dpsum = 0.
 *    Zeroes dq_accum, dq_semaphore, and when group_size > 1 dk_accum, dv_accum
 *    and dkv_semaphore (all of them, padding included).
 * 2. main kernel (this ABI): adds dS K (UNSCALED: without softmax_scale) into
 *    dq_accum; group_size == 1: writes dK (scaled) and dV as 16-bit straight to
 *    dk / dv; group_size > 1: adds softmax_scale * dK and dV of every query head
 *    into dk_accum / dv_accum (fp32).
 * 3. postprocess: dQ = softmax_scale * dq_accum -> 16-bit dq (with dq strides);
 *    group_size > 1: dK = dk_accum, dV = dv_accum -> 16-bit dk / dv.
 *
 * ---- Scratch (the handle's workspace; see mgpu_attention_bwd_scratch_layout) ---
 *
 * Query-side arrays have q_rows_padded rows per (batch, head) slot, key-side
 * arrays k_rows_padded rows per (batch, kv head) slot:
 *   fixed length: q_rows_padded = round_up(seqlen_q, block_m), slots [batch][heads]
 *                 k_rows_padded = round_up(seqlen_k, block_n), slots [batch][heads_kv]
 *   varlen:       q_rows_padded = round_up(total_q + batch * block_m, block_m),
 *                 k_rows_padded = round_up(total_k + batch * block_n, block_n),
 *                 slots [heads] (one slot holds every sequence, see below)
 * First row of (sequence b, head h) in a query-side array, mgpu_attention_bwd_q_row0():
 *   fixed:  (b * heads_q + h) * q_rows_padded
 *   varlen: h * q_rows_padded + round_down(cu_seqlens_q[b] + b * block_m, block_m)
 * (every sequence starts block-aligned and owns round_up(seqlen, block_m) rows;
 * key side alike with block_n, heads_kv, k_rows_padded, cu_seqlens_k.)
 *   lse_log2      fp32  [slots * q_rows_padded]                 element row0 + i
 *   dpsum         fp32  [slots * q_rows_padded]                 element row0 + i
 *   dq_accum      fp32  [slots * q_rows_padded][head_dim]       block_m x head_dim tiles: element (i, d) of
 *                 the tile of rows [row0 + block_m m, + block_m) lies at (row0 + block_m m) * head_dim
 *                 + mgpu_attention_bwd_dq_offset(tile, head_dim, i % block_m, d) (fragment order
 *                 when dq_buffers > 0, else row-major)
 *   dq_semaphore  int32 [slots * q_rows_padded / block_m]       element row0 / block_m + m_block
 *   dk_accum      fp32  [kv slots * k_rows_padded][head_dim]    only when group_size > 1
 *   dv_accum      fp32  [kv slots * k_rows_padded][head_dim]    only when group_size > 1
 *   dkv_semaphore int32 [kv slots * k_rows_padded / block_n]    only when group_size > 1
 * Every array starts 256-byte aligned.
 *
 * ---- What the runtime builds for the main kernel --------------------------------
 *
 * Tensor maps (cuTensorMapEncodeTiled) for Q, K, V and dO, exactly as the
 * forward's (rank 4, {head_dim, seq, heads, nbatch}, 128-byte swizzle, OOB
 * zeros, strides in bytes; varlen: seq = total, nbatch = 1) except the boxes:
 *   Q, dO: box {64, block_m, 1, 1}        K, V: box {64, block_n, 1, 1}
 * (block_m / block_n of the variant's head dim: mgpu_attention_bwd_tile()).
 * split_dim = 1 (head dims 192, 256) also a map of dq_accum (tmap_dq), which
 * the sm_90a kernel adds dQ through (tensor bulk reductions): fp32, rank 2,
 * {head_dim, slots * q_rows_padded}, row stride head_dim * 4 bytes, box
 * {dq_box_cols, MGPU_ATTENTION_BWD_DQ_BOX_ROWS}, no swizzle, no L2 promotion
 * (slots * q_rows_padded below 2^31: the runtime checks it). Head dims <= 128
 * leave tmap_dq zeroed; the sm_100a kernel does not read it.
 *
 * Launch:
 *   n_blocks = ceil(seqlen_k / block_n)   (varlen: of the maximum seqlen_k)
 *   grid  = {n_blocks * heads_q * batch, 1, 1}. The (sequence, query head)
 *           pairs p = b * heads_q + h are taken in groups of G = pair_group
 *           (1 <= G <= batch * heads_q; the last group may hold fewer, G'),
 *           the group's key blocks key block by key block: CTA x is in group
 *           g = x / (G * n_blocks); with r = x - g * G * n_blocks and G' =
 *           min(G, batch * heads_q - g * G) it handles key block r / G' of
 *           pair g * G + r % G' (mgpu_attention_bwd_sm90_cta). G = 1 is
 *           key blocks fastest: key block x % n_blocks of query head
 *           (x / n_blocks) % heads_q of sequence x / (n_blocks * heads_q).
 *           With key_blocks_down = 1 each group's key blocks go in
 *           decreasing order: key block n_blocks - 1 - r / G'. Either way
 *           the key block whose dQ turn comes before (k - 1, or k + 1 with
 *           key_blocks_down, see below) of a pair and query head h - 1 of a
 *           key block and sequence come before, so the deterministic mode's
 *           waits only ever point at CTAs with a smaller index. (G > 1
 *           launches neighbouring key blocks of a pair apart; the runtime
 *           picks G and key_blocks_down.) With pairs_by_slot = 1 (the runtime
 *           sets it for deterministic causal GQA calls) the pairs are
 *           numbered slot by slot instead (mgpu_attention_bwd_sm90_pair),
 *           with G <= batch * heads_kv: the query heads of one KV head then
 *           fall in different groups, and their dK / dV turns at the end of
 *           each CTA do not meet in lock step.
 *           The sm_100a kernel reads no pair_group (the runtime passes 1)
 *           and keeps that order. Exception, its head dims 192 and 256: a CTA
 *           covers 128 keys (key blocks 2 k and 2 k + 1) and one of two
 *           head-dim slices of dK, dV and dQ (columns [0, 128) and [128,
 *           head_dim)), so grid = {round_up(n_blocks, 2) * heads_q * batch}
 *           (mgpu_attention_bwd_sm100_ctas() per query head and sequence):
 *           CTA x handles slice x % 2 of the 128-key block k = (x / 2) %
 *           (round_up(n_blocks, 2) / 2) of query head (x / round_up(n_blocks,
 *           2)) % heads_q of sequence x / (round_up(n_blocks, 2) * heads_q).
 *           Slices fastest, then keys: the waits below still point only at
 *           CTAs with a smaller index.
 *   block = {MGPU_ATTENTION_BWD_THREADS, 1, 1}, no cluster
 *   dynamic shared memory = mgpu_attention_bwd_smem_bytes(head_dim)
 *           (set CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES once).
 *
 * Deterministic mode (deterministic != 0): the adds into dq_accum of one query
 * block happen in one fixed key-block order (dq_semaphore counts them):
 * increasing, each CTA walking its query blocks from the last to the first;
 * or, sm_90a with key_blocks_down = 1, decreasing, each CTA walking its query
 * blocks from the first to the last, so that under a causal mask the key
 * block whose turn comes next meets a query block two blocks later in its own
 * loop (the turns of one query block do not start in lock step). The adds
 * into dk_accum / dv_accum of one key block happen in increasing query-head
 * order within the group (dkv_semaphore). Same inputs, same launch: bitwise-identical
 * dq_accum / dk_accum / dv_accum. The semaphores end non-zero; the next call's
 * preprocess zeroes them. The sm_100a kernel for head dims 192 / 256 counts
 * both slices: the two CTAs of 128-key block k add (disjoint columns) to query
 * block m once dq_semaphore[m] >= 2 (k - first 128-key block of m), and each
 * adds 1 after its adds; dkv_semaphore of key block 2 k counts 2 per query
 * head of the group alike (that of key block 2 k + 1 stays 0).
 *
 * Validation the runtime must do (the kernels trust these): everything the
 * forward ABI lists for Q, K, V (alignment, strides), the same for dO; dK, dV:
 * base 4-byte aligned, seq/head/batch strides multiples of 2 elements (the
 * kernel stores pairs); head_dim equals the variant's; group_size = heads_q /
 * heads_kv; grid size < 2^31; scratch sizes from the function below.
 */
#ifndef MGPU_KERNELS_ABI_ATTENTION_BWD_ABI_H
#define MGPU_KERNELS_ABI_ATTENTION_BWD_ABI_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* 1 producer warpgroup + 2 consumer warpgroups, every head dim. */
#define MGPU_ATTENTION_BWD_THREADS 384
#define MGPU_ATTENTION_BWD_SMEM_LIMIT (227 * 1024)
#define MGPU_ATTENTION_BWD_SCRATCH_ALIGN 256
/* Rows of one box of tmap_dq: the dQ rows of one consumer warp. */
#define MGPU_ATTENTION_BWD_DQ_BOX_ROWS 16

/* The helpers below are callable from host and device code. */
#ifdef __CUDACC__
#define MGPU_ATTENTION_BWD_FN static inline __host__ __device__
#else
#define MGPU_ATTENTION_BWD_FN static inline
#endif

/*
 * Tile table (one entry per head dim). A CTA owns block_n keys of one query
 * head and walks the query blocks (block_m rows) the mask leaves; two consumer
 * warpgroups share the key block.
 *   split_dim = 0 (head dims <= 128): each consumer owns 64 keys and keeps dK,
 *     dV for them (head_dim / 2 fp32 registers each) and P, dS in registers.
 *   split_dim = 1 (head dims 192, 256): each consumer owns a part of the head
 *     dim of dK, dV (and dQ); P and dS go through shared memory.
 *
 *   head_dim  block_m  block_n  stages  split_dim  dq_buffers  dq_cols0  dq_box_cols  smem (bytes)
 *        64       64      128       2        0          2          32            0     141 312
 *        96       64      128       2        0          2          64            0     223 232
 *       128       64      128       2        0          2          64            0     232 448
 *       192       64       64       2        1          0         128           64     183 296
 *       256       64       64       2        1          0         128          128     232 448
 * stages: buffers of Q and of dO (the lse_log2 and dpsum rows have two
 * buffers of their own, two per consumer warp at head dims 64 and 96; the
 * sm_90a kernel keeps head dim 128's in registers, its two buffers unused).
 * dq_buffers: shared fp32 dQ tiles (block_m x
 * head_dim) of the dQ writer, whose dq_accum tiles are in fragment order (0:
 * row-major tiles, added without a dQ writer). dq_cols0: dQ
 * columns of consumer 0 (consumer 1 has the rest). dq_box_cols: columns of
 * one box of tmap_dq (split_dim only, else 0): a width that divides both
 * consumers' column ranges (each consumer warp adds its 16 rows in
 * columns / dq_box_cols boxes).
 */
struct mgpu_attention_bwd_tile {
    int block_m;
    int block_n;
    int stages;
    int split_dim;
    int dq_buffers;
    int dq_cols0;
    int dq_box_cols;
};

/* 0 on success, -1 for a head dim without kernels. */
MGPU_ATTENTION_BWD_FN int mgpu_attention_bwd_tile(int head_dim, struct mgpu_attention_bwd_tile *t)
{
    if (head_dim != 64 && head_dim != 96 && head_dim != 128 && head_dim != 192 && head_dim != 256)
        return -1;
    t->block_m = 64;
    t->block_n = head_dim <= 128 ? 128 : 64;
    t->stages = 2;
    t->split_dim = head_dim > 128;
    t->dq_buffers = head_dim <= 128 ? 2 : 0;
    t->dq_cols0 = head_dim <= 64 ? head_dim / 2 : (head_dim / 2 + 63) / 64 * 64;
    t->dq_box_cols = !t->split_dim ? 0 : 2 * t->dq_cols0 == head_dim ? t->dq_cols0 : 64;
    return 0;
}

/*
 * Dynamic shared memory of the main kernel (the kernel static_asserts that
 * its storage fits this): K, V, `stages` Q and dO tiles, every tile's head dim
 * padded to whole 128-byte swizzle rows; two buffers of dS (and of P when
 * split_dim), 16-bit block_n x block_m; dq_buffers fp32 block_m x head_dim
 * tiles; two buffers of block_m fp32 of lse_log2 and of dpsum (head dims 64
 * and 96: two per consumer warp, for the sm_90a kernel's deferred-dQ loop); 1 KiB of
 * barriers and 1 KiB for aligning the base. 0 for a head dim without kernels.
 */
MGPU_ATTENTION_BWD_FN int mgpu_attention_bwd_smem_bytes(int head_dim)
{
    struct mgpu_attention_bwd_tile t;
    if (mgpu_attention_bwd_tile(head_dim, &t) != 0)
        return 0;
    const int dim_rows = (head_dim + 63) / 64;
    const int tiles = dim_rows * 128 * (2 * t.block_n + 2 * t.stages * t.block_m);
    const int ds = 2 * (t.split_dim ? 2 : 1) * t.block_n * t.block_m * 2;
    /* head dims 64 and 96 (the deferred-dQ loop): two row buffers per consumer warp */
    const int rows = (head_dim == 64 || head_dim == 96 ? 8 : 1) * 2 * 2 * t.block_m * 4;
    const int dq = t.dq_buffers * t.block_m * head_dim * 4;
    return tiles + ds + dq + rows + 2048;
}

/*
 * Offset of element (row r < block_m, column c) inside a dq_accum tile.
 * dq_buffers > 0: the wgmma accumulator order of the consumer that owns
 * column c (its columns [c0, c0 + n) start at element block_m * c0; thread
 * t = 32 (r / 16) + 4 (r % 8) + (c - c0) % 8 / 2 of its warpgroup keeps
 * floats 4 q .. 4 q + 3, q = (c - c0) / 8, at (128 q + t) * 4, in the order
 * (row r, r + 8) x (two adjacent columns)). dq_buffers == 0: row-major.
 */
MGPU_ATTENTION_BWD_FN int64_t mgpu_attention_bwd_dq_offset(const struct mgpu_attention_bwd_tile *t, int head_dim,
                                                           int r, int c)
{
    if (t->dq_buffers == 0)
        return (int64_t)r * head_dim + c;
    const int c0 = c < t->dq_cols0 ? 0 : t->dq_cols0;
    const int cc = c - c0;
    const int thread = 32 * (r / 16) + 4 * (r % 8) + (cc % 8) / 2;
    return (int64_t)t->block_m * c0 + (128 * (cc / 8) + thread) * 4 + 2 * ((r % 16) / 8) + (cc % 2);
}

/*
 * The sm_90a main kernel's CTA x (see "Launch" above): key block *n_block of
 * pair *pair = b * heads_q + h, for pairs = batch * heads_q and 1 <=
 * pair_group <= pairs (every product below the grid size, < 2^31); a
 * group's key blocks in decreasing order when key_blocks_down != 0.
 */
MGPU_ATTENTION_BWD_FN void mgpu_attention_bwd_sm90_cta(int x, int n_blocks, int pairs, int pair_group,
                                                       int key_blocks_down, int *n_block, int *pair)
{
    const int per_group = pair_group * n_blocks;
    const int g = x / per_group, r = x - g * per_group;
    const int in_group = pairs - g * pair_group < pair_group ? pairs - g * pair_group : pair_group;
    *n_block = key_blocks_down ? n_blocks - 1 - r / in_group : r / in_group;
    *pair = g * pair_group + r % in_group;
}

/*
 * The (sequence, query head) of the sm_90a grid's pair p (see "Launch"):
 * b * heads_q + h = p, or with pairs_by_slot slot by slot: p = s * batch *
 * heads_kv + b * heads_kv + kh for query head h = kh * group_size + s. The
 * query heads whose dK / dV adds follow each other (s - 1, s of one KV head)
 * are then batch * heads_kv pairs apart, never in one group of at most that
 * many pairs.
 */
MGPU_ATTENTION_BWD_FN void mgpu_attention_bwd_sm90_pair(int p, int batch, int heads_kv, int group_size,
                                                        int pairs_by_slot, int *b, int *h)
{
    if (!pairs_by_slot || group_size == 1) {
        *b = p / (heads_kv * group_size);
        *h = p - *b * heads_kv * group_size;
        return;
    }
    const int per_slot = batch * heads_kv;
    const int s = p / per_slot, r = p - s * per_slot;
    *b = r / heads_kv;
    *h = (r - *b * heads_kv) * group_size + s;
}

/*
 * The sm_100a main kernel's CTAs (see "Launch" above): head dims 192 and 256
 * take 2 slices of the head dim per 128 keys (2 key blocks of block_n = 64),
 * every other head dim 1 slice per key block. CTAs per (query head,
 * sequence) for n_blocks = ceil(seqlen_k / block_n) key blocks.
 */
MGPU_ATTENTION_BWD_FN int mgpu_attention_bwd_sm100_slices(int head_dim)
{
    return head_dim > 128 ? 2 : 1;
}

MGPU_ATTENTION_BWD_FN int64_t mgpu_attention_bwd_sm100_ctas(int head_dim, int64_t n_blocks)
{
    const int64_t blocks_per_cta = head_dim > 128 ? 2 : 1; /* 128 keys per CTA */
    return (n_blocks + blocks_per_cta - 1) / blocks_per_cta * mgpu_attention_bwd_sm100_slices(head_dim);
}

/* First row of (sequence b, head h) in a query-side scratch array (h: query
 * head) or, with block_n / k_rows_padded / cu_seqlens_k / heads_kv, in a
 * key-side one (h: kv head). cu_seqlens: 0 for fixed length, else the offsets. */
MGPU_ATTENTION_BWD_FN int64_t mgpu_attention_bwd_row0(int b, int h, int heads, int block, int64_t rows_padded,
                                              const int32_t *cu_seqlens)
{
    if (cu_seqlens == 0)
        return ((int64_t)b * heads + h) * rows_padded;
    return (int64_t)h * rows_padded + ((int64_t)cu_seqlens[b] + (int64_t)b * block) / block * block;
}

/* Byte offsets of the scratch arrays inside the workspace (each 256-byte
 * aligned; absent arrays have size 0 and offset equal to the next one's). */
struct mgpu_attention_bwd_scratch {
    int64_t q_rows_padded, k_rows_padded; /* rows per slot, see above */
    size_t lse_log2, dpsum, dq_accum, dq_semaphore, dk_accum, dv_accum, dkv_semaphore;
    size_t total; /* bytes the workspace must hold */
};

MGPU_ATTENTION_BWD_FN size_t mgpu_attention_bwd_align_up_(size_t x)
{
    return (x + MGPU_ATTENTION_BWD_SCRATCH_ALIGN - 1) / MGPU_ATTENTION_BWD_SCRATCH_ALIGN *
           MGPU_ATTENTION_BWD_SCRATCH_ALIGN;
}

/* a * b into *out unless it exceeds 2^62 (then -1). */
MGPU_ATTENTION_BWD_FN int mgpu_attention_bwd_mul_(uint64_t a, uint64_t b, uint64_t *out)
{
    const uint64_t limit = (uint64_t)1 << 62;
    if (a != 0 && b > limit / a)
        return -1;
    *out = a * b;
    return 0;
}

/*
 * Fills *s for one problem. varlen != 0: seqlen_q / seqlen_k are ignored and
 * total_q / total_k (the packed row counts) used; else the reverse. Returns 0,
 * or -1 for a head dim without kernels, a non-positive count or a size beyond
 * 2^62 bytes.
 */
MGPU_ATTENTION_BWD_FN int mgpu_attention_bwd_scratch_layout(int head_dim, int batch, int heads_q, int heads_kv,
                                                    int64_t seqlen_q, int64_t seqlen_k, int64_t total_q,
                                                    int64_t total_k, int varlen,
                                                    struct mgpu_attention_bwd_scratch *s)
{
    struct mgpu_attention_bwd_tile t;
    if (mgpu_attention_bwd_tile(head_dim, &t) != 0 || batch <= 0 || heads_q <= 0 || heads_kv <= 0)
        return -1;
    int64_t q_slots, k_slots;
    if (varlen) {
        if (total_q < 0 || total_k < 0)
            return -1;
        s->q_rows_padded = (total_q + (int64_t)batch * t.block_m + t.block_m - 1) / t.block_m * t.block_m;
        s->k_rows_padded = (total_k + (int64_t)batch * t.block_n + t.block_n - 1) / t.block_n * t.block_n;
        q_slots = heads_q;
        k_slots = heads_kv;
    } else {
        if (seqlen_q <= 0 || seqlen_k <= 0)
            return -1;
        s->q_rows_padded = (seqlen_q + t.block_m - 1) / t.block_m * t.block_m;
        s->k_rows_padded = (seqlen_k + t.block_n - 1) / t.block_n * t.block_n;
        q_slots = (int64_t)batch * heads_q;
        k_slots = (int64_t)batch * heads_kv;
    }
    uint64_t q_rows, k_rows, q_elems, k_elems;
    if (mgpu_attention_bwd_mul_((uint64_t)q_slots, (uint64_t)s->q_rows_padded, &q_rows) != 0 ||
        mgpu_attention_bwd_mul_((uint64_t)k_slots, (uint64_t)s->k_rows_padded, &k_rows) != 0 ||
        mgpu_attention_bwd_mul_(q_rows, (uint64_t)head_dim * 4, &q_elems) != 0 ||
        mgpu_attention_bwd_mul_(k_rows, (uint64_t)head_dim * 4, &k_elems) != 0)
        return -1;
    const int gqa = heads_q != heads_kv;
    size_t off = 0;
    s->lse_log2 = off;
    off = mgpu_attention_bwd_align_up_(off + (size_t)q_rows * 4);
    s->dpsum = off;
    off = mgpu_attention_bwd_align_up_(off + (size_t)q_rows * 4);
    s->dq_accum = off;
    off = mgpu_attention_bwd_align_up_(off + (size_t)q_elems);
    s->dq_semaphore = off;
    off = mgpu_attention_bwd_align_up_(off + (size_t)(q_rows / t.block_m) * 4);
    s->dk_accum = off;
    if (gqa)
        off = mgpu_attention_bwd_align_up_(off + (size_t)k_elems);
    s->dv_accum = off;
    if (gqa)
        off = mgpu_attention_bwd_align_up_(off + (size_t)k_elems);
    s->dkv_semaphore = off;
    if (gqa)
        off = mgpu_attention_bwd_align_up_(off + (size_t)(k_rows / t.block_n) * 4);
    s->total = off;
    return 0;
}

/*
 * Arguments of all three backward kernels (each reads the fields it needs).
 * Strides are in elements; batch strides are ignored for varlen.
 */
struct mgpu_attention_bwd_args {
    int32_t batch;            /* number of sequences */
    int32_t seqlen_q;         /* varlen: maximum over the batch */
    int32_t seqlen_k;         /* varlen: maximum over the batch (sizes the grid) */
    int32_t heads_q;
    int32_t heads_kv;
    int32_t head_dim;         /* equals the variant's */
    int32_t group_size;       /* heads_q / heads_kv */
    int32_t causal;           /* 0 or 1 */
    int32_t window_left;      /* < 0: unbounded */
    int32_t window_right;     /* < 0: unbounded (causal caps it at 0) */
    float softmax_scale;
    float scale_log2;         /* softmax_scale * log2(e) */
    float softcap;            /* 0: off */
    int32_t deterministic;    /* 0 or 1, see above */
    int32_t n_blocks;         /* ceil(seqlen_k / block_n): key blocks per (head, sequence) in the grid */
    int32_t pair_group;       /* G of the sm_90a main kernel's grid order (see Launch), >= 1 */
    int32_t key_blocks_down;  /* 1: the sm_90a main kernel's key-block order (see Launch, Deterministic
                               * mode); 0 elsewhere (the sm_100a kernel does not read it) */
    int32_t pairs_by_slot;    /* 1: the sm_90a grid's pairs go slot by slot (mgpu_attention_bwd_sm90_pair) */
    /* Inputs read by the preprocess (O, dO, LSE) and outputs (dQ, dK, dV). */
    int64_t o_batch_stride, o_seq_stride, o_head_stride;
    int64_t do_batch_stride, do_seq_stride, do_head_stride;
    int64_t dq_batch_stride, dq_seq_stride, dq_head_stride;
    int64_t dk_batch_stride, dk_seq_stride, dk_head_stride;
    int64_t dv_batch_stride, dv_seq_stride, dv_head_stride;
    uint64_t o;               /* 16-bit O (preprocess) */
    uint64_t dout;            /* 16-bit dO (preprocess; the main kernel reads it through tmap_do) */
    uint64_t lse;             /* fp32 LSE as the forward wrote it (preprocess) */
    int64_t lse_batch_stride; /* forward ABI meaning */
    int64_t lse_head_stride;
    uint64_t dq;              /* 16-bit dQ (postprocess) */
    uint64_t dk;              /* 16-bit dK (main kernel when group_size == 1, else postprocess) */
    uint64_t dv;              /* 16-bit dV (likewise) */
    uint64_t cu_seqlens_q;    /* int32[batch + 1], or 0 */
    uint64_t cu_seqlens_k;    /* int32[batch + 1], or 0 (given together) */
    /* Scratch (device addresses inside the workspace, see above). */
    int64_t q_rows_padded;
    int64_t k_rows_padded;
    uint64_t lse_log2;
    uint64_t dpsum;
    uint64_t dq_accum;
    uint64_t dq_semaphore;
    uint64_t dk_accum;        /* 0 when group_size == 1 */
    uint64_t dv_accum;
    uint64_t dkv_semaphore;
};

struct mgpu_attention_bwd_params {
    CUtensorMap tmap_q;       /* box {64, block_m, 1, 1} */
    CUtensorMap tmap_k;       /* box {64, block_n, 1, 1} */
    CUtensorMap tmap_v;       /* box {64, block_n, 1, 1} */
    CUtensorMap tmap_do;      /* box {64, block_m, 1, 1} */
    struct mgpu_attention_bwd_args args;
    CUtensorMap tmap_dq;      /* split_dim: dq_accum, box {dq_box_cols, MGPU_ATTENTION_BWD_DQ_BOX_ROWS}; else zeros */
};

#endif
