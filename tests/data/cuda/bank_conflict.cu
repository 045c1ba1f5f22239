#include <cstdio>
template <int PAD> __global__ void transpose_read(const float* in, float* out, int iters) {
  __shared__ float tile[32][32 + PAD];
  int tx = threadIdx.x, ty = threadIdx.y;
  const float* src = in + blockIdx.x * 1024;
  for (int r = ty; r < 32; r += 8) tile[r][tx] = src[r * 32 + tx];
  __syncthreads();
  float acc = 0.f;
  for (int it = 0; it < iters; ++it)
    for (int r = ty; r < 32; r += 8) acc += tile[tx][(r + it) & 31];
  out[blockIdx.x * 256 + ty * 32 + tx] = acc;
}
int main() {
  float *in, *out;
  cudaMalloc(&in, 2048 * 1024 * 4); cudaMalloc(&out, 2048 * 256 * 4); cudaMemset(in, 0, 2048 * 1024 * 4);
  transpose_read<0><<<2048, dim3(32, 8)>>>(in, out, 64);
  transpose_read<1><<<2048, dim3(32, 8)>>>(in, out, 64);
  printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
