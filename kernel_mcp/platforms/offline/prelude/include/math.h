// kernel-mcp stand-in for <math.h> in an offline device-only compile (no ROCm installed).
//
// Why a stand-in: with ROCm, clang's HIP wrappers (__clang_hip_math.h, cuda_wrappers/) map the C
// math library onto ROCm's device library (ocml). The clang of the ziglang wheel ships neither the
// wrappers nor the device library, and the host's <math.h> declares host functions only. So the
// functions an ordinary kernel calls are defined here on clang's builtins, which the AMDGPU backend
// lowers inline (exp, log, sqrt, sin, cos, pow, floor, fma, ...), and where it has no lowering
// (tanh, erf, atan, double exp/log/sin/cos, ...) by short range reductions and polynomials in the
// way ocml computes them. They exist for the compile's facts (registers, instructions, occupancy):
// their code has the shape and size of the device library's and their results are within a few
// ulp (pow(double) within tens), but they are not ocml's bit for bit, and nothing compiled offline
// runs. A function not defined here is declared unavailable with a message that says so, instead
// of failing in the backend as a call it cannot lower.
#pragma once
#include "../kernel_mcp_hip_prelude.h"

#define __KMCP_MATH __device__ inline
#define __KMCP_NOT_OFFLINE(what) \
  __attribute__((unavailable(what " is not provided by kernel-mcp's offline math (no ROCm device library here); compile where ROCm is installed")))

#define INFINITY (__builtin_inff())
#define NAN (__builtin_nanf(""))
#define HUGE_VALF (__builtin_huge_valf())
#define HUGE_VAL (__builtin_huge_val())
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#define FP_ILOGB0 (-2147483647 - 1)
#define FP_ILOGBNAN (-2147483647 - 1)
// the POSIX constants glibc's <math.h> gives C++ code (g++ and hipcc define _GNU_SOURCE)
#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440

// ---- float: lowered inline by the AMDGPU backend ---------------------------------------------
__KMCP_MATH float fabsf(float x) { return __builtin_fabsf(x); }
__KMCP_MATH float fminf(float x, float y) { return __builtin_fminf(x, y); }
__KMCP_MATH float fmaxf(float x, float y) { return __builtin_fmaxf(x, y); }
__KMCP_MATH float fmaf(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
__KMCP_MATH float sqrtf(float x) { return __builtin_sqrtf(x); }
__KMCP_MATH float rsqrtf(float x) { return __builtin_amdgcn_rsqf(x); }
__KMCP_MATH float expf(float x) { return __builtin_expf(x); }
__KMCP_MATH float exp2f(float x) { return __builtin_exp2f(x); }
__KMCP_MATH float exp10f(float x) { return __builtin_exp10f(x); }
__KMCP_MATH float logf(float x) { return __builtin_logf(x); }
__KMCP_MATH float log2f(float x) { return __builtin_log2f(x); }
__KMCP_MATH float log10f(float x) { return __builtin_log10f(x); }
__KMCP_MATH float powf(float x, float y) { return __builtin_powf(x, y); }
__KMCP_MATH float sinf(float x) { return __builtin_sinf(x); }
__KMCP_MATH float cosf(float x) { return __builtin_cosf(x); }
__KMCP_MATH void sincosf(float x, float* s, float* c) { *s = __builtin_sinf(x); *c = __builtin_cosf(x); }
__KMCP_MATH float floorf(float x) { return __builtin_floorf(x); }
__KMCP_MATH float ceilf(float x) { return __builtin_ceilf(x); }
__KMCP_MATH float truncf(float x) { return __builtin_truncf(x); }
__KMCP_MATH float roundf(float x) { return __builtin_roundf(x); }
__KMCP_MATH float rintf(float x) { return __builtin_rintf(x); }
__KMCP_MATH float nearbyintf(float x) { return __builtin_nearbyintf(x); }
__KMCP_MATH long lrintf(float x) { return (long)__builtin_rintf(x); }
__KMCP_MATH long long llrintf(float x) { return (long long)__builtin_rintf(x); }
__KMCP_MATH long lroundf(float x) { return (long)__builtin_roundf(x); }
__KMCP_MATH long long llroundf(float x) { return (long long)__builtin_roundf(x); }
__KMCP_MATH float fmodf(float x, float y) { return __builtin_fmodf(x, y); }
__KMCP_MATH float ldexpf(float x, int e) { return __builtin_ldexpf(x, e); }
__KMCP_MATH float scalbnf(float x, int e) { return __builtin_ldexpf(x, e); }
__KMCP_MATH float frexpf(float x, int* e) { return __builtin_frexpf(x, e); }
__KMCP_MATH float copysignf(float x, float y) { return __builtin_copysignf(x, y); }
__KMCP_MATH float logbf(float x) { return __builtin_logbf(x); }
__KMCP_MATH float fdimf(float x, float y) { return x > y ? x - y : (x != x || y != y) ? x + y : 0.0f; }
__KMCP_MATH float modff(float x, float* whole) {
  float t = __builtin_truncf(x);
  *whole = t;
  return __builtin_copysignf(__builtin_isinf(x) ? 0.0f : x - t, x);
}
__KMCP_MATH int ilogbf(float x) {
  if (x == 0.0f || x != x) return FP_ILOGB0;
  if (__builtin_isinf(x)) return 2147483647;
  return __builtin_amdgcn_frexp_expf(x) - 1;
}

// ---- float: no backend lowering, written on the builtins above ------------------------------
__KMCP_MATH float tanf(float x) { return __builtin_sinf(x) / __builtin_cosf(x); }
__KMCP_MATH float expm1f(float x) {
  if (__builtin_fabsf(x) < 0.5f)  // the Taylor series, to keep the digits exp(x) - 1 cancels
    return x * (1.0f + x * (0.5f + x * (1.0f / 6 + x * (1.0f / 24 + x * (1.0f / 120 + x * (1.0f / 720 + x * (1.0f / 5040)))))));
  return __builtin_expf(x) - 1.0f;
}
__KMCP_MATH float log1pf(float x) {
  float u = 1.0f + x;  // log(u) * x / (u - 1): the rounding of 1 + x cancels
  return u == 1.0f ? x : __builtin_isinf(u) ? u : __builtin_logf(u) * (x / (u - 1.0f));
}
__KMCP_MATH float sinhf(float x) {
  float a = __builtin_fabsf(x), r;
  if (a < 0.5f) {
    float a2 = a * a;
    r = a * (1.0f + a2 * (1.0f / 6 + a2 * (1.0f / 120 + a2 * (1.0f / 5040))));
  } else {
    float e = __builtin_expf(a);
    r = 0.5f * (e - 1.0f / e);
  }
  return __builtin_copysignf(r, x);
}
__KMCP_MATH float coshf(float x) {
  float e = __builtin_expf(__builtin_fabsf(x));
  return 0.5f * (e + 1.0f / e);
}
__KMCP_MATH float tanhf(float x) {
  float a = __builtin_fabsf(x);
  float e = expm1f(2.0f * a);  // tanh(a) = (e^2a - 1) / (e^2a + 1), without the cancellation near 0
  return __builtin_copysignf(a > 9.0f ? 1.0f : e / (e + 2.0f), x);
}
__KMCP_MATH float atanf(float x) {
  float a = __builtin_fabsf(x), base = 0.0f;
  if (a > 2.414213562373095f) {  // tan(3 pi / 8)
    base = 1.5707963267948966f;
    a = -1.0f / a;
  } else if (a > 0.4142135623730950f) {  // tan(pi / 8)
    base = 0.7853981633974483f;
    a = (a - 1.0f) / (a + 1.0f);
  }
  float z = a * a;
  float r = base + ((((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) * z * a + a);
  return __builtin_copysignf(r, x);
}
__KMCP_MATH float atan2f(float y, float x) {
  if (x != x || y != y) return x + y;
  if (x == 0.0f && y == 0.0f) return __builtin_signbit(x) ? __builtin_copysignf(3.14159265358979f, y) : __builtin_copysignf(0.0f, y);
  float r = atanf(__builtin_fabsf(y) / __builtin_fabsf(x));
  if (__builtin_isinf(x) && __builtin_isinf(y)) r = 0.7853981633974483f;
  if (x < 0.0f || (x == 0.0f && __builtin_signbit(x))) r = 3.14159265358979f - r;
  return __builtin_copysignf(r, y);
}
__KMCP_MATH float asinf(float x) {
  float a = __builtin_fabsf(x), z, s;
  bool upper = a > 0.5f;
  if (upper) {
    z = 0.5f * (1.0f - a);
    s = __builtin_sqrtf(z);
  } else {
    z = a * a;
    s = a;
  }
  float r = ((((4.2163199048e-2f * z + 2.4181311049e-2f) * z + 4.5470025998e-2f) * z + 7.4953002686e-2f) * z + 1.6666752422e-1f) * z * s + s;
  if (upper) r = 1.5707963267948966f - 2.0f * r;
  return a > 1.0f ? __builtin_nanf("") : __builtin_copysignf(r, x);
}
__KMCP_MATH float acosf(float x) {
  if (x < -0.5f) return 3.14159265358979f - 2.0f * asinf(__builtin_sqrtf(0.5f * (1.0f + x)));
  if (x > 0.5f) return 2.0f * asinf(__builtin_sqrtf(0.5f * (1.0f - x)));
  return 1.5707963267948966f - asinf(x);
}
__KMCP_MATH float asinhf(float x) {
  float a = __builtin_fabsf(x);
  return __builtin_copysignf(log1pf(a + a * a / (1.0f + __builtin_sqrtf(1.0f + a * a))), x);
}
__KMCP_MATH float acoshf(float x) {
  float t = x - 1.0f;
  return log1pf(t + __builtin_sqrtf(t * (x + 1.0f)));
}
__KMCP_MATH float atanhf(float x) { return __builtin_copysignf(0.5f * log1pf(2.0f * __builtin_fabsf(x) / (1.0f - __builtin_fabsf(x))), x); }
// erf: its Taylor series near 0; beyond, erfc(a) = exp(-a^2) P(1 / (1 + a/2)), P fitted for
// kernel-mcp (relative error 3e-9 on [0.5, 10.1]), and e^(-a^2) with the rounding of a^2 kept
__KMCP_MATH float __kmcp_erfc_tail(float a) {
  if (a > 10.05f) return 0.0f;
  float t = 1.0f / (1.0f + 0.5f * a);
  float p = -7.46166801988315e-2f;
  p = __builtin_fmaf(p, t, 3.521581890570236e-1f);
  p = __builtin_fmaf(p, t, -6.127612122870436e-1f);
  p = __builtin_fmaf(p, t, 4.0839610468683585e-1f);
  p = __builtin_fmaf(p, t, -1.095583175020491e-1f);
  p = __builtin_fmaf(p, t, 2.3609254430374560e-1f);
  p = __builtin_fmaf(p, t, 2.3462104714017465e-1f);
  p = __builtin_fmaf(p, t, 2.8368004025231003e-1f);
  p = __builtin_fmaf(p, t, 2.8197641727085515e-1f);
  p = __builtin_fmaf(p, t, 3.866081276088862e-6f);
  float a2 = a * a, a2_rounding = __builtin_fmaf(a, a, -a2);
  return p * __builtin_expf(-a2) * (1.0f - a2_rounding);
}
__KMCP_MATH float erff(float x) {
  float a = __builtin_fabsf(x);
  if (a < 0.5f) {
    float z = x * x;
    return x * 1.1283791670955126f *
           (1.0f + z * (-1.0f / 3 + z * (1.0f / 10 + z * (-1.0f / 42 + z * (1.0f / 216 + z * (-1.0f / 1320 + z * (1.0f / 9360)))))));
  }
  return __builtin_copysignf(1.0f - __kmcp_erfc_tail(a), x);
}
__KMCP_MATH float erfcf(float x) { return x < 0.5f ? 1.0f - erff(x) : __kmcp_erfc_tail(x); }
__KMCP_MATH float cbrtf(float x) {
  if (x == 0.0f || __builtin_isinf(x) || x != x) return x;
  float a = __builtin_fabsf(x);
  float y = __builtin_exp2f(__builtin_log2f(a) * (1.0f / 3));
  y = y - (y * y * y - a) / (3.0f * y * y);  // one Newton step
  return __builtin_copysignf(y, x);
}
__KMCP_MATH float rcbrtf(float x) { return 1.0f / cbrtf(x); }
__KMCP_MATH float hypotf(float x, float y) {
  float a = __builtin_fabsf(x), b = __builtin_fabsf(y);
  if (__builtin_isinf(a) || __builtin_isinf(b)) return __builtin_inff();
  float hi = __builtin_fmaxf(a, b), lo = __builtin_fminf(a, b);
  if (hi == 0.0f || lo != lo) return hi + lo;
  float r = lo / hi;
  return hi * __builtin_sqrtf(1.0f + r * r);
}
__KMCP_MATH float norm3df(float a, float b, float c) { return __builtin_sqrtf(a * a + b * b + c * c); }
__KMCP_MATH float rhypotf(float x, float y) { return 1.0f / hypotf(x, y); }
__KMCP_MATH float sinpif(float x) { return __builtin_sinf(x * 3.14159265358979f); }
__KMCP_MATH float cospif(float x) { return __builtin_cosf(x * 3.14159265358979f); }
__KMCP_MATH float nextafterf(float x, float y) {
  if (x != x || y != y) return x + y;
  if (x == y) return y;
  if (x == 0.0f) return __builtin_copysignf(__builtin_bit_cast(float, 1u), y);
  unsigned u = __builtin_bit_cast(unsigned, x);
  u += ((x < y) == (x > 0.0f)) ? 1u : -1u;
  return __builtin_bit_cast(float, u);
}

__KMCP_NOT_OFFLINE("lgammaf") __device__ float lgammaf(float);
__KMCP_NOT_OFFLINE("tgammaf") __device__ float tgammaf(float);
__KMCP_NOT_OFFLINE("erfinvf") __device__ float erfinvf(float);
__KMCP_NOT_OFFLINE("erfcinvf") __device__ float erfcinvf(float);
__KMCP_NOT_OFFLINE("remainderf") __device__ float remainderf(float, float);
__KMCP_NOT_OFFLINE("remquof") __device__ float remquof(float, float, int*);

// ---- HIP's fast single-precision intrinsics (the hardware's approximations) -----------------
__KMCP_MATH float __expf(float x) { return __builtin_amdgcn_exp2f(x * 1.4426950408889634f); }
__KMCP_MATH float __exp10f(float x) { return __builtin_amdgcn_exp2f(x * 3.3219280948873622f); }
__KMCP_MATH float __logf(float x) { return __builtin_amdgcn_logf(x) * 0.6931471805599453f; }
__KMCP_MATH float __log2f(float x) { return __builtin_amdgcn_logf(x); }
__KMCP_MATH float __log10f(float x) { return __builtin_amdgcn_logf(x) * 0.30102999566398120f; }
__KMCP_MATH float __powf(float x, float y) { return __builtin_amdgcn_exp2f(y * __builtin_amdgcn_logf(x)); }
__KMCP_MATH float __sinf(float x) { return __builtin_amdgcn_sinf(x * 0.15915494309189535f); }
__KMCP_MATH float __cosf(float x) { return __builtin_amdgcn_cosf(x * 0.15915494309189535f); }
__KMCP_MATH float __tanf(float x) { return __sinf(x) / __cosf(x); }
__KMCP_MATH void __sincosf(float x, float* s, float* c) { *s = __sinf(x); *c = __cosf(x); }
__KMCP_MATH float __fdividef(float x, float y) { return x * __builtin_amdgcn_rcpf(y); }
__KMCP_MATH float __frcp_rn(float x) { return __builtin_amdgcn_rcpf(x); }
__KMCP_MATH float __fsqrt_rn(float x) { return __builtin_sqrtf(x); }
__KMCP_MATH float __frsqrt_rn(float x) { return __builtin_amdgcn_rsqf(x); }
__KMCP_MATH float __fadd_rn(float x, float y) { return x + y; }
__KMCP_MATH float __fsub_rn(float x, float y) { return x - y; }
__KMCP_MATH float __fmul_rn(float x, float y) { return x * y; }
__KMCP_MATH float __fdiv_rn(float x, float y) { return x / y; }
__KMCP_MATH float __fmaf_rn(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
__KMCP_MATH float __saturatef(float x) { return __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f); }
__KMCP_MATH double __dadd_rn(double x, double y) { return x + y; }
__KMCP_MATH double __dmul_rn(double x, double y) { return x * y; }
__KMCP_MATH double __fma_rn(double x, double y, double z) { return __builtin_fma(x, y, z); }

// ---- double ----------------------------------------------------------------------------------
__KMCP_MATH double fabs(double x) { return __builtin_fabs(x); }
__KMCP_MATH double fmin(double x, double y) { return __builtin_fmin(x, y); }
__KMCP_MATH double fmax(double x, double y) { return __builtin_fmax(x, y); }
__KMCP_MATH double fma(double x, double y, double z) { return __builtin_fma(x, y, z); }
__KMCP_MATH double sqrt(double x) { return __builtin_sqrt(x); }
__KMCP_MATH double rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
__KMCP_MATH double floor(double x) { return __builtin_floor(x); }
__KMCP_MATH double ceil(double x) { return __builtin_ceil(x); }
__KMCP_MATH double trunc(double x) { return __builtin_trunc(x); }
__KMCP_MATH double round(double x) { return __builtin_round(x); }
__KMCP_MATH double rint(double x) { return __builtin_rint(x); }
__KMCP_MATH double nearbyint(double x) { return __builtin_nearbyint(x); }
__KMCP_MATH long lrint(double x) { return (long)__builtin_rint(x); }
__KMCP_MATH long long llrint(double x) { return (long long)__builtin_rint(x); }
__KMCP_MATH long lround(double x) { return (long)__builtin_round(x); }
__KMCP_MATH long long llround(double x) { return (long long)__builtin_round(x); }
__KMCP_MATH double fmod(double x, double y) { return __builtin_fmod(x, y); }
__KMCP_MATH double ldexp(double x, int e) { return __builtin_ldexp(x, e); }
__KMCP_MATH double scalbn(double x, int e) { return __builtin_ldexp(x, e); }
__KMCP_MATH double frexp(double x, int* e) { return __builtin_frexp(x, e); }
__KMCP_MATH double copysign(double x, double y) { return __builtin_copysign(x, y); }
__KMCP_MATH double fdim(double x, double y) { return x > y ? x - y : (x != x || y != y) ? x + y : 0.0; }
__KMCP_MATH double modf(double x, double* whole) {
  double t = __builtin_trunc(x);
  *whole = t;
  return __builtin_copysign(__builtin_isinf(x) ? 0.0 : x - t, x);
}
// exp: x = k ln2 + r, |r| <= ln2 / 2, e^r by its Taylor series to r^12
__KMCP_MATH double __kmcp_exp_taylor(double r) {
  double p = 1.0 / 479001600;
  p = __builtin_fma(p, r, 1.0 / 39916800);
  p = __builtin_fma(p, r, 1.0 / 3628800);
  p = __builtin_fma(p, r, 1.0 / 362880);
  p = __builtin_fma(p, r, 1.0 / 40320);
  p = __builtin_fma(p, r, 1.0 / 5040);
  p = __builtin_fma(p, r, 1.0 / 720);
  p = __builtin_fma(p, r, 1.0 / 120);
  p = __builtin_fma(p, r, 1.0 / 24);
  p = __builtin_fma(p, r, 1.0 / 6);
  p = __builtin_fma(p, r, 0.5);
  p = __builtin_fma(p, r, 1.0);
  return __builtin_fma(p, r, 1.0);
}
__KMCP_MATH double exp(double x) {
  if (x != x) return x;
  if (x > 709.782712893384) return __builtin_huge_val();
  if (x < -745.1332191019412) return 0.0;
  double k = __builtin_rint(x * 1.4426950408889634);
  double r = __builtin_fma(-k, 6.93147180369123816490e-01, x);
  r = __builtin_fma(-k, 1.90821492927058770002e-10, r);
  return __builtin_ldexp(__kmcp_exp_taylor(r), (int)k);
}
// log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s) with s = (m - 1) / (m + 1)
__KMCP_MATH double log(double x) {
  if (x != x || x == __builtin_huge_val()) return x;
  if (x < 0.0) return __builtin_nan("");
  if (x == 0.0) return -__builtin_huge_val();
  int e;
  double m = __builtin_frexp(x, &e);
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    e -= 1;
  }
  double s = (m - 1.0) / (m + 1.0), z = s * s;
  double p = 1.0 / 23;
  p = __builtin_fma(p, z, 1.0 / 21);
  p = __builtin_fma(p, z, 1.0 / 19);
  p = __builtin_fma(p, z, 1.0 / 17);
  p = __builtin_fma(p, z, 1.0 / 15);
  p = __builtin_fma(p, z, 1.0 / 13);
  p = __builtin_fma(p, z, 1.0 / 11);
  p = __builtin_fma(p, z, 1.0 / 9);
  p = __builtin_fma(p, z, 1.0 / 7);
  p = __builtin_fma(p, z, 1.0 / 5);
  p = __builtin_fma(p, z, 1.0 / 3);
  double lm = 2.0 * s + 2.0 * s * z * p;
  return e * 6.93147180369123816490e-01 + (lm + e * 1.90821492927058770002e-10);
}
__KMCP_MATH double exp2(double x) {
  if (x != x) return x;
  if (x >= 1024.0) return __builtin_huge_val();
  if (x < -1075.0) return 0.0;
  double k = __builtin_rint(x);
  return __builtin_ldexp(__kmcp_exp_taylor((x - k) * 0.69314718055994530942), (int)k);
}
__KMCP_MATH double exp10(double x) { return exp(x * 2.30258509299404568402); }
__KMCP_MATH double log2(double x) { return log(x) * 1.4426950408889634074; }
__KMCP_MATH double log10(double x) { return log(x) * 0.43429448190325182765; }
__KMCP_MATH double expm1(double x) {
  if (__builtin_fabs(x) >= 0.34657359027997264) return exp(x) - 1.0;
  double p = 1.0 / 6227020800;  // the Taylor series to x^13, to keep the digits exp(x) - 1 cancels
  p = __builtin_fma(p, x, 1.0 / 479001600);
  p = __builtin_fma(p, x, 1.0 / 39916800);
  p = __builtin_fma(p, x, 1.0 / 3628800);
  p = __builtin_fma(p, x, 1.0 / 362880);
  p = __builtin_fma(p, x, 1.0 / 40320);
  p = __builtin_fma(p, x, 1.0 / 5040);
  p = __builtin_fma(p, x, 1.0 / 720);
  p = __builtin_fma(p, x, 1.0 / 120);
  p = __builtin_fma(p, x, 1.0 / 24);
  p = __builtin_fma(p, x, 1.0 / 6);
  p = __builtin_fma(p, x, 0.5);
  return __builtin_fma(p * x, x, x);
}
__KMCP_MATH double log1p(double x) {
  double u = 1.0 + x;
  return u == 1.0 ? x : log(u) * (x / (u - 1.0));
}
__KMCP_MATH double pow(double x, double y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (x != x || y != y) return x + y;
  bool odd_integer = __builtin_trunc(y) == y && __builtin_fmod(__builtin_fabs(y), 2.0) == 1.0;
  if (x < 0.0 && __builtin_trunc(y) != y) return __builtin_nan("");
  double r = exp(y * log(__builtin_fabs(x)));
  return (x < 0.0 && odd_integer) ? -r : r;
}
// sin, cos: x = k pi/2 + r, |r| <= pi/4 (a three-part pi/2), then the Taylor series to r^17 / r^18
__KMCP_MATH double __kmcp_reduce_pio2(double x, int* quadrant) {
  double k = __builtin_rint(x * 0.63661977236758134308);
  *quadrant = (int)(long long)k;
  double r = __builtin_fma(-k, 1.57079632673412561417e+00, x);
  r = __builtin_fma(-k, 6.07710050650619224932e-11, r);
  return __builtin_fma(-k, 2.02226624879595063154e-21, r);
}
__KMCP_MATH double __kmcp_sin_poly(double r) {
  double z = r * r, p = 1.0 / 355687428096000.0;
  p = __builtin_fma(p, -z, 1.0 / 1307674368000.0);
  p = __builtin_fma(p, -z, 1.0 / 6227020800.0);
  p = __builtin_fma(p, -z, 1.0 / 39916800.0);
  p = __builtin_fma(p, -z, 1.0 / 362880.0);
  p = __builtin_fma(p, -z, 1.0 / 5040.0);
  p = __builtin_fma(p, -z, 1.0 / 120.0);
  p = __builtin_fma(p, -z, 1.0 / 6.0);
  p = __builtin_fma(p, -z, 1.0);
  return r * p;
}
__KMCP_MATH double __kmcp_cos_poly(double r) {
  double z = r * r, p = 1.0 / 6402373705728000.0;
  p = __builtin_fma(p, -z, 1.0 / 20922789888000.0);
  p = __builtin_fma(p, -z, 1.0 / 87178291200.0);
  p = __builtin_fma(p, -z, 1.0 / 479001600.0);
  p = __builtin_fma(p, -z, 1.0 / 3628800.0);
  p = __builtin_fma(p, -z, 1.0 / 40320.0);
  p = __builtin_fma(p, -z, 1.0 / 720.0);
  p = __builtin_fma(p, -z, 1.0 / 24.0);
  p = __builtin_fma(p, -z, 0.5);
  return __builtin_fma(p, -z, 1.0);
}
__KMCP_MATH double sin(double x) {
  int q;
  double r = __kmcp_reduce_pio2(x, &q);
  double v = (q & 1) ? __kmcp_cos_poly(r) : __kmcp_sin_poly(r);
  return (q & 2) ? -v : v;
}
__KMCP_MATH double cos(double x) {
  int q;
  double r = __kmcp_reduce_pio2(x, &q);
  double v = (q & 1) ? __kmcp_sin_poly(r) : __kmcp_cos_poly(r);
  return ((q + 1) & 2) ? -v : v;
}
__KMCP_MATH void sincos(double x, double* s, double* c) { *s = sin(x); *c = cos(x); }
__KMCP_MATH double tan(double x) { return sin(x) / cos(x); }
__KMCP_MATH double sinh(double x) {
  double a = __builtin_fabs(x), e = expm1(a);
  double r = a > 710.0 ? __builtin_huge_val() : 0.5 * (e + e / (e + 1.0));
  return __builtin_copysign(r, x);
}
__KMCP_MATH double cosh(double x) {
  double e = exp(__builtin_fabs(x));
  return 0.5 * (e + 1.0 / e);
}
__KMCP_MATH double tanh(double x) {
  double a = __builtin_fabs(x), e = expm1(2.0 * a);
  return __builtin_copysign(a > 22.0 ? 1.0 : e / (e + 2.0), x);
}
__KMCP_MATH double cbrt(double x) {
  if (x == 0.0 || __builtin_isinf(x) || x != x) return x;
  double a = __builtin_fabs(x);
  double y = exp(log(a) * (1.0 / 3));
  y = y - (y * y * y - a) / (3.0 * y * y);
  return __builtin_copysign(y, x);
}
__KMCP_MATH double hypot(double x, double y) {
  double a = __builtin_fabs(x), b = __builtin_fabs(y);
  if (__builtin_isinf(a) || __builtin_isinf(b)) return __builtin_huge_val();
  double hi = __builtin_fmax(a, b), lo = __builtin_fmin(a, b);
  if (hi == 0.0 || lo != lo) return hi + lo;
  double r = lo / hi;
  return hi * __builtin_sqrt(1.0 + r * r);
}

__KMCP_NOT_OFFLINE("atan(double)") __device__ double atan(double);
__KMCP_NOT_OFFLINE("atan2(double, double)") __device__ double atan2(double, double);
__KMCP_NOT_OFFLINE("asin(double)") __device__ double asin(double);
__KMCP_NOT_OFFLINE("acos(double)") __device__ double acos(double);
__KMCP_NOT_OFFLINE("erf(double)") __device__ double erf(double);
__KMCP_NOT_OFFLINE("erfc(double)") __device__ double erfc(double);
__KMCP_NOT_OFFLINE("lgamma") __device__ double lgamma(double);
__KMCP_NOT_OFFLINE("tgamma") __device__ double tgamma(double);
__KMCP_NOT_OFFLINE("remainder") __device__ double remainder(double, double);

// ---- classification (functions, as C++'s <cmath> has them) ---------------------------------
__KMCP_MATH bool signbit(float x) { return __builtin_signbit(x); }
__KMCP_MATH bool signbit(double x) { return __builtin_signbit(x); }
__KMCP_MATH bool isnan(float x) { return __builtin_isnan(x); }
__KMCP_MATH bool isnan(double x) { return __builtin_isnan(x); }
__KMCP_MATH bool isinf(float x) { return __builtin_isinf(x); }
__KMCP_MATH bool isinf(double x) { return __builtin_isinf(x); }
__KMCP_MATH bool isfinite(float x) { return __builtin_isfinite(x); }
__KMCP_MATH bool isfinite(double x) { return __builtin_isfinite(x); }
__KMCP_MATH bool isnormal(float x) { return __builtin_isnormal(x); }
__KMCP_MATH bool isnormal(double x) { return __builtin_isnormal(x); }
__KMCP_MATH int fpclassify(float x) { return __builtin_fpclassify(FP_NAN, FP_INFINITE, FP_NORMAL, FP_SUBNORMAL, FP_ZERO, x); }
__KMCP_MATH int fpclassify(double x) { return __builtin_fpclassify(FP_NAN, FP_INFINITE, FP_NORMAL, FP_SUBNORMAL, FP_ZERO, x); }
__KMCP_MATH int __isnanf(float x) { return __builtin_isnan(x); }
__KMCP_MATH int __isinff(float x) { return __builtin_isinf(x); }
__KMCP_MATH int __finitef(float x) { return __builtin_isfinite(x); }

// ---- C++ overloads: float arguments stay float (exp(x) on a float is expf), integers go to double
__KMCP_MATH float abs(float x) { return __builtin_fabsf(x); }
__KMCP_MATH double abs(double x) { return __builtin_fabs(x); }
__KMCP_MATH int abs(int x) { return __builtin_abs(x); }
__KMCP_MATH long abs(long x) { return __builtin_labs(x); }
__KMCP_MATH long long abs(long long x) { return __builtin_llabs(x); }
__KMCP_MATH long labs(long x) { return __builtin_labs(x); }
__KMCP_MATH long long llabs(long long x) { return __builtin_llabs(x); }

template <bool, class T = void> struct __kmcp_enable_if {};
template <class T> struct __kmcp_enable_if<true, T> { typedef T type; };
#define __KMCP_INTEGRAL(T) typename __kmcp_enable_if<__is_integral(T), double>::type

#define __KMCP_UNARY(name, fname)                                                                      \
  __KMCP_MATH float name(float x) { return fname(x); }                                                  \
  template <class T> __KMCP_MATH __KMCP_INTEGRAL(T) name(T x) { return name((double)x); }
// two arguments other than (float, float) and (double, double) go to double, as C++ promotes them
template <class A, class B> struct __kmcp_mixed {
  static const bool value = __is_arithmetic(A) && __is_arithmetic(B) && !(__is_same(A, float) && __is_same(B, float)) &&
                            !(__is_same(A, double) && __is_same(B, double));
};
#define __KMCP_BINARY(name, fname)                                                                     \
  __KMCP_MATH float name(float x, float y) { return fname(x, y); }                                      \
  template <class A, class B>                                                                          \
  __KMCP_MATH typename __kmcp_enable_if<__kmcp_mixed<A, B>::value, double>::type name(A x, B y) {      \
    return name((double)x, (double)y);                                                                 \
  }

__KMCP_UNARY(fabs, fabsf)
__KMCP_UNARY(sqrt, sqrtf)
__KMCP_UNARY(rsqrt, rsqrtf)
__KMCP_UNARY(exp, expf)
__KMCP_UNARY(exp2, exp2f)
__KMCP_UNARY(exp10, exp10f)
__KMCP_UNARY(expm1, expm1f)
__KMCP_UNARY(log, logf)
__KMCP_UNARY(log2, log2f)
__KMCP_UNARY(log10, log10f)
__KMCP_UNARY(log1p, log1pf)
__KMCP_UNARY(sin, sinf)
__KMCP_UNARY(cos, cosf)
__KMCP_UNARY(tan, tanf)
__KMCP_UNARY(sinh, sinhf)
__KMCP_UNARY(cosh, coshf)
__KMCP_UNARY(tanh, tanhf)
__KMCP_UNARY(floor, floorf)
__KMCP_UNARY(ceil, ceilf)
__KMCP_UNARY(trunc, truncf)
__KMCP_UNARY(round, roundf)
__KMCP_UNARY(rint, rintf)
__KMCP_UNARY(nearbyint, nearbyintf)
__KMCP_UNARY(cbrt, cbrtf)
__KMCP_BINARY(fmin, fminf)
__KMCP_BINARY(fmax, fmaxf)
__KMCP_BINARY(pow, powf)
__KMCP_BINARY(fmod, fmodf)
__KMCP_BINARY(copysign, copysignf)
__KMCP_BINARY(hypot, hypotf)
__KMCP_BINARY(fdim, fdimf)
// float-only in this file (their double versions are declared unavailable above)
__KMCP_MATH float atan(float x) { return atanf(x); }
__KMCP_MATH float atan2(float y, float x) { return atan2f(y, x); }
__KMCP_MATH float asin(float x) { return asinf(x); }
__KMCP_MATH float acos(float x) { return acosf(x); }
__KMCP_MATH float erf(float x) { return erff(x); }
__KMCP_MATH float erfc(float x) { return erfcf(x); }
__KMCP_MATH float fma(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
__KMCP_MATH float ldexp(float x, int e) { return __builtin_ldexpf(x, e); }
__KMCP_MATH float frexp(float x, int* e) { return __builtin_frexpf(x, e); }
__KMCP_MATH float pow(float x, int n) { return __builtin_powf(x, (float)n); }
__KMCP_MATH double pow(double x, int n) { return pow(x, (double)n); }
__KMCP_MATH float modf(float x, float* whole) { return modff(x, whole); }
__KMCP_MATH void sincos(float x, float* s, float* c) { sincosf(x, s, c); }
