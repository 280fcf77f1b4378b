/*
 * The table of every kernel variant, and the few facts derived from a row
 * (its group, entry name and shared-memory size). Adding a kernel starts here.
 */
#include "variants.h"

#include <stdio.h>

#include "../kernels/abi/attention_abi.h"
#include "../kernels/abi/attention_bwd_abi.h"
#include "../kernels/abi/gather_abi.h"
#include "../kernels/abi/gemm_abi.h"

const struct gen_arch_info gen_archs[GEN_ARCH_COUNT] = {
    [GEN_SM90A] = {"sm90a", 9, 0},
    [GEN_SM100A] = {"sm100a", 10, 0},
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
 * tcgen05.mma.cta_group::2 (a 256 x 256 cluster tile), 1: lone CTAs
 * (M = 128, N = 256). 6 stages of 32 KB or 4 of 48 KB, plus 32 KB of
 * epilogue buffers, fill the 227 KB. */
#define SM100_GEMM(dt, st, cn, ...) \
    {GEN_GEMM_SM100_PERSISTENT, GEN_SM100A, dt, __VA_ARGS__, 256, 128, 64, st, 192, GEN_NO_INDEX, 1, cn, GEN_B_SAME}
#define SM100_GEMM_FAMILY(dt, ...) SM100_GEMM(dt, 6, 2, __VA_ARGS__), SM100_GEMM(dt, 4, 1, __VA_ARGS__)
#define PORTABLE_GEMM(arch) {GEN_GEMM_PORTABLE, arch, GEN_ANY_DTYPE, -1, -1, 64, 64, 16, 1, 256, GEN_NO_INDEX, 0, 0, GEN_B_SAME}

/* Persistent sm90 GEMM: tile_m x 128 tiles (tile_m is the wgmma N, 64..256), 384
 * threads, `st` stages, clusters of `cn` CTAs along N sharing (multicasting)
 * the A tile. The band width of the tile order is chosen per call
 * (src/select.c). The operand pack is a helper of the same launch path.
 * 64-row tiles serve small m (src/select.c says which). */
#define SM90_WS_GEMM(dt, tm, st, cn, ...) \
    {GEN_GEMM_SM90_PERSISTENT, GEN_SM90A, dt, __VA_ARGS__, tm, 128, 64, st, 384, GEN_NO_INDEX, 1, cn, GEN_B_SAME}
#define SM90_WS_FAMILY(dt, ...) \
    SM90_WS_GEMM(dt, 256, 4, 1, __VA_ARGS__), SM90_WS_GEMM(dt, 256, 4, 2, __VA_ARGS__), \
        SM90_WS_GEMM(dt, 128, 6, 1, __VA_ARGS__), SM90_WS_GEMM(dt, 64, 8, 1, __VA_ARGS__)
/* fp8 (A `da`, B `db`), TN only (fp8 wgmma reads K-major operands): tile_k is
 * 128 elements (one 128-byte swizzle row, as for 16-bit). Each consumer holds
 * two accumulator sets (two-level accumulation), so tile_m stops at 192 rather
 * than 256; 192 rows leave room for 4 stages, 128 rows for 6. The 192-row tile
 * also comes in 2-CTA clusters along N (each CTA loads 96 rows of the shared A
 * tile and multicasts them). */
#define SM90_WS_FP8(da, db, tm, st, cn) \
    {GEN_GEMM_SM90_PERSISTENT, GEN_SM90A, da, TN, tm, 128, 128, st, 384, GEN_NO_INDEX, 1, cn, db}
#define SM90_WS_FP8_FAMILY(da, db) \
    SM90_WS_FP8(da, db, 192, 4, 1), SM90_WS_FP8(da, db, 192, 4, 2), SM90_WS_FP8(da, db, 128, 6, 1)
/* Helpers' "tile" is the elements one thread handles: 8 16-bit elements (16
 * bytes) of a packed column. */
#define GEMM_HELPER(k, arch, per_thread) {k, arch, GEN_ANY_DTYPE, -1, -1, per_thread, 1, 1, 1, 256, GEN_NO_INDEX, 0, 0, GEN_B_SAME}

/* Gather and scatter-add: the kernels move bytes, so gathers take any dtype;
 * scatter-add is compiled per element type. Every kind comes with int32 and
 * int64 indices. The portable bodies are built for both architectures. */
#define GATHER_ROW(k, target, dt, idx, nthreads) \
    {.kind = k, .arch = target, .dtype = dt, .a_kmajor = -1, .b_kmajor = -1, .threads = nthreads, .index_type = idx}
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

/* Hopper attention forward: one variant per head dim of abi/attention_abi.h
 * (tile_k = head dim), with its key block (tile_n); 128 query rows, 2 stages
 * of K and V, 1 producer + 2 consumer warpgroups. The generated unit checks
 * every number against the kernel. */
#define SM90_ATTENTION_FWD(dt, head_dim)                                                                        \
    {.kind = GEN_ATTENTION_FWD_SM90, .arch = GEN_SM90A, .dtype = dt, .a_kmajor = -1, .b_kmajor = -1,          \
     .tile_m = MGPU_ATTENTION_FWD_BLOCK_M, .tile_n = MGPU_ATTENTION_FWD_BLOCK_N(head_dim), .tile_k = head_dim, \
     .stages = MGPU_ATTENTION_FWD_STAGES, .threads = MGPU_ATTENTION_FWD_THREADS, .index_type = GEN_NO_INDEX},
/* Every head dim's row, each with its trailing comma. */
#define SM90_ATTENTION_FWD_FAMILY(dt) MGPU_ATTENTION_FWD_HEAD_DIMS(SM90_ATTENTION_FWD, dt)

/* Attention backward's preprocess and postprocess: one of each per dtype (the
 * head dim is a run-time argument), 256 threads (the kernel checks it), no
 * shared memory. As for the GEMM helpers, the "tile" is the elements one
 * thread moves at a time: one 16-byte vector of 8 16-bit elements. */
#define ATTENTION_BWD_PREPOST_THREADS 256
#define ATTENTION_BWD_HELPER(k, dt)                                                                             \
    {.kind = k, .arch = GEN_SM90A, .dtype = dt, .a_kmajor = -1, .b_kmajor = -1, .tile_m = 8, .tile_n = 1,       \
     .tile_k = 1, .stages = 1, .threads = ATTENTION_BWD_PREPOST_THREADS, .index_type = GEN_NO_INDEX}
#define SM90_ATTENTION_BWD_PREPOST(dt) \
    ATTENTION_BWD_HELPER(GEN_ATTENTION_BWD_PRE_SM90, dt), ATTENTION_BWD_HELPER(GEN_ATTENTION_BWD_POST_SM90, dt)

/* Hopper attention backward main kernel: 64 query rows x tile_n keys per step
 * (kernels/abi/attention_bwd_abi.h's tile table, which the generator checks),
 * tile_k = head dim, 1 producer + 2 consumer warpgroups. */
#define SM90_ATTENTION_BWD(dt, head_dim, block_n)                                                                \
    {.kind = GEN_ATTENTION_BWD_SM90, .arch = GEN_SM90A, .dtype = dt, .a_kmajor = -1, .b_kmajor = -1,          \
     .tile_m = 64, .tile_n = block_n, .tile_k = head_dim, .stages = 2, .threads = 384, .index_type = GEN_NO_INDEX}
#define SM90_ATTENTION_BWD_FAMILY(dt)                                                                            \
    SM90_ATTENTION_BWD(dt, 64, 128), SM90_ATTENTION_BWD(dt, 96, 128), SM90_ATTENTION_BWD(dt, 128, 128),         \
        SM90_ATTENTION_BWD(dt, 192, 64), SM90_ATTENTION_BWD(dt, 256, 64)

const struct gen_variant gen_variants[] = {
    PORTABLE_GEMM(GEN_SM90A),
    SM90_WS_FAMILY(GEN_F16, TN), SM90_WS_FAMILY(GEN_F16, NN), SM90_WS_FAMILY(GEN_F16, TT), SM90_WS_FAMILY(GEN_F16, NT),
    SM90_WS_FAMILY(GEN_BF16, TN), SM90_WS_FAMILY(GEN_BF16, NN), SM90_WS_FAMILY(GEN_BF16, TT),
    SM90_WS_FAMILY(GEN_BF16, NT),
    SM90_WS_FP8_FAMILY(GEN_E4M3, GEN_B_SAME), SM90_WS_FP8_FAMILY(GEN_E5M2, GEN_B_SAME),
    SM90_WS_FP8_FAMILY(GEN_E4M3, GEN_B_E5M2), SM90_WS_FP8_FAMILY(GEN_E5M2, GEN_B_E4M3),
    GEMM_HELPER(GEN_GEMM_PACK, GEN_SM90A, 8),

    SM100_GEMM_FAMILY(GEN_F16, TN), SM100_GEMM_FAMILY(GEN_F16, NN), SM100_GEMM_FAMILY(GEN_F16, TT),
    SM100_GEMM_FAMILY(GEN_F16, NT), SM100_GEMM_FAMILY(GEN_BF16, TN), SM100_GEMM_FAMILY(GEN_BF16, NN),
    SM100_GEMM_FAMILY(GEN_BF16, TT), SM100_GEMM_FAMILY(GEN_BF16, NT),
    PORTABLE_GEMM(GEN_SM100A), GEMM_HELPER(GEN_GEMM_PACK, GEN_SM100A, 8),

    PORTABLE_GATHER_FAMILY(GEN_SM90A),

    SM90_ATTENTION_FWD_FAMILY(GEN_BF16) SM90_ATTENTION_FWD_FAMILY(GEN_F16)

    SM90_ATTENTION_BWD_PREPOST(GEN_BF16), SM90_ATTENTION_BWD_PREPOST(GEN_F16),
    SM90_ATTENTION_BWD_FAMILY(GEN_BF16), SM90_ATTENTION_BWD_FAMILY(GEN_F16),

    BOTH_INDEX(GEN_GATHER4, GEN_SM100A, GEN_ANY_DTYPE, MGPU_GATHER4_THREADS),
    PORTABLE_GATHER_FAMILY(GEN_SM100A),
};

const int gen_variant_count = (int)(sizeof gen_variants / sizeof gen_variants[0]);

const char *gen_group_name(const struct gen_variant *v)
{
    switch (v->kind) {
    case GEN_GEMM_SM100_PERSISTENT: return "gemm_sm100_ws";
    case GEN_GEMM_PORTABLE: return v->arch == GEN_SM90A ? "gemm_portable_sm90" : "gemm_portable_sm100";
    case GEN_GEMM_SM90_PERSISTENT: return "gemm_sm90_ws";
    case GEN_GEMM_PACK: return v->arch == GEN_SM90A ? "gemm_portable_sm90" : "gemm_portable_sm100";
    case GEN_GATHER_NARROW:
    case GEN_GATHER_WIDE:
    case GEN_GATHER_UNALIGNED:
    case GEN_SCATTER_ADD:
    case GEN_SCATTER_ADD_SORTED:
    case GEN_GATHER4: return v->arch == GEN_SM90A ? "gather_sm90" : "gather_sm100";
    case GEN_ATTENTION_FWD_SM90: return "attention_fwd_sm90";
    case GEN_ATTENTION_BWD_PRE_SM90:
    case GEN_ATTENTION_BWD_POST_SM90:
    case GEN_ATTENTION_BWD_SM90: return "attention_bwd_sm90";
    }
    return "?";
}

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
    return v->b_dtype == GEN_B_E4M3 ? GEN_E4M3 : v->b_dtype == GEN_B_E5M2 ? GEN_E5M2 : v->dtype;
}

void gen_operand_tag(const struct gen_variant *v, char *buf, unsigned size)
{
    if (gen_b_dtype(v) == v->dtype)
        snprintf(buf, size, "%s", gen_dtype_tag(v->dtype));
    else
        snprintf(buf, size, "%sx%s", gen_dtype_tag(v->dtype), gen_dtype_tag(gen_b_dtype(v)));
}

/* Bytes of one A / B element of a tensor-core GEMM row (16-bit or fp8). */
static int operand_bytes(const struct gen_variant *v)
{
    return v->dtype == GEN_E4M3 || v->dtype == GEN_E5M2 ? 1 : 2;
}

static const char *arch_tag(enum gen_arch a)
{
    return a == GEN_SM90A ? "sm90" : "sm100";
}

static const char *index_tag(enum gen_index i)
{
    return i == GEN_I64 ? "i64" : "i32";
}

/* cuBLAS letters for the layout: "tn" means transa = T, transb = N. */
static void layout_tag(const struct gen_variant *v, char out[3])
{
    out[0] = v->a_kmajor ? 't' : 'n';
    out[1] = v->b_kmajor ? 'n' : 't';
    out[2] = 0;
}

void gen_entry_name(const struct gen_variant *v, char *buf, unsigned size)
{
    char lt[3];
    switch (v->kind) {
    case GEN_GEMM_SM100_PERSISTENT:
        layout_tag(v, lt);
        snprintf(buf, size, "mgpu_gemm_sm100_ws_%s_%s_%dx%dx%d_s%d_c%d", gen_dtype_tag(v->dtype), lt, v->tile_m,
                 v->tile_n, v->tile_k, v->stages, v->cluster_m * v->cluster_n);
        return;
    case GEN_GEMM_PORTABLE:
        snprintf(buf, size, "mgpu_gemm_portable_%s_%dx%d", v->arch == GEN_SM90A ? "sm90" : "sm100",
                 v->tile_m, v->tile_n);
        return;
    case GEN_GATHER_NARROW:
    case GEN_GATHER_WIDE:
    case GEN_GATHER_UNALIGNED:
        snprintf(buf, size, "mgpu_gather_%s_%s_%s",
                 v->kind == GEN_GATHER_NARROW ? "narrow" : v->kind == GEN_GATHER_WIDE ? "wide" : "unaligned",
                 arch_tag(v->arch), index_tag(v->index_type));
        return;
    case GEN_SCATTER_ADD:
    case GEN_SCATTER_ADD_SORTED:
        snprintf(buf, size, "mgpu_scatter_add%s_%s_%s_%s", v->kind == GEN_SCATTER_ADD_SORTED ? "_sorted" : "",
                 arch_tag(v->arch), gen_dtype_tag(v->dtype), index_tag(v->index_type));
        return;
    case GEN_GATHER4:
        snprintf(buf, size, "mgpu_gather4_%s_%s", arch_tag(v->arch), index_tag(v->index_type));
        return;
    case GEN_GEMM_SM90_PERSISTENT: {
        char ot[16];
        layout_tag(v, lt);
        gen_operand_tag(v, ot, sizeof ot);
        snprintf(buf, size, "mgpu_gemm_sm90_ws_%s_%s_%dx%dx%d_s%d_c%d", ot, lt, v->tile_m, v->tile_n, v->tile_k,
                 v->stages, v->cluster_m * v->cluster_n);
        return;
    }
    case GEN_GEMM_PACK:
        snprintf(buf, size, "mgpu_gemm_pack_%s", arch_tag(v->arch));
        return;
    case GEN_ATTENTION_FWD_SM90:
        snprintf(buf, size, "mgpu_attention_fwd_sm90_%s_d%d", gen_dtype_tag(v->dtype), v->tile_k);
        return;
    case GEN_ATTENTION_BWD_PRE_SM90:
    case GEN_ATTENTION_BWD_POST_SM90:
        snprintf(buf, size, "mgpu_attention_bwd_%s_sm90_%s", v->kind == GEN_ATTENTION_BWD_PRE_SM90 ? "pre" : "post",
                 gen_dtype_tag(v->dtype));
        return;
    case GEN_ATTENTION_BWD_SM90:
        snprintf(buf, size, "mgpu_attention_bwd_sm90_%s_d%d", gen_dtype_tag(v->dtype), v->tile_k);
        return;
    }
    snprintf(buf, size, "?");
}

/* Attention forward: the formula of abi/attention_abi.h, with Q
 * double-buffered where that fits. */
static int attention_smem_bytes(const struct gen_variant *v)
{
    const int q_stages = mgpu_attention_fwd_q_stages(v->tile_m, v->tile_n, v->tile_k, v->stages);
    return mgpu_attention_fwd_smem_bytes(v->tile_m, v->tile_n, v->tile_k, v->stages, q_stages);
}

/* Dynamic shared memory of a variant, from the formulas of the ABI headers
 * (abi/gemm_abi.h, abi/attention_abi.h, abi/gather_abi.h). The kernel's own
 * count is checked against this at compile time. */
int gen_smem_bytes(const struct gen_variant *v)
{
    switch (v->kind) {
    case GEN_GEMM_SM100_PERSISTENT:
        return mgpu_gemm_sm100_smem_bytes(v->tile_m, v->tile_n, v->tile_k, v->stages, v->cluster_m * v->cluster_n);
    case GEN_GEMM_PORTABLE:
        return 0;
    case GEN_GATHER_NARROW:
    case GEN_GATHER_WIDE:
    case GEN_GATHER_UNALIGNED:
    case GEN_SCATTER_ADD:
    case GEN_SCATTER_ADD_SORTED:
        return 0;
    case GEN_GATHER4:
        return MGPU_GATHER4_DYNAMIC_SMEM_BYTES;
    case GEN_ATTENTION_FWD_SM90:
        return attention_smem_bytes(v);
    case GEN_ATTENTION_BWD_PRE_SM90:
    case GEN_ATTENTION_BWD_POST_SM90:
        return 0;
    case GEN_ATTENTION_BWD_SM90:
        return mgpu_attention_bwd_smem_bytes(v->tile_k);
    case GEN_GEMM_SM90_PERSISTENT:
        return mgpu_gemm_sm90_smem_bytes(v->tile_m, v->tile_n, v->tile_k * operand_bytes(v), v->stages);
    case GEN_GEMM_PACK:
        return 0;
    }
    return 0;
}
