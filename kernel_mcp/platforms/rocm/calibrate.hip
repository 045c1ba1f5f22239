// kernel-mcp calibration (HIP): this GPU's copy bandwidth, packed FP32 FMA rate and BF16 matrix
// rate, measured in a few seconds and printed as `key value` lines for kernel-mcp to read
// (kernel_mcp/models/calibration.py reads them; format version 1):
//
//   kernel_mcp_calibration 1
//   device_name <as the runtime names it>
//   arch <gfx target>
//   compute_units <CU count>
//   copy_bytes_per_s <float>         copy_method <text>
//   fma_flops_per_s <float>          fma_method <text>
//   matrix_flops_per_s <float> bf16  matrix_method <text>     (or: matrix_unavailable <why>)
//   end
//
// Each figure is the best of several launches timed with HIP events, after a warm-up launch.
// It runs on the runtime's device 0: kernel-mcp pins it to one GPU with HIP_VISIBLE_DEVICES.
// Errors go to stderr, with exit status 1. It prints no clock: on these GPUs clock64()'s counter
// need not run at the shader clock, so the cycles it counts would not say which clock ran.
//
// The kernels are device code only and compile without ROCm (kernel-mcp's offline clang, for
// gfx950 and gfx942); the host part is compiled by hipcc only (it is not in the device pass).

#include <hip/hip_runtime.h>

#define KMCP_THREADS 256
#define KMCP_FMA_CHAINS 8   // independent packed-FP32 chains per thread: enough to hide the VALU latency
#define KMCP_MFMA_CHAINS 4  // independent accumulators per wave: no MFMA waits on the one before it

typedef unsigned int kmcp_u32x4 __attribute__((ext_vector_type(4)));
typedef unsigned int kmcp_u32x2 __attribute__((ext_vector_type(2)));
typedef float kmcp_f32x2 __attribute__((ext_vector_type(2)));
typedef float kmcp_f32x16 __attribute__((ext_vector_type(16)));

// Device-to-device copy with 16-byte loads and stores; each thread moves 4 vectors per pass of a
// grid-stride loop, so that several loads are in flight before the first store.
__global__ __launch_bounds__(KMCP_THREADS) void kmcp_copy(const kmcp_u32x4* __restrict__ src, kmcp_u32x4* __restrict__ dst, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    kmcp_u32x4 v0 = src[i], v1 = src[i + stride], v2 = src[i + 2 * stride], v3 = src[i + 3 * stride];
    dst[i] = v0;
    dst[i + stride] = v1;
    dst[i + 2 * stride] = v2;
    dst[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__device__ __forceinline__ kmcp_f32x2 kmcp_fma2(kmcp_f32x2 x, kmcp_f32x2 a, kmcp_f32x2 b) {
#if __has_builtin(__builtin_elementwise_fma)
  return __builtin_elementwise_fma(x, a, b);
#else
#pragma clang fp contract(fast)
  return x * a + b;  // contracted into one FMA (an older clang without the elementwise builtin)
#endif
}

// Packed FP32 FMA (v_pk_fma_f32: two FMAs per lane per instruction, the rate the product tables
// quote as "vector FP32"): KMCP_FMA_CHAINS independent chains per thread, all in registers.
__global__ __launch_bounds__(KMCP_THREADS) void kmcp_fma(float* out, int iters, float a, float b) {
  kmcp_f32x2 x[KMCP_FMA_CHAINS];
  const kmcp_f32x2 va = {a, a}, vb = {b, b};
#pragma unroll
  for (int c = 0; c < KMCP_FMA_CHAINS; ++c) x[c] = (kmcp_f32x2){(float)(threadIdx.x + c), (float)(threadIdx.x + 2 * c + 1)} * 1.0e-3f;
#pragma unroll 4
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < KMCP_FMA_CHAINS; ++c) x[c] = kmcp_fma2(x[c], va, vb);
  }
  kmcp_f32x2 s = x[0];
#pragma unroll
  for (int c = 1; c < KMCP_FMA_CHAINS; ++c) s += x[c];
  out[(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x] = s.x + s.y;
}

// BF16 MFMA into FP32, KMCP_MFMA_CHAINS accumulators per wave, operands in registers. The FLOPs
// of one instruction (2 x M x N x K per wave) are written to *flops_per_mfma, 0 where this target
// has none of these instructions (then the host reports the matrix rate as unavailable).
__global__ __launch_bounds__(KMCP_THREADS) void kmcp_mfma(float* out, int* flops_per_mfma, int iters, unsigned a_bits, unsigned b_bits) {
#if defined(__gfx950__)
  typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
  const bf16x8 a = __builtin_bit_cast(bf16x8, (kmcp_u32x4){a_bits, a_bits, a_bits, a_bits});
  const bf16x8 b = __builtin_bit_cast(bf16x8, (kmcp_u32x4){b_bits, b_bits, b_bits, b_bits});
  const int flops = 2 * 32 * 32 * 16;
  kmcp_f32x16 acc[KMCP_MFMA_CHAINS];
#pragma unroll
  for (int c = 0; c < KMCP_MFMA_CHAINS; ++c) acc[c] = (kmcp_f32x16)(0.0f);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < KMCP_MFMA_CHAINS; ++c) acc[c] = __builtin_amdgcn_mfma_f32_32x32x16_bf16(a, b, acc[c], 0, 0, 0);
  }
#elif defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
  typedef short bf16x4_bits __attribute__((ext_vector_type(4)));
  const bf16x4_bits a = __builtin_bit_cast(bf16x4_bits, (kmcp_u32x2){a_bits, a_bits});
  const bf16x4_bits b = __builtin_bit_cast(bf16x4_bits, (kmcp_u32x2){b_bits, b_bits});
  const int flops = 2 * 32 * 32 * 8;
  kmcp_f32x16 acc[KMCP_MFMA_CHAINS];
#pragma unroll
  for (int c = 0; c < KMCP_MFMA_CHAINS; ++c) acc[c] = (kmcp_f32x16)(0.0f);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < KMCP_MFMA_CHAINS; ++c) acc[c] = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(a, b, acc[c], 0, 0, 0);
  }
#else
  const int flops = 0;  // no BF16 MFMA on this target (and the host pass, which runs no kernel)
  kmcp_f32x16 acc[1] = {(kmcp_f32x16)(0.0f)};
  (void)iters, (void)a_bits, (void)b_bits;
#endif
  float s = 0.0f;
  for (int c = 0; c < (int)(sizeof(acc) / sizeof(acc[0])); ++c) {
#pragma unroll
    for (int e = 0; e < 16; ++e) s += acc[c][e];
  }
  out[(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (blockIdx.x == 0 && threadIdx.x == 0) *flops_per_mfma = flops;
}

#if !defined(__HIP_DEVICE_COMPILE__)
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define KMCP_CHECK(call)                                                                              \
  do {                                                                                                \
    hipError_t kmcp_status = (call);                                                                  \
    if (kmcp_status != hipSuccess) {                                                                  \
      fprintf(stderr, "calibrate.hip:%d: %s failed: %s\n", __LINE__, #call, hipGetErrorString(kmcp_status)); \
      exit(1);                                                                                        \
    }                                                                                                 \
  } while (0)

static const int kReps = 5;            // timed launches per figure; the fastest is kept
static const double kTargetMs = 20.0;  // how long each timed launch of a compute kernel lasts

// The fastest of `reps` launches, in milliseconds, after one warm-up launch.
template <class Launch>
static double best_ms(Launch launch, int reps) {
  hipEvent_t start, stop;
  KMCP_CHECK(hipEventCreate(&start));
  KMCP_CHECK(hipEventCreate(&stop));
  launch();
  KMCP_CHECK(hipGetLastError());
  KMCP_CHECK(hipDeviceSynchronize());
  double best = -1.0;
  for (int r = 0; r < reps; ++r) {
    KMCP_CHECK(hipEventRecord(start, 0));
    launch();
    KMCP_CHECK(hipGetLastError());
    KMCP_CHECK(hipEventRecord(stop, 0));
    KMCP_CHECK(hipEventSynchronize(stop));
    float ms = 0.0f;
    KMCP_CHECK(hipEventElapsedTime(&ms, start, stop));
    if (best < 0.0 || ms < best) best = ms;
  }
  KMCP_CHECK(hipEventDestroy(start));
  KMCP_CHECK(hipEventDestroy(stop));
  return best;
}

// An iteration count whose launch takes about kTargetMs: grown by 4x until a launch takes 2 ms,
// then scaled.
template <class LaunchIters>
static int iterations_for(LaunchIters launch) {
  int iters = 256;
  for (;;) {
    double ms = best_ms([&] { launch(iters); }, 1);
    if (ms >= 2.0 || iters >= (1 << 22)) {
      double scaled = iters * kTargetMs / (ms > 1e-3 ? ms : 1e-3);
      if (scaled > (double)(1 << 24)) scaled = (double)(1 << 24);
      if (scaled < 16.0) scaled = 16.0;
      return (int)scaled;
    }
    iters *= 4;
  }
}

// Every CU full: the resident blocks of this kernel per CU times the CUs.
static int full_grid(const void* kernel, int compute_units) {
  int per_cu = 0;
  KMCP_CHECK(hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_cu, kernel, KMCP_THREADS, 0));
  return (per_cu > 0 ? per_cu : 1) * compute_units;
}

int main() {
  KMCP_CHECK(hipSetDevice(0));
  hipDeviceProp_t prop;
  KMCP_CHECK(hipGetDeviceProperties(&prop, 0));
  char arch[256];
  snprintf(arch, sizeof(arch), "%s", prop.gcnArchName);
  char* colon = strchr(arch, ':');  // gfx942:sramecc+:xnack- -> gfx942
  if (colon != NULL) *colon = '\0';
  const int units = prop.multiProcessorCount;
  const int waves_per_block = KMCP_THREADS / (prop.warpSize > 0 ? prop.warpSize : 64);
  printf("kernel_mcp_calibration 1\n");
  printf("device_name %s\n", prop.name);
  printf("arch %s\n", arch);
  printf("compute_units %d\n", units);
  fflush(stdout);

  // -- copy bandwidth: 1 GiB to 1 GiB (far beyond every cache level), smaller only where it does not fit
  size_t bytes = (size_t)1 << 30;
  kmcp_u32x4 *src = NULL, *dst = NULL;
  while (bytes >= ((size_t)64 << 20)) {
    if (hipMalloc((void**)&src, bytes) == hipSuccess) {
      if (hipMalloc((void**)&dst, bytes) == hipSuccess) break;
      KMCP_CHECK(hipFree(src));
      src = NULL;
    }
    (void)hipGetLastError();  // the failed allocation's error, cleared
    bytes /= 2;
  }
  if (src == NULL || dst == NULL) {
    fprintf(stderr, "calibrate.hip: could not allocate two buffers of 64 MiB\n");
    return 1;
  }
  KMCP_CHECK(hipMemset(src, 1, bytes));
  KMCP_CHECK(hipMemset(dst, 0, bytes));
  const unsigned long long vectors = bytes / sizeof(kmcp_u32x4);
  const int copy_grid = full_grid(reinterpret_cast<const void*>(&kmcp_copy), units);
  const double copy_ms = best_ms([&] { kmcp_copy<<<copy_grid, KMCP_THREADS>>>(src, dst, vectors); }, kReps);
  printf("copy_bytes_per_s %.6e\n", 2.0 * (double)bytes / (copy_ms * 1e-3));
  printf("copy_method device-to-device copy kernel, %zu MiB to %zu MiB, 16-byte loads and stores, %d blocks of %d threads, "
         "fastest of %d timed launches; bytes = read + written\n", bytes >> 20, bytes >> 20, copy_grid, KMCP_THREADS, kReps);
  fflush(stdout);
  KMCP_CHECK(hipFree(src));
  KMCP_CHECK(hipFree(dst));

  // -- packed FP32 FMA rate
  const int fma_grid = full_grid(reinterpret_cast<const void*>(&kmcp_fma), units);
  int mfma_grid = full_grid(reinterpret_cast<const void*>(&kmcp_mfma), units);
  const int largest_grid = fma_grid > mfma_grid ? fma_grid : mfma_grid;
  float* out = NULL;
  int* flops_per_mfma = NULL;
  KMCP_CHECK(hipMalloc((void**)&out, (size_t)largest_grid * KMCP_THREADS * sizeof(float)));
  KMCP_CHECK(hipMalloc((void**)&flops_per_mfma, sizeof(int)));
  const float fa = 0.999999f, fb = 1.0e-6f;  // keeps every chain finite, whatever the iteration count
  const int fma_iters = iterations_for([&](int n) { kmcp_fma<<<fma_grid, KMCP_THREADS>>>(out, n, fa, fb); });
  const double fma_ms = best_ms([&] { kmcp_fma<<<fma_grid, KMCP_THREADS>>>(out, fma_iters, fa, fb); }, kReps);
  const double fma_flops = 2.0 * 2.0 * KMCP_FMA_CHAINS * (double)fma_iters * KMCP_THREADS * (double)fma_grid;
  printf("fma_flops_per_s %.6e\n", fma_flops / (fma_ms * 1e-3));
  printf("fma_method packed FP32 FMA (v_pk_fma_f32), %d independent chains per thread in registers, %d blocks of %d threads "
         "(every CU full), %d iterations, fastest of %d timed launches; two FMAs per instruction, 2 FLOPs per FMA\n", KMCP_FMA_CHAINS, fma_grid, KMCP_THREADS,
         fma_iters, kReps);
  fflush(stdout);

  // -- BF16 matrix rate
  const unsigned bf16_pair = 0x3A803A80u;  // two BF16 2^-10: the accumulators stay finite
  kmcp_mfma<<<1, KMCP_THREADS>>>(out, flops_per_mfma, 1, bf16_pair, bf16_pair);
  KMCP_CHECK(hipGetLastError());
  KMCP_CHECK(hipDeviceSynchronize());
  int per_instruction = 0;
  KMCP_CHECK(hipMemcpy(&per_instruction, flops_per_mfma, sizeof(int), hipMemcpyDeviceToHost));
  if (per_instruction <= 0) {
    printf("matrix_unavailable %s has no BF16 MFMA instruction this program uses (gfx90a, gfx940-gfx942, gfx950)\n", arch);
  } else {
    const int mfma_iters = iterations_for([&](int n) { kmcp_mfma<<<mfma_grid, KMCP_THREADS>>>(out, flops_per_mfma, n, bf16_pair, bf16_pair); });
    const double mfma_ms = best_ms([&] { kmcp_mfma<<<mfma_grid, KMCP_THREADS>>>(out, flops_per_mfma, mfma_iters, bf16_pair, bf16_pair); }, kReps);
    const double mfma_flops = (double)per_instruction * KMCP_MFMA_CHAINS * (double)mfma_iters * waves_per_block * (double)mfma_grid;
    printf("matrix_flops_per_s %.6e bf16\n", mfma_flops / (mfma_ms * 1e-3));
    printf("matrix_method BF16 MFMA into FP32 (%s, %d FLOPs per instruction per wave), %d independent accumulators per wave in "
           "registers, %d blocks of %d threads (every CU full), %d iterations, fastest of %d timed launches\n",
           per_instruction == 2 * 32 * 32 * 16 ? "v_mfma_f32_32x32x16_bf16" : "v_mfma_f32_32x32x8_bf16", per_instruction,
           KMCP_MFMA_CHAINS, mfma_grid, KMCP_THREADS, mfma_iters, kReps);
  }
  KMCP_CHECK(hipFree(out));
  KMCP_CHECK(hipFree(flops_per_mfma));
  printf("end\n");
  return 0;
}
#endif
