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
 * Fields (attention_sm100_expected.cuh): S = Q K^T: M 128, N block_n, both
 * K-major; O += P V: M 128, N head dim, B MN-major. Shared memory
 * descriptors: K-major for Q and K; MN-major for V with LBO the stride
 * between 64-element head-dim chunks, i.e. one dim block of the V tile,
 * block_n x 128 bytes: block_n 128 -> 16 KiB, 64 -> 8 KiB.
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

template <class T>
constexpr uint32_t idesc_qk(int block_n)
{
    return kM128 | kF32D | type_bits<T>() | n_field(block_n);
}

template <class T>
constexpr uint32_t idesc_pv(int head_dim)
{
    return kM128 | kF32D | type_bits<T>() | kBMNMajor | n_field(head_dim);
}

constexpr uint64_t v_desc_at0(int block_n)
{
    return block_n == 128 ? kMNMajor16KAt0 : block_n == 64 ? kMNMajor8KAt0 : 0;
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
