// kernel-mcp stand-in for <hip/hip_fp16.h> (offline device-only compiles): __half is clang's
// _Float16 and __half2 a 2-wide vector of it, so arithmetic on them is the hardware's (v_pk_*),
// as with HIP's own types; the conversion and arithmetic functions of HIP's header on top.
#pragma once
#include "../../kernel_mcp_hip_prelude.h"

typedef _Float16 __half;
typedef _Float16 __half2 __attribute__((ext_vector_type(2)));
typedef __half half;
typedef __half2 half2;
struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };

#define __KMCP_HD __host__ __device__ inline
__KMCP_HD float __half2float(__half v) { return (float)v; }
__KMCP_HD __half __float2half(float v) { return (__half)v; }
__KMCP_HD __half __float2half_rn(float v) { return (__half)v; }
__KMCP_HD __half __float2half_rz(float v) { return (__half)v; }
__KMCP_HD __half __double2half(double v) { return (__half)v; }
__KMCP_HD __half __int2half_rn(int v) { return (__half)v; }
__KMCP_HD int __half2int_rn(__half v) { return (int)__builtin_rintf((float)v); }
__KMCP_HD int __half2int_rz(__half v) { return (int)v; }
__KMCP_HD short __half_as_short(__half v) { return __builtin_bit_cast(short, v); }
__KMCP_HD unsigned short __half_as_ushort(__half v) { return __builtin_bit_cast(unsigned short, v); }
__KMCP_HD __half __short_as_half(short v) { return __builtin_bit_cast(__half, v); }
__KMCP_HD __half __ushort_as_half(unsigned short v) { return __builtin_bit_cast(__half, v); }
__KMCP_HD __half2 make_half2(__half x, __half y) { return __half2{x, y}; }
__KMCP_HD __half2 __halves2half2(__half x, __half y) { return __half2{x, y}; }
__KMCP_HD __half2 __half2half2(__half x) { return __half2{x, x}; }
__KMCP_HD __half2 __float2half2_rn(float x) { return __half2{(__half)x, (__half)x}; }
__KMCP_HD __half2 __floats2half2_rn(float x, float y) { return __half2{(__half)x, (__half)y}; }
__KMCP_HD __half2 __float22half2_rn(float2 v) { return __half2{(__half)v.x, (__half)v.y}; }
__KMCP_HD float2 __half22float2(__half2 v) { return float2{(float)v.x, (float)v.y}; }
__KMCP_HD __half __low2half(__half2 v) { return v.x; }
__KMCP_HD __half __high2half(__half2 v) { return v.y; }
__KMCP_HD float __low2float(__half2 v) { return (float)v.x; }
__KMCP_HD float __high2float(__half2 v) { return (float)v.y; }
__KMCP_HD __half2 __lows2half2(__half2 a, __half2 b) { return __half2{a.x, b.x}; }
__KMCP_HD __half2 __highs2half2(__half2 a, __half2 b) { return __half2{a.y, b.y}; }
__KMCP_HD __half2 __lowhigh2highlow(__half2 v) { return __half2{v.y, v.x}; }

__device__ inline __half __hadd(__half a, __half b) { return a + b; }
__device__ inline __half __hsub(__half a, __half b) { return a - b; }
__device__ inline __half __hmul(__half a, __half b) { return a * b; }
__device__ inline __half __hdiv(__half a, __half b) { return a / b; }
__device__ inline __half __hfma(__half a, __half b, __half c) { return __builtin_fmaf16(a, b, c); }
__device__ inline __half __hneg(__half a) { return -a; }
__device__ inline __half __habs(__half a) { return __builtin_fabsf16(a); }
__device__ inline __half __hmax(__half a, __half b) { return __builtin_fmaxf16(a, b); }
__device__ inline __half __hmin(__half a, __half b) { return __builtin_fminf16(a, b); }
__device__ inline bool __heq(__half a, __half b) { return a == b; }
__device__ inline bool __hne(__half a, __half b) { return a != b; }
__device__ inline bool __hlt(__half a, __half b) { return a < b; }
__device__ inline bool __hle(__half a, __half b) { return a <= b; }
__device__ inline bool __hgt(__half a, __half b) { return a > b; }
__device__ inline bool __hge(__half a, __half b) { return a >= b; }
__device__ inline bool __hisnan(__half a) { return a != a; }
__device__ inline bool __hisinf(__half a) { return __builtin_isinf((float)a); }
__device__ inline __half2 __hadd2(__half2 a, __half2 b) { return a + b; }
__device__ inline __half2 __hsub2(__half2 a, __half2 b) { return a - b; }
__device__ inline __half2 __hmul2(__half2 a, __half2 b) { return a * b; }
__device__ inline __half2 __h2div(__half2 a, __half2 b) { return a / b; }
__device__ inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __builtin_elementwise_fma(a, b, c); }
__device__ inline __half2 __hneg2(__half2 a) { return -a; }
__device__ inline __half2 __habs2(__half2 a) { return __builtin_elementwise_abs(a); }
__device__ inline __half2 __hmax2(__half2 a, __half2 b) { return __builtin_elementwise_max(a, b); }
__device__ inline __half2 __hmin2(__half2 a, __half2 b) { return __builtin_elementwise_min(a, b); }
__device__ inline __half hsqrt(__half a) { return __builtin_sqrtf16(a); }
__device__ inline __half hrsqrt(__half a) { return (__half)__builtin_amdgcn_rsqf((float)a); }
__device__ inline __half hrcp(__half a) { return (__half)__builtin_amdgcn_rcpf((float)a); }
__device__ inline __half hexp(__half a) { return __builtin_expf16(a); }
__device__ inline __half hexp2(__half a) { return __builtin_exp2f16(a); }
__device__ inline __half hlog(__half a) { return __builtin_logf16(a); }
__device__ inline __half hlog2(__half a) { return __builtin_log2f16(a); }
__device__ inline __half hsin(__half a) { return __builtin_sinf16(a); }
__device__ inline __half hcos(__half a) { return __builtin_cosf16(a); }
__device__ inline __half hfloor(__half a) { return __builtin_floorf16(a); }
__device__ inline __half hceil(__half a) { return __builtin_ceilf16(a); }
__device__ inline __half htrunc(__half a) { return __builtin_truncf16(a); }
__device__ inline __half2 h2sqrt(__half2 a) { return __builtin_elementwise_sqrt(a); }
__device__ inline __half2 h2exp(__half2 a) { return __builtin_elementwise_exp(a); }
__device__ inline __half2 h2log(__half2 a) { return __builtin_elementwise_log(a); }
