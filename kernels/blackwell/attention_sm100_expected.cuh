/*
 * The hand-computed descriptor fields that the compile-time checks of the
 * sm_100a attention forward (attention_fwd_sm100_descriptors.cuh) and
 * backward (attention_bwd_sm100_descriptors.cuh) build their expected values
 * from: computed by hand from the PTX ISA's tables ("Tensor Core 5th
 * Generation Family Instructions" -> "Instruction descriptor" for
 * .kind::f16 and "Shared Memory Descriptor"), not with the encoders of
 * tcgen05.cuh.
 *
 * Instruction descriptor, .kind::f16, fp32 D, dense, no negation:
 *   D format F32        bits 4-5  = 1          -> 0x00000010
 *   A, B format BF16    bits 7-9, 10-12 = 1    -> 0x00000080 | 0x00000400 (F16: 0)
 *   A MN-major          bit 15                 -> 0x00008000
 *   B MN-major          bit 16                 -> 0x00010000
 *   N >> 3              bits 17-22:  64 ->  8 -> 0x00100000
 *                                    96 -> 12 -> 0x00180000
 *                                   128 -> 16 -> 0x00200000
 *                                   192 -> 24 -> 0x00300000
 *                                   256 -> 32 -> 0x00400000
 *   M >> 4              bits 24-28: 128 ->  8 -> 0x08000000
 *
 * Shared memory descriptors (128-byte swizzle, 1024-byte aligned tiles;
 * bits 46-48 = 0b001, bits 61-63 = 2; SBO 1024 B, field 0x40), at address 0:
 *   K-major:   LBO 16 B (field 1, unused)        -> 0x4000404000010000
 *   MN-major:  LBO 8 KiB (field 0x200)           -> 0x4000404002000000
 *              LBO 16 KiB (field 0x400)          -> 0x4000404004000000
 */
#pragma once

#include <cuda_bf16.h>
#include <stdint.h>
#include <type_traits>

namespace mgpu {
namespace sm100 {
namespace attn_expected {

constexpr uint32_t kM128 = 0x08000000u;
constexpr uint32_t kF32D = 0x00000010u;
constexpr uint32_t kBf16AB = 0x00000480u;
constexpr uint32_t kAMNMajor = 0x00008000u;
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

/* A, B format: bf16 or (0) fp16 */
template <class T>
constexpr uint32_t type_bits()
{
    return std::is_same_v<T, __nv_bfloat16> ? kBf16AB : 0u;
}

constexpr uint64_t kKMajorAt0 = 0x4000404000010000ull;
constexpr uint64_t kMNMajor8KAt0 = 0x4000404002000000ull;
constexpr uint64_t kMNMajor16KAt0 = 0x4000404004000000ull;

} // namespace attn_expected
} // namespace sm100
} // namespace mgpu
