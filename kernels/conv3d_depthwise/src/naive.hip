// Step 1: the direct translation. One thread per output element (NCDHW);
// each thread fetches its 75 input values and 75 weights straight from
// global memory, testing every tap against the tensor bounds.
#include "portable.h"

extern "C" __global__ void __launch_bounds__(256)
conv3d_naive_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                    bf16* __restrict__ y, int N, int C, int D, int H, int W) {
  const long long total = (long long)N * C * D * H * W;
  const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= total) return;

  // Unflatten idx -> (n, c, d, h, w), w fastest.
  const int ow = (int)(idx % W);
  long long rest = idx / W;
  const int oh = (int)(rest % H);
  rest /= H;
  const int od = (int)(rest % D);
  const long long nc = rest / D;  // n * C + c
  const int c = (int)(nc % C);

  const bf16* xin = x + nc * D * H * W;
  const bf16* wc = w + (long long)c * KMCP_TAPS;
  float acc = 0.0f;
  for (int kd = 0; kd < KMCP_KD; ++kd) {
    for (int kh = 0; kh < KMCP_KH; ++kh) {
      for (int kw = 0; kw < KMCP_KW; ++kw) {
        const int id = od + kd - 1, ih = oh + kh - 2, iw = ow + kw - 2;
        if (id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W) {
          const float xv = to_f32(xin[((long long)id * H + ih) * W + iw]);
          acc += xv * to_f32(wc[(kd * KMCP_KH + kh) * KMCP_KW + kw]);
        }
      }
    }
  }
  y[idx] = to_bf16(acc);
}

#if KMCP_HOST_LAUNCHERS
// x, y: (N, C, D, H, W) bf16; w: (C, 1, 3, 5, 5) bf16. Returns the launch
// status (0 = success) as an int.
extern "C" int launch_conv3d_naive(const void* x, const void* w, void* y,
                                   int N, int C, int D, int H, int W,
                                   void* stream) {
  const long long total = (long long)N * C * D * H * W;
  if (total <= 0) return (int)hipErrorInvalidValue;
  const int threads = 256;
  const long long blocks = (total + threads - 1) / threads;
  if (blocks > 0x7fffffffLL) return (int)hipErrorInvalidValue;
  conv3d_naive_kernel<<<dim3((unsigned)blocks), dim3(threads), 0,
                        (hipStream_t)stream>>>(
      (const bf16*)x, (const bf16*)w, (bf16*)y, N, C, D, H, W);
  return (int)hipGetLastError();
}
#endif
