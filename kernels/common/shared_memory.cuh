/*
 * Shared-memory accesses by 32-bit address (what smem_u32 returns and what
 * swizzled-tile arithmetic produces), for staging tiles where a generic
 * pointer would cost an address conversion per access.
 */
#pragma once

#include <stdint.h>
#include <vector_types.h>

namespace mgpu {

__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v)
{
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}

/* Volatile like the others: the compiler keeps the load where it is written
 * (the paged gather's producer re-reads its loop constants from shared
 * memory where used rather than holding them in registers). */
__device__ __forceinline__ int ld_shared_s32(uint32_t addr)
{
    int v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

__device__ __forceinline__ void st_shared_u64(uint32_t addr, uint64_t v)
{
    asm volatile("st.shared.b64 [%0], %1;\n" ::"r"(addr), "l"(v) : "memory");
}

/* Two 64-bit words at a 16-byte aligned address; volatile, as ld_shared_s32. */
__device__ __forceinline__ ulonglong2 ld_shared_u64x2(uint32_t addr)
{
    ulonglong2 v;
    asm volatile("ld.shared.v2.b64 {%0, %1}, [%2];\n" : "=l"(v.x), "=l"(v.y) : "r"(addr) : "memory");
    return v;
}

__device__ __forceinline__ void st_shared_f32x2(uint32_t addr, float x, float y)
{
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(x), "f"(y) : "memory");
}

__device__ __forceinline__ void st_shared_f32x4(uint32_t addr, float x, float y, float z, float w)
{
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(x), "f"(y), "f"(z), "f"(w) : "memory");
}

__device__ __forceinline__ float2 ld_shared_f32x2(uint32_t addr)
{
    float2 v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
    return v;
}

/* stmatrix.m8n8.x4 (b16): four 8 x 8 matrices, register i of every lane
 * holding two consecutive elements of row lane / 4 of matrix i (columns
 * 2 (lane % 4), + 1: the wgmma accumulator fragment's pairs); lane 8 i + r
 * gives the address of row r of matrix i, 16 contiguous bytes. */
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}

__device__ __forceinline__ uint4 ld_shared_u128(uint32_t addr)
{
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(addr)
                 : "memory");
    return v;
}

} // namespace mgpu
