// kernel-mcp stand-in for <hip/hip_bf16.h> (offline device-only compiles): __hip_bfloat16 is
// clang's __bf16 and __hip_bfloat162 a 2-wide vector of it, so conversions and arithmetic are
// the code clang makes for them on the target (gfx950 converts in hardware); HIP's conversion and
// arithmetic functions on top.
#pragma once
#include "../../kernel_mcp_hip_prelude.h"

typedef __bf16 __hip_bfloat16;
typedef __bf16 hip_bfloat16;
typedef __bf16 __hip_bfloat162 __attribute__((ext_vector_type(2)));
struct __hip_bfloat16_raw { unsigned short x; };
struct __hip_bfloat162_raw { unsigned short x, y; };

#define __KMCP_HD __host__ __device__ inline
__KMCP_HD float __bfloat162float(__bf16 v) { return (float)v; }
__KMCP_HD __bf16 __float2bfloat16(float v) { return (__bf16)v; }
__KMCP_HD __bf16 __float2bfloat16_rn(float v) { return (__bf16)v; }
__KMCP_HD __bf16 __double2bfloat16(double v) { return (__bf16)(float)v; }
__KMCP_HD unsigned short __bfloat16_as_ushort(__bf16 v) { return __builtin_bit_cast(unsigned short, v); }
__KMCP_HD short __bfloat16_as_short(__bf16 v) { return __builtin_bit_cast(short, v); }
__KMCP_HD __bf16 __ushort_as_bfloat16(unsigned short v) { return __builtin_bit_cast(__bf16, v); }
__KMCP_HD __bf16 __short_as_bfloat16(short v) { return __builtin_bit_cast(__bf16, v); }
__KMCP_HD float __low2float(__hip_bfloat162 v) { return (float)v.x; }
__KMCP_HD float __high2float(__hip_bfloat162 v) { return (float)v.y; }
__KMCP_HD __bf16 __low2bfloat16(__hip_bfloat162 v) { return v.x; }
__KMCP_HD __bf16 __high2bfloat16(__hip_bfloat162 v) { return v.y; }
__KMCP_HD __hip_bfloat162 __halves2bfloat162(__bf16 x, __bf16 y) { return __hip_bfloat162{x, y}; }
__KMCP_HD __hip_bfloat162 __bfloat162bfloat162(__bf16 x) { return __hip_bfloat162{x, x}; }
__KMCP_HD __hip_bfloat162 __floats2bfloat162_rn(float x, float y) { return __hip_bfloat162{(__bf16)x, (__bf16)y}; }
__KMCP_HD __hip_bfloat162 __float2bfloat162_rn(float x) { return __hip_bfloat162{(__bf16)x, (__bf16)x}; }
__KMCP_HD __hip_bfloat162 __float22bfloat162_rn(float2 v) { return __hip_bfloat162{(__bf16)v.x, (__bf16)v.y}; }
__KMCP_HD float2 __bfloat1622float2(__hip_bfloat162 v) { return float2{(float)v.x, (float)v.y}; }
__KMCP_HD __hip_bfloat162 __lows2bfloat162(__hip_bfloat162 a, __hip_bfloat162 b) { return __hip_bfloat162{a.x, b.x}; }
__KMCP_HD __hip_bfloat162 __highs2bfloat162(__hip_bfloat162 a, __hip_bfloat162 b) { return __hip_bfloat162{a.y, b.y}; }

__device__ inline __bf16 __hadd(__bf16 a, __bf16 b) { return a + b; }
__device__ inline __bf16 __hsub(__bf16 a, __bf16 b) { return a - b; }
__device__ inline __bf16 __hmul(__bf16 a, __bf16 b) { return a * b; }
__device__ inline __bf16 __hdiv(__bf16 a, __bf16 b) { return a / b; }
__device__ inline __bf16 __hfma(__bf16 a, __bf16 b, __bf16 c) { return (__bf16)__builtin_fmaf((float)a, (float)b, (float)c); }
__device__ inline __bf16 __hneg(__bf16 a) { return -a; }
__device__ inline __bf16 __habs(__bf16 a) { return (__bf16)__builtin_fabsf((float)a); }
__device__ inline __bf16 __hmax(__bf16 a, __bf16 b) { return (__bf16)__builtin_fmaxf((float)a, (float)b); }
__device__ inline __bf16 __hmin(__bf16 a, __bf16 b) { return (__bf16)__builtin_fminf((float)a, (float)b); }
__device__ inline bool __heq(__bf16 a, __bf16 b) { return a == b; }
__device__ inline bool __hne(__bf16 a, __bf16 b) { return a != b; }
__device__ inline bool __hlt(__bf16 a, __bf16 b) { return a < b; }
__device__ inline bool __hle(__bf16 a, __bf16 b) { return a <= b; }
__device__ inline bool __hgt(__bf16 a, __bf16 b) { return a > b; }
__device__ inline bool __hge(__bf16 a, __bf16 b) { return a >= b; }
__device__ inline bool __hisnan(__bf16 a) { return a != a; }
__device__ inline __hip_bfloat162 __hadd2(__hip_bfloat162 a, __hip_bfloat162 b) { return a + b; }
__device__ inline __hip_bfloat162 __hsub2(__hip_bfloat162 a, __hip_bfloat162 b) { return a - b; }
__device__ inline __hip_bfloat162 __hmul2(__hip_bfloat162 a, __hip_bfloat162 b) { return a * b; }
__device__ inline __hip_bfloat162 __h2div(__hip_bfloat162 a, __hip_bfloat162 b) { return a / b; }
__device__ inline __hip_bfloat162 __hfma2(__hip_bfloat162 a, __hip_bfloat162 b, __hip_bfloat162 c) { return a * b + c; }
__device__ inline __hip_bfloat162 __hneg2(__hip_bfloat162 a) { return -a; }
__device__ inline __bf16 hsqrt(__bf16 a) { return (__bf16)__builtin_sqrtf((float)a); }
__device__ inline __bf16 hrsqrt(__bf16 a) { return (__bf16)__builtin_amdgcn_rsqf((float)a); }
__device__ inline __bf16 hexp(__bf16 a) { return (__bf16)__builtin_expf((float)a); }
__device__ inline __bf16 hlog(__bf16 a) { return (__bf16)__builtin_logf((float)a); }
