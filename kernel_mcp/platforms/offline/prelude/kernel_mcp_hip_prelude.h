// kernel-mcp device prelude: enough of the HIP kernel language for a device-only compile of
// ordinary HIP kernels with a plain clang (no ROCm, no HIP headers, no device libraries).
//
// It is force-included (-include) before the source when no HIP installation is found. It
// defines KERNEL_MCP_PRELUDE so portable headers can skip <hip/hip_runtime.h>. Host-side
// functions are only declared: a device-only compile parses host code but emits none of it.
// Built on clang's AMDGPU builtins and the HSA dispatch packet, as HIP's own headers are.
//
// What HIP's <hip/hip_runtime.h> brings in comes with it, as there: the vector types, half and
// bfloat16, the math library (<cmath>, so INFINITY and expf need no include), warp functions
// and atomics. The compiler's own headers (<stddef.h>, <stdint.h>, <float.h>, <limits.h>) come
// from the clang's resource directory; this file does not need them, so that a bare
// `clang -include kernel_mcp_hip_prelude.h` still works.
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
typedef __INTPTR_TYPE__ intptr_t;
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
__device__ inline int __syncthreads_count(int pred) {
  __shared__ int __kmcp_count;
  if (__builtin_amdgcn_workitem_id_x() == 0 && __builtin_amdgcn_workitem_id_y() == 0 && __builtin_amdgcn_workitem_id_z() == 0) __kmcp_count = 0;
  __syncthreads();
  if (pred) __hip_atomic_fetch_add(&__kmcp_count, 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
  __syncthreads();
  return __kmcp_count;
}
__device__ inline int __syncthreads_or(int pred) { return __syncthreads_count(pred) != 0; }
__device__ inline int __syncthreads_and(int pred) { return __syncthreads_count(!pred) == 0; }
__device__ inline void __threadfence_block() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "workgroup"); }
__device__ inline void __threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
__device__ inline void __threadfence_system() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, ""); }
// a wavefront executes in lockstep: what __syncwarp orders is memory, and the compiler's code motion
__device__ inline void __syncwarp(unsigned long long mask = ~0ull) {
  (void)mask;
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}

// ---- min and max (HIP's overloads, and a template for the rest) ---------------------------
template <class T> __host__ __device__ inline T min(T a, T b) { return a < b ? a : b; }
template <class T> __host__ __device__ inline T max(T a, T b) { return a > b ? a : b; }
__host__ __device__ inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
__host__ __device__ inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
__host__ __device__ inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
__host__ __device__ inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
__host__ __device__ inline float min(float a, float b) { return __builtin_fminf(a, b); }
__host__ __device__ inline float max(float a, float b) { return __builtin_fmaxf(a, b); }
__host__ __device__ inline double min(double a, double b) { return __builtin_fmin(a, b); }
__host__ __device__ inline double max(double a, double b) { return __builtin_fmax(a, b); }

#include <hip/hip_vector_types.h>
#include <cmath>
#include <hip/hip_fp16.h>
#include <hip/hip_bf16.h>

// ---- integer intrinsics -------------------------------------------------------------------
__device__ inline int __popc(unsigned x) { return __builtin_popcount(x); }
__device__ inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
__device__ inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
__device__ inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
__device__ inline int __ffs(int x) { return __builtin_ffs(x); }
__device__ inline int __ffsll(long long x) { return __builtin_ffsll(x); }
__device__ inline unsigned __brev(unsigned x) { return __builtin_bitreverse32(x); }
__device__ inline unsigned long long __brevll(unsigned long long x) { return __builtin_bitreverse64(x); }
__device__ inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
__device__ inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
__device__ inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
__device__ inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
__device__ inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
__device__ inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
__device__ inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
__device__ inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  return (shift & 31) == 0 ? hi : __builtin_amdgcn_alignbit(hi, lo, 32 - (shift & 31));  // alignbit shifts by at most 31
}
__device__ inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) { return __builtin_amdgcn_alignbit(hi, lo, shift & 31); }
__device__ inline float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__device__ inline int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__device__ inline float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
__device__ inline unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
__device__ inline double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
__device__ inline long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
__device__ inline int __float2int_rn(float x) { return (int)__builtin_rintf(x); }
__device__ inline int __float2int_rz(float x) { return (int)x; }
__device__ inline int __float2int_rd(float x) { return (int)__builtin_floorf(x); }
__device__ inline int __float2int_ru(float x) { return (int)__builtin_ceilf(x); }
__device__ inline unsigned __float2uint_rn(float x) { return (unsigned)__builtin_rintf(x); }
__device__ inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
__device__ inline float __int2float_rn(int x) { return (float)x; }
__device__ inline float __uint2float_rn(unsigned x) { return (float)x; }
__device__ inline float __double2float_rn(double x) { return (float)x; }
template <class T> __device__ inline T __ldg(const T* p) { return *p; }
__device__ inline unsigned long long clock64() { return __builtin_readcyclecounter(); }
__device__ inline long long clock() { return (long long)__builtin_readcyclecounter(); }
__device__ inline unsigned long long wall_clock64() { return __builtin_amdgcn_s_memrealtime(); }

// ---- wavefront functions (64-wide waves) --------------------------------------------------
__device__ inline unsigned __lane_id() { return __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }
__device__ inline unsigned long long __ballot(int pred) { return __builtin_amdgcn_ballot_w64(pred != 0); }
__device__ inline unsigned long long __ballot64(int pred) { return __builtin_amdgcn_ballot_w64(pred != 0); }
__device__ inline unsigned long long __activemask() { return __builtin_amdgcn_ballot_w64(true); }
__device__ inline int __any(int pred) { return __builtin_amdgcn_ballot_w64(pred != 0) != 0; }
__device__ inline int __all(int pred) { return __builtin_amdgcn_ballot_w64(pred != 0) == __builtin_amdgcn_ballot_w64(true); }
__device__ inline unsigned long long __lanemask_lt() { return (1ull << __lane_id()) - 1; }

// Values move through ds_bpermute, 4 bytes a lane; a larger value moves word by word, a smaller
// one padded to a word (as HIP's own shuffles do).
template <class T> __device__ inline T __kmcp_bpermute(T v, int lane) {
  constexpr int words = (sizeof(T) + 3) / 4;
  int buf[words] = {};
  __builtin_memcpy(buf, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < words; ++i) buf[i] = __builtin_amdgcn_ds_bpermute(lane << 2, buf[i]);
  T out;
  __builtin_memcpy(&out, buf, sizeof(T));
  return out;
}
template <class T> __device__ inline T __shfl(T v, int src, int width = warpSize) {
  int self = (int)__lane_id();
  return __kmcp_bpermute(v, (src & (width - 1)) + (self & ~(width - 1)));
}
template <class T> __device__ inline T __shfl_xor(T v, int mask, int width = warpSize) {
  int self = (int)__lane_id();
  int index = self ^ mask;
  index = index >= ((self + width) & ~(width - 1)) ? self : index;
  return __kmcp_bpermute(v, index);
}
template <class T> __device__ inline T __shfl_down(T v, unsigned delta, int width = warpSize) {
  int self = (int)__lane_id();
  int index = self + (int)delta;
  index = (index & (width - 1)) < (self & (width - 1)) ? self : index;  // past the end of its segment
  return __kmcp_bpermute(v, index);
}
template <class T> __device__ inline T __shfl_up(T v, unsigned delta, int width = warpSize) {
  int self = (int)__lane_id();
  int index = self - (int)delta;
  index = index < (self & ~(width - 1)) ? self : index;
  return __kmcp_bpermute(v, index);
}
// the *_sync forms of ROCm 7: a 64-bit lane mask, as HIP insists (a 32-bit CUDA mask is an error)
#define __KMCP_MASK_CHECK(M) static_assert(__is_integral(M) && sizeof(M) == 8, "The mask must be a 64-bit integer (HIP's wavefronts are 64 lanes wide)")
template <class M, class T> __device__ inline T __shfl_sync(M mask, T v, int src, int width = warpSize) { __KMCP_MASK_CHECK(M); return __shfl(v, src, width); }
template <class M, class T> __device__ inline T __shfl_xor_sync(M mask, T v, int m, int width = warpSize) { __KMCP_MASK_CHECK(M); return __shfl_xor(v, m, width); }
template <class M, class T> __device__ inline T __shfl_down_sync(M mask, T v, unsigned d, int width = warpSize) { __KMCP_MASK_CHECK(M); return __shfl_down(v, d, width); }
template <class M, class T> __device__ inline T __shfl_up_sync(M mask, T v, unsigned d, int width = warpSize) { __KMCP_MASK_CHECK(M); return __shfl_up(v, d, width); }
template <class M> __device__ inline unsigned long long __ballot_sync(M mask, int pred) { __KMCP_MASK_CHECK(M); return __ballot(pred) & mask; }
template <class M> __device__ inline int __any_sync(M mask, int pred) { __KMCP_MASK_CHECK(M); return (__ballot(pred) & mask) != 0; }
template <class M> __device__ inline int __all_sync(M mask, int pred) { __KMCP_MASK_CHECK(M); return (__ballot(pred) & mask) == (__activemask() & mask); }

// ---- atomics (device scope unless the name says otherwise) --------------------------------
// The value's type follows the pointer's, so atomicAdd(&unsigned_counter, 1) converts the 1 as
// HIP's overloads do.
template <class T> struct __kmcp_same { typedef T type; };
#define __KMCP_ATOMIC(name, builtin, scope)                                                                  \
  template <class T> __device__ inline T name(T* p, typename __kmcp_same<T>::type v) {                        \
    return builtin(p, v, __ATOMIC_RELAXED, scope);                                                          \
  }
#define __KMCP_ATOMICS(suffix, scope)                                 \
  __KMCP_ATOMIC(atomicAdd##suffix, __hip_atomic_fetch_add, scope)     \
  __KMCP_ATOMIC(atomicMin##suffix, __hip_atomic_fetch_min, scope)     \
  __KMCP_ATOMIC(atomicMax##suffix, __hip_atomic_fetch_max, scope)     \
  __KMCP_ATOMIC(atomicAnd##suffix, __hip_atomic_fetch_and, scope)     \
  __KMCP_ATOMIC(atomicOr##suffix, __hip_atomic_fetch_or, scope)       \
  __KMCP_ATOMIC(atomicXor##suffix, __hip_atomic_fetch_xor, scope)     \
  __KMCP_ATOMIC(atomicExch##suffix, __hip_atomic_exchange, scope)     \
  template <class T> __device__ inline T atomicSub##suffix(T* p, typename __kmcp_same<T>::type v) { \
    return __hip_atomic_fetch_add(p, (T)-v, __ATOMIC_RELAXED, scope);                                \
  }                                                                                                 \
  template <class T> __device__ inline T atomicCAS##suffix(T* p, typename __kmcp_same<T>::type expected, typename __kmcp_same<T>::type desired) { \
    __hip_atomic_compare_exchange_strong(p, &expected, desired, __ATOMIC_RELAXED, __ATOMIC_RELAXED, scope);                                      \
    return expected;                                                                                                                             \
  }
__KMCP_ATOMICS(, __HIP_MEMORY_SCOPE_AGENT)
__KMCP_ATOMICS(_system, __HIP_MEMORY_SCOPE_SYSTEM)
__KMCP_ATOMICS(_block, __HIP_MEMORY_SCOPE_WORKGROUP)
template <class T> __device__ inline T unsafeAtomicAdd(T* p, typename __kmcp_same<T>::type v) { return atomicAdd(p, v); }
template <class T> __device__ inline T safeAtomicAdd(T* p, typename __kmcp_same<T>::type v) { return atomicAdd(p, v); }
__device__ inline unsigned atomicInc(unsigned* p, unsigned limit) { return __builtin_amdgcn_atomic_inc32(p, limit, __ATOMIC_RELAXED, "agent"); }
__device__ inline unsigned atomicDec(unsigned* p, unsigned limit) { return __builtin_amdgcn_atomic_dec32(p, limit, __ATOMIC_RELAXED, "agent"); }

// ---- host API: declarations only (device-only compile) ------------------------------------
typedef struct ihipStream_t* hipStream_t;
typedef struct ihipEvent_t* hipEvent_t;
typedef enum hipError_t { hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorOutOfMemory = 2, hipErrorUnknown = 999 } hipError_t;
typedef enum hipFuncAttribute { hipFuncAttributeMaxDynamicSharedMemorySize = 8 } hipFuncAttribute;
typedef enum hipMemcpyKind {
  hipMemcpyHostToHost = 0, hipMemcpyHostToDevice = 1, hipMemcpyDeviceToHost = 2, hipMemcpyDeviceToDevice = 3, hipMemcpyDefault = 4
} hipMemcpyKind;
extern "C" __host__ hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shmem = 0, hipStream_t stream = 0);
extern "C" __host__ hipError_t __hipPopCallConfiguration(dim3* grid, dim3* block, size_t* shmem, hipStream_t* stream);
extern "C" __host__ hipError_t hipGetLastError(void);
extern "C" __host__ hipError_t hipPeekAtLastError(void);
extern "C" __host__ const char* hipGetErrorString(hipError_t error);
extern "C" __host__ const char* hipGetErrorName(hipError_t error);
extern "C" __host__ hipError_t hipDeviceSynchronize(void);
extern "C" __host__ hipError_t hipDeviceReset(void);
extern "C" __host__ hipError_t hipSetDevice(int device);
extern "C" __host__ hipError_t hipGetDevice(int* device);
extern "C" __host__ hipError_t hipGetDeviceCount(int* count);
extern "C" __host__ hipError_t hipFuncSetAttribute(const void* func, hipFuncAttribute attr, int value);
extern "C" __host__ hipError_t hipMalloc(void** ptr, size_t size);
extern "C" __host__ hipError_t hipMallocManaged(void** ptr, size_t size, unsigned flags = 1);
extern "C" __host__ hipError_t hipHostMalloc(void** ptr, size_t size, unsigned flags = 0);
extern "C" __host__ hipError_t hipFree(void* ptr);
extern "C" __host__ hipError_t hipHostFree(void* ptr);
extern "C" __host__ hipError_t hipMemcpy(void* dst, const void* src, size_t size, hipMemcpyKind kind);
extern "C" __host__ hipError_t hipMemcpyAsync(void* dst, const void* src, size_t size, hipMemcpyKind kind, hipStream_t stream = 0);
extern "C" __host__ hipError_t hipMemset(void* dst, int value, size_t size);
extern "C" __host__ hipError_t hipMemsetAsync(void* dst, int value, size_t size, hipStream_t stream = 0);
extern "C" __host__ hipError_t hipStreamCreate(hipStream_t* stream);
extern "C" __host__ hipError_t hipStreamDestroy(hipStream_t stream);
extern "C" __host__ hipError_t hipStreamSynchronize(hipStream_t stream);
extern "C" __host__ hipError_t hipEventCreate(hipEvent_t* event);
extern "C" __host__ hipError_t hipEventDestroy(hipEvent_t event);
extern "C" __host__ hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream = 0);
extern "C" __host__ hipError_t hipEventSynchronize(hipEvent_t event);
extern "C" __host__ hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop);
template <class T> __host__ inline hipError_t hipMalloc(T** ptr, size_t size) { return hipMalloc((void**)ptr, size); }
template <class T> __host__ inline hipError_t hipMallocManaged(T** ptr, size_t size, unsigned flags = 1) { return hipMallocManaged((void**)ptr, size, flags); }
template <class T> __host__ inline hipError_t hipHostMalloc(T** ptr, size_t size, unsigned flags = 0) { return hipHostMalloc((void**)ptr, size, flags); }
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) kernel<<<grid, block, shmem, stream>>>(__VA_ARGS__)
