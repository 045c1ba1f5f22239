// Step 5: step 3 plus sched_group_barrier hints (AMDGPU) that interleave the
// LDS reads with the FMAs. Same algorithm and arithmetic as step 3; on NVIDIA
// the hints vanish and this builds the same kernel under another name.
#include "lds_common.h"

extern "C" __global__ void __launch_bounds__(LDS_THREADS)
conv3d_lds_sgb_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                      bf16* __restrict__ y, int N, int C, int D, int H, int W) {
  conv3d_lds_body<true>(x, w, y, N, C, D, H, W);
}

#if KMCP_HOST_LAUNCHERS
// x, y: (N, C, D, H, W) bf16; w: (C, 1, 3, 5, 5) bf16.
extern "C" int launch_conv3d_lds_sgb(const void* x, const void* w, void* y,
                                     int N, int C, int D, int H, int W,
                                     void* stream) {
  return conv3d_lds_launch(conv3d_lds_sgb_kernel, x, w, y, N, C, D, H, W,
                           stream);
}
#endif
