// kernel-mcp stand-in for <hip/hip_vector_types.h> (offline device-only compiles): HIP's vector
// types (float4, int2, uchar4, ...) and their make_ functions. HIP's own header needs the C++
// library (<type_traits>, <array>), which the offline compile has not.
//
// The 2- and 4-wide types are clang vector types: .x/.y/.z/.w, arithmetic, and the alignment that
// gives one wide load, as in HIP. The 1- and 3-wide ones are plain structs (a float3 is 12 bytes,
// as in HIP, where a vector type would be 16).
#pragma once
#include "../../kernel_mcp_hip_prelude.h"

#define __KMCP_VEC3_OPS(V, T)                                                                              \
  __host__ __device__ inline V operator+(V a, V b) { return {(T)(a.x + b.x), (T)(a.y + b.y), (T)(a.z + b.z)}; } \
  __host__ __device__ inline V operator-(V a, V b) { return {(T)(a.x - b.x), (T)(a.y - b.y), (T)(a.z - b.z)}; } \
  __host__ __device__ inline V operator*(V a, V b) { return {(T)(a.x * b.x), (T)(a.y * b.y), (T)(a.z * b.z)}; } \
  __host__ __device__ inline V operator/(V a, V b) { return {(T)(a.x / b.x), (T)(a.y / b.y), (T)(a.z / b.z)}; } \
  __host__ __device__ inline V operator*(V a, T s) { return {(T)(a.x * s), (T)(a.y * s), (T)(a.z * s)}; }       \
  __host__ __device__ inline V operator*(T s, V a) { return a * s; }                                         \
  __host__ __device__ inline V operator/(V a, T s) { return {(T)(a.x / s), (T)(a.y / s), (T)(a.z / s)}; }       \
  __host__ __device__ inline V& operator+=(V& a, V b) { return a = a + b; }                                  \
  __host__ __device__ inline V& operator-=(V& a, V b) { return a = a - b; }                                  \
  __host__ __device__ inline V& operator*=(V& a, V b) { return a = a * b; }                                  \
  __host__ __device__ inline V& operator*=(V& a, T s) { return a = a * s; }

#define __KMCP_VECTORS(T, name)                                                                                          \
  struct name##1 { T x; };                                                                                               \
  typedef T name##2 __attribute__((ext_vector_type(2)));                                                                 \
  struct name##3 { T x, y, z; };                                                                                         \
  typedef T name##4 __attribute__((ext_vector_type(4)));                                                                 \
  __KMCP_VEC3_OPS(name##3, T)                                                                                            \
  __host__ __device__ inline name##1 make_##name##1(T x) { return {x}; }                                                 \
  __host__ __device__ inline name##2 make_##name##2(T x, T y) { return name##2{x, y}; }                                  \
  __host__ __device__ inline name##3 make_##name##3(T x, T y, T z) { return {x, y, z}; }                                 \
  __host__ __device__ inline name##4 make_##name##4(T x, T y, T z, T w) { return name##4{x, y, z, w}; }

__KMCP_VECTORS(signed char, char)
__KMCP_VECTORS(unsigned char, uchar)
__KMCP_VECTORS(short, short)
__KMCP_VECTORS(unsigned short, ushort)
__KMCP_VECTORS(int, int)
__KMCP_VECTORS(unsigned int, uint)
__KMCP_VECTORS(long, long)
__KMCP_VECTORS(unsigned long, ulong)
__KMCP_VECTORS(long long, longlong)
__KMCP_VECTORS(unsigned long long, ulonglong)
__KMCP_VECTORS(float, float)
__KMCP_VECTORS(double, double)
