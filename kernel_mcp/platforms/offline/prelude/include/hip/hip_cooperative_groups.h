// kernel-mcp stand-in for <hip/hip_cooperative_groups.h> (offline device-only compiles): the
// groups an ordinary kernel uses (the block, static tiles of a wavefront, the coalesced threads,
// the grid), with their ranks, sizes, barriers and exchanges, on the prelude's intrinsics.
// HIP's own header needs ROCm's device library (its grid barrier) and the C++ library.
#pragma once
#include "../../kernel_mcp_hip_prelude.h"

namespace cooperative_groups {

class thread_group {
 protected:
  unsigned __size;
  unsigned __rank;
  __device__ thread_group(unsigned size, unsigned rank) : __size(size), __rank(rank) {}

 public:
  __device__ unsigned size() const { return __size; }
  __device__ unsigned num_threads() const { return __size; }
  __device__ unsigned thread_rank() const { return __rank; }
  __device__ bool is_valid() const { return __size != 0; }
};

class thread_block : public thread_group {
  friend __device__ thread_block this_thread_block();
  __device__ thread_block()
      : thread_group(blockDim.x * blockDim.y * blockDim.z, (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) {}

 public:
  __device__ void sync() const { __syncthreads(); }
  __device__ void barrier_wait() const { __syncthreads(); }
  __device__ dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  __device__ dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  __device__ dim3 group_dim() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
  __device__ dim3 dim_threads() const { return group_dim(); }
};
__device__ inline thread_block this_thread_block() { return thread_block(); }

// A grid-wide barrier needs a cooperative launch; HIP's comes from ROCm's device library. This one
// counts arrivals in a device-scope counter and spins, which is its shape of code.
__device__ inline unsigned __kmcp_grid_arrivals;
class grid_group : public thread_group {
  friend __device__ grid_group this_grid();
  __device__ grid_group()
      : thread_group(gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z,
                     ((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * (blockDim.x * blockDim.y * blockDim.z) +
                         (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) {}

 public:
  __device__ bool is_valid() const { return true; }
  __device__ void sync() const {
    unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
      unsigned ticket = __hip_atomic_fetch_add(&__kmcp_grid_arrivals, 1u, __ATOMIC_ACQ_REL, __HIP_MEMORY_SCOPE_AGENT);
      unsigned goal = (ticket / blocks + 1) * blocks;
      while (__hip_atomic_load(&__kmcp_grid_arrivals, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT) < goal) __builtin_amdgcn_s_sleep(1);
    }
    __syncthreads();
  }
  __device__ dim3 group_dim() const { return dim3(gridDim.x, gridDim.y, gridDim.z); }
};
__device__ inline grid_group this_grid() { return grid_group(); }

// The threads of a wavefront that are active here.
class coalesced_group : public thread_group {
  unsigned long long __mask;
  friend __device__ coalesced_group coalesced_threads();
  __device__ explicit coalesced_group(unsigned long long mask)
      : thread_group(__builtin_popcountll(mask), __builtin_popcountll(mask & __lanemask_lt())), __mask(mask) {}
  __device__ int __lane_of(unsigned rank) const {  // the lane holding the rank-th active thread
    unsigned long long m = __mask;
    for (unsigned i = 0; i < rank; ++i) m &= m - 1;
    return __builtin_ctzll(m);
  }

 public:
  __device__ void sync() const { __syncwarp(__mask); }
  __device__ unsigned long long ballot(int pred) const { return __ballot(pred) & __mask; }
  __device__ int any(int pred) const { return ballot(pred) != 0; }
  __device__ int all(int pred) const { return ballot(pred) == __mask; }
  template <class T> __device__ T shfl(T v, int rank) const { return __kmcp_bpermute(v, __lane_of((unsigned)rank % size())); }
};
__device__ inline coalesced_group coalesced_threads() { return coalesced_group(__activemask()); }

// A static tile: Size consecutive threads of a wavefront (a power of two up to 64).
template <unsigned Size> class thread_block_tile : public thread_group {
  static_assert(Size && Size <= 64 && (Size & (Size - 1)) == 0, "a tile is a power of two of at most 64 threads (one wavefront)");

 public:
  __device__ thread_block_tile() : thread_group(Size, __lane_id() & (Size - 1)) {}
  static constexpr unsigned num_threads_static = Size;
  __device__ void sync() const { __syncwarp(); }
  __device__ unsigned meta_group_rank() const { return this_thread_block().thread_rank() / Size; }
  __device__ unsigned meta_group_size() const { return (this_thread_block().size() + Size - 1) / Size; }
  template <class T> __device__ T shfl(T v, int src) const { return __shfl(v, src, Size); }
  template <class T> __device__ T shfl_xor(T v, unsigned mask) const { return __shfl_xor(v, (int)mask, Size); }
  template <class T> __device__ T shfl_down(T v, unsigned delta) const { return __shfl_down(v, delta, Size); }
  template <class T> __device__ T shfl_up(T v, unsigned delta) const { return __shfl_up(v, delta, Size); }
  __device__ unsigned long long ballot(int pred) const {
    unsigned shift = (__lane_id() & ~(Size - 1));
    unsigned long long bits = __ballot(pred) >> shift;
    return Size == 64 ? bits : bits & ((1ull << Size) - 1);
  }
  __device__ int any(int pred) const { return ballot(pred) != 0; }
  __device__ int all(int pred) const { return ballot(pred) == (Size == 64 ? ~0ull : (1ull << Size) - 1); }
};

template <unsigned Size, class Parent> __device__ inline thread_block_tile<Size> tiled_partition(const Parent&) { return thread_block_tile<Size>(); }

template <class Group> __device__ inline void sync(const Group& g) { g.sync(); }
template <class Group> __device__ inline unsigned group_size(const Group& g) { return g.size(); }
template <class Group> __device__ inline unsigned thread_rank(const Group& g) { return g.thread_rank(); }

}  // namespace cooperative_groups
