/*
 * Compile-time checks of every descriptor value the Blackwell GEMM hands to
 * tcgen05.mma, against constants computed by hand from the PTX ISA's bit
 * tables ("Tensor Core 5th Generation Family Instructions" -> "Shared Memory
 * Descriptor" and "Instruction descriptor" for .kind::f16), not with the
 * encoders of tcgen05.cuh. A kernel configuration instantiates
 * check_descriptors<...>() in a static_assert, so a wrong field breaks the
 * build of that variant.
 *
 * Instruction descriptor, .kind::f16, fp32 D, dense, no negation:
 *   D format F32      bits 4-5   = 1          -> 0x00000010
 *   A, B format BF16  bits 7-9, 10-12 = 1     -> 0x00000080 | 0x00000400
 *   (F16 is 0 in both fields)
 *   A MN-major        bit 15                  -> 0x00008000
 *   B MN-major        bit 16                  -> 0x00010000
 *   N >> 3            bits 17-22: 256 -> 32   -> 0x00400000;  128 -> 16 -> 0x00200000
 *   M >> 4            bits 24-28: 128 -> 8    -> 0x08000000;  256 -> 16 -> 0x10000000
 *
 * Instruction descriptor, .kind::f8f6f4 (same table, its own type codes),
 * fp32 D, dense, both operands K-major (no transpose bits):
 *   D format F32      bits 4-5   = 1          -> 0x00000010
 *   A format E5M2     bits 7-9   = 1          -> 0x00000080  (E4M3 = 0)
 *   B format E5M2     bits 10-12 = 1          -> 0x00000400  (E4M3 = 0)
 *   N, M as above; e.g. e4m3 x e4m3, M = 128, N = 256 -> 0x08400010, the
 *   same word as fp16 (the kind, not the descriptor, tells them apart).
 *
 * Shared memory descriptor, 128-byte swizzle (tile base 1024-byte aligned):
 *   start >> 4        bits 0-13
 *   LBO >> 4          bits 16-29: K-major 16 B -> 1 -> 0x0000000000010000
 *                                 MN-major 8 KB chunk stride -> 0x200 -> 0x0000000002000000
 *   SBO >> 4          bits 32-45: 1024 B -> 0x40 -> 0x0000004000000000
 *   version           bits 46-48 = 1       -> 0x0000400000000000
 *   base offset       bits 49-51 = 0;  LBO mode bit 52 = 0
 *   swizzle           bits 61-63 = 2 (128B) -> 0x4000000000000000
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <type_traits>

#include "blackwell/tcgen05.cuh"

namespace mgpu {
namespace sm100 {

namespace expected {

constexpr uint64_t kKMajorDescAt0 = 0x4000404000010000ull;  /* K-major, start 0 */
constexpr uint64_t kMNMajorDescAt0 = 0x4000404002000000ull; /* MN-major, 8 KB chunks, start 0 */

/* Instruction descriptor of .kind::f16 with fp32 D, both operands K-major. */
template <class T>
constexpr uint32_t idesc_kk(int m, int n)
{
    const bool bf16 = std::is_same_v<T, __nv_bfloat16>;
    if (m == 128 && n == 256)
        return bf16 ? 0x08400490u : 0x08400010u;
    if (m == 256 && n == 256)
        return bf16 ? 0x10400490u : 0x10400010u;
    if (m == 128 && n == 128)
        return bf16 ? 0x08200490u : 0x08200010u;
    if (m == 256 && n == 128)
        return bf16 ? 0x10200490u : 0x10200010u;
    return 0; /* no hand-computed value for this shape: the check fails */
}

/* Instruction descriptor of .kind::f8f6f4 with fp32 D, both operands
 * K-major; a5 / b5: the MMA's A / B operand is e5m2 (else e4m3). */
constexpr uint32_t idesc_f8f6f4(int m, int n, bool a5, bool b5)
{
    uint32_t shape = 0;
    if (m == 128 && n == 256)
        shape = 0x08400010u;
    else if (m == 256 && n == 256)
        shape = 0x10400010u;
    else if (m == 128 && n == 128)
        shape = 0x08200010u;
    else if (m == 256 && n == 128)
        shape = 0x10200010u;
    else
        return 0; /* no hand-computed value for this shape: the check fails */
    return shape | (a5 ? 0x00000080u : 0u) | (b5 ? 0x00000400u : 0u);
}

} // namespace expected

/* The checks for one GEMM configuration: its instruction descriptor (MMA A =
 * the B tile, MMA B = the A tile, as the kernel computes D^T) and the
 * shared-memory descriptors of its operand tiles, including the per-K-step
 * start-address advance staying inside the 14-bit start field. */
template <class T, bool kAKMajor, bool kBKMajor, int kMmaM, int kMmaN, int kCtaGroup>
constexpr bool check_descriptors()
{
    constexpr uint32_t want = expected::idesc_kk<T>(kMmaM, kMmaN) | (kBKMajor ? 0u : 0x00008000u) |
                              (kAKMajor ? 0u : 0x00010000u);
    static_assert(want != 0, "no hand-computed instruction descriptor for this MMA shape");
    static_assert(make_idesc_f16_f32acc<T, kMmaM, kMmaN, kBKMajor, kAKMajor, kCtaGroup>() == want,
                  "instruction descriptor differs from the PTX ISA table");
    return true;
}

/* The fp8 configuration's instruction descriptor: the MMA's A operand is
 * the GEMM's B tile (TB), its B operand the GEMM's A tile (TA). */
template <class TA, class TB, int kMmaM, int kMmaN, int kCtaGroup>
constexpr bool check_descriptors_fp8()
{
    constexpr uint32_t want =
        expected::idesc_f8f6f4(kMmaM, kMmaN, std::is_same_v<TB, __nv_fp8_e5m2>, std::is_same_v<TA, __nv_fp8_e5m2>);
    static_assert(want != 0, "no hand-computed instruction descriptor for this MMA shape");
    static_assert(make_idesc_f8f6f4_f32acc<TB, TA, kMmaM, kMmaN, kCtaGroup>() == want,
                  "kind::f8f6f4 instruction descriptor differs from the PTX ISA table");
    return true;
}

/* The checks of one GEMM configuration, for its operand types. */
template <class TA, class TB, bool kAKMajor, bool kBKMajor, int kMmaM, int kMmaN, int kCtaGroup>
constexpr bool check_gemm_descriptors()
{
    if constexpr (kIsFp8Sm100<TA>)
        return check_descriptors_fp8<TA, TB, kMmaM, kMmaN, kCtaGroup>();
    else
        return check_descriptors<TA, kAKMajor, kBKMajor, kMmaM, kMmaN, kCtaGroup>();
}

/* Shape-independent encodings, checked once. */
static_assert(make_smem_desc_kmajor_sw128(0) == expected::kKMajorDescAt0, "K-major SW128 descriptor");
static_assert(make_smem_desc_mnmajor_sw128(0, 8192) == expected::kMNMajorDescAt0, "MN-major SW128 descriptor");
/* start address 0x400 (field 0x40), and the third K = 16 step of a K-major
 * tile (+3 x 32 bytes = field + 6): the advance the MMA loop adds */
static_assert(make_smem_desc_kmajor_sw128(0x400) == (expected::kKMajorDescAt0 | 0x40), "start address field");
static_assert(make_smem_desc_kmajor_sw128(0x400 + 3 * 32) == make_smem_desc_kmajor_sw128(0x400) + 6,
              "K-major K-step advance = 32 bytes per K = 16");
static_assert(make_smem_desc_mnmajor_sw128(0x400 + 3 * 2048, 8192) == make_smem_desc_mnmajor_sw128(0x400, 8192) + 384,
              "MN-major K-step advance = 2048 bytes per K = 16");
/* every shared-memory address (< 228 KB) fits the 14-bit start field, so the
 * advance never carries into the LBO field */
static_assert(((232448u + 3 * 2048u) >> 4) < (1u << 14), "start address field overflow");
static_assert(k16_step_bytes<true>() == 32 && k16_step_bytes<false>() == 2048, "K = 16 slice offsets");
/* TMEM address: lane in bits 16-31, column in bits 0-15 */
static_assert(tmem_addr(0, 32, 5) == 0x00200005u && tmem_addr(0x100, 96, 0) == 0x00600100u, "TMEM address");
/* a sample of the instruction descriptor with every field non-zero:
 * bf16, M = 256, N = 256, A and B MN-major, cta_group::2 */
static_assert(make_idesc_f16_f32acc<__nv_bfloat16, 256, 256, false, false, 2>() == 0x10418490u,
              "instruction descriptor, all fields");

/* kind::f8f6f4 samples with every type field set: e5m2 x e5m2, M = 256,
 * N = 256 (0x10400010 | 0x80 | 0x400), and the mixed pairs at M = 128 */
static_assert(make_idesc_f8f6f4_f32acc<__nv_fp8_e5m2, __nv_fp8_e5m2, 256, 256, 2>() == 0x10400490u,
              "f8f6f4 instruction descriptor, e5m2 x e5m2");
static_assert(make_idesc_f8f6f4_f32acc<__nv_fp8_e5m2, __nv_fp8_e4m3, 128, 256, 1>() == 0x08400090u &&
                  make_idesc_f8f6f4_f32acc<__nv_fp8_e4m3, __nv_fp8_e5m2, 128, 256, 1>() == 0x08400410u,
              "f8f6f4 instruction descriptor, mixed pairs");
/* one K = 32 fp8 step is the same 32 bytes along a K-major row as one K = 16
 * 16-bit step: the start-address field advances by 2 */
static_assert(make_smem_desc_kmajor_sw128(0x400 + 32) == make_smem_desc_kmajor_sw128(0x400) + 2,
              "K-major K-step advance for fp8 (32 bytes per K = 32)");

} // namespace sm100
} // namespace mgpu
