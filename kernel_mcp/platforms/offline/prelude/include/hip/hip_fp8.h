// kernel-mcp stand-in for <hip/hip_fp8.h> (offline device-only compiles): the fp8 storage types,
// the conversion functions and the fp8 classes of ROCm 6.2+, OCP (E4M3, E5M2) and FNUZ formats.
// Where the target converts a format in hardware (OCP on gfx950, FNUZ on gfx942) the conversion is
// its instruction (v_cvt_pk_fp8_f32, v_cvt_f32_fp8, ...), as in HIP's header; elsewhere it is done
// in integer code. HIP's own header needs the C++ library, which the offline compile has not.
#pragma once
#include "../../kernel_mcp_hip_prelude.h"

#if defined(__gfx950__)
#define __KMCP_FP8_NATIVE_OCP 1
#elif defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define __KMCP_FP8_NATIVE_FNUZ 1
#endif

typedef unsigned char __hip_fp8_storage_t;
typedef unsigned short __hip_fp8x2_storage_t;
typedef unsigned int __hip_fp8x4_storage_t;
enum __hip_saturation_t { __HIP_NOSAT = 0, __HIP_SATFINITE = 1 };
enum __hip_fp8_interpretation_t { __HIP_E4M3 = 0, __HIP_E5M2 = 1, __HIP_E4M3_FNUZ = 2, __HIP_E5M2_FNUZ = 3 };

#define __KMCP_FP8 __host__ __device__ inline
__KMCP_FP8 bool __kmcp_fp8_is_e4(__hip_fp8_interpretation_t t) { return t == __HIP_E4M3 || t == __HIP_E4M3_FNUZ; }
__KMCP_FP8 bool __kmcp_fp8_is_fnuz(__hip_fp8_interpretation_t t) { return t == __HIP_E4M3_FNUZ || t == __HIP_E5M2_FNUZ; }

// float -> fp8 in integer code, rounding to nearest even
__KMCP_FP8 __hip_fp8_storage_t __kmcp_fp8_from_float(float f, __hip_saturation_t sat, __hip_fp8_interpretation_t t) {
  const bool e4 = __kmcp_fp8_is_e4(t), fnuz = __kmcp_fp8_is_fnuz(t);
  const int wm = e4 ? 3 : 2, we = e4 ? 4 : 5;
  const int bias = (1 << (we - 1)) - (fnuz ? 0 : 1);
  const unsigned max_code = fnuz ? 0x7f : (e4 ? 0x7e : 0x7b);
  const unsigned bits = __builtin_bit_cast(unsigned, f);
  const unsigned sign = (bits >> 24) & 0x80, mag = bits & 0x7fffffff;
  if (mag > 0x7f800000) return fnuz ? 0x80 : (sign | 0x7f);  // NaN
  const int exp = (int)(mag >> 23) - 127;
  if (mag < 0x00800000) return fnuz ? 0 : sign;  // zero, and float denormals, far below fp8's range
  const unsigned mant = (mag & 0x7fffff) | 0x800000;
  const int min_exp = 1 - bias;
  int shift = 23 - wm + (exp < min_exp ? min_exp - exp : 0);
  if (shift > 24) return fnuz ? 0 : sign;
  unsigned q = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1))) ++q;
  unsigned code = exp >= min_exp ? (unsigned)((exp + bias) << wm) + q - (1u << wm) : q;
  if (mag >= 0x7f800000 || code > max_code) code = sat == __HIP_SATFINITE ? max_code : (fnuz ? 0x80 : (e4 ? 0x7f : 0x7c));
  if (fnuz && (code & 0x7f) == 0) return 0;  // FNUZ has no negative zero: 0x80 is its NaN
  return (__hip_fp8_storage_t)(sign | code);
}

// fp8 -> float in integer code
__KMCP_FP8 float __kmcp_fp8_to_float(__hip_fp8_storage_t v, __hip_fp8_interpretation_t t) {
  const bool e4 = __kmcp_fp8_is_e4(t), fnuz = __kmcp_fp8_is_fnuz(t);
  const int wm = e4 ? 3 : 2, we = e4 ? 4 : 5;
  const int bias = (1 << (we - 1)) - (fnuz ? 0 : 1);
  const unsigned e = (v >> wm) & ((1u << we) - 1), m = v & ((1u << wm) - 1);
  if (fnuz ? v == 0x80 : (e4 ? (v & 0x7f) == 0x7f : (e == 31 && m != 0))) return __builtin_nanf("");
  if (!fnuz && !e4 && e == 31) return (v & 0x80) ? -__builtin_inff() : __builtin_inff();
  float r = e == 0 ? __builtin_ldexpf((float)m, 1 - bias - wm) : __builtin_ldexpf((float)((1u << wm) + m), (int)e - bias - wm);
  return (v & 0x80) ? -r : r;
}

__KMCP_FP8 bool __kmcp_fp8_native(__hip_fp8_interpretation_t t) {
#if defined(__KMCP_FP8_NATIVE_OCP)
  return !__kmcp_fp8_is_fnuz(t);
#elif defined(__KMCP_FP8_NATIVE_FNUZ)
  return __kmcp_fp8_is_fnuz(t);
#else
  return false;
#endif
}
__KMCP_FP8 float __kmcp_fp8_max(__hip_fp8_interpretation_t t) {
  return __kmcp_fp8_is_e4(t) ? (__kmcp_fp8_is_fnuz(t) ? 240.0f : 448.0f) : 57344.0f;
}

// two floats -> two fp8 in the low half of the result
__KMCP_FP8 __hip_fp8x2_storage_t __hip_cvt_float2_to_fp8x2(float2 v, __hip_saturation_t sat, __hip_fp8_interpretation_t t) {
#if defined(__KMCP_FP8_NATIVE_OCP) || defined(__KMCP_FP8_NATIVE_FNUZ)
  if (__kmcp_fp8_native(t)) {
    float a = v.x, b = v.y;
    if (sat == __HIP_SATFINITE) {  // clamp before the conversion, as HIP's header does (NaN stays NaN)
      const float m = __kmcp_fp8_max(t);
      a = __builtin_amdgcn_fmed3f(a, -m, m);
      b = __builtin_amdgcn_fmed3f(b, -m, m);
    }
    int packed = __kmcp_fp8_is_e4(t) ? __builtin_amdgcn_cvt_pk_fp8_f32(a, b, 0, false) : __builtin_amdgcn_cvt_pk_bf8_f32(a, b, 0, false);
    return (__hip_fp8x2_storage_t)(packed & 0xffff);
  }
#endif
  return (__hip_fp8x2_storage_t)(__kmcp_fp8_from_float(v.x, sat, t) | (__kmcp_fp8_from_float(v.y, sat, t) << 8));
}
__KMCP_FP8 __hip_fp8_storage_t __hip_cvt_float_to_fp8(float f, __hip_saturation_t sat, __hip_fp8_interpretation_t t) {
#if defined(__KMCP_FP8_NATIVE_OCP) || defined(__KMCP_FP8_NATIVE_FNUZ)
  if (__kmcp_fp8_native(t)) return (__hip_fp8_storage_t)(__hip_cvt_float2_to_fp8x2(float2{f, 0.0f}, sat, t) & 0xff);
#endif
  return __kmcp_fp8_from_float(f, sat, t);
}
__KMCP_FP8 __hip_fp8_storage_t __hip_cvt_double_to_fp8(double d, __hip_saturation_t sat, __hip_fp8_interpretation_t t) {
  return __hip_cvt_float_to_fp8((float)d, sat, t);
}
__KMCP_FP8 __hip_fp8_storage_t __hip_cvt_halfraw_to_fp8(__half_raw h, __hip_saturation_t sat, __hip_fp8_interpretation_t t) {
  return __hip_cvt_float_to_fp8((float)__builtin_bit_cast(__half, h.x), sat, t);
}
__KMCP_FP8 __hip_fp8_storage_t __hip_cvt_bfloat16raw_to_fp8(__hip_bfloat16_raw b, __hip_saturation_t sat, __hip_fp8_interpretation_t t) {
  return __hip_cvt_float_to_fp8((float)__builtin_bit_cast(__bf16, b.x), sat, t);
}
__KMCP_FP8 float __kmcp_fp8_to_f32(__hip_fp8_storage_t v, __hip_fp8_interpretation_t t) {
#if defined(__KMCP_FP8_NATIVE_OCP) || defined(__KMCP_FP8_NATIVE_FNUZ)
  if (__kmcp_fp8_native(t)) return __kmcp_fp8_is_e4(t) ? __builtin_amdgcn_cvt_f32_fp8((int)v, 0) : __builtin_amdgcn_cvt_f32_bf8((int)v, 0);
#endif
  return __kmcp_fp8_to_float(v, t);
}
__KMCP_FP8 float2 __kmcp_fp8x2_to_f32x2(__hip_fp8x2_storage_t v, __hip_fp8_interpretation_t t) {
  return float2{__kmcp_fp8_to_f32((__hip_fp8_storage_t)(v & 0xff), t), __kmcp_fp8_to_f32((__hip_fp8_storage_t)(v >> 8), t)};
}
__KMCP_FP8 __half_raw __hip_cvt_fp8_to_halfraw(__hip_fp8_storage_t v, __hip_fp8_interpretation_t t) {
  return __half_raw{__builtin_bit_cast(unsigned short, (__half)__kmcp_fp8_to_f32(v, t))};
}
__KMCP_FP8 __half2_raw __hip_cvt_fp8x2_to_halfraw2(__hip_fp8x2_storage_t v, __hip_fp8_interpretation_t t) {
  float2 f = __kmcp_fp8x2_to_f32x2(v, t);
  return __half2_raw{__builtin_bit_cast(unsigned short, (__half)f.x), __builtin_bit_cast(unsigned short, (__half)f.y)};
}

// the fp8 classes: a storage member __x, built from the wider types (saturating, as HIP's are),
// read as float (and explicitly as the others)
#define __KMCP_FP8_CLASS(name, interp)                                                                  \
  struct name {                                                                                         \
    __hip_fp8_storage_t __x;                                                                            \
    name() = default;                                                                                   \
    __KMCP_FP8 name(float f) : __x(__hip_cvt_float_to_fp8(f, __HIP_SATFINITE, interp)) {}               \
    __KMCP_FP8 name(double d) : __x(__hip_cvt_float_to_fp8((float)d, __HIP_SATFINITE, interp)) {}       \
    __KMCP_FP8 name(__half h) : __x(__hip_cvt_float_to_fp8((float)h, __HIP_SATFINITE, interp)) {}       \
    __KMCP_FP8 name(__bf16 b) : __x(__hip_cvt_float_to_fp8((float)b, __HIP_SATFINITE, interp)) {}       \
    __KMCP_FP8 name(int i) : __x(__hip_cvt_float_to_fp8((float)i, __HIP_SATFINITE, interp)) {}          \
    __KMCP_FP8 name(unsigned u) : __x(__hip_cvt_float_to_fp8((float)u, __HIP_SATFINITE, interp)) {}     \
    __KMCP_FP8 operator float() const { return __kmcp_fp8_to_f32(__x, interp); }                      \
    __KMCP_FP8 explicit operator double() const { return __kmcp_fp8_to_f32(__x, interp); }            \
    __KMCP_FP8 explicit operator __half() const { return (__half)__kmcp_fp8_to_f32(__x, interp); }    \
    __KMCP_FP8 explicit operator __bf16() const { return (__bf16)__kmcp_fp8_to_f32(__x, interp); }    \
  };                                                                                                    \
  struct name##_x2_ {                                                                                   \
    __hip_fp8x2_storage_t __x;                                                                          \
    name##_x2_() = default;                                                                             \
    __KMCP_FP8 name##_x2_(float2 f) : __x(__hip_cvt_float2_to_fp8x2(f, __HIP_SATFINITE, interp)) {}     \
    __KMCP_FP8 operator float2() const { return __kmcp_fp8x2_to_f32x2(__x, interp); }                  \
  };
__KMCP_FP8_CLASS(__hip_fp8_e4m3, __HIP_E4M3)
__KMCP_FP8_CLASS(__hip_fp8_e5m2, __HIP_E5M2)
__KMCP_FP8_CLASS(__hip_fp8_e4m3_fnuz, __HIP_E4M3_FNUZ)
__KMCP_FP8_CLASS(__hip_fp8_e5m2_fnuz, __HIP_E5M2_FNUZ)
typedef __hip_fp8_e4m3_x2_ __hip_fp8x2_e4m3;
typedef __hip_fp8_e5m2_x2_ __hip_fp8x2_e5m2;
typedef __hip_fp8_e4m3_fnuz_x2_ __hip_fp8x2_e4m3_fnuz;
typedef __hip_fp8_e5m2_fnuz_x2_ __hip_fp8x2_e5m2_fnuz;
