/*
 * Compile-time checks of every descriptor value the Blackwell attention
 * forward hands to tcgen05.mma, against constants computed by hand from the
 * PTX ISA's tables ("Tensor Core 5th Generation Family Instructions" ->
 * "Instruction descriptor" for .kind::f16 and "Shared Memory Descriptor"),
 * not with the encoders of tcgen05.cuh. Each configuration of
 * attention_fwd_sm100.cuh instantiates check_attention_descriptors<...>() in
 * a static_assert, so a wrong field breaks the build of that variant.
 *
 * The two MMAs of a key block, per 128-row Q tile:
 *   S = Q K^T   M = 128 (query rows), N = block_n (keys), K = head dim;
 *               A = Q (shared memory, K-major), B = K (shared memory, K-major:
 *               one key per row, the head dim contiguous);
 *   O += P V    M = 128, N = head dim, K = block_n (keys);
 *               A = P (tensor memory, the [a-tmem] form: A is K-major by
 *               definition, bit 15 = 0), B = V (shared memory, MN-major:
 *               one key per row, the head dim (N) contiguous) -> bit 16 = 1.
 *
 * Instruction descriptor, .kind::f16, fp32 D, dense, no negation:
 *   D format F32        bits 4-5  = 1          -> 0x00000010
 *   A, B format BF16    bits 7-9, 10-12 = 1    -> 0x00000080 | 0x00000400 (F16: 0)
 *   B MN-major          bit 16                 -> 0x00010000
 *   N >> 3              bits 17-22:  64 ->  8 -> 0x00100000
 *                                    96 -> 12 -> 0x00180000
 *                                   128 -> 16 -> 0x00200000
 *                                   192 -> 24 -> 0x00300000
 *                                   256 -> 32 -> 0x00400000
 *   M >> 4              bits 24-28: 128 ->  8 -> 0x08000000
 *
 * Shared memory descriptors (128-byte swizzle, 1024-byte aligned tiles):
 *   K-major (Q, K): LBO 16 B (field 1, unused), SBO 1024 B (field 0x40)
 *                   -> 0x4000404000010000 | start >> 4
 *   MN-major (V):   LBO = the stride between 64-element head-dim chunks, i.e.
 *                   one dim block of the V tile, block_n x 128 bytes:
 *                   block_n 128 -> 16 KiB (field 0x400), 64 -> 8 KiB (0x200);
 *                   SBO 1024 B -> 0x4000404004000000 / 0x4000404002000000
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <type_traits>

#include "blackwell/tcgen05.cuh"

namespace mgpu {
namespace sm100 {

namespace attn_expected {

constexpr uint32_t kM128 = 0x08000000u;
constexpr uint32_t kF32D = 0x00000010u;
constexpr uint32_t kBf16AB = 0x00000480u;
constexpr uint32_t kBMNMajor = 0x00010000u;

constexpr uint32_t n_field(int n)
{
    return n == 64 ? 0x00100000u
           : n == 96 ? 0x00180000u
           : n == 128 ? 0x00200000u
           : n == 192 ? 0x00300000u
           : n == 256 ? 0x00400000u
                      : 0xFFFFFFFFu; /* no hand-computed value: the check fails */
}

template <class T>
constexpr uint32_t idesc_qk(int block_n)
{
    return kM128 | kF32D | (std::is_same_v<T, __nv_bfloat16> ? kBf16AB : 0u) | n_field(block_n);
}

template <class T>
constexpr uint32_t idesc_pv(int head_dim)
{
    return kM128 | kF32D | (std::is_same_v<T, __nv_bfloat16> ? kBf16AB : 0u) | kBMNMajor | n_field(head_dim);
}

constexpr uint64_t kKMajorAt0 = 0x4000404000010000ull;
constexpr uint64_t v_desc_at0(int block_n)
{
    return block_n == 128 ? 0x4000404004000000ull : block_n == 64 ? 0x4000404002000000ull : 0;
}

} // namespace attn_expected

/* The checks of one attention configuration: both instruction descriptors,
 * the K-major descriptor of Q / K and the MN-major one of V with its LBO. */
template <class T, int kBlockN, int kHeadDim, int kKVBlockBytes>
constexpr bool check_attention_descriptors()
{
    static_assert(make_idesc_f16_f32acc<T, 128, kBlockN, true, true>() == attn_expected::idesc_qk<T>(kBlockN),
                  "S = Q K^T instruction descriptor differs from the PTX ISA table");
    static_assert(make_idesc_f16_f32acc<T, 128, kHeadDim, true, false>() == attn_expected::idesc_pv<T>(kHeadDim),
                  "O += P V instruction descriptor differs from the PTX ISA table");
    static_assert(make_smem_desc_kmajor_sw128(0) == attn_expected::kKMajorAt0, "Q / K descriptor");
    static_assert(attn_expected::v_desc_at0(kBlockN) != 0, "no hand-computed V descriptor for this key block");
    static_assert(make_smem_desc_mnmajor_sw128(0, kKVBlockBytes) == attn_expected::v_desc_at0(kBlockN),
                  "V descriptor (LBO = one dim block of the V tile)");
    return true;
}

/* Spot checks with every variable field non-zero. */
static_assert(attn_expected::idesc_qk<__nv_bfloat16>(128) == 0x08200490u, "bf16 S descriptor, N = 128");
static_assert(attn_expected::idesc_pv<__half>(192) == 0x08310010u, "fp16 O descriptor, N = 192");
static_assert(make_idesc_f16_f32acc<__nv_bfloat16, 128, 96, true, false>() == 0x08190490u, "bf16 O, N = 96");
/* P in tensor memory: two 16-bit elements per 32-bit column, so the K = 16
 * slice kk of P starts 8 columns after slice kk - 1. */
static_assert(tmem_addr(0x40, 0, 3 * 8) == 0x58u, "P slice column advance");

} // namespace sm100
} // namespace mgpu
