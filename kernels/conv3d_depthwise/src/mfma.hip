// Step 4: matrix-core formulation (correct, but expected to be slower).
//
// For a fixed channel c, depth d and filter row (kd, kh), a 16 x 16 output
// tile (16 rows h0.., 16 columns w0..) receives
//     out[r][j] += sum_k X[r][k] * T[k][j],   T[k][j] = w[kd][kh][k - j]
// where X holds the 20 input columns w0-2 .. w0+17 of the 16 input rows
// h0+kh-2+r, and T is the banded (Toeplitz) matrix of the 5 width taps. The
// 20 columns are split into two K = 16 halves (columns 0..15 and 16..31 of a
// 32-wide staged row; only 16..19 of the second half meet non-zero taps),
// so each (kd, kh) costs two 16x16x16 bf16 matrix products with fp32
// accumulation: 30 per tile.
//
// A block owns 16 channels of one (n, d) and walks them one at a time (the
// 16-channel batch): all warps build the channel's 30 Toeplitz matrices in
// shared memory, then each warp takes 16x16 tiles of the plane in turn.
// AMD: __builtin_amdgcn_mfma_f32_16x16x16bf16_1k on 64-wide wavefronts.
// NVIDIA: WMMA bf16 16x16x16 fragments (tensor-core HMMA).
// Why it is slow: the banded matrices are 75% zeros, every tile restages a
// 3 x 20 x 32 input box for 256 outputs, and the per-warp staging has little
// parallelism.
#include "portable.h"
#if defined(KMCP_CUDA)
#include <mma.h>
#endif

#define MF_CH 16     // channels per block
#define MF_WARPS 4   // warps (wavefronts) per block
#define MF_T 16      // output tile edge
#define MF_XW 32     // staged input row width (two K halves)
#define MF_XH 20     // staged input rows (16 + 4 halo)
#define MF_PAIRS 15  // (kd, kh) pairs

struct MfmaSmem {
  bf16 toep[MF_PAIRS][2][MF_T * MF_T];       // Toeplitz halves, row-major K x N
  bf16 xs[MF_WARPS][3][MF_XH][MF_XW];        // per-warp input box
  float acc[MF_WARPS][MF_T * MF_T];          // per-warp result staging
};

// acc(16x16, fp32) += A(16x16, row-major, lda) * B(16x16, row-major, ldb).
// The accumulator lives in a per-platform fragment type.
#if defined(KMCP_CUDA)
typedef nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>
    mf_acc_t;
__device__ __forceinline__ void mf_zero(mf_acc_t& acc) {
  nvcuda::wmma::fill_fragment(acc, 0.0f);
}
__device__ __forceinline__ void mf_mma(mf_acc_t& acc, const bf16* A, int lda,
                                       const bf16* B, int ldb) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, bf16,
                         nvcuda::wmma::row_major> a;
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, bf16,
                         nvcuda::wmma::row_major> b;
  nvcuda::wmma::load_matrix_sync(a, A, lda);
  nvcuda::wmma::load_matrix_sync(b, B, ldb);
  nvcuda::wmma::mma_sync(acc, a, b, acc);
}
__device__ __forceinline__ void mf_store(float* D, const mf_acc_t& acc) {
  nvcuda::wmma::store_matrix_sync(D, acc, MF_T, nvcuda::wmma::mem_row_major);
}
#else
typedef float mf_f4 __attribute__((ext_vector_type(4)));
typedef short mf_s4 __attribute__((ext_vector_type(4)));
typedef mf_f4 mf_acc_t;
__device__ __forceinline__ void mf_zero(mf_acc_t& acc) {
  acc = mf_f4{0.0f, 0.0f, 0.0f, 0.0f};
}
// 16x16x16 operand layout on a 64-lane wavefront: lane l holds
// A[l % 16][4*(l/16) + v], B[4*(l/16) + v][l % 16] and
// D[4*(l/16) + v][l % 16] for v = 0..3.
__device__ __forceinline__ void mf_mma(mf_acc_t& acc, const bf16* A, int lda,
                                       const bf16* B, int ldb) {
#if KMCP_AMD_DEVICE
  const int lane = threadIdx.x % KMCP_WARP;
  const int i = lane % 16, k0 = 4 * (lane / 16);
  mf_s4 a, b;
#pragma unroll
  for (int v = 0; v < 4; ++v) {
    a[v] = (short)bf16_bits(A[i * lda + k0 + v]);
    b[v] = (short)bf16_bits(B[(k0 + v) * ldb + i]);
  }
  acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, acc, 0, 0, 0);
#else
  (void)acc; (void)A; (void)lda; (void)B; (void)ldb;  // host pass: unused
#endif
}
__device__ __forceinline__ void mf_store(float* D, const mf_acc_t& acc) {
  const int lane = threadIdx.x % KMCP_WARP;
  const int j = lane % 16, i0 = 4 * (lane / 16);
#pragma unroll
  for (int v = 0; v < 4; ++v) D[(i0 + v) * MF_T + j] = acc[v];
}
#endif

extern "C" __global__ void __launch_bounds__(MF_WARPS * KMCP_WARP)
conv3d_mfma_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                   bf16* __restrict__ y, int N, int C, int D, int H, int W) {
  extern __shared__ __attribute__((aligned(32))) unsigned char mf_raw[];
  MfmaSmem& sm = *reinterpret_cast<MfmaSmem*>(mf_raw);

  const int nd = blockIdx.x;  // n * D + d
  const int n = nd / D, d = nd % D;
  const int c_first = blockIdx.y * MF_CH;
  const int tid = threadIdx.x;
  const int warp = tid / KMCP_WARP, lane = tid % KMCP_WARP;
  const int tiles_w = (W + MF_T - 1) / MF_T;
  const int tiles = tiles_w * ((H + MF_T - 1) / MF_T);
  const long long plane = (long long)H * W;

  for (int ci = 0; ci < MF_CH; ++ci) {
    const int c = c_first + ci;
    if (c >= C) break;  // uniform across the block
    const bf16* xc = x + ((long long)n * C + c) * D * plane;
    bf16* yc = y + (((long long)n * C + c) * D + d) * plane;

    __syncthreads();  // previous channel's matrices are no longer read
    // Toeplitz halves: T_half[k][j] = w[pair][16*half + k - j] when that tap
    // index is in 0..4, else 0.
    for (int e = tid; e < MF_PAIRS * 2 * MF_T * MF_T; e += MF_WARPS * KMCP_WARP) {
      const int j = e % MF_T, k = (e / MF_T) % MF_T;
      const int half = (e / (MF_T * MF_T)) % 2, pair = e / (2 * MF_T * MF_T);
      const int tap = 16 * half + k - j;
      sm.toep[pair][half][k * MF_T + j] =
          (tap >= 0 && tap < KMCP_KW) ? w[(long long)c * KMCP_TAPS + pair * KMCP_KW + tap]
                                      : to_bf16(0.0f);
    }

    for (int t0 = 0; t0 < tiles; t0 += MF_WARPS) {
      const int t = t0 + warp;
      const bool active = t < tiles;  // uniform within a warp
      const int h0 = (t / tiles_w) * MF_T, w0 = (t % tiles_w) * MF_T;
      __syncthreads();  // Toeplitz ready / previous tile fully consumed
      if (active) {
        for (int e = lane; e < 3 * MF_XH * MF_XW; e += KMCP_WARP) {
          const int col = e % MF_XW, row = (e / MF_XW) % MF_XH, kd = e / (MF_XW * MF_XH);
          const int gd = d + kd - 1, gh = h0 + row - 2, gw = w0 + col - 2;
          bf16 v = to_bf16(0.0f);
          if (gd >= 0 && gd < D && gh >= 0 && gh < H && gw >= 0 && gw < W)
            v = xc[(long long)gd * plane + (long long)gh * W + gw];
          sm.xs[warp][kd][row][col] = v;
        }
      }
      __syncthreads();  // staged box visible to the whole warp
      if (active) {
        mf_acc_t acc;
        mf_zero(acc);
#pragma unroll
        for (int pair = 0; pair < MF_PAIRS; ++pair) {
          const int kd = pair / KMCP_KH, kh = pair % KMCP_KH;
          const bf16* a = &sm.xs[warp][kd][kh][0];
          mf_mma(acc, a, MF_XW, sm.toep[pair][0], MF_T);
          mf_mma(acc, a + MF_T, MF_XW, sm.toep[pair][1], MF_T);
        }
        mf_store(sm.acc[warp], acc);
      }
      __syncthreads();  // results visible to every lane of the warp
      if (active) {
        for (int e = lane; e < MF_T * MF_T; e += KMCP_WARP) {
          const int r = e / MF_T, j = e % MF_T;
          if (h0 + r < H && w0 + j < W)
            yc[(long long)(h0 + r) * W + w0 + j] = to_bf16(sm.acc[warp][e]);
        }
      }
    }
  }
}

#if KMCP_HOST_LAUNCHERS
// x, y: (N, C, D, H, W) bf16; w: (C, 1, 3, 5, 5) bf16.
extern "C" int launch_conv3d_mfma(const void* x, const void* w, void* y,
                                  int N, int C, int D, int H, int W,
                                  void* stream) {
  if ((long long)N * C * D * H * W <= 0) return (int)hipErrorInvalidValue;
  const long long nd = (long long)N * D;
  const int groups = (C + MF_CH - 1) / MF_CH;
  if (nd > 0x7fffffffLL || groups > 65535) return (int)hipErrorInvalidValue;
  const int smem = (int)sizeof(MfmaSmem);
  static bool attr_set = false;
  if (!attr_set) {
    hipError_t e = hipFuncSetAttribute((const void*)conv3d_mfma_kernel,
                                       hipFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != hipSuccess) return (int)e;
    attr_set = true;
  }
  conv3d_mfma_kernel<<<dim3((unsigned)nd, (unsigned)groups), dim3(MF_WARPS * KMCP_WARP),
                       smem, (hipStream_t)stream>>>(
      (const bf16*)x, (const bf16*)w, (bf16*)y, N, C, D, H, W);
  return (int)hipGetLastError();
}
#endif
