// Step 2: channels-last. Input and output are NDHWC and the weights come as
// (3, 5, 5, C), so the 32 (or 64) threads of a warp work on 32 (or 64)
// neighbouring channels of one spatial position: every load and store of a
// warp touches one contiguous run of memory. Still one output per thread and
// no reuse of loaded values between threads.
#include "portable.h"

extern "C" __global__ void __launch_bounds__(256)
conv3d_ndhwc_kernel(const bf16* __restrict__ x, const bf16* __restrict__ wt,
                    bf16* __restrict__ y, int N, int C, int D, int H, int W) {
  const long long total = (long long)N * D * H * W * C;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) return;

  // Unflatten idx -> (n, d, h, w, c), c fastest.
  const int c = (int)(idx % C);
  long long rest = idx / C;
  const int ow = (int)(rest % W);
  rest /= W;
  const int oh = (int)(rest % H);
  rest /= H;
  const int od = (int)(rest % D);
  const long long n = rest / D;

  const bf16* xn = x + n * D * H * W * C + c;
  float acc = 0.0f;
  for (int kd = 0; kd < KMCP_KD; ++kd) {
    const int id = od + kd - 1;
    if (id < 0 || id >= D) continue;
    for (int kh = 0; kh < KMCP_KH; ++kh) {
      const int ih = oh + kh - 2;
      if (ih < 0 || ih >= H) continue;
      for (int kw = 0; kw < KMCP_KW; ++kw) {
        const int iw = ow + kw - 2;
        if (iw < 0 || iw >= W) continue;
        const int tap = (kd * KMCP_KH + kh) * KMCP_KW + kw;
        acc += to_f32(xn[(((long long)id * H + ih) * W + iw) * C]) *
               to_f32(wt[(long long)tap * C + c]);
      }
    }
  }
  y[idx] = to_bf16(acc);
}

#if KMCP_HOST_LAUNCHERS
// x, y: (N, D, H, W, C) bf16; wt: (3, 5, 5, C) bf16 (tap-major weights).
extern "C" int launch_conv3d_ndhwc(const void* x, const void* wt, void* y,
                                   int N, int C, int D, int H, int W,
                                   void* stream) {
  const long long total = (long long)N * C * D * H * W;
  if (total <= 0) return (int)hipErrorInvalidValue;
  const int threads = 256;
  const long long blocks = (total + threads - 1) / threads;
  if (blocks > 0x7fffffffLL) return (int)hipErrorInvalidValue;
  conv3d_ndhwc_kernel<<<dim3((unsigned)blocks), dim3(threads), 0,
                        (hipStream_t)stream>>>(
      (const bf16*)x, (const bf16*)wt, (bf16*)y, N, C, D, H, W);
  return (int)hipGetLastError();
}
#endif
