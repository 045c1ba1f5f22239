// portable.h: lets one kernel source build with hipcc (ROCm), nvcc (CUDA,
// `nvcc -x cu`) and an offline device-only clang compile.
//
//   * HIP (hipcc / clang -x hip): includes the HIP runtime and bf16 headers,
//     unless KERNEL_MCP_PRELUDE is defined; an offline compile then supplies
//     the language basics through its own prelude, and the host launchers
//     below are left out (they need the runtime library, not the device).
//   * CUDA (nvcc -x cu): includes the CUDA runtime and bf16 headers and maps
//     the handful of hip* names the launchers use onto their cuda* twins.
//
// Kernels stay inside the common subset: threadIdx/blockIdx/blockDim/gridDim,
// __syncthreads, __shared__, __global__, __device__, __forceinline__,
// __launch_bounds__ and <<<grid, block, shmem, stream>>> launches.
#pragma once

#if defined(__HIPCC__) || defined(__HIP__)
#define KMCP_HIP 1
#if !defined(KERNEL_MCP_PRELUDE)
#include <hip/hip_runtime.h>
#include <hip/hip_bf16.h>
#endif
typedef __hip_bfloat16 bf16;
#define KMCP_WARP 64  // CDNA (gfx942, gfx950) runs 64-wide wavefronts
// Device facts the runtime's properties do not report (the launchers read the
// rest with hipGetDeviceProperties): a CDNA CU has 4 SIMDs of 16 lanes, so a
// 64-wide wave's instruction takes 4 cycles; the CU's LDS is
// maxSharedMemoryPerMultiProcessor (sharedMemPerMultiprocessor was the whole
// device's in some HIP releases); and __launch_bounds__'s second argument
// becomes amdgpu_waves_per_eu: minimum waves per SIMD, not blocks per CU.
#define KMCP_SCHEDULERS_PER_SM 4
#define KMCP_LANES_PER_SCHEDULER 16
#define KMCP_SMEM_PER_SM(props) ((props).maxSharedMemoryPerMultiProcessor)
#define KMCP_PER_SIMD_BOUNDS 1

#elif defined(__CUDACC__)
#define KMCP_CUDA 1
#include <cuda_runtime.h>
#include <cuda_bf16.h>
typedef __nv_bfloat16 bf16;
typedef cudaStream_t hipStream_t;
typedef cudaError_t hipError_t;
#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
typedef cudaDeviceProp hipDeviceProp_t;
#define hipGetLastError cudaGetLastError
#define hipGetDevice cudaGetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize \
  cudaFuncAttributeMaxDynamicSharedMemorySize
#define KMCP_WARP 32
// Device facts the runtime's properties do not report (the launchers read the
// rest with cudaGetDeviceProperties): an SM has 4 sub-partitions, each with
// one warp scheduler and, on the H100, 32 FP32 lanes (16 on sm_80); and
// __launch_bounds__'s second argument is minimum resident blocks per SM.
#define KMCP_SCHEDULERS_PER_SM 4
#define KMCP_LANES_PER_SCHEDULER 32
#define KMCP_SMEM_PER_SM(props) ((props).sharedMemPerMultiprocessor)
#define KMCP_PER_SIMD_BOUNDS 0

#else
#error "portable.h: compile with hipcc, clang -x hip, or nvcc -x cu"
#endif

// Host launchers are built everywhere except in the offline device-only pass.
#if !defined(KERNEL_MCP_PRELUDE)
#define KMCP_HOST_LAUNCHERS 1
#else
#define KMCP_HOST_LAUNCHERS 0
#endif

// True only while clang generates AMD GPU code (not on the host pass, not on
// NVIDIA): the place for __builtin_amdgcn_* calls.
#if defined(__AMDGCN__)
#define KMCP_AMD_DEVICE 1
#else
#define KMCP_AMD_DEVICE 0
#endif

// Scheduling hint for the AMDGPU backend: place `size` instructions of the
// classes in `mask` here (0x2 = VALU, 0x100 = DS read, 0x200 = DS write,
// 0x8 = MFMA, 0x20 = VMEM read). A no-op wherever it does not apply.
#if KMCP_AMD_DEVICE
#define KMCP_SCHED_GROUP_BARRIER(mask, size, id) \
  __builtin_amdgcn_sched_group_barrier((mask), (size), (id))
#else
#define KMCP_SCHED_GROUP_BARRIER(mask, size, id) ((void)0)
#endif

// Plain aggregates for vector loads and stores, so that no platform vector
// type is needed: the alignment lets the compilers emit 8/16-byte accesses.
struct alignas(16) kmcp_f4 { float x, y, z, w; };
struct alignas(8) kmcp_f2 { float x, y; };
struct alignas(8) kmcp_u2 { unsigned int x, y; };

// bf16 <-> fp32. A bf16 is the top half of an fp32, so widening is a shift;
// narrowing rounds to nearest even (NaN stays a quiet NaN).
__device__ __forceinline__ float kmcp_bits_to_f32(unsigned int bits32) {
#if defined(KMCP_CUDA)
  return __uint_as_float(bits32);
#else
  return __builtin_bit_cast(float, bits32);
#endif
}
__device__ __forceinline__ unsigned int kmcp_f32_to_bits(float f) {
#if defined(KMCP_CUDA)
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(unsigned int, f);
#endif
}
__device__ __forceinline__ unsigned short bf16_bits(bf16 v) {
  return *reinterpret_cast<const unsigned short*>(&v);
}
__device__ __forceinline__ float to_f32(bf16 v) {
  return kmcp_bits_to_f32(static_cast<unsigned int>(bf16_bits(v)) << 16);
}
// Widen the low / high bf16 of a packed pair.
__device__ __forceinline__ float lo_f32(unsigned int pair) {
  return kmcp_bits_to_f32(pair << 16);
}
__device__ __forceinline__ float hi_f32(unsigned int pair) {
  return kmcp_bits_to_f32(pair & 0xffff0000u);
}
__device__ __forceinline__ unsigned short to_bf16_bits(float f) {
#if defined(KMCP_CUDA)
  bf16 r = __float2bfloat16_rn(f);
  return bf16_bits(r);
#else
  unsigned int u = kmcp_f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<unsigned short>(u >> 16);
#endif
}
__device__ __forceinline__ bf16 to_bf16(float f) {
  unsigned short b = to_bf16_bits(f);
  return *reinterpret_cast<const bf16*>(&b);
}
// Two floats to a packed bf16 pair (first argument in the low half).
__device__ __forceinline__ unsigned int pack_bf16x2(float lo, float hi) {
  return static_cast<unsigned int>(to_bf16_bits(lo)) |
         (static_cast<unsigned int>(to_bf16_bits(hi)) << 16);
}

// Filter geometry shared by every step: 3 x 5 x 5, padding (1, 2, 2).
#define KMCP_KD 3
#define KMCP_KH 5
#define KMCP_KW 5
#define KMCP_TAPS 75
