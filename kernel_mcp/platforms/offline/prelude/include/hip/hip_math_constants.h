// kernel-mcp stand-in for <hip/hip_math_constants.h> (offline device-only compiles).
#pragma once
#define HIP_INF_F __builtin_huge_valf()
#define HIP_NAN_F __builtin_nanf("")
#define HIP_MIN_DENORM_F 1.40129846e-45f
#define HIP_MAX_NORMAL_F 3.40282347e+38f
#define HIP_NEG_ZERO_F -0.0f
#define HIP_ZERO_F 0.0f
#define HIP_ONE_F 1.0f
#define HIP_SQRT_HALF_F 0.707106781f
#define HIP_SQRT_TWO_F 1.414213562f
#define HIP_PI_F 3.141592654f
#define HIP_PIO2_F 1.570796327f
#define HIP_2_OVER_PI_F 0.636619772f
#define HIP_L2E_F 1.442695041f
#define HIP_LN2_F 0.693147181f
#define HIP_INF __builtin_huge_val()
#define HIP_NAN __builtin_nan("")
#define HIP_PI 3.1415926535897931e+0
#define HIP_L2E 1.4426950408889634e+0
#define HIP_LN2 6.9314718055994529e-1
