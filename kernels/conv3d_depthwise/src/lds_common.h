// Shared by step 3 (lds.hip) and step 5 (lds_sgb.hip): an NCDHW kernel that
// stages the input tile plus its halo in shared memory (LDS) once per block.
//
// Block = 256 threads covering LDS_TW x LDS_TH outputs of one (n, c) plane for
// LDS_TD consecutive depths. The block copies the (TD+2) x (TH+4) x (TW+4)
// input box (zeros outside the tensor) into shared memory as fp32, keeps the
// channel's 75 weights in registers, and each thread then produces its
// LDS_TD outputs from shared memory alone.
//
// kSchedHints = true adds AMDGPU sched_group_barrier hints that ask the
// scheduler to alternate groups of LDS reads with groups of FMAs instead of
// hoisting all 75 reads ahead of the arithmetic (fewer live VGPRs, higher
// occupancy). The arithmetic is identical, so both steps give bit-identical
// results; on NVIDIA the hints compile to nothing.
#pragma once
#include "portable.h"

#define LDS_TW 32
#define LDS_TH 8
#define LDS_TD 4
#define LDS_THREADS (LDS_TW * LDS_TH)
#define LDS_BW (LDS_TW + 4)
#define LDS_BH (LDS_TH + 4)
#define LDS_BD (LDS_TD + 2)

template <bool kSchedHints>
__device__ __forceinline__ void conv3d_lds_body(const bf16* __restrict__ x,
                                                const bf16* __restrict__ w,
                                                bf16* __restrict__ y, int N,
                                                int C, int D, int H, int W) {
  __shared__ float tile[LDS_BD][LDS_BH][LDS_BW];

  // blockIdx.x -> (tile along W, tile along H, depth chunk, n*C + c).
  const int tiles_w = (W + LDS_TW - 1) / LDS_TW;
  const int tiles_h = (H + LDS_TH - 1) / LDS_TH;
  const int chunks_d = (D + LDS_TD - 1) / LDS_TD;
  long long b = blockIdx.x;
  const int tw = (int)(b % tiles_w);
  b /= tiles_w;
  const int th = (int)(b % tiles_h);
  b /= tiles_h;
  const int dc = (int)(b % chunks_d);
  const long long nc = b / chunks_d;
  const int c = (int)(nc % C);
  const int w0 = tw * LDS_TW, h0 = th * LDS_TH, d0 = dc * LDS_TD;

  const bf16* xin = x + nc * D * H * W;
  bf16* yout = y + nc * D * H * W;

  // Cooperative fill of the input box (fp32, zero padded).
  const int tid = threadIdx.x;
  for (int e = tid; e < LDS_BD * LDS_BH * LDS_BW; e += LDS_THREADS) {
    const int col = e % LDS_BW;
    const int row = (e / LDS_BW) % LDS_BH;
    const int pl = e / (LDS_BW * LDS_BH);
    const int gd = d0 + pl - 1, gh = h0 + row - 2, gw = w0 + col - 2;
    float v = 0.0f;
    if (gd >= 0 && gd < D && gh >= 0 && gh < H && gw >= 0 && gw < W)
      v = to_f32(xin[((long long)gd * H + gh) * W + gw]);
    tile[pl][row][col] = v;
  }

  // The channel's filter, widened once into registers.
  float wr[KMCP_TAPS];
#pragma unroll
  for (int t = 0; t < KMCP_TAPS; ++t) wr[t] = to_f32(w[(long long)c * KMCP_TAPS + t]);

  __syncthreads();

  const int tx = tid % LDS_TW, ty = tid / LDS_TW;
  const int ow = w0 + tx, oh = h0 + ty;
  for (int dd = 0; dd < LDS_TD; ++dd) {
    float acc = 0.0f;
#pragma unroll
    for (int kd = 0; kd < KMCP_KD; ++kd) {
#pragma unroll
      for (int kh = 0; kh < KMCP_KH; ++kh) {
#pragma unroll
        for (int kw = 0; kw < KMCP_KW; ++kw) {
          acc = fmaf(wr[(kd * KMCP_KH + kh) * KMCP_KW + kw],
                     tile[dd + kd][ty + kh][tx + kw], acc);
        }
      }
    }
    if (kSchedHints) {
      // 15 rounds of "5 LDS reads, then 5 VALU ops" for the 75 taps above.
#pragma unroll
      for (int r = 0; r < KMCP_KD * KMCP_KH; ++r) {
        KMCP_SCHED_GROUP_BARRIER(0x100, 5, 0);
        KMCP_SCHED_GROUP_BARRIER(0x002, 5, 0);
      }
    }
    const int od = d0 + dd;
    if (od < D && oh < H && ow < W)
      yout[((long long)od * H + oh) * W + ow] = to_bf16(acc);
  }
}

#if KMCP_HOST_LAUNCHERS
typedef void (*conv3d_lds_kernel_t)(const bf16*, const bf16*, bf16*, int, int,
                                    int, int, int);

static inline int conv3d_lds_launch(conv3d_lds_kernel_t kernel, const void* x,
                                    const void* w, void* y, int N, int C,
                                    int D, int H, int W, void* stream) {
  if ((long long)N * C * D * H * W <= 0) return (int)hipErrorInvalidValue;
  const long long blocks = (long long)N * C * ((D + LDS_TD - 1) / LDS_TD) *
                           ((H + LDS_TH - 1) / LDS_TH) *
                           ((W + LDS_TW - 1) / LDS_TW);
  if (blocks > 0x7fffffffLL) return (int)hipErrorInvalidValue;
  kernel<<<dim3((unsigned)blocks), dim3(LDS_THREADS), 0, (hipStream_t)stream>>>(
      (const bf16*)x, (const bf16*)w, (bf16*)y, N, C, D, H, W);
  return (int)hipGetLastError();
}
#endif
