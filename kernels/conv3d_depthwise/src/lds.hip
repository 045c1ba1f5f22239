// Step 3: input tile + halo staged once per block in shared memory (LDS),
// weights in registers, every thread reads its taps from shared memory.
// The kernel body lives in lds_common.h (shared with step 5).
#include "lds_common.h"

extern "C" __global__ void __launch_bounds__(LDS_THREADS)
conv3d_lds_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                  bf16* __restrict__ y, int N, int C, int D, int H, int W) {
  conv3d_lds_body<false>(x, w, y, N, C, D, H, W);
}

#if KMCP_HOST_LAUNCHERS
// x, y: (N, C, D, H, W) bf16; w: (C, 1, 3, 5, 5) bf16.
extern "C" int launch_conv3d_lds(const void* x, const void* w, void* y, int N,
                                 int C, int D, int H, int W, void* stream) {
  return conv3d_lds_launch(conv3d_lds_kernel, x, w, y, N, C, D, H, W, stream);
}
#endif
