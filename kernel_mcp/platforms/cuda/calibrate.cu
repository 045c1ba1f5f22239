// kernel-mcp calibration (CUDA): this GPU's copy bandwidth, FP32 FMA rate and BF16 matrix rate,
// measured in a few seconds and printed as `key value` lines for kernel-mcp to read
// (kernel_mcp/models/calibration.py reads them; format version 1):
//
//   kernel_mcp_calibration 1
//   device_name <as the runtime names it>
//   arch sm_<major><minor>
//   compute_units <SM count>
//   copy_bytes_per_s <float>         copy_method <text>
//   fma_flops_per_s <float>          fma_method <text>
//   matrix_flops_per_s <float> bf16  matrix_method <text>     (or: matrix_unavailable <why>)
//   clock_mhz <float>                clock_method <text>
//   end
//
// Each figure is the best of several launches timed with CUDA events, after a warm-up launch.
// It runs on the runtime's device 0: kernel-mcp pins it to one GPU with CUDA_VISIBLE_DEVICES.
// Errors go to stderr, with exit status 1.
//
// The matrix rate is warp-level mma.sync (m16n8k16, BF16 into FP32). On sm_90 the tensor cores'
// peak is reached only by the warpgroup instructions (wgmma), so there a measured matrix rate
// below the product's peak is this method's limit, not an error of the table; the program says
// so in its matrix_method line.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define KMCP_THREADS 256
#define KMCP_FMA_CHAINS 8  // independent FP32 chains per thread: enough to hide the FMA latency
#define KMCP_MMA_CHAINS 8  // independent accumulators per warp: no mma.sync waits on the one before it

#define KMCP_CHECK(call)                                                                               \
  do {                                                                                                 \
    cudaError_t kmcp_status = (call);                                                                  \
    if (kmcp_status != cudaSuccess) {                                                                  \
      fprintf(stderr, "calibrate.cu:%d: %s failed: %s\n", __LINE__, #call, cudaGetErrorString(kmcp_status)); \
      exit(1);                                                                                         \
    }                                                                                                  \
  } while (0)

// Device-to-device copy with 16-byte loads and stores; each thread moves 4 vectors per pass of a
// grid-stride loop, so that several loads are in flight before the first store.
__global__ void __launch_bounds__(KMCP_THREADS) kmcp_copy(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const int4 v0 = src[i];
    const int4 v1 = src[i + stride];
    const int4 v2 = src[i + 2 * stride];
    const int4 v3 = src[i + 3 * stride];
    dst[i] = v0;
    dst[i + stride] = v1;
    dst[i + 2 * stride] = v2;
    dst[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__device__ __forceinline__ unsigned long long kmcp_globaltimer() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

// FP32 FMA (FFMA): KMCP_FMA_CHAINS independent chains per thread, all in registers. Every thread
// also reads the SM's cycle counter and the global nanosecond timer around its loop; the first
// thread's four readings go to stamps[0..3], from which the host reads the clock the SM ran at.
__global__ void __launch_bounds__(KMCP_THREADS) kmcp_fma(float* out, unsigned long long* stamps, int iters, float a, float b) {
  float x[KMCP_FMA_CHAINS];
#pragma unroll
  for (int c = 0; c < KMCP_FMA_CHAINS; ++c) x[c] = (float)(threadIdx.x + c) * 1.0e-3f;
  const unsigned long long cycles0 = (unsigned long long)clock64();
  const unsigned long long ns0 = kmcp_globaltimer();
  // the chains' values pass through an (empty) asm after the readings: the loop cannot be moved above them
#pragma unroll
  for (int c = 0; c < KMCP_FMA_CHAINS; ++c) asm volatile("" : "+f"(x[c]));
#pragma unroll 4
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < KMCP_FMA_CHAINS; ++c) x[c] = fmaf(x[c], a, b);
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < KMCP_FMA_CHAINS; ++c) s += x[c];
  // and the sum passes through one before the readings after: the loop cannot be moved below them
  asm volatile("" : "+f"(s));
  const unsigned long long cycles1 = (unsigned long long)clock64();
  const unsigned long long ns1 = kmcp_globaltimer();
  out[(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    stamps[0] = cycles0;
    stamps[1] = cycles1;
    stamps[2] = ns0;
    stamps[3] = ns1;
  }
}

// BF16 mma.sync into FP32 accumulators, KMCP_MMA_CHAINS per warp, operands in registers. The
// FLOPs of one instruction (2 x 16 x 8 x 16 per warp) are written to *flops_per_mma, 0 where the
// build has no such instruction (below sm_80: the host then reports the matrix rate unavailable).
__global__ void __launch_bounds__(KMCP_THREADS) kmcp_mma(float* out, int* flops_per_mma, int iters, unsigned a_bits, unsigned b_bits) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned a0 = a_bits, a1 = a_bits, a2 = a_bits, a3 = a_bits;
  const unsigned b0 = b_bits, b1 = b_bits;
  float d[KMCP_MMA_CHAINS][4];
#pragma unroll
  for (int c = 0; c < KMCP_MMA_CHAINS; ++c) d[c][0] = d[c][1] = d[c][2] = d[c][3] = 0.0f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < KMCP_MMA_CHAINS; ++c) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
          "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
          : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < KMCP_MMA_CHAINS; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  const int flops = 2 * 16 * 8 * 16;
#else
  const float s = 0.0f;  // no BF16 mma.sync below sm_80 (and the host pass, which runs no kernel)
  const int flops = 0;
  (void)iters, (void)a_bits, (void)b_bits;
#endif
  out[(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (blockIdx.x == 0 && threadIdx.x == 0) *flops_per_mma = flops;
}

static const int kReps = 5;            // timed launches per figure; the fastest is kept
static const double kTargetMs = 20.0;  // how long each timed launch of a compute kernel lasts

// The fastest of `reps` launches, in milliseconds, after one warm-up launch.
template <class Launch>
static double best_ms(Launch launch, int reps) {
  cudaEvent_t start, stop;
  KMCP_CHECK(cudaEventCreate(&start));
  KMCP_CHECK(cudaEventCreate(&stop));
  launch();
  KMCP_CHECK(cudaGetLastError());
  KMCP_CHECK(cudaDeviceSynchronize());
  double best = -1.0;
  for (int r = 0; r < reps; ++r) {
    KMCP_CHECK(cudaEventRecord(start, 0));
    launch();
    KMCP_CHECK(cudaGetLastError());
    KMCP_CHECK(cudaEventRecord(stop, 0));
    KMCP_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    KMCP_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (best < 0.0 || ms < best) best = ms;
  }
  KMCP_CHECK(cudaEventDestroy(start));
  KMCP_CHECK(cudaEventDestroy(stop));
  return best;
}

// An iteration count whose launch takes about kTargetMs: grown by 4x until a launch takes 2 ms,
// then scaled.
template <class LaunchIters>
static int iterations_for(LaunchIters launch) {
  int iters = 256;
  for (;;) {
    const double ms = best_ms([&] { launch(iters); }, 1);
    if (ms >= 2.0 || iters >= (1 << 22)) {
      double scaled = iters * kTargetMs / (ms > 1e-3 ? ms : 1e-3);
      if (scaled > (double)(1 << 24)) scaled = (double)(1 << 24);
      if (scaled < 16.0) scaled = 16.0;
      return (int)scaled;
    }
    iters *= 4;
  }
}

// Every SM full: the resident blocks of this kernel per SM times the SMs.
template <class Kernel>
static int full_grid(Kernel kernel, int sms) {
  int per_sm = 0;
  KMCP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, KMCP_THREADS, 0));
  return (per_sm > 0 ? per_sm : 1) * sms;
}

int main() {
  KMCP_CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  KMCP_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const int warps_per_block = KMCP_THREADS / (prop.warpSize > 0 ? prop.warpSize : 32);
  printf("kernel_mcp_calibration 1\n");
  printf("device_name %s\n", prop.name);
  printf("arch sm_%d%d\n", prop.major, prop.minor);
  printf("compute_units %d\n", sms);
  fflush(stdout);

  // -- copy bandwidth: 1 GiB to 1 GiB (far beyond L2), smaller only where it does not fit
  size_t bytes = (size_t)1 << 30;
  int4 *src = NULL, *dst = NULL;
  while (bytes >= ((size_t)64 << 20)) {
    if (cudaMalloc((void**)&src, bytes) == cudaSuccess) {
      if (cudaMalloc((void**)&dst, bytes) == cudaSuccess) break;
      KMCP_CHECK(cudaFree(src));
      src = NULL;
      dst = NULL;
    }
    (void)cudaGetLastError();  // the failed allocation's error, cleared
    bytes /= 2;
  }
  if (src == NULL || dst == NULL) {
    fprintf(stderr, "calibrate.cu: could not allocate two buffers of 64 MiB\n");
    return 1;
  }
  KMCP_CHECK(cudaMemset(src, 1, bytes));
  KMCP_CHECK(cudaMemset(dst, 0, bytes));
  const unsigned long long vectors = bytes / sizeof(int4);
  const int copy_grid = full_grid(kmcp_copy, sms);
  const double copy_ms = best_ms([&] { kmcp_copy<<<copy_grid, KMCP_THREADS>>>(src, dst, vectors); }, kReps);
  printf("copy_bytes_per_s %.6e\n", 2.0 * (double)bytes / (copy_ms * 1e-3));
  printf("copy_method device-to-device copy kernel, %zu MiB to %zu MiB, 16-byte loads and stores, %d blocks of %d threads, "
         "fastest of %d timed launches; bytes = read + written\n", bytes >> 20, bytes >> 20, copy_grid, KMCP_THREADS, kReps);
  fflush(stdout);
  KMCP_CHECK(cudaFree(src));
  KMCP_CHECK(cudaFree(dst));

  // -- FP32 FMA rate, and the SM clock it ran at
  const int fma_grid = full_grid(kmcp_fma, sms);
  const int mma_grid = full_grid(kmcp_mma, sms);
  const int largest_grid = fma_grid > mma_grid ? fma_grid : mma_grid;
  float* out = NULL;
  unsigned long long* stamps = NULL;
  int* flops_per_mma = NULL;
  KMCP_CHECK(cudaMalloc((void**)&out, (size_t)largest_grid * KMCP_THREADS * sizeof(float)));
  KMCP_CHECK(cudaMalloc((void**)&stamps, 4 * sizeof(unsigned long long)));
  KMCP_CHECK(cudaMalloc((void**)&flops_per_mma, sizeof(int)));
  const float fa = 0.999999f, fb = 1.0e-6f;  // keeps every chain finite, whatever the iteration count
  const int fma_iters = iterations_for([&](int n) { kmcp_fma<<<fma_grid, KMCP_THREADS>>>(out, stamps, n, fa, fb); });
  const double fma_ms = best_ms([&] { kmcp_fma<<<fma_grid, KMCP_THREADS>>>(out, stamps, fma_iters, fa, fb); }, kReps);
  const double fma_flops = 2.0 * KMCP_FMA_CHAINS * (double)fma_iters * KMCP_THREADS * (double)fma_grid;
  printf("fma_flops_per_s %.6e\n", fma_flops / (fma_ms * 1e-3));
  printf("fma_method FP32 FMA (fmaf), %d independent chains per thread in registers, %d blocks of %d threads (every SM full), "
         "%d iterations, fastest of %d timed launches; 2 FLOPs per FMA\n", KMCP_FMA_CHAINS, fma_grid, KMCP_THREADS, fma_iters, kReps);
  unsigned long long seen[4] = {0, 0, 0, 0};
  KMCP_CHECK(cudaMemcpy(seen, stamps, sizeof(seen), cudaMemcpyDeviceToHost));  // the last timed launch's
  if (seen[1] > seen[0] && seen[3] > seen[2]) {
    printf("clock_mhz %.1f\n", (double)(seen[1] - seen[0]) * 1e3 / (double)(seen[3] - seen[2]));
    printf("clock_method clock64 cycles over %%globaltimer nanoseconds, one thread of the last timed FMA launch\n");
  }
  fflush(stdout);

  // -- BF16 matrix rate
  const unsigned bf16_pair = 0x3A803A80u;  // two BF16 2^-10: the accumulators stay finite
  kmcp_mma<<<1, KMCP_THREADS>>>(out, flops_per_mma, 1, bf16_pair, bf16_pair);
  KMCP_CHECK(cudaGetLastError());
  KMCP_CHECK(cudaDeviceSynchronize());
  int per_instruction = 0;
  KMCP_CHECK(cudaMemcpy(&per_instruction, flops_per_mma, sizeof(int), cudaMemcpyDeviceToHost));
  if (per_instruction <= 0) {
    printf("matrix_unavailable sm_%d%d: this build has no BF16 mma.sync (it needs sm_80 or later)\n", prop.major, prop.minor);
  } else {
    const int mma_iters = iterations_for([&](int n) { kmcp_mma<<<mma_grid, KMCP_THREADS>>>(out, flops_per_mma, n, bf16_pair, bf16_pair); });
    const double mma_ms = best_ms([&] { kmcp_mma<<<mma_grid, KMCP_THREADS>>>(out, flops_per_mma, mma_iters, bf16_pair, bf16_pair); }, kReps);
    const double mma_flops = (double)per_instruction * KMCP_MMA_CHAINS * (double)mma_iters * warps_per_block * (double)mma_grid;
    printf("matrix_flops_per_s %.6e bf16\n", mma_flops / (mma_ms * 1e-3));
    printf("matrix_method warp-level mma.sync.aligned.m16n8k16 BF16 into FP32 (%d FLOPs per instruction per warp), %d independent "
           "accumulators per warp in registers, %d blocks of %d threads (every SM full), %d iterations, fastest of %d timed launches",
           per_instruction, KMCP_MMA_CHAINS, mma_grid, KMCP_THREADS, mma_iters, kReps);
    if (prop.major == 9) {
      printf("; on sm_90 warp-level mma.sync does not reach the wgmma peak, so a lower figure here is the method's limit, not the table's error");
    } else if (prop.major == 10) {
      printf("; on sm_%d%d warp-level mma.sync does not reach the tcgen05 peak, so a lower figure here is the method's limit, not the table's error",
             prop.major, prop.minor);
    }
    printf("\n");
  }
  KMCP_CHECK(cudaFree(out));
  KMCP_CHECK(cudaFree(stamps));
  KMCP_CHECK(cudaFree(flops_per_mma));
  printf("end\n");
  return 0;
}
