/*
 * Compile-time checks of every descriptor value the Blackwell attention
 * backward hands to tcgen05.mma, against constants computed by hand from the
 * PTX ISA's tables ("Tensor Core 5th Generation Family Instructions" ->
 * "Instruction descriptor" for .kind::f16 and "Shared Memory Descriptor"),
 * not with the encoders of tcgen05.cuh. attention_bwd_sm100.cuh's
 * configuration instantiates check_attention_bwd_descriptors<...>() in a
 * static_assert, so a wrong field breaks the build of that variant.
 *
 * The five MMAs of one query block (128 keys, block_m = 64 queries, head dim
 * d in {64, 96, 128, 192, 256}; n = the CTA's head-dim slice of dK, dV, dQ:
 * d up to 128, else 128 or d - 128):
 *   S^T  = K Q^T      M = 128 (keys), N = 64 (queries), K = d;
 *                     A = K, B = Q: shared memory, both K-major (one row per
 *                     key / query, the head dim contiguous).
 *   dP^T = V dO^T     the same shapes and layouts.
 *   dV  += P^T dO     M = 128 (keys), N = n, K = 64 (queries);
 *                     A = P^T in tensor memory (the [a-tmem] form: K-major by
 *                     definition, bit 15 = 0), B = dO in shared memory,
 *                     MN-major (one row per query, the head dim (N)
 *                     contiguous) -> bit 16 = 1.
 *   dK  += dS^T Q     the same shapes and layouts (A = dS^T in tensor memory).
 *   dQ^T = K^T dS^T   M = 128 (the slice, padded to 128), N = 64 (queries),
 *                     K = 128 (keys); A = K^T: the K tile read MN-major (the
 *                     head dim (M) contiguous) -> bit 15 = 1; B = dS^T: the
 *                     [key][query] buffer, queries (N) contiguous, MN-major
 *                     -> bit 16 = 1.
 *
 * Fields: attention_sm100_expected.cuh. The values:
 *   S^T, dP^T (N 64):         bf16 0x08100490, fp16 0x08100010
 *   dV, dK (N = n, B MN):     bf16 n 64 0x08110490, n 96 0x08190490, n 128 0x08210490
 *   dQ^T (N 64, A, B MN):     bf16 0x08118490, fp16 0x08118010
 *
 * Shared memory descriptors (128-byte swizzle, 1024-byte aligned tiles;
 * bits 46-48 = 0b001, bits 61-63 = 2):
 *   K-major (K, Q, V, dO in S^T, dP^T): LBO 16 B (field 1, unused), SBO 1024 B
 *                   (field 0x40) -> 0x4000404000010000 | start >> 4
 *   MN-major dO, Q (B of dV, dK): LBO = one 64-column block of the 64-row
 *                   tile, 64 x 128 B = 8 KiB (field 0x200), SBO 1024 B
 *                   -> 0x4000404002000000 | start >> 4
 *   MN-major K^T (A of dQ^T): LBO = one 64-column block of the 128-row K
 *                   tile, 16 KiB (field 0x400) -> 0x4000404004000000
 *   MN-major dS^T (B of dQ^T): N = 64 is one 128-byte row, so LBO is not
 *                   used; it is encoded as the buffer size, 16 KiB
 *                   -> 0x4000404004000000
 * Every K = 16 step of an MN-major operand is 16 rows of 128 bytes = 2048
 * bytes (two swizzle atoms); of a K-major one 32 bytes inside the row.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "blackwell/attention_sm100_expected.cuh"
#include "blackwell/tcgen05.cuh"

namespace mgpu {
namespace sm100 {

namespace attn_expected {

/* S^T = K Q^T and dP^T = V dO^T */
template <class T>
constexpr uint32_t idesc_st()
{
    return kM128 | kF32D | type_bits<T>() | n_field(64);
}

/* dV += P^T dO and dK += dS^T Q */
template <class T>
constexpr uint32_t idesc_kv(int head_dim)
{
    return kM128 | kF32D | type_bits<T>() | kBMNMajor | n_field(head_dim);
}

/* dQ^T = K^T dS^T */
template <class T>
constexpr uint32_t idesc_dqt()
{
    return kM128 | kF32D | type_bits<T>() | kAMNMajor | kBMNMajor | n_field(64);
}

} // namespace attn_expected

/* The checks of one backward configuration: the three instruction
 * descriptors and the four shared-memory descriptor forms (at address 0 and
 * at a non-zero address, which only changes the start field). kHeadDim: the
 * N of dV / dK, i.e. the width of a head-dim slice (the configuration checks
 * each width it has). */
template <class T, int kHeadDim, int kQBlockBytes, int kKVBlockBytes, int kDsBytes>
constexpr bool check_attention_bwd_descriptors()
{
    namespace ex = attn_expected;
    static_assert(kQBlockBytes == 8192 && kKVBlockBytes == 16384 && kDsBytes == 16384,
                  "the hand-computed LBOs assume 64-row Q / dO blocks, 128-row K / V blocks and a 128 x 64 dS^T");
    static_assert(make_idesc_f16_f32acc<T, 128, 64, true, true>() == ex::idesc_st<T>(),
                  "S^T / dP^T instruction descriptor differs from the PTX ISA table");
    static_assert(make_idesc_f16_f32acc<T, 128, kHeadDim, true, false>() == ex::idesc_kv<T>(kHeadDim),
                  "dV / dK instruction descriptor differs from the PTX ISA table");
    static_assert(make_idesc_f16_f32acc<T, 128, 64, false, false>() == ex::idesc_dqt<T>(),
                  "dQ^T instruction descriptor differs from the PTX ISA table");
    static_assert(make_smem_desc_kmajor_sw128(0) == ex::kKMajorAt0, "K / Q / V / dO K-major descriptor");
    static_assert(make_smem_desc_mnmajor_sw128(0, kQBlockBytes) == ex::kMNMajor8KAt0, "dO / Q MN-major descriptor");
    static_assert(make_smem_desc_mnmajor_sw128(0, kKVBlockBytes) == ex::kMNMajor16KAt0, "K^T MN-major descriptor");
    static_assert(make_smem_desc_mnmajor_sw128(0, kDsBytes) == ex::kMNMajor16KAt0, "dS^T MN-major descriptor");
    static_assert(make_smem_desc_mnmajor_sw128(0x1C800, kQBlockBytes) == (ex::kMNMajor8KAt0 | 0x1C80u),
                  "start address field (bits 0-13 = address >> 4)");
    return true;
}

/* Spot checks with every variable field non-zero. */
static_assert(attn_expected::idesc_st<__nv_bfloat16>() == 0x08100490u, "bf16 S^T descriptor");
static_assert(attn_expected::idesc_st<__half>() == 0x08100010u, "fp16 S^T descriptor");
static_assert(attn_expected::idesc_kv<__nv_bfloat16>(64) == 0x08110490u, "bf16 dV / dK, d 64");
static_assert(attn_expected::idesc_kv<__nv_bfloat16>(96) == 0x08190490u, "bf16 dV / dK, d 96");
static_assert(attn_expected::idesc_kv<__nv_bfloat16>(128) == 0x08210490u, "bf16 dV / dK, d 128");
static_assert(attn_expected::idesc_dqt<__nv_bfloat16>() == 0x08118490u, "bf16 dQ^T descriptor");
static_assert(attn_expected::idesc_dqt<__half>() == 0x08118010u, "fp16 dQ^T descriptor");
/* P^T / dS^T in tensor memory: two 16-bit elements per 32-bit column, so the
 * K = 16 slice kk (16 queries) starts 8 columns after slice kk - 1. */
static_assert(tmem_addr(0x40, 0, 3 * 8) == 0x58u, "P^T slice column advance");
static_assert(tmem_addr(0, 96, 0) == 0x00600000u, "lane field: warp 3 of a warpgroup reads lanes 96..127");

} // namespace sm100
} // namespace mgpu
