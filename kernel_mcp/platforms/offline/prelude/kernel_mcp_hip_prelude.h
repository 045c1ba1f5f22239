// kernel-mcp device prelude: enough of the HIP kernel language for a device-only compile of
// ordinary HIP kernels with a plain clang (no ROCm, no HIP headers, no device libraries).
//
// It is force-included (-include) before the source when no HIP installation is found. It
// defines KERNEL_MCP_PRELUDE so portable headers can skip <hip/hip_runtime.h>. Host-side
// functions are only declared: a device-only compile parses host code but emits none of it.
// Built on clang's AMDGPU builtins and the HSA dispatch packet, as HIP's own headers are.
#pragma once
#define KERNEL_MCP_PRELUDE 1
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif

typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
typedef __INT8_TYPE__ int8_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __INT16_TYPE__ int16_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __UINTPTR_TYPE__ uintptr_t;

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
// dynamic LDS, sized at launch, as HIP's own headers spell it
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#define HIP_DYNAMIC_SHARED_ATTRIBUTE
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds_1_(max_threads) __attribute__((amdgpu_flat_work_group_size(1, max_threads)))
#define __launch_bounds_2_(max_threads, min_waves) \
  __attribute__((amdgpu_flat_work_group_size(1, max_threads), amdgpu_waves_per_eu(min_waves)))
#define __kmcp_pick3(_1, _2, name, ...) name
#define __launch_bounds__(...) __kmcp_pick3(__VA_ARGS__, __launch_bounds_2_, __launch_bounds_1_, _)(__VA_ARGS__)

// ---- thread and block coordinates -------------------------------------------------------
// The dispatch packet (hsa_kernel_dispatch_packet_t) holds the workgroup sizes at bytes 4/6/8
// and the grid sizes (in work-items) at bytes 12/16/20.
__device__ inline unsigned __kmcp_wg_size(int d) {
  const unsigned short* p = (const unsigned short*)__builtin_amdgcn_dispatch_ptr();
  return p[2 + d];
}
__device__ inline unsigned __kmcp_grid_size(int d) {
  const unsigned* p = (const unsigned*)__builtin_amdgcn_dispatch_ptr();
  return p[3 + d];
}
struct __kmcp_thread_idx {
  __device__ unsigned __get_x() const { return __builtin_amdgcn_workitem_id_x(); }
  __device__ unsigned __get_y() const { return __builtin_amdgcn_workitem_id_y(); }
  __device__ unsigned __get_z() const { return __builtin_amdgcn_workitem_id_z(); }
  __declspec(property(get = __get_x)) unsigned x;
  __declspec(property(get = __get_y)) unsigned y;
  __declspec(property(get = __get_z)) unsigned z;
};
struct __kmcp_block_idx {
  __device__ unsigned __get_x() const { return __builtin_amdgcn_workgroup_id_x(); }
  __device__ unsigned __get_y() const { return __builtin_amdgcn_workgroup_id_y(); }
  __device__ unsigned __get_z() const { return __builtin_amdgcn_workgroup_id_z(); }
  __declspec(property(get = __get_x)) unsigned x;
  __declspec(property(get = __get_y)) unsigned y;
  __declspec(property(get = __get_z)) unsigned z;
};
struct __kmcp_block_dim {
  __device__ unsigned __get_x() const { return __kmcp_wg_size(0); }
  __device__ unsigned __get_y() const { return __kmcp_wg_size(1); }
  __device__ unsigned __get_z() const { return __kmcp_wg_size(2); }
  __declspec(property(get = __get_x)) unsigned x;
  __declspec(property(get = __get_y)) unsigned y;
  __declspec(property(get = __get_z)) unsigned z;
};
struct __kmcp_grid_dim {
  __device__ unsigned __get_x() const { return (__kmcp_grid_size(0) + __kmcp_wg_size(0) - 1) / __kmcp_wg_size(0); }
  __device__ unsigned __get_y() const { return (__kmcp_grid_size(1) + __kmcp_wg_size(1) - 1) / __kmcp_wg_size(1); }
  __device__ unsigned __get_z() const { return (__kmcp_grid_size(2) + __kmcp_wg_size(2) - 1) / __kmcp_wg_size(2); }
  __declspec(property(get = __get_x)) unsigned x;
  __declspec(property(get = __get_y)) unsigned y;
  __declspec(property(get = __get_z)) unsigned z;
};
extern const __device__ __attribute__((weak)) __kmcp_thread_idx threadIdx;
extern const __device__ __attribute__((weak)) __kmcp_block_idx blockIdx;
extern const __device__ __attribute__((weak)) __kmcp_block_dim blockDim;
extern const __device__ __attribute__((weak)) __kmcp_grid_dim gridDim;
#define warpSize 64

struct dim3 {
  unsigned x, y, z;
  __host__ __device__ constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

// ---- synchronisation ----------------------------------------------------------------------
__device__ inline void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
__device__ inline void __threadfence_block() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup"); }
__device__ inline void __threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }

// ---- arithmetic ---------------------------------------------------------------------------
__device__ inline float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__device__ inline float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__device__ inline float fminf(float a, float b) { return __builtin_fminf(a, b); }
__device__ inline float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__device__ inline float fabsf(float a) { return __builtin_fabsf(a); }
__device__ inline float sqrtf(float a) { return __builtin_sqrtf(a); }
__device__ inline float rsqrtf(float a) { return __builtin_amdgcn_rsqf(a); }
__device__ inline float __expf(float a) { return __builtin_amdgcn_exp2f(a * 1.4426950408889634f); }
__device__ inline float expf(float a) { return __expf(a); }
__device__ inline float __frcp_rn(float a) { return __builtin_amdgcn_rcpf(a); }
template <class T> __host__ __device__ inline T min(T a, T b) { return a < b ? a : b; }
template <class T> __host__ __device__ inline T max(T a, T b) { return a > b ? a : b; }

// ---- 16-bit floating types ----------------------------------------------------------------
typedef _Float16 __half;
typedef __bf16 __hip_bfloat16;
typedef __bf16 hip_bfloat16;
struct __hip_bfloat162 { __bf16 x, y; };
struct __half2 { _Float16 x, y; };
__host__ __device__ inline float __bfloat162float(__bf16 v) { return (float)v; }
__host__ __device__ inline __bf16 __float2bfloat16(float v) { return (__bf16)v; }
__host__ __device__ inline __bf16 __float2bfloat16_rn(float v) { return (__bf16)v; }
__host__ __device__ inline float __half2float(_Float16 v) { return (float)v; }
__host__ __device__ inline _Float16 __float2half(float v) { return (_Float16)v; }
__host__ __device__ inline _Float16 __float2half_rn(float v) { return (_Float16)v; }
__host__ __device__ inline float __low2float(__hip_bfloat162 v) { return (float)v.x; }
__host__ __device__ inline float __high2float(__hip_bfloat162 v) { return (float)v.y; }

// ---- warp-level exchange (64-wide waves) --------------------------------------------------
__device__ inline int __shfl(int v, int src, int width = warpSize) {
  int self = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  int index = (src & (width - 1)) + (self & ~(width - 1));
  return __builtin_amdgcn_ds_bpermute(index << 2, v);
}
__device__ inline int __shfl_xor(int v, int mask, int width = warpSize) {
  int self = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  int index = self ^ mask;
  index = index >= ((self + width) & ~(width - 1)) ? self : index;
  return __builtin_amdgcn_ds_bpermute(index << 2, v);
}
__device__ inline int __shfl_down(int v, unsigned delta, int width = warpSize) {
  int self = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  int index = self + (int)delta;
  index = (index & (width - 1)) < (self & (width - 1)) ? self : index;
  return __builtin_amdgcn_ds_bpermute(index << 2, v);
}
__device__ inline float __shfl_xor(float v, int mask, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl_xor(__builtin_bit_cast(int, v), mask, width));
}
__device__ inline float __shfl_down(float v, unsigned delta, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl_down(__builtin_bit_cast(int, v), delta, width));
}
__device__ inline float __shfl(float v, int src, int width = warpSize) {
  return __builtin_bit_cast(float, __shfl(__builtin_bit_cast(int, v), src, width));
}

// ---- atomics ------------------------------------------------------------------------------
template <class T> __device__ inline T atomicAdd(T* p, T v) {
  return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
template <class T> __device__ inline T atomicMax(T* p, T v) {
  return __hip_atomic_fetch_max(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

// ---- host API: declarations only (device-only compile) ------------------------------------
typedef struct ihipStream_t* hipStream_t;
typedef struct ihipEvent_t* hipEvent_t;
typedef enum hipError_t { hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorUnknown = 999 } hipError_t;
typedef enum hipFuncAttribute { hipFuncAttributeMaxDynamicSharedMemorySize = 8 } hipFuncAttribute;
extern "C" __host__ hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shmem = 0, hipStream_t stream = 0);
extern "C" __host__ hipError_t __hipPopCallConfiguration(dim3* grid, dim3* block, size_t* shmem, hipStream_t* stream);
extern "C" __host__ hipError_t hipGetLastError(void);
extern "C" __host__ hipError_t hipPeekAtLastError(void);
extern "C" __host__ const char* hipGetErrorString(hipError_t error);
extern "C" __host__ hipError_t hipDeviceSynchronize(void);
extern "C" __host__ hipError_t hipFuncSetAttribute(const void* func, hipFuncAttribute attr, int value);
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) kernel<<<grid, block, shmem, stream>>>(__VA_ARGS__)
