/*
 * The table of every kernel variant. Adding a kernel starts here (and, for a
 * new kind of kernel, in gen/kinds.c).
 */
#include "variants.h"

#include "../kernels/abi/attention_abi.h"
#include "../kernels/abi/attention_bwd_abi.h"
#include "../kernels/abi/attention_fwd_fp8_abi.h"
#include "../kernels/abi/gather_abi.h"

const struct gen_arch_info gen_archs[GEN_ARCH_COUNT] = {
    [GEN_SM90A] = {"sm90a", "sm90", 9, 0},
    [GEN_SM100A] = {"sm100a", "sm100", 10, 0},
};

/* Layout shorthands, in cuBLAS's transa/transb letters (column-major):
 * A is K-major when transa == T, B is K-major when transb == N. */
#define TN 1, 1
#define NN 0, 1
#define TT 1, 0
#define NT 0, 0

/* Persistent sm100 GEMM: tile_m (D rows, the MMA's N) x 128 (D columns per
 * CTA, TMEM lanes) tiles, 192 threads (TMA warp, MMA warp, epilogue
 * warpgroup), `st` stages; `cn` = 2: CTA pairs along N sharing one
 * tcgen05.mma.cta_group::2 (a 256 x 256 cluster tile: LARGE_CLUSTER), 1:
 * lone CTAs (M = 128, N = 256: LARGE, also for small m). 6 stages of 32 KB
 * or 4 of 48 KB, plus 32 KB of epilogue buffers, fill the 227 KB. */
#define SM100_GEMM(dt, st, cn, shape, ...) \
    {GEN_GEMM_SM100_PERSISTENT, GEN_SM100A, dt, 192, .gemm = {__VA_ARGS__, 256, 128, 64, st, 1, cn, GEN_B_SAME, shape}}
#define SM100_GEMM_FAMILY(dt, ...) \
    SM100_GEMM(dt, 6, 2, GEN_GEMM_LARGE_CLUSTER, __VA_ARGS__), SM100_GEMM(dt, 4, 1, GEN_GEMM_LARGE, __VA_ARGS__)
/* fp8 (A `da`, B `db`) on sm100, TN only (as on Hopper): tcgen05.mma
 * kind::f8f6f4, K = 32 per instruction; tile_k is 128 elements (one 128-byte
 * swizzle row, the same stage bytes as 16-bit), so the stages and tiles of
 * the 16-bit family fit unchanged. One fp32 accumulator in TMEM (no
 * two-level accumulation: docs/decisions/014-sm100-fp8-accumulation.md). */
#define SM100_FP8(da, db, st, cn, shape) \
    {GEN_GEMM_SM100_PERSISTENT, GEN_SM100A, da, 192, .gemm = {TN, 256, 128, 128, st, 1, cn, db, shape}}
#define SM100_FP8_FAMILY(da, db) \
    SM100_FP8(da, db, 6, 2, GEN_GEMM_LARGE_CLUSTER), SM100_FP8(da, db, 4, 1, GEN_GEMM_LARGE)
#define PORTABLE_GEMM(arch)                                                                               \
    {GEN_GEMM_PORTABLE, arch, GEN_ANY_DTYPE, 256, .gemm = {-1, -1, 64, 64, 16, 1, 0, 0, GEN_B_SAME, GEN_GEMM_ANY_SHAPE}}

/* Persistent sm90 GEMM: tile_m x 128 tiles (tile_m is the wgmma N, 64..256), 384
 * threads, `st` stages, clusters of `cn` CTAs along N sharing (multicasting)
 * the A tile; `shape` is the class of problems the row serves. The band width
 * of the tile order is chosen per call (src/gemm/gemm_plan.c). The operand
 * pack is a helper of the same launch path. */
#define SM90_WS_GEMM(dt, tm, st, cn, shape, ...) \
    {GEN_GEMM_SM90_PERSISTENT, GEN_SM90A, dt, 384, .gemm = {__VA_ARGS__, tm, 128, 64, st, 1, cn, GEN_B_SAME, shape}}
#define SM90_WS_FAMILY(dt, ...)                                                                            \
    SM90_WS_GEMM(dt, 256, 4, 1, GEN_GEMM_LARGE, __VA_ARGS__),                                              \
        SM90_WS_GEMM(dt, 256, 4, 2, GEN_GEMM_LARGE_CLUSTER, __VA_ARGS__),                                  \
        SM90_WS_GEMM(dt, 128, 6, 1, GEN_GEMM_SMALL_M, __VA_ARGS__),                                        \
        SM90_WS_GEMM(dt, 64, 8, 1, GEN_GEMM_TINY_M, __VA_ARGS__), SM90_PP_FAMILY(dt, __VA_ARGS__)
/* 64 x 64 tiles for small m (16-bit, TN): one consumer warpgroup (256
 * threads), 12 stages of 16 KB, so that m <= 128 with n = 4096 has 64-128
 * tiles (CTAs streaming B) without split-K. After the 64 x 128 TINY_M row
 * of the same class: the planner takes it only where narrow_wanted says
 * (src/gemm/gemm_plan.c; docs/decisions/021-gemm-small-m-narrow-tile.md). */
#define SM90_WS_NARROW(dt)                                                                                \
    {GEN_GEMM_SM90_PERSISTENT, GEN_SM90A, dt, 256, .gemm = {TN, 64, 64, 64, 12, 1, 1, GEN_B_SAME, GEN_GEMM_TINY_M}}
/* Ping-pong rows (16-bit): 128 x 128 tiles, each owned by one consumer
 * warpgroup (kernels/hopper/gemm_sm90_pingpong.cuh), 6 stages of 32 KB,
 * lone CTAs or 2-CTA clusters along N. */
#define SM90_PP_GEMM(dt, cn, shape, ...)                                                                  \
    {GEN_GEMM_SM90_PERSISTENT, GEN_SM90A, dt, 384,                                                        \
     .gemm = {__VA_ARGS__, 128, 128, 64, 6, 1, cn, GEN_B_SAME, shape, GEN_SCHEDULE_PINGPONG}}
#define SM90_PP_FAMILY(dt, ...) \
    SM90_PP_GEMM(dt, 1, GEN_GEMM_LARGE_PINGPONG, __VA_ARGS__), \
        SM90_PP_GEMM(dt, 2, GEN_GEMM_LARGE_PINGPONG_CLUSTER, __VA_ARGS__)
/* fp8 (A `da`, B `db`), TN only (fp8 wgmma reads K-major operands): tile_k is
 * 128 elements (one 128-byte swizzle row, as for 16-bit). Each consumer holds
 * two accumulator sets (two-level accumulation), so tile_m stops at 192 rather
 * than 256; 192 rows leave room for 4 stages, 128 rows for 6. The 192-row tile
 * also comes in 2-CTA clusters along N (each CTA loads 96 rows of the shared A
 * tile and multicasts them). There is no 64-row fp8 tile. */
#define SM90_WS_FP8(da, db, tm, st, cn, shape) \
    {GEN_GEMM_SM90_PERSISTENT, GEN_SM90A, da, 384, .gemm = {TN, tm, 128, 128, st, 1, cn, db, shape}}
#define SM90_WS_FP8_FAMILY(da, db)                                                                          \
    SM90_WS_FP8(da, db, 192, 4, 1, GEN_GEMM_LARGE), SM90_WS_FP8(da, db, 192, 4, 2, GEN_GEMM_LARGE_CLUSTER), \
        SM90_WS_FP8(da, db, 128, 6, 1, GEN_GEMM_SMALL_M)
/* Small-m (decode) GEMM, TN only: m <= 16 rows of D, 128 columns of D per
 * CTA (8 warps of 16), 32 elements of K per step; no shared memory
 * (hopper/gemm_sm90_small_m.cuh). Its m <= 64 form (tile_m 64) compiles but
 * ran at 0.45-0.61x cuBLAS at m = 64 on H100 (one CTA per SM at 230
 * registers), against 0.77-1.07x for the 64-row wgmma tile: not built. */
#define SM90_SMALL_M_GEMM(dt, tm) \
    {GEN_GEMM_SMALL_M_SM90, GEN_SM90A, dt, 256, .gemm = {TN, tm, 128, 32, 1, 1, 0, GEN_B_SAME, GEN_GEMM_DECODE}}
/* The same kernel fed by a shared-memory ring of tensor-map copies
 * (hopper/gemm_sm90_small_m_tma.cuh): tn columns of D per CTA (tn / 16 MMA
 * warps and a producer warp), stages of tk elements of K (one or two boxes of
 * 64), st stages. 128 x 64 x 6 (109 KiB) and 64 x 64 x 10 (101 KiB) let two
 * CTAs share an SM; the others run one per SM
 * (docs/decisions/051-gemm-small-m-tensor-ring.md). */
#define SM90_SMALL_M_TMA_GEMM(dt, tn, tk, st)                                      \
    {GEN_GEMM_SMALL_M_TMA_SM90, GEN_SM90A, dt, 32 * ((tn) / 16) + 32,                \
     .gemm = {TN, 16, tn, tk, st, 1, 0, GEN_B_SAME, GEN_GEMM_DECODE}}
#define SM90_SMALL_M_TMA_FAMILY(dt)                                                                    \
    SM90_SMALL_M_TMA_GEMM(dt, 128, 64, 12), SM90_SMALL_M_TMA_GEMM(dt, 128, 64, 6),                       \
        SM90_SMALL_M_TMA_GEMM(dt, 64, 64, 20), SM90_SMALL_M_TMA_GEMM(dt, 64, 64, 10),                    \
        SM90_SMALL_M_TMA_GEMM(dt, 128, 128, 6)
/* e4m3 128 x 128 tiles in 2-CTA clusters, after the 192-row cluster row of
 * the same class (which the planner therefore picks), there to be measured
 * against the 192-row ones through MGPU_FORCE_VARIANT
 * (docs/decisions/015-gemm-pingpong-schedule.md). */
#define SM90_WS_FP8_128_CLUSTER SM90_WS_FP8(GEN_E4M3, GEN_B_SAME, 128, 6, 2, GEN_GEMM_LARGE_CLUSTER)
/* 16-bit 192 x 128 tiles (wgmma N = 192) for large problems whose 256-row
 * tiles leave the last wave short (the planner compares the busiest CTA's
 * rows: src/gemm/gemm_plan.c, docs/decisions/040-gemm-192-row-tiles.md).
 * A stage is (192 + 128) x 64 x 2 B = 40 KB: 4 stages and the 32 KB of
 * epilogue buffers fit the 227 KB (5 would not). Lone CTAs for every
 * layout; 2-CTA clusters (96 rows of the shared A tile per CTA) only where
 * A is K-major (TN, TT): M-major A is loaded in 64-row chunks. */
#define SM90_WS_192(dt, ...) SM90_WS_GEMM(dt, 192, 4, 1, GEN_GEMM_LARGE_192, __VA_ARGS__)
#define SM90_WS_192_CLUSTER(dt, ...) SM90_WS_GEMM(dt, 192, 4, 2, GEN_GEMM_LARGE_192_CLUSTER, __VA_ARGS__)
#define SM90_WS_192_FAMILY(dt)                                                                            \
    SM90_WS_192(dt, TN), SM90_WS_192(dt, NN), SM90_WS_192(dt, TT), SM90_WS_192(dt, NT),                   \
        SM90_WS_192_CLUSTER(dt, TN), SM90_WS_192_CLUSTER(dt, TT)
/* 16-bit 192 x 192 tiles: three consumer warpgroups of 64 columns (512
 * threads, 96 accumulators and 152 registers each), a stage of (192 + 192)
 * x 64 x 2 B = 48 KB, 4 stages with one 8 KB epilogue buffer per consumer
 * (two would not fit). A tile reads 0.8x the operand bytes per product of
 * a 192 x 128 one (docs/decisions/043-gemm-cublas-kernels-behind.md). TN
 * only (K-major A, so that each CTA of a 2-CTA cluster loads 96 rows of
 * the shared A tile). */
#define SM90_WS_WIDE(dt, cn, shape) \
    {GEN_GEMM_SM90_PERSISTENT, GEN_SM90A, dt, 512, .gemm = {TN, 192, 192, 64, 4, 1, cn, GEN_B_SAME, shape}}
#define SM90_WS_WIDE_FAMILY(dt) SM90_WS_WIDE(dt, 1, GEN_GEMM_WIDE_192), SM90_WS_WIDE(dt, 2, GEN_GEMM_WIDE_192_CLUSTER)
/* 16-bit tiles of other wgmma N (tile_m a multiple of 16 up to 256) x 128,
 * cooperative, for problems whose waves of 256-row tiles leave SMs idle: the
 * planner compares the busiest CTA's work of each such row with the plan's
 * (src/gemm/gemm_plan.c, wave_rows_wanted). 224 rows: 5000^3 runs 460 2-CTA
 * cluster units in 7 waves of 66 (6.97) where 256 rows run 400 in 7
 * (6.06). A stage is (224 + 128) x 64 x 2 B = 44 KB: 4 stages and the 32 KB
 * of epilogue buffers fit the 227 KB. TN only; lone CTAs and 2-CTA
 * clusters (112 rows of the shared A tile per CTA: K-major A). The last
 * epilogue box of a 16-bit D overlaps the one before it
 * (hopper/gemm_sm90_epilogue.cuh). */
#define SM90_WS_WAVE(dt, tm, st) \
    SM90_WS_GEMM(dt, tm, st, 1, GEN_GEMM_WAVE, TN), SM90_WS_GEMM(dt, tm, st, 2, GEN_GEMM_WAVE_CLUSTER, TN)
/* The operand pack: one thread copies 8 16-bit elements (16 bytes) of a
 * packed column at a time. */
#define GEMM_PACK(arch) {GEN_GEMM_PACK, arch, GEN_ANY_DTYPE, 256, .helper = {8}}

/* Gather and scatter-add: the kernels move bytes, so gathers take any dtype;
 * scatter-add is compiled per element type. Every kind comes with int32 and
 * int64 indices. The portable bodies are built for both architectures. */
#define GATHER_ROW(k, target, dt, idx, nthreads) {k, target, dt, nthreads, .gather = {idx}}
#define BOTH_INDEX(k, target, dt, nthreads) \
    GATHER_ROW(k, target, dt, GEN_I32, nthreads), GATHER_ROW(k, target, dt, GEN_I64, nthreads)
#define SCATTER_ROWS(k, target)                                                                   \
    BOTH_INDEX(k, target, GEN_F32, MGPU_GATHER_THREADS), BOTH_INDEX(k, target, GEN_BF16, MGPU_GATHER_THREADS), \
        BOTH_INDEX(k, target, GEN_F16, MGPU_GATHER_THREADS)
#define PORTABLE_GATHER_FAMILY(target)                                                            \
    BOTH_INDEX(GEN_GATHER_NARROW, target, GEN_ANY_DTYPE, MGPU_GATHER_THREADS),                    \
        BOTH_INDEX(GEN_GATHER_WIDE, target, GEN_ANY_DTYPE, MGPU_GATHER_THREADS),                  \
        BOTH_INDEX(GEN_GATHER_UNALIGNED, target, GEN_ANY_DTYPE, MGPU_GATHER_THREADS),             \
        SCATTER_ROWS(GEN_SCATTER_ADD, target), SCATTER_ROWS(GEN_SCATTER_ADD_SORTED, target)

/* Hopper attention forward: one variant per head dim of abi/attention_abi.h,
 * with its key block; 128 query rows, 2 stages of K and V, 1 producer + 2
 * consumer warpgroups. The generated unit checks every number against the
 * kernel. */
#define SM90_ATTENTION_FWD(dt, d)                                                                          \
    {GEN_ATTENTION_FWD_SM90, GEN_SM90A, dt, MGPU_ATTENTION_FWD_THREADS,                                   \
     .attention = {.head_dim = d, .block_m = MGPU_ATTENTION_FWD_BLOCK_M,                                   \
                   .block_n = MGPU_ATTENTION_FWD_BLOCK_N(d), .stages = MGPU_ATTENTION_FWD_STAGES}},
/* Every head dim's row, each with its trailing comma. */
#define SM90_ATTENTION_FWD_FAMILY(dt) MGPU_ATTENTION_FWD_HEAD_DIMS(SM90_ATTENTION_FWD, dt)
/* Its decode entry (the same tiles; one work tile per CTA): one per head dim. */
#define SM90_ATTENTION_FWD_DECODE(dt, d)                                                                   \
    {GEN_ATTENTION_FWD_DECODE_SM90, GEN_SM90A, dt, MGPU_ATTENTION_FWD_THREADS,                            \
     .attention = {.head_dim = d, .block_m = MGPU_ATTENTION_FWD_BLOCK_M,                                   \
                   .block_n = MGPU_ATTENTION_FWD_BLOCK_N(d), .stages = MGPU_ATTENTION_FWD_STAGES}},
#define SM90_ATTENTION_FWD_DECODE_FAMILY(dt) MGPU_ATTENTION_FWD_HEAD_DIMS(SM90_ATTENTION_FWD_DECODE, dt)
/* The decode entry's 64-row variant (one consumer warpgroup, 256 threads;
 * the forward's key block and stages): head dims 64 and 128, the GQA decode
 * rows it was built for; at head dim 128 also with 64-row key blocks (two
 * CTAs an SM) for short caches (the runtime's rules:
 * src/attention/attention_plan.c). */
#define SM90_ATTENTION_FWD_DECODE64(dt, d, n)                                                              \
    {GEN_ATTENTION_FWD_DECODE64_SM90, GEN_SM90A, dt, MGPU_ATTENTION_FWD_DECODE64_THREADS,                 \
     .attention = {.head_dim = d, .block_m = MGPU_ATTENTION_FWD_DECODE64_BLOCK_M, .block_n = n,            \
                   .stages = MGPU_ATTENTION_FWD_STAGES}}
#define SM90_ATTENTION_FWD_DECODE64_FAMILY(dt)                                                             \
    SM90_ATTENTION_FWD_DECODE64(dt, 64, MGPU_ATTENTION_FWD_BLOCK_N(64)),                                   \
        SM90_ATTENTION_FWD_DECODE64(dt, 128, MGPU_ATTENTION_FWD_BLOCK_N(128)),                             \
        SM90_ATTENTION_FWD_DECODE64(dt, 128, MGPU_ATTENTION_FWD_DECODE64_SHORT_BLOCK_N)
/* The wide forward (192 query rows, three consumer warpgroups, 512 threads;
 * the forward's key block and stages): head dim 64, prefill calls (the
 * runtime's rule: src/attention/attention_plan.c). */
#define SM90_ATTENTION_FWD_WIDE(dt, d)                                                                     \
    {GEN_ATTENTION_FWD_WIDE_SM90, GEN_SM90A, dt, MGPU_ATTENTION_FWD_WIDE_THREADS,                         \
     .attention = {.head_dim = d, .block_m = MGPU_ATTENTION_FWD_WIDE_BLOCK_M,                              \
                   .block_n = MGPU_ATTENTION_FWD_BLOCK_N(d), .stages = MGPU_ATTENTION_FWD_STAGES}}

/* Hopper fp8 attention forward (abi/attention_fwd_fp8_abi.h): e4m3 Q, K, V;
 * the row's dtype is O's. Head dim 128 only. */
#define SM90_ATTENTION_FWD_FP8(dt)                                                                          \
    {GEN_ATTENTION_FWD_FP8_SM90, GEN_SM90A, dt, MGPU_ATTENTION_FWD_THREADS,                                 \
     .attention = {.head_dim = MGPU_ATTENTION_FWD_FP8_HEAD_DIM, .block_m = MGPU_ATTENTION_FWD_BLOCK_M,       \
                   .block_n = MGPU_ATTENTION_FWD_FP8_BLOCK_N, .stages = MGPU_ATTENTION_FWD_FP8_STAGES}}

/* The same with V^T from the workspace (4 stages of K and V^T). */
#define SM90_ATTENTION_FWD_FP8_VT(dt)                                                                       \
    {GEN_ATTENTION_FWD_FP8_VT_SM90, GEN_SM90A, dt, MGPU_ATTENTION_FWD_THREADS,                              \
     .attention = {.head_dim = MGPU_ATTENTION_FWD_FP8_HEAD_DIM, .block_m = MGPU_ATTENTION_FWD_BLOCK_M,       \
                   .block_n = MGPU_ATTENTION_FWD_FP8_BLOCK_N, .stages = MGPU_ATTENTION_FWD_FP8_VT_STAGES}}

/* Blackwell attention forward: one variant per head dim, tiles and threads
 * from the ABI's Blackwell paragraph (256 query rows as two 128-row Q tiles
 * up to head dim 192, 128 rows at 256; 128 or 64 keys per block; 2 stages). */
#define SM100_ATTENTION_FWD(dt, d)                                                                         \
    {GEN_ATTENTION_FWD_SM100, GEN_SM100A, dt, MGPU_ATTENTION_FWD_SM100_THREADS(d),                         \
     .attention = {.head_dim = d, .block_m = MGPU_ATTENTION_FWD_SM100_BLOCK_M(d),                          \
                   .block_n = MGPU_ATTENTION_FWD_SM100_BLOCK_N(d), .stages = MGPU_ATTENTION_FWD_SM100_STAGES}},
#define SM100_ATTENTION_FWD_FAMILY(dt) MGPU_ATTENTION_FWD_HEAD_DIMS(SM100_ATTENTION_FWD, dt)
/* The combine pass of split-key attention forward calls, one per dtype (head
 * dim at run time), and the KV-cache append (a 16-byte copy: any 16-bit
 * dtype); one thread moves 4 fp32 / 8 16-bit elements at a time. */
#define SM90_ATTENTION_FWD_COMBINE(dt) \
    {GEN_ATTENTION_FWD_COMBINE_SM90, GEN_SM90A, dt, MGPU_ATTENTION_FWD_COMBINE_THREADS, .helper = {4}}

/* Attention backward's preprocess and postprocess: one of each per dtype (the
 * head dim is a run-time argument), 256 threads (the kernel checks it), no
 * shared memory; one thread moves one 16-byte vector of 8 16-bit elements. */
#define ATTENTION_BWD_HELPER(k, arch, dt) {k, arch, dt, 256, .helper = {8}}
#define ATTENTION_BWD_PREPOST(arch, dt) \
    ATTENTION_BWD_HELPER(GEN_ATTENTION_BWD_PRE, arch, dt), ATTENTION_BWD_HELPER(GEN_ATTENTION_BWD_POST, arch, dt)

/* Hopper attention backward main kernel: 64 query rows x block_n keys per
 * step (kernels/abi/attention_bwd_abi.h's tile table, which the generator
 * checks), 2 stages, 1 producer + 2 consumer warpgroups. */
#define SM90_ATTENTION_BWD(dt, d, bn) \
    {GEN_ATTENTION_BWD_SM90, GEN_SM90A, dt, 384, .attention = {.head_dim = d, .block_m = 64, .block_n = bn, .stages = 2}}
#define SM90_ATTENTION_BWD_FAMILY(dt)                                                                            \
    SM90_ATTENTION_BWD(dt, 64, 128), SM90_ATTENTION_BWD(dt, 96, 128), SM90_ATTENTION_BWD(dt, 128, 128),         \
        SM90_ATTENTION_BWD(dt, 192, 64), SM90_ATTENTION_BWD(dt, 256, 64)

/* Blackwell attention backward main kernel: the ABI's tile table (block_m x
 * block_n, stages: the scratch, tensor-map boxes and pre/post it shares with
 * Hopper), 384 threads (compute, dQ, TMA + MMA warpgroups). Head dims 64..128:
 * 64 query rows x 128 keys per CTA, as on Hopper; 192 and 256: each CTA takes
 * 128 keys (two ABI key blocks of 64) and one of two head-dim slices of dK,
 * dV, dQ (kernels/blackwell/attention_bwd_sm100.cuh; grid:
 * mgpu_attention_bwd_sm100_ctas). */
#define SM100_ATTENTION_BWD(dt, d, bn) \
    {GEN_ATTENTION_BWD_SM100, GEN_SM100A, dt, 384, .attention = {.head_dim = d, .block_m = 64, .block_n = bn, .stages = 2}}
#define SM100_ATTENTION_BWD_FAMILY(dt)                                                                            \
    SM100_ATTENTION_BWD(dt, 64, 128), SM100_ATTENTION_BWD(dt, 96, 128), SM100_ATTENTION_BWD(dt, 128, 128),      \
        SM100_ATTENTION_BWD(dt, 192, 64), SM100_ATTENTION_BWD(dt, 256, 64)

const struct gen_variant gen_variants[] = {
    PORTABLE_GEMM(GEN_SM90A),
    SM90_WS_FAMILY(GEN_F16, TN), SM90_WS_FAMILY(GEN_F16, NN), SM90_WS_FAMILY(GEN_F16, TT), SM90_WS_FAMILY(GEN_F16, NT),
    SM90_WS_FAMILY(GEN_BF16, TN), SM90_WS_FAMILY(GEN_BF16, NN), SM90_WS_FAMILY(GEN_BF16, TT),
    SM90_WS_FAMILY(GEN_BF16, NT),
    SM90_WS_FP8_FAMILY(GEN_E4M3, GEN_B_SAME), SM90_WS_FP8_FAMILY(GEN_E5M2, GEN_B_SAME),
    SM90_WS_FP8_FAMILY(GEN_E4M3, GEN_B_E5M2), SM90_WS_FP8_FAMILY(GEN_E5M2, GEN_B_E4M3),
    SM90_WS_FP8_128_CLUSTER,
    SM90_WS_NARROW(GEN_BF16), SM90_WS_NARROW(GEN_F16),
    GEMM_PACK(GEN_SM90A),
    SM90_SMALL_M_GEMM(GEN_BF16, 16), SM90_SMALL_M_GEMM(GEN_F16, 16),

    SM100_GEMM_FAMILY(GEN_F16, TN), SM100_GEMM_FAMILY(GEN_F16, NN), SM100_GEMM_FAMILY(GEN_F16, TT),
    SM100_GEMM_FAMILY(GEN_F16, NT), SM100_GEMM_FAMILY(GEN_BF16, TN), SM100_GEMM_FAMILY(GEN_BF16, NN),
    SM100_GEMM_FAMILY(GEN_BF16, TT), SM100_GEMM_FAMILY(GEN_BF16, NT),
    SM100_FP8_FAMILY(GEN_E4M3, GEN_B_SAME), SM100_FP8_FAMILY(GEN_E5M2, GEN_B_SAME),
    SM100_FP8_FAMILY(GEN_E4M3, GEN_B_E5M2), SM100_FP8_FAMILY(GEN_E5M2, GEN_B_E4M3),
    PORTABLE_GEMM(GEN_SM100A), GEMM_PACK(GEN_SM100A),

    PORTABLE_GATHER_FAMILY(GEN_SM90A),

    SM90_ATTENTION_FWD_FAMILY(GEN_BF16) SM90_ATTENTION_FWD_FAMILY(GEN_F16)

    ATTENTION_BWD_PREPOST(GEN_SM90A, GEN_BF16), ATTENTION_BWD_PREPOST(GEN_SM90A, GEN_F16),
    SM90_ATTENTION_BWD_FAMILY(GEN_BF16), SM90_ATTENTION_BWD_FAMILY(GEN_F16),

    BOTH_INDEX(GEN_GATHER4, GEN_SM100A, GEN_ANY_DTYPE, MGPU_GATHER4_THREADS),
    PORTABLE_GATHER_FAMILY(GEN_SM100A),

    SM100_ATTENTION_FWD_FAMILY(GEN_BF16) SM100_ATTENTION_FWD_FAMILY(GEN_F16)
    ATTENTION_BWD_PREPOST(GEN_SM100A, GEN_BF16), ATTENTION_BWD_PREPOST(GEN_SM100A, GEN_F16),
    SM100_ATTENTION_BWD_FAMILY(GEN_BF16), SM100_ATTENTION_BWD_FAMILY(GEN_F16),
    SM90_ATTENTION_FWD_COMBINE(GEN_BF16), SM90_ATTENTION_FWD_COMBINE(GEN_F16),
    {GEN_KV_CACHE_APPEND, GEN_SM90A, GEN_ANY_DTYPE, MGPU_KV_APPEND_THREADS, .helper = {8}},
    SM90_ATTENTION_FWD_FP8(GEN_BF16), SM90_ATTENTION_FWD_FP8(GEN_F16),
    /* the KV-cache append of 10.0 (the kernel of the sm_90a row above; last, so
     * that the units of the rows before it are unchanged) */
    {GEN_KV_CACHE_APPEND, GEN_SM100A, GEN_ANY_DTYPE, MGPU_KV_APPEND_THREADS, .helper = {8}},
    /* the decode entries of the sm_90a 16-bit forward (last: the units of the
     * rows before them are unchanged) */
    SM90_ATTENTION_FWD_DECODE_FAMILY(GEN_BF16) SM90_ATTENTION_FWD_DECODE_FAMILY(GEN_F16)
    /* fp8 forward with V^T from the workspace and its pre-pass (after the
     * rows above, whose units stay as they were) */
    SM90_ATTENTION_FWD_FP8_VT(GEN_BF16), SM90_ATTENTION_FWD_FP8_VT(GEN_F16),
    {GEN_ATTENTION_FWD_FP8_TRANSPOSE_V_SM90, GEN_SM90A, GEN_ANY_DTYPE, MGPU_ATTENTION_FWD_FP8_VT_THREADS,
     .helper = {16}},
    /* the 16-bit 192 x 128 GEMM rows (last: the units of the rows before
     * them are unchanged) */
    SM90_WS_192_FAMILY(GEN_F16), SM90_WS_192_FAMILY(GEN_BF16),
    /* the decode entry's 64-row variants (last: the units of the rows before
     * them are unchanged) */
    SM90_ATTENTION_FWD_DECODE64_FAMILY(GEN_BF16), SM90_ATTENTION_FWD_DECODE64_FAMILY(GEN_F16),
    /* the 16-bit 192 x 192 GEMM rows (last, likewise) */
    SM90_WS_WIDE_FAMILY(GEN_F16), SM90_WS_WIDE_FAMILY(GEN_BF16),
    /* the small-m kernel's tensor-map ring (last, likewise) */
    SM90_SMALL_M_TMA_FAMILY(GEN_BF16), SM90_SMALL_M_TMA_FAMILY(GEN_F16),
    /* the 16-bit rows of other wgmma N for whole waves (last, likewise) */
    SM90_WS_WAVE(GEN_F16, 224, 4), SM90_WS_WAVE(GEN_BF16, 224, 4),
    /* the wide 16-bit forward at head dim 64 (last, likewise) */
    SM90_ATTENTION_FWD_WIDE(GEN_BF16, 64), SM90_ATTENTION_FWD_WIDE(GEN_F16, 64),
};

const int gen_variant_count = (int)(sizeof gen_variants / sizeof gen_variants[0]);

const char *const gen_gemm_class_names[GEN_GEMM_CLASS_COUNT] = {
    [GEN_GEMM_ANY_SHAPE] = "ANY_SHAPE",
    [GEN_GEMM_TINY_M] = "TINY_M",
    [GEN_GEMM_SMALL_M] = "SMALL_M",
    [GEN_GEMM_LARGE] = "LARGE",
    [GEN_GEMM_LARGE_CLUSTER] = "LARGE_CLUSTER",
    [GEN_GEMM_DECODE] = "DECODE",
    [GEN_GEMM_LARGE_PINGPONG] = "LARGE_PINGPONG",
    [GEN_GEMM_LARGE_PINGPONG_CLUSTER] = "LARGE_PINGPONG_CLUSTER",
    [GEN_GEMM_LARGE_192] = "LARGE_192",
    [GEN_GEMM_LARGE_192_CLUSTER] = "LARGE_192_CLUSTER",
    [GEN_GEMM_WIDE_192] = "WIDE_192",
    [GEN_GEMM_WIDE_192_CLUSTER] = "WIDE_192_CLUSTER",
    [GEN_GEMM_WAVE] = "WAVE",
    [GEN_GEMM_WAVE_CLUSTER] = "WAVE_CLUSTER",
};

const char *gen_dtype_tag(enum gen_dtype d)
{
    switch (d) {
    case GEN_F16: return "f16";
    case GEN_BF16: return "bf16";
    case GEN_F32: return "f32";
    case GEN_E4M3: return "e4m3";
    case GEN_E5M2: return "e5m2";
    case GEN_ANY_DTYPE: return "any";
    }
    return "?";
}

enum gen_dtype gen_b_dtype(const struct gen_variant *v)
{
    return v->gemm.b_dtype == GEN_B_E4M3 ? GEN_E4M3 : v->gemm.b_dtype == GEN_B_E5M2 ? GEN_E5M2 : v->dtype;
}
