/*
 * The kinds of kernel variants (see kinds.h): per kind its kernel header,
 * group, entry name, unit text and shared-memory function.
 */
#include "kinds.h"

#include "variants.h"

#include "../kernels/abi/attention_abi.h"
#include "../kernels/abi/attention_bwd_abi.h"
#include "../kernels/abi/attention_fwd_fp8_abi.h"
#include "../kernels/abi/gather_abi.h"
#include "../kernels/abi/gemm_abi.h"
#include "../kernels/abi/gemm_small_m_abi.h"

const char *const gen_family_names[GEN_FAMILY_COUNT] = {
    [GEN_FAMILY_GEMM] = "GEMM",
    [GEN_FAMILY_ATTENTION] = "ATTENTION",
    [GEN_FAMILY_GATHER] = "GATHER",
    [GEN_FAMILY_HELPER] = "HELPER",
};

/* ------------------------------------------------------------ shared memory
 * From the formulas of the ABI headers; each unit checks the kernel's own
 * count against the number written into it. */

static int no_smem(const struct gen_variant *v)
{
    (void)v;
    return 0;
}

/* The K extent of a stage is tile_k elements of A's type (16-bit or fp8). */
static int gemm_sm100_smem(const struct gen_variant *v)
{
    const int bytes = v->dtype == GEN_E4M3 || v->dtype == GEN_E5M2 ? 1 : 2;
    return mgpu_gemm_sm100_smem_bytes(v->gemm.tile_m, v->gemm.tile_n, v->gemm.tile_k * bytes, v->gemm.stages,
                                      v->gemm.cluster_m * v->gemm.cluster_n);
}

/* The K extent of a stage is tile_k elements of A's type (16-bit or fp8). */
static int gemm_sm90_smem(const struct gen_variant *v)
{
    const int bytes = v->dtype == GEN_E4M3 || v->dtype == GEN_E5M2 ? 1 : 2;
    return mgpu_gemm_sm90_smem_bytes(v->gemm.tile_m, v->gemm.tile_n, v->gemm.tile_k * bytes, v->gemm.stages);
}

static int gemm_small_m_tma_smem(const struct gen_variant *v)
{
    return mgpu_gemm_small_m_tma_smem_bytes(v->gemm.tile_m, v->gemm.tile_n, v->gemm.tile_k, v->gemm.stages);
}

static int gather4_smem(const struct gen_variant *v)
{
    (void)v;
    return MGPU_GATHER4_DYNAMIC_SMEM_BYTES;
}

/* Q double-buffered where that fits. */
static int attention_fwd_smem(const struct gen_variant *v)
{
    const struct gen_attention *a = &v->attention;
    const int q_stages = mgpu_attention_fwd_q_stages(a->block_m, a->block_n, a->head_dim, a->stages);
    return mgpu_attention_fwd_smem_bytes(a->block_m, a->block_n, a->head_dim, a->stages, q_stages);
}

static int attention_bwd_smem(const struct gen_variant *v)
{
    return mgpu_attention_bwd_smem_bytes(v->attention.head_dim);
}

/* The backward row's blocks must be those of the ABI's tile table. */
static const char *attention_bwd_check(const struct gen_variant *v)
{
    struct mgpu_attention_bwd_tile t;
    if (mgpu_attention_bwd_tile(v->attention.head_dim, &t) != 0 || t.block_m != v->attention.block_m ||
        t.block_n != v->attention.block_n || t.stages != v->attention.stages)
        return "tile differs from kernels/abi/attention_bwd_abi.h";
    return NULL;
}

/* sm_100a: no second Q buffer, the formula of the ABI's Blackwell paragraph. */
static int attention_fwd_sm100_smem(const struct gen_variant *v)
{
    const struct gen_attention *a = &v->attention;
    return mgpu_attention_fwd_sm100_smem_bytes(a->block_m, a->block_n, a->head_dim, a->stages);
}

/* The sm_100a forward row's tiles and threads must be the ABI's. */
static const char *attention_fwd_sm100_check(const struct gen_variant *v)
{
    const struct gen_attention *a = &v->attention;
    if (a->block_m != MGPU_ATTENTION_FWD_SM100_BLOCK_M(a->head_dim) ||
        a->block_n != MGPU_ATTENTION_FWD_SM100_BLOCK_N(a->head_dim) || a->stages != MGPU_ATTENTION_FWD_SM100_STAGES ||
        v->threads != MGPU_ATTENTION_FWD_SM100_THREADS(a->head_dim))
        return "tile or threads differ from kernels/abi/attention_abi.h (Blackwell)";
    return NULL;
}

/* fp8 forward: Q double-buffered (each buffer stages the 16-bit O), K, V and V^T rings. */
static int attention_fwd_fp8_smem(const struct gen_variant *v)
{
    const struct gen_attention *a = &v->attention;
    return mgpu_attention_fwd_fp8_smem_bytes(a->block_m, a->block_n, a->stages, MGPU_ATTENTION_FWD_FP8_Q_STAGES);
}

/* The fp8 forward's tile (and `stages`, which differ between the two kernels) as the ABI fixes it. */
static int attention_fwd_fp8_tile_ok(const struct gen_variant *v, int stages)
{
    const struct gen_attention *a = &v->attention;
    return a->head_dim == MGPU_ATTENTION_FWD_FP8_HEAD_DIM && a->block_m == MGPU_ATTENTION_FWD_BLOCK_M &&
           a->block_n == MGPU_ATTENTION_FWD_FP8_BLOCK_N && a->stages == stages &&
           v->threads == MGPU_ATTENTION_FWD_THREADS;
}

static const char *attention_fwd_fp8_check(const struct gen_variant *v)
{
    return attention_fwd_fp8_tile_ok(v, MGPU_ATTENTION_FWD_FP8_STAGES)
               ? NULL
               : "tile or threads differ from kernels/abi/attention_fwd_fp8_abi.h";
}

/* fp8 forward with V^T from the workspace: Q double-buffered, K and V^T rings. */
static int attention_fwd_fp8_vt_smem(const struct gen_variant *v)
{
    const struct gen_attention *a = &v->attention;
    return mgpu_attention_fwd_fp8_vt_smem_bytes(a->block_m, a->block_n, a->stages, MGPU_ATTENTION_FWD_FP8_Q_STAGES);
}

static const char *attention_fwd_fp8_vt_check(const struct gen_variant *v)
{
    return attention_fwd_fp8_tile_ok(v, MGPU_ATTENTION_FWD_FP8_VT_STAGES)
               ? NULL
               : "tile or threads differ from kernels/abi/attention_fwd_fp8_abi.h (V^T from the workspace)";
}

/* ------------------------------------------------------------ unit texts */

#define THREADS_CHECK "static_assert(Config@i@::kThreads == @threads@, \"@name@: threads differ from gen/variants.c\");\n"
/* The generated unit's check of its configuration's dynamic shared memory
 * against the variant's: equal, or at most (kernels that round up). */
#define SMEM_EQUAL_CHECK \
    "static_assert(Config@i@::kSmemBytes == @smem@, \"@name@: shared memory differs from gen/variants.c\");\n"
#define SMEM_MAX_CHECK \
    "static_assert(Config@i@::kSmemBytes <= @smem@, \"@name@: shared memory exceeds gen/variants.c\");\n"

/* The portable gather / scatter bodies of kernels/portable/gather_portable.cuh. */
#define PORTABLE_GATHER_UNIT(call)                                                                  \
    "\nstatic_assert(MGPU_GATHER_THREADS == @threads@, \"@name@: threads differ from gen/variants.c\");\n" \
    "extern \"C\" __global__ void __launch_bounds__(@threads@)\n"                                     \
    "@name@(const __grid_constant__ mgpu_gather_args args)\n"                                         \
    "{\n    mgpu::portable::" call "(args);\n}\n"

/* Attention backward's pre- and postprocess (kernels/hopper/attention_bwd_prepost.cuh:
 * architecture-neutral CUDA, one row per architecture in the group of that
 * architecture's main kernel). */
#define ATTENTION_BWD_PREPOST_KIND(kind_name, text, body, entry_name)                                   \
    {.name = kind_name, .doc = text, .family = GEN_FAMILY_HELPER, .header = "hopper/attention_bwd_prepost.cuh", \
     .group = "attention_bwd_@arch@", .entry = entry_name,                                                 \
     .unit = "\nstatic_assert(mgpu::attn_bwd::kThreads == @threads@, \"@name@: threads differ from "         \
             "gen/variants.c\");\n"                                                                          \
             "extern \"C\" __global__ void __launch_bounds__(@threads@)\n"                                     \
             "@name@(const __grid_constant__ mgpu_attention_bwd_args a)\n"                                    \
             "{\n    mgpu::attn_bwd::" body "<@type@>(a);\n}\n",                                               \
     .smem_bytes = no_smem}

/* The sm_90a 16-bit attention forward kinds (attention_fwd_sm90.cuh): one
 * configuration each, its threads and query rows checked against the ABI's. */
#define ATTENTION_FWD_SM90_KIND(kind_name, text, entry_name, config, abi)                                      \
    {.name = kind_name, .doc = text, .family = GEN_FAMILY_ATTENTION, .header = "hopper/attention_fwd_sm90.cuh", \
     .group = "attention_fwd_sm90", .entry = entry_name,                                                        \
     .unit = "\nusing Config@i@ = mgpu::sm90::" config "<@type@, @head_dim@>;\n"                               \
             "static_assert(Config@i@::kThreads == @threads@ && @threads@ == " abi "_THREADS, "                   \
             "\"@name@: threads differ from gen/variants.c\");\n"                                                \
             "static_assert(Config@i@::kBlockM == @block_m@ && @block_m@ == " abi "_BLOCK_M && "                 \
             "Config@i@::kBlockN == @block_n@ && Config@i@::kStages == @stages@, \"@name@: tiles differ from "    \
             "gen/variants.c\");\n"                                                                             \
             SMEM_EQUAL_CHECK                                                                                 \
             "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"                                    \
             "@name@(const __grid_constant__ mgpu_attention_fwd_params p)\n"                                      \
             "{\n    mgpu::sm90::attention_fwd<Config@i@>(p);\n}\n",                                              \
     .smem_bytes = attention_fwd_smem}

#define PORTABLE_GATHER_KIND(kind_name, text, body, targs, entry_name)                           \
    {.name = kind_name, .doc = text, .family = GEN_FAMILY_GATHER,                                   \
     .header = "portable/gather_portable.cuh", .group = "gather_@arch@", .entry = entry_name,        \
     .unit = PORTABLE_GATHER_UNIT(body "<" targs ">"), .smem_bytes = no_smem}

const struct gen_kind_info gen_kinds[GEN_KIND_COUNT] = {
    [GEN_GEMM_SM100_PERSISTENT] = {
        .name = "GEMM_SM100_PERSISTENT",
        .doc = "persistent sm_100a GEMM: tcgen05 (kind::f16, kind::f8f6f4), TMEM, CTA pairs, fused epilogue (A, B, C maps)",
        .family = GEN_FAMILY_GEMM,
        .header = "blackwell/gemm_sm100_persistent.cuh",
        .group = "gemm_sm100_ws",
        .entry = "mgpu_gemm_sm100_ws_@operands@_@layout@_@tile_m@x@tile_n@x@tile_k@_s@stages@_c@cluster@",
        .unit = "\nusing Config@i@ = mgpu::sm100::PersistentGemmConfig<@type@, @b_type@, @a_kmajor@, @b_kmajor@, @tile_m@, "
                "@tile_n@, @stages@, @cluster@>;\n"
                "static_assert(Config@i@::kBK == @tile_k@, \"@name@: tile_k differs from gen/variants.c\");\n"
                THREADS_CHECK
                SMEM_EQUAL_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,\n"
                "    const __grid_constant__ CUtensorMap tma_c, const __grid_constant__ mgpu_gemm_args args)\n"
                "{\n    mgpu::sm100::gemm_persistent<Config@i@>(&tma_a, &tma_b, &tma_c, args);\n}\n",
        .smem_bytes = gemm_sm100_smem,
    },
    [GEN_GEMM_PORTABLE] = {
        .name = "GEMM_PORTABLE",
        .doc = "GEMM of any alignment and any k, plain loads and FMA",
        .family = GEN_FAMILY_GEMM,
        .header = "portable/gemm_portable.cuh",
        .group = "gemm_portable_@arch@",
        .entry = "mgpu_gemm_portable_@arch@_@tile_m@x@tile_n@",
        .unit = "\nusing Config@i@ = mgpu::PortableGemmConfig<@tile_m@, @tile_n@, @tile_k@>;\n"
                THREADS_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ mgpu_gemm_args args)\n"
                "{\n    mgpu::gemm_portable<Config@i@>(args);\n}\n",
        .smem_bytes = no_smem,
    },
    [GEN_GATHER_NARROW] = PORTABLE_GATHER_KIND("GATHER_NARROW", "row gather, 16-byte aligned rows <= 512 B",
                                               "gather_narrow", "@index_type@", "mgpu_gather_narrow_@arch@_@index@"),
    [GEN_GATHER_WIDE] = PORTABLE_GATHER_KIND("GATHER_WIDE", "row gather, 16-byte aligned rows of any length",
                                             "gather_wide", "@index_type@", "mgpu_gather_wide_@arch@_@index@"),
    [GEN_GATHER_UNALIGNED] = PORTABLE_GATHER_KIND("GATHER_UNALIGNED", "row gather, any alignment", "gather_unaligned",
                                                  "@index_type@", "mgpu_gather_unaligned_@arch@_@index@"),
    [GEN_SCATTER_ADD] = PORTABLE_GATHER_KIND("SCATTER_ADD", "atomic row scatter-add", "scatter_add",
                                             "@index_type@, @type@", "mgpu_scatter_add_@arch@_@dtype@_@index@"),
    [GEN_SCATTER_ADD_SORTED] = PORTABLE_GATHER_KIND("SCATTER_ADD_SORTED",
                                                    "deterministic row scatter-add, sorted indices",
                                                    "scatter_add_sorted", "@index_type@, @type@",
                                                    "mgpu_scatter_add_sorted_@arch@_@dtype@_@index@"),
    [GEN_GATHER4] = {
        .name = "GATHER4",
        .doc = "sm_100a row gather through TMA tile::gather4",
        .family = GEN_FAMILY_GATHER,
        .header = "blackwell/gather_sm100.cuh",
        .group = "gather_@arch@",
        .entry = "mgpu_gather4_@arch@_@index@",
        .unit = "\nstatic_assert(MGPU_GATHER4_THREADS == @threads@, \"@name@: threads differ from gen/variants.c\");\n"
                "static_assert(MGPU_GATHER4_DYNAMIC_SMEM_BYTES == @smem@, \"@name@: shared memory differs from "
                "gen/variants.c\");\n"
                "extern \"C\" __global__ void __launch_bounds__(@threads@)\n"
                "@name@(const __grid_constant__ mgpu_gather4_args args)\n"
                "{\n    mgpu::sm100::gather4<@index_type@>(args);\n}\n",
        .smem_bytes = gather4_smem,
    },
    [GEN_GEMM_SM90_PERSISTENT] = {
        .name = "GEMM_SM90_PERSISTENT",
        .doc = "persistent warp-specialized sm_90a GEMM (A, B, C tensor maps)",
        .family = GEN_FAMILY_GEMM,
        .header = "hopper/gemm_sm90_persistent.cuh",
        .group = "gemm_sm90_ws",
        .entry = "mgpu_gemm_sm90_@schedule@_@operands@_@layout@_@tile_m@x@tile_n@x@tile_k@_s@stages@_c@cluster@",
        .unit = "\nusing Config@i@ = mgpu::sm90::PersistentGemmConfig<@type@, @b_type@, @a_kmajor@, @b_kmajor@, "
                "@tile_m@, @tile_n@, @stages@, @cluster_n@, @schedule_id@>;\n"
                "static_assert(Config@i@::kBK == @tile_k@, \"@name@: tile_k differs from gen/variants.c\");\n"
                THREADS_CHECK
                SMEM_MAX_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,\n"
                "    const __grid_constant__ CUtensorMap tma_c, const __grid_constant__ mgpu_gemm_args args)\n"
                "{\n    mgpu::sm90::gemm_persistent<Config@i@>(&tma_a, &tma_b, &tma_c, args);\n}\n",
        .smem_bytes = gemm_sm90_smem,
    },
    [GEN_GEMM_PACK] = {
        .name = "GEMM_PACK",
        .doc = "copies a GEMM operand TMA cannot read into an aligned workspace",
        .family = GEN_FAMILY_HELPER,
        .header = "portable/gemm_pack.cuh",
        .group = "gemm_portable_@arch@",
        .entry = "mgpu_gemm_pack_@arch@",
        .unit = "\nextern \"C\" __global__ void __launch_bounds__(@threads@)\n"
                "@name@(const __grid_constant__ mgpu_gemm_pack_args args)\n"
                "{\n    mgpu::gemm_pack<@threads@>(args);\n}\n",
        .smem_bytes = no_smem,
    },
    [GEN_ATTENTION_FWD_SM90] = ATTENTION_FWD_SM90_KIND(
        "ATTENTION_FWD_SM90", "flash attention forward, sm_90a (FA3-style: TMA producer, two wgmma consumers)",
        "mgpu_attention_fwd_sm90_@dtype@_d@head_dim@", "AttnFwdConfig", "MGPU_ATTENTION_FWD"),
    [GEN_ATTENTION_BWD_PRE] = ATTENTION_BWD_PREPOST_KIND(
        "ATTENTION_BWD_PRE", "attention backward: rowsum(dO * O), scratch zeroing; head dim at run time",
        "preprocess", "mgpu_attention_bwd_pre_@arch@_@dtype@"),
    [GEN_ATTENTION_BWD_POST] = ATTENTION_BWD_PREPOST_KIND(
        "ATTENTION_BWD_POST", "attention backward: dQ (and GQA dK / dV) to the caller's dtype", "postprocess",
        "mgpu_attention_bwd_post_@arch@_@dtype@"),
    [GEN_ATTENTION_BWD_SM90] = {
        .name = "ATTENTION_BWD_SM90",
        .doc = "attention backward main kernel, sm_90a (FA3-style: dK, dV per key block, dQ reductions)",
        .family = GEN_FAMILY_ATTENTION,
        .header = "hopper/attention_bwd_sm90.cuh",
        .group = "attention_bwd_sm90",
        .entry = "mgpu_attention_bwd_sm90_@dtype@_d@head_dim@",
        .unit = "\nusing Config@i@ = mgpu::sm90::AttnBwdConfig<@type@, @head_dim@>;\n"
                "static_assert(Config@i@::kThreads == @threads@ && @threads@ == MGPU_ATTENTION_BWD_THREADS, "
                "\"@name@: threads differ from gen/variants.c\");\n"
                "static_assert(Config@i@::kBlockM == @block_m@ && Config@i@::kBlockN == @block_n@, \"@name@: tiles "
                "differ from gen/variants.c\");\n"
                SMEM_MAX_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ mgpu_attention_bwd_params p)\n"
                "{\n    mgpu::sm90::attention_bwd<Config@i@>(p);\n}\n",
        .smem_bytes = attention_bwd_smem,
        .check = attention_bwd_check,
    },
    [GEN_ATTENTION_FWD_SM100] = {
        .name = "ATTENTION_FWD_SM100",
        .doc = "flash attention forward, sm_100a (FA4-style: TMA, MMA, softmax and correction warps; S, P, O in TMEM)",
        .family = GEN_FAMILY_ATTENTION,
        .header = "blackwell/attention_fwd_sm100.cuh",
        .group = "attention_fwd_sm100",
        .entry = "mgpu_attention_fwd_sm100_@dtype@_d@head_dim@",
        .unit = "\nusing Config@i@ = mgpu::sm100::AttnFwdSm100Config<@type@, @head_dim@>;\n"
                THREADS_CHECK
                "static_assert(Config@i@::kBlockM == @block_m@ && Config@i@::kBlockN == @block_n@ && "
                "Config@i@::kStages == @stages@, \"@name@: tiles differ from gen/variants.c\");\n"
                SMEM_EQUAL_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ mgpu_attention_fwd_params p)\n"
                "{\n    mgpu::sm100::attention_fwd<Config@i@>(p);\n}\n",
        .smem_bytes = attention_fwd_sm100_smem,
        .check = attention_fwd_sm100_check,
    },
    [GEN_GEMM_SMALL_M_SM90] = {
        .name = "GEMM_SMALL_M_SM90",
        .doc = "sm_90a GEMM for m <= tile_m (decode): B streamed into registers, mma.sync, split-K in one launch",
        .family = GEN_FAMILY_GEMM,
        .header = "hopper/gemm_sm90_small_m.cuh",
        .group = "gemm_small_m_sm90",
        .entry = "mgpu_gemm_small_m_sm90_@dtype@_@layout@_m@tile_m@",
        .unit = "\nusing Config@i@ = mgpu::sm90::SmallMGemmConfig<@type@, @tile_m@ / 8>;\n"
                THREADS_CHECK
                "static_assert(Config@i@::kMaxM == @tile_m@ && Config@i@::kCols == @tile_n@ && "
                "Config@i@::kStepK == @tile_k@, \"@name@: tile differs from gen/variants.c\");\n"
                "extern \"C\" __global__ void __launch_bounds__(@threads@, Config@i@::kMinBlocks)\n"
                "@name@(const __grid_constant__ mgpu_gemm_args args)\n"
                "{\n    mgpu::sm90::gemm_small_m<Config@i@>(args);\n}\n",
        .smem_bytes = no_smem,
    },
    [GEN_ATTENTION_FWD_COMBINE_SM90] = {
        .name = "ATTENTION_FWD_COMBINE_SM90",
        .doc = "attention forward: merges the key splits of a split call (O, LSE); head dim at run time",
        .family = GEN_FAMILY_HELPER,
        .header = "hopper/attention_fwd_combine.cuh",
        .group = "attention_fwd_sm90",
        .entry = "mgpu_attention_fwd_combine_sm90_@dtype@",
        .unit = "\nstatic_assert(mgpu::attn_fwd_combine::kThreads == @threads@ && @threads@ == "
                "MGPU_ATTENTION_FWD_COMBINE_THREADS, \"@name@: threads differ from gen/variants.c\");\n"
                "extern \"C\" __global__ void __launch_bounds__(@threads@)\n"
                "@name@(const __grid_constant__ mgpu_attention_fwd_args a)\n"
                "{\n    mgpu::attn_fwd_combine::combine<@type@>(a);\n}\n",
        .smem_bytes = no_smem,
    },
    [GEN_ATTENTION_FWD_FP8_SM90] = {
        .name = "ATTENTION_FWD_FP8_SM90",
        .doc = "flash attention forward, sm_90a, e4m3 Q / K / V with descales, 16-bit O (dtype: O's)",
        .family = GEN_FAMILY_ATTENTION,
        .header = "hopper/attention_fwd_fp8_sm90.cuh",
        .group = "attention_fwd_fp8_sm90",
        .entry = "mgpu_attention_fwd_fp8_sm90_e4m3_@dtype@_d@head_dim@",
        .unit = "\nusing Config@i@ = mgpu::sm90::AttnFwdFp8Config<@type@, @head_dim@>;\n"
                THREADS_CHECK
                "static_assert(Config@i@::kBlockM == @block_m@ && Config@i@::kBlockN == @block_n@ && "
                "Config@i@::kStages == @stages@, \"@name@: tiles differ from gen/variants.c\");\n"
                SMEM_MAX_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ mgpu_attention_fwd_params p)\n"
                "{\n    mgpu::sm90::attention_fwd_fp8<Config@i@>(p);\n}\n",
        .smem_bytes = attention_fwd_fp8_smem,
        .check = attention_fwd_fp8_check,
    },
    /* architecture-neutral CUDA: one row per architecture, in the group of
     * that architecture's forward kernel */
    [GEN_KV_CACHE_APPEND] = {
        .name = "KV_CACHE_APPEND",
        .doc = "writes new K / V rows into a (paged) KV cache; 16-bit elements, head dim at run time",
        .family = GEN_FAMILY_HELPER,
        .header = "hopper/attention_fwd_kv_append.cuh",
        .group = "attention_fwd_@arch@",
        .entry = "mgpu_kv_cache_append_@arch@",
        .unit = "\nstatic_assert(@threads@ == MGPU_KV_APPEND_THREADS, \"@name@: threads differ from "
                "gen/variants.c\");\n"
                "extern \"C\" __global__ void __launch_bounds__(@threads@)\n"
                "@name@(const __grid_constant__ mgpu_kv_cache_append_args a)\n"
                "{\n    mgpu::kv_append::append(a);\n}\n",
        .smem_bytes = no_smem,
    },
    [GEN_ATTENTION_BWD_SM100] = {
        .name = "ATTENTION_BWD_SM100",
        .doc = "attention backward main kernel, sm_100a (FA4-style: TMA, MMA, compute and dQ warps; S^T, dP^T, dV, dK, "
               "dQ^T in TMEM)",
        .family = GEN_FAMILY_ATTENTION,
        .header = "blackwell/attention_bwd_sm100.cuh",
        .group = "attention_bwd_sm100",
        .entry = "mgpu_attention_bwd_sm100_@dtype@_d@head_dim@",
        .unit = "\nusing Config@i@ = mgpu::sm100::AttnBwdSm100Config<@type@, @head_dim@>;\n"
                "static_assert(Config@i@::kThreads == @threads@ && @threads@ == MGPU_ATTENTION_BWD_THREADS, "
                "\"@name@: threads differ from gen/variants.c\");\n"
                "static_assert(Config@i@::kBlockM == @block_m@ && Config@i@::kAbiBlockN == @block_n@ && "
                "Config@i@::kAbiStages == @stages@, \"@name@: tiles differ from gen/variants.c\");\n"
                SMEM_MAX_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ mgpu_attention_bwd_params p)\n"
                "{\n    mgpu::sm100::attention_bwd<Config@i@>(p);\n}\n",
        .smem_bytes = attention_bwd_smem,
        .check = attention_bwd_check,
    },
    /* the 16-bit forward's configuration (its tiles, threads and shared
     * memory), one work tile per CTA from blockIdx: decode calls */
    [GEN_ATTENTION_FWD_DECODE_SM90] = {
        .name = "ATTENTION_FWD_DECODE_SM90",
        .doc = "flash attention forward, sm_90a, decode entry: one query tile per (sequence, head), grid (splits, "
               "heads, batch)",
        .family = GEN_FAMILY_ATTENTION,
        .header = "hopper/attention_fwd_decode_sm90.cuh",
        .group = "attention_fwd_decode_sm90",
        .entry = "mgpu_attention_fwd_decode_sm90_@dtype@_d@head_dim@",
        .unit = "\nusing Config@i@ = mgpu::sm90::AttnFwdConfig<@type@, @head_dim@>;\n"
                "static_assert(Config@i@::kThreads == @threads@ && @threads@ == MGPU_ATTENTION_FWD_THREADS, "
                "\"@name@: threads differ from gen/variants.c\");\n"
                "static_assert(Config@i@::kBlockM == @block_m@ && @block_m@ == MGPU_ATTENTION_FWD_BLOCK_M && "
                "Config@i@::kBlockN == @block_n@ && Config@i@::kStages == @stages@, \"@name@: tiles differ from "
                "gen/variants.c\");\n"
                SMEM_EQUAL_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ mgpu_attention_fwd_params p)\n"
                "{\n    mgpu::sm90::attention_fwd_decode<Config@i@>(p);\n}\n",
        .smem_bytes = attention_fwd_smem,
    },
    /* the decode entry with one consumer warpgroup and 64 query rows (its
     * configuration's threads, launch bounds and shared memory) */
    [GEN_ATTENTION_FWD_DECODE64_SM90] = {
        .name = "ATTENTION_FWD_DECODE64_SM90",
        .doc = "flash attention forward, sm_90a, decode entry with 64 query rows and one consumer warpgroup: "
               "one query tile per (sequence, head), grid (splits, heads, batch)",
        .family = GEN_FAMILY_ATTENTION,
        .header = "hopper/attention_fwd_decode_sm90.cuh",
        .group = "attention_fwd_decode_sm90",
        .entry = "mgpu_attention_fwd_decode64_sm90_@dtype@_d@head_dim@_n@block_n@",
        .unit = "\nusing Config@i@ = mgpu::sm90::AttnFwdDecode64Config<@type@, @head_dim@, @block_n@>;\n"
                THREADS_CHECK
                "static_assert(Config@i@::kBlockM == @block_m@ && Config@i@::kBlockN == @block_n@ && "
                "Config@i@::kStages == @stages@, \"@name@: tiles differ from gen/variants.c\");\n"
                SMEM_EQUAL_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, Config@i@::kMinBlocks)\n"
                "@name@(const __grid_constant__ mgpu_attention_fwd_params p)\n"
                "{\n    mgpu::sm90::attention_fwd_decode<Config@i@>(p);\n}\n",
        .smem_bytes = attention_fwd_smem,
    },
    [GEN_GEMM_SMALL_M_TMA_SM90] = {
        .name = "GEMM_SMALL_M_TMA_SM90",
        .doc = "sm_90a GEMM for m <= tile_m (decode): B and A through a shared-memory ring of tensor-map copies "
               "(one producer warp), mma.sync, split-K in one launch",
        .family = GEN_FAMILY_GEMM,
        .header = "hopper/gemm_sm90_small_m_tma.cuh",
        .group = "gemm_small_m_sm90",
        .entry = "mgpu_gemm_small_m_tma_sm90_@dtype@_@layout@_m@tile_m@_n@tile_n@_k@tile_k@_s@stages@",
        .unit = "\nusing Config@i@ = mgpu::sm90::SmallMTmaGemmConfig<@type@, @tile_m@ / 8, @tile_n@ / 16, @tile_k@, "
                "@stages@>;\n"
                THREADS_CHECK
                "static_assert(Config@i@::kMaxM == @tile_m@ && Config@i@::kCols == @tile_n@ && "
                "Config@i@::kStageK == @tile_k@, \"@name@: tile differs from gen/variants.c\");\n"
                SMEM_EQUAL_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, Config@i@::kMinBlocks)\n"
                "@name@(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,\n"
                "       const __grid_constant__ mgpu_gemm_args args)\n"
                "{\n    mgpu::sm90::gemm_small_m_tma<Config@i@>(&map_a, &map_b, args);\n}\n",
        .smem_bytes = gemm_small_m_tma_smem,
    },
    /* the forward with three consumer warpgroups and 192 query rows (its
     * configuration's threads and shared memory), prefill calls */
    [GEN_ATTENTION_FWD_WIDE_SM90] = ATTENTION_FWD_SM90_KIND(
        "ATTENTION_FWD_WIDE_SM90",
        "flash attention forward, sm_90a, 192 query rows and three consumer warpgroups: calls without the "
        "inference features",
        "mgpu_attention_fwd_wide_sm90_@dtype@_d@head_dim@", "AttnFwdWideConfig", "MGPU_ATTENTION_FWD_WIDE"),
    [GEN_ATTENTION_FWD_FP8_VT_SM90] = {
        .name = "ATTENTION_FWD_FP8_VT_SM90",
        .doc = "flash attention forward, sm_90a, e4m3 Q / K / V with descales, V^T from the workspace (written by "
               "ATTENTION_FWD_FP8_TRANSPOSE_V_SM90), 16-bit O (dtype: O's)",
        .family = GEN_FAMILY_ATTENTION,
        .header = "hopper/attention_fwd_fp8_sm90.cuh",
        .group = "attention_fwd_fp8_sm90",
        .entry = "mgpu_attention_fwd_fp8_vt_sm90_e4m3_@dtype@_d@head_dim@",
        .unit = "\nusing Config@i@ = mgpu::sm90::AttnFwdFp8Config<@type@, @head_dim@, true>;\n"
                THREADS_CHECK
                "static_assert(Config@i@::kBlockM == @block_m@ && Config@i@::kBlockN == @block_n@ && "
                "Config@i@::kStages == @stages@, \"@name@: tiles differ from gen/variants.c\");\n"
                SMEM_MAX_CHECK
                "extern \"C\" __global__ void __launch_bounds__(@threads@, 1)\n"
                "@name@(const __grid_constant__ mgpu_attention_fwd_params p)\n"
                "{\n    mgpu::sm90::attention_fwd_fp8<Config@i@>(p);\n}\n",
        .smem_bytes = attention_fwd_fp8_vt_smem,
        .check = attention_fwd_fp8_vt_check,
    },
    [GEN_ATTENTION_FWD_FP8_TRANSPOSE_V_SM90] = {
        .name = "ATTENTION_FWD_FP8_TRANSPOSE_V_SM90",
        .doc = "fp8 attention forward: writes V^T (e4m3, keys permuted) into the workspace for "
               "ATTENTION_FWD_FP8_VT_SM90",
        .family = GEN_FAMILY_HELPER,
        .header = "hopper/attention_fwd_fp8_transpose_v.cuh",
        .group = "attention_fwd_fp8_sm90",
        .entry = "mgpu_attention_fwd_fp8_transpose_v_sm90",
        .unit = "\nstatic_assert(mgpu::attn_fp8_vt::kThreads == @threads@, \"@name@: threads differ from "
                "gen/variants.c\");\n"
                "extern \"C\" __global__ void __launch_bounds__(@threads@)\n"
                "@name@(const __grid_constant__ mgpu_attention_fwd_fp8_vt_args a)\n"
                "{\n    mgpu::attn_fp8_vt::transpose_v(a);\n}\n",
        .smem_bytes = no_smem,
    },
};
