// Step 6: the fast variant (NCDHW in, NCDHW out, fp32 accumulation).
// This is the file to edit when optimizing; its kernels are conv3d_fast*.
//
// Work split. A block owns one (n, c) and a box of td x TH x TW outputs,
// TW = 4 * segs, TH = RH * hch * groups. Thread (dl, hc, seg) computes 4
// adjacent output columns of `groups` runs of RH output rows at depth
// d0 + dl.
//
// 1. Fill. The (td + 2) x (TH + 4) x (TW + 4) input box (zeros outside the
//    tensor) is copied to shared memory as fp32, so each value is widened
//    once rather than at every use. A small table first records where each
//    box row starts in global memory (or -1 outside the tensor); then each
//    thread owns one column piece of a run of consecutive box rows and
//    issues all of its loads before storing any, so their latencies overlap
//    and the block waits for memory once. Box column cc holds global column
//    w0 - 2 + cc, so that every compute window below starts 16-byte aligned.
//    Three ways to copy a row, the widest the shape allows:
//    - 16-byte pieces (8 bf16) when W and TW are multiples of 8 and x is
//      16-byte aligned: ~21 SASS instructions per 8 values;
//    - 8-byte pieces (4 bf16) when W is a multiple of 4: ~15 per 4 values
//      (v3's fill took ~20 per 4 values, plus ~400 of setup per thread);
//    - element loads otherwise (odd widths).
// 2. Compute, one filter plane kd at a time, so only its 25 weights sit in
//    registers (from shared memory): each of the thread's RH + 4 input rows
//    is read once as an 8-wide window (two 16-byte shared loads) and feeds
//    every output row it touches: up to 5 kh x 5 kw x 4 columns = 100 FMAs
//    per window. Accumulators acc[RH][4] use compile-time indices (fully
//    unrolled), so they stay in registers; results leave as 8-byte stores.
//    About 80 registers per thread let three 256-thread blocks share an H100
//    SM, so one block's fill overlaps the others' arithmetic. On CUDA every RH
//    is also built for 64 registers (four blocks): a few more instructions,
//    but where shared memory lets a fourth block in, more fill latency is
//    hidden (x3d_res2/res4, mnet3d_late: 3-9% faster on the H100). The AMD
//    build has one instance per RH, at the most waves per SIMD its loop fits
//    without spilling (fast_plan.h explains the two lists).
// Every runtime division (block index, table rows, thread roles) is a
// multiply-high by a reciprocal the host computes (FastDiv): the generic
// integer divisions they replace cost ~20 instructions each, and v3's block
// setup was ~12% of all issued instructions. A few NVIDIA-only helpers
// (inline PTX, guarded by KMCP_CUDA) keep the fill and the output stores
// free of compiler detours; the HIP build takes their plain C++ versions.
// The host picks (instance, segs, hch, td, groups) per shape with a cost
// model (fast_plan.h) fitted to sweeps on an H100 (see RESULTS.md). It plans
// with the limits of the device it runs on (registers, warp size, shared
// memory, SM count), read once per device from the runtime, so the residency
// it counts on is the one the device gives; launch_conv3d_fast_with runs any
// configuration, for new sweeps.
#include "portable.h"
#include "fast_plan.h"

// The instances this platform builds (fast_plan.h).
#if defined(KMCP_HIP)
#define FAST_INSTANCES FAST_INSTANCES_HIP
#else
#define FAST_INSTANCES FAST_INSTANCES_CUDA
#endif

// n / d with the host's reciprocal of d (FastDiv, fast_plan.h).
__device__ __forceinline__ int fast_div(int n, FastDiv f) {
  const unsigned long long p = (unsigned long long)(2u * (unsigned)n) * f.mul;
  return (int)((unsigned)(p >> 32) >> f.shift);
}

struct alignas(16) fast_u4 { unsigned int x, y, z, w; };

// Two floats to a packed bf16 pair (first in the low half), round to
// nearest even like pack_bf16x2; on NVIDIA one F2FP instruction for both.
__device__ __forceinline__ unsigned int fast_pack2(float lo, float hi) {
#if defined(KMCP_CUDA)
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned int*>(&p);
#else
  return pack_bf16x2(lo, hi);
#endif
}

// ---- fill helpers ----
// Shared-memory stores of one fill piece, skipped when !ok: 8 floats at p
// as 2 + 4 + 2 (p 8-byte aligned, p + 2 16-byte aligned), or 4 floats as
// 2 + 2. Written out in PTX on NVIDIA, with the condition as a predicate:
// nvcc split the 16-byte store of the C++ version into 4 scalar ones here,
// and turned the condition into a branch around every piece.
__device__ __forceinline__ void fast_st8(float* p, bool ok, float a, float b, float c, float d,
                                         float e, float f, float g, float h) {
#if defined(KMCP_CUDA)
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %9, 0;\n\t"
      "@q st.shared.v2.f32 [%0], {%1, %2};\n\t"
      "@q st.shared.v4.f32 [%0+8], {%3, %4, %5, %6};\n\t"
      "@q st.shared.v2.f32 [%0+24], {%7, %8};\n\t}"
      :: "r"(s), "f"(a), "f"(b), "f"(c), "f"(d), "f"(e), "f"(f), "f"(g), "f"(h),
         "r"((unsigned)ok) : "memory");
#else
  if (ok) {
    *reinterpret_cast<kmcp_f2*>(p) = kmcp_f2{a, b};
    *reinterpret_cast<kmcp_f4*>(p + 2) = kmcp_f4{c, d, e, f};
    *reinterpret_cast<kmcp_f2*>(p + 6) = kmcp_f2{g, h};
  }
#endif
}
__device__ __forceinline__ void fast_st4(float* p, bool ok, float a, float b, float c, float d) {
#if defined(KMCP_CUDA)
  const unsigned s = (unsigned)__cvta_generic_to_shared(p);
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %5, 0;\n\t"
      "@q st.shared.v2.f32 [%0], {%1, %2};\n\t"
      "@q st.shared.v2.f32 [%0+8], {%3, %4};\n\t}"
      :: "r"(s), "f"(a), "f"(b), "f"(c), "f"(d), "r"((unsigned)ok) : "memory");
#else
  if (ok) {
    *reinterpret_cast<kmcp_f2*>(p) = kmcp_f2{a, b};
    *reinterpret_cast<kmcp_f2*>(p + 2) = kmcp_f2{c, d};
  }
#endif
}

// Read-only global loads of 16 / 8 bytes (LDG.CONSTANT on NVIDIA, which the
// pointer laundering of fast_opaque would otherwise turn into generic loads).
__device__ __forceinline__ fast_u4 fast_ld16(const bf16* p) {
#if defined(KMCP_CUDA)
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  return fast_u4{v.x, v.y, v.z, v.w};
#else
  return *reinterpret_cast<const fast_u4*>(p);
#endif
}
__device__ __forceinline__ kmcp_u2 fast_ld8(const bf16* p) {
#if defined(KMCP_CUDA)
  const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
  return kmcp_u2{v.x, v.y};
#else
  return *reinterpret_cast<const kmcp_u2*>(p);
#endif
}

struct FastPiece16 {  // 8 bf16 -> box columns 8q - 6 .. 8q + 1
  // All three stores are unconditional: the edge pieces 0 and items - 1
  // also write 6 floats of their neighbours' columns that nothing reads
  // (the row stride is >= TW + 12 and 8 floats of slack precede the box).
  typedef fast_u4 raw;
  bool col_in;
  __device__ __forceinline__ raw load(const bf16* src, int off) const {
    raw u = raw{0u, 0u, 0u, 0u};
    if (col_in && off >= 0) u = fast_ld16(src + off);
    return u;
  }
  __device__ __forceinline__ void store(float* d, const raw& u, bool ok) const {
    fast_st8(d, ok, lo_f32(u.x), hi_f32(u.x), lo_f32(u.y), hi_f32(u.y),
             lo_f32(u.z), hi_f32(u.z), lo_f32(u.w), hi_f32(u.w));
  }
};
struct FastPiece8 {  // 4 bf16 -> box columns 4q - 2 .. 4q + 1
  typedef kmcp_u2 raw;
  bool col_in;
  __device__ __forceinline__ raw load(const bf16* src, int off) const {
    raw u = raw{0u, 0u};
    if (col_in && off >= 0) u = fast_ld8(src + off);
    return u;
  }
  __device__ __forceinline__ void store(float* d, const raw& u, bool ok) const {
    fast_st4(d, ok, lo_f32(u.x), hi_f32(u.x), lo_f32(u.y), hi_f32(u.y));
  }
};

// 8-byte global store of two packed bf16 pairs (st.global on NVIDIA: the
// pointer comes from fast_opaque, which would otherwise give a generic store).
__device__ __forceinline__ void fast_stg8(bf16* p, unsigned int a, unsigned int b) {
#if defined(KMCP_CUDA)
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" :: "l"(p), "r"(a), "r"(b) : "memory");
#else
  *reinterpret_cast<kmcp_u2*>(p) = kmcp_u2{a, b};
#endif
}

// On NVIDIA, hide how a pointer was computed, so that `p + off` stays one
// IMAD.WIDE on a 64-bit base instead of being re-derived from x with 64-bit
// index arithmetic (4 more instructions per load).
template <class T>
__device__ __forceinline__ T* fast_opaque(T* p) {
#if defined(KMCP_CUDA)
  asm("" : "+l"(p));
#endif
  return p;
}

// Loads, then stores, NB pieces of consecutive box rows (a compile-time
// batch, so u[] stays in registers and the table reads use immediate
// offsets). Rows past the box read table entries of -1 and are not stored.
template <int NB, class P>
__device__ __forceinline__ void fill_load(const P& pc, typename P::raw* u, const bf16* src,
                                          const int* tab) {
#pragma unroll
  for (int k = 0; k < NB; ++k) u[k] = pc.load(src, tab[k]);
}
template <int NB, class P>
__device__ __forceinline__ void fill_store(const P& pc, const typename P::raw* u, float* d,
                                           int r, int nrows, int stride) {
  const int left = nrows - r;  // rows of this batch inside the box
#pragma unroll
  for (int k = 0; k < NB; ++k) pc.store(d + k * stride, u[k], k < left);
}

// The g.fill_rows consecutive box rows slot * fill_rows, ... of a thread,
// in rounds of up to S1+S2+S3+S4: a round of m rows splits greedily into
// batches of S1, S2, S3 and S4 (each used at most once; the same split in
// every thread, so these branches do not diverge). All loads of a round are
// issued before its first store.
template <int S1, int S2, int S3, int S4, class P>
__device__ __forceinline__ void fill_pieces(const P& pc, const bf16* src, const int* rowoff,
                                            float* dst, int slot, const FastGeom& g) {
  const int nfill = g.fill_rows, nrows = g.nrows, stride = g.stride;
  const int r0 = slot * nfill;
  const int* tab = rowoff + r0;
  float* d0 = dst + r0 * stride;
#pragma unroll 1
  for (int k0 = 0; k0 < nfill; k0 += S1 + S2 + S3 + S4) {
    int m = min(nfill - k0, S1 + S2 + S3 + S4);
    const bool b1 = m >= S1;
    m -= b1 ? S1 : 0;
    const bool b2 = m >= S2;
    m -= b2 ? S2 : 0;
    const bool b3 = m >= S3;
    m -= b3 ? S3 : 0;
    const bool b4 = m >= S4;
    const int k2 = k0 + (b1 ? S1 : 0);
    const int k3 = k2 + (b2 ? S2 : 0);
    const int k4 = k3 + (b3 ? S3 : 0);
    typename P::raw u1[S1], u2[S2], u3[S3], u4[S4];
    if (b1) fill_load<S1>(pc, u1, src, tab + k0);
    if (b2) fill_load<S2>(pc, u2, src, tab + k2);
    if (b3) fill_load<S3>(pc, u3, src, tab + k3);
    if (b4) fill_load<S4>(pc, u4, src, tab + k4);
    if (b1) fill_store<S1>(pc, u1, d0 + k0 * stride, r0 + k0, nrows, stride);
    if (b2) fill_store<S2>(pc, u2, d0 + k2 * stride, r0 + k2, nrows, stride);
    if (b3) fill_store<S3>(pc, u3, d0 + k3 * stride, r0 + k3, nrows, stride);
    if (b4) fill_store<S4>(pc, u4, d0 + k4 * stride, r0 + k4, nrows, stride);
  }
}

template <int RH, int MINB>
__global__ void __launch_bounds__(FAST_MAX_THREADS, MINB)
conv3d_fast_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                   bf16* __restrict__ y, int C, int D, int H, int W,
                   FastGeom g) {
  extern __shared__ kmcp_f4 fast_smem[];
  float* ws = reinterpret_cast<float*>(fast_smem);
  int* rowoff = reinterpret_cast<int*>(ws + FAST_WS_FLOATS);
  float* box = ws + FAST_WS_FLOATS + g.table + 8;  // 8 floats of slack in front

  const int TW = FAST_R * g.segs, TH = RH * g.hch * g.groups;
  const int b = (int)blockIdx.x;  // the host keeps blocks < 2^31
  const int q1 = fast_div(b, g.div_tw);
  const int tw = b - q1 * g.tiles_w;
  const int q2 = fast_div(q1, g.div_th);
  const int th = q1 - q2 * g.tiles_h;
  const int nc = fast_div(q2, g.div_cd);
  const int dc = q2 - nc * g.chunks_d;
  const int c = nc - fast_div(nc, g.div_c) * C;
  const int w0 = tw * TW, h0 = th * TH, d0 = dc * g.td;
  const int plane = H * W;  // the host checks D * H * W < 2^31
  const bf16* xin = x + (long long)nc * D * plane;

  const int tid = threadIdx.x;
  const int nthreads = blockDim.x;
  const int nrows = g.nrows;

  // ---- 1a. weights, and where each box row starts in global memory ----
  // (unroll 1: an unrolled loop would divide by nthreads for its trip count)
#pragma unroll 1
  for (int t = tid; t < KMCP_TAPS; t += nthreads)
    ws[(t / 25) * 32 + t % 25] = to_f32(w[c * KMCP_TAPS + t]);
  // Entries past the last box row (up to g.table_rows) are -1 too, so the
  // fill below loads whole batches without checking its row index.
#pragma unroll 1
  for (int rr = tid; rr < g.table_rows; rr += nthreads) {
    const int pl = fast_div(rr, g.div_rows), r = rr - pl * g.rows_box;
    const int gd = d0 - 1 + pl, gh = h0 - 2 + r;
    rowoff[rr] = (rr < nrows && (unsigned)gd < (unsigned)D && (unsigned)gh < (unsigned)H)
                     ? gd * plane + gh * W : -1;
  }
  __syncthreads();

  // ---- 1b. fill ----
  // Thread (slot, q) copies piece q of g.fill_rows consecutive box rows from
  // slot * fill_rows on (the last threads' rows may run past the box: their
  // table entries are -1 and they are not stored). All of a thread's loads
  // are issued before its first store, so the block waits for memory once;
  // fill_pieces() above holds the batching.
  {
    const int slot = fast_div(tid, g.div_items);
    const int q = tid - slot * g.items;
    if (slot < g.rows_par) {
      if (g.fill == FAST_FILL_16B) {
        // Piece q is global columns w0 - 8 + 8q .. +7 (16-byte aligned), box
        // columns 8q - 6 .. 8q + 1, stored as 2 + 4 + 2 floats so the middle
        // store is 16-byte aligned. Pieces 0 and items - 1 only supply the
        // two halo columns on each side (box columns 0-1 and TW+2 - TW+3).
        const int gw = w0 - 8 + 8 * q;
        FastPiece16 pc;
        pc.col_in = gw >= 0 && gw < W;  // W % 8 == 0: all 8 in or out
        fill_pieces<6, 3, 2, 1>(pc, fast_opaque(xin + gw), rowoff, box + 8 * q - 6, slot, g);
      } else if (g.fill == FAST_FILL_8B) {
        // Piece q is global columns w0 - 4 + 4q .. +3, box columns 4q - 2 ..
        // 4q + 1 (piece 0 writes two floats of slack before the row).
        const int gw = w0 - 4 + 4 * q;
        FastPiece8 pc;
        pc.col_in = gw >= 0 && gw < W;  // W % 4 == 0: all 4 in or out
        fill_pieces<8, 4, 2, 1>(pc, fast_opaque(xin + gw), rowoff, box + 4 * q - 2, slot, g);
      } else {  // general widths: element loads, same placement as the 8-byte fill
        const int gw = w0 - 4 + 4 * q;
        float* dst = box + 4 * q - 2;
#pragma unroll 1
        for (int rr = slot; rr < nrows; rr += g.rows_par) {
          const int off = rowoff[rr];
          float t[4];
#pragma unroll
          for (int j = 0; j < 4; ++j)
            t[j] = (off >= 0 && gw + j >= 0 && gw + j < W) ? to_f32(xin[off + gw + j]) : 0.0f;
          float* d = dst + rr * g.stride;
          *reinterpret_cast<kmcp_f2*>(d) = kmcp_f2{t[0], t[1]};
          *reinterpret_cast<kmcp_f2*>(d + 2) = kmcp_f2{t[2], t[3]};
        }
      }
    }
  }
  __syncthreads();

  // ---- 2./3. compute ----
  const int hs = fast_div(tid, g.div_segs);
  const int seg = tid - hs * g.segs;
  const int dl = fast_div(hs, g.div_hch);
  const int hc = hs - dl * g.hch;
  if (dl >= g.td) return;

  const int plane_stride = g.rows_box * g.stride;
  const int od = d0 + dl, ow = w0 + 4 * seg;
  const bool live = od < D && ow < W;
  // 8-byte output stores need W % 4 == 0 and an 8-byte aligned y.
  const bool full4 = (W % 4) == 0 && ow + 3 < W &&
                     (reinterpret_cast<unsigned long long>(y) & 7ull) == 0;
  // Output row h0 of this thread's columns; group gi starts row0 rows below.
  // (Opaque, so that the stores below step it with one IMAD.WIDE per row.)
  bf16* const ybase = fast_opaque(y + ((long long)nc * D + od) * plane + (long long)h0 * W + ow);

#pragma unroll 1
  for (int gi = 0; gi < g.groups; ++gi) {
    const int row0 = (gi * g.hch + hc) * RH;  // first output row, box-local
    // Window of output columns 4*seg .. 4*seg+3 = box columns 4*seg .. 4*seg+7.
    const float* base = box + (dl * g.rows_box + row0) * g.stride + 4 * seg;

    float acc[RH][FAST_R];
#pragma unroll
    for (int o = 0; o < RH; ++o)
#pragma unroll
      for (int j = 0; j < FAST_R; ++j) acc[o][j] = 0.0f;

    // One filter plane at a time: only its 25 weights occupy registers.
#pragma unroll 1
    for (int kd = 0; kd < KMCP_KD; ++kd) {
      float wr[25];
      const float* wp = ws + 32 * kd;
#pragma unroll
      for (int t = 0; t < 24; t += 4) {
        const kmcp_f4 q4 = *reinterpret_cast<const kmcp_f4*>(wp + t);
        wr[t] = q4.x; wr[t + 1] = q4.y; wr[t + 2] = q4.z; wr[t + 3] = q4.w;
      }
      wr[24] = wp[24];
      const float* pk = base + kd * plane_stride;
#pragma unroll
      for (int i = 0; i < RH + 4; ++i) {  // input rows, each read once
        const kmcp_f4 lo = *reinterpret_cast<const kmcp_f4*>(pk + i * g.stride);
        const kmcp_f4 hi = *reinterpret_cast<const kmcp_f4*>(pk + i * g.stride + 4);
        const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        // kw outermost: up to 20 independent accumulators between reuses.
#pragma unroll
        for (int kw = 0; kw < KMCP_KW; ++kw) {
#pragma unroll
          for (int kh = 0; kh < KMCP_KH; ++kh) {
            const int o = i - kh;  // output row fed by this input row and kh
            if (o >= 0 && o < RH) {
#pragma unroll
              for (int j = 0; j < FAST_R; ++j)
                acc[o][j] = fmaf(wr[kh * KMCP_KW + kw], v[j + kw], acc[o][j]);
            }
          }
        }
      }
    }

    if (live) {
      const int nout = H - (h0 + row0);  // output rows left in the tensor
      bf16* yrow = ybase + row0 * W;
      if (full4) {
#pragma unroll
        for (int o = 0; o < RH; ++o, yrow += W)
          if (o < nout)
            fast_stg8(yrow, fast_pack2(acc[o][0], acc[o][1]), fast_pack2(acc[o][2], acc[o][3]));
      } else {
#pragma unroll
        for (int o = 0; o < RH; ++o, yrow += W)
          if (o < nout) {
#pragma unroll
            for (int j = 0; j < FAST_R; ++j)
              if (ow + j < W) yrow[j] = to_bf16(acc[o][j]);
          }
      }
    }
  }
}

// Explicit instantiations: every instance the host may pick (also keeps the
// kernels in device-only builds, where the launcher is left out).
#define FAST_INSTANTIATE(RH, MINB)                                                  \
  template __global__ void conv3d_fast_kernel<RH, MINB>(const bf16*, const bf16*, bf16*, int, \
                                                        int, int, int, FastGeom);
FAST_INSTANCES(FAST_INSTANTIATE)
#undef FAST_INSTANTIATE

#if KMCP_HOST_LAUNCHERS
namespace {

// The current device's limits (FastLimits, fast_plan.h), read from the
// runtime once per device; false when no device answers. On an H100 that is
// 132 SMs, 65536 registers, 32-wide warps, 233472 B of shared memory per SM
// with 1024 B reserved per block, 232448 B at most per block; on an MI350X
// 256 CUs, 131072 registers (512 VGPRs x 64 lanes x 4 SIMDs), 64-wide waves,
// 163840 B of LDS per CU, nothing reserved.
bool fast_device_limits(FastLimits* lim, int* device) {
  const int kDevices = 64;
  static FastLimits known[kDevices];
  static bool have[kDevices];
  int dev = 0;
  if (hipGetDevice(&dev) != hipSuccess || dev < 0) return false;
  *device = dev;
  if (dev < kDevices && have[dev]) {
    *lim = known[dev];
    return true;
  }
  hipDeviceProp_t p;
  if (hipGetDeviceProperties(&p, dev) != hipSuccess) return false;
  FastLimits l;
  l.sms = p.multiProcessorCount;
  l.warp = p.warpSize;
  l.regs_per_sm = p.regsPerMultiprocessor;
  l.threads_per_sm = p.maxThreadsPerMultiProcessor;
  l.smem_per_sm = (long long)KMCP_SMEM_PER_SM(p);
  l.smem_reserved = (long long)p.reservedSharedMemPerBlock;
  l.smem_per_block = (long long)p.sharedMemPerBlockOptin;
  l.schedulers = KMCP_SCHEDULERS_PER_SM;
  l.lanes = KMCP_LANES_PER_SCHEDULER;
  l.per_simd_bounds = KMCP_PER_SIMD_BOUNDS;
  if (!fast_limits_ok(l)) return false;
  if (dev < kDevices) {
    known[dev] = l;
    have[dev] = true;
  }
  *lim = l;
  return true;
}

template <int RH, int MINB>
int fast_run(const FastChoice& ch, const FastLimits& lim, const void* x, const void* w, void* y,
             int N, int C, int D, int H, int W, hipStream_t stream) {
  // Dynamic shared memory above 48 KiB must be asked for; the plan stays
  // within fast_smem_cap(lim).
  static long long raised = 0;
  if (ch.smem > 48 * 1024 && ch.smem > raised) {
    const long long cap = fast_smem_cap(lim);
    hipError_t e = hipFuncSetAttribute((const void*)conv3d_fast_kernel<RH, MINB>,
                                       hipFuncAttributeMaxDynamicSharedMemorySize, (int)cap);
    if (e != hipSuccess) return (int)e;
    raised = cap;
  }
  const long long blocks = (long long)N * C * ch.g.tiles_w * ch.g.tiles_h * ch.g.chunks_d;
  conv3d_fast_kernel<RH, MINB><<<dim3((unsigned)blocks), dim3(ch.threads), ch.smem, stream>>>(
      (const bf16*)x, (const bf16*)w, (bf16*)y, C, D, H, W, ch.g);
  return (int)hipGetLastError();
}

int fast_dispatch(const FastChoice& plan, const FastLimits& lim, const void* x, const void* w,
                  void* y, int N, int C, int D, int H, int W, void* stream) {
  hipStream_t s = (hipStream_t)stream;
  // The wide fills need an aligned x (the plan assumed one); fall back to a
  // narrower fill otherwise.
  FastChoice ch = plan;
  const unsigned long long xa = (unsigned long long)(size_t)x;
  int mode = ch.g.fill;
  if (mode == FAST_FILL_16B && xa % 16 != 0) mode = FAST_FILL_8B;
  if (mode == FAST_FILL_8B && xa % 8 != 0) mode = FAST_FILL_ELEM;
  if (mode != ch.g.fill) set_fill(&ch.g, mode, ch.threads);
#define FAST_DISPATCH(RH, MINB) \
  if (ch.rh == RH && ch.minb == MINB) return fast_run<RH, MINB>(ch, lim, x, w, y, N, C, D, H, W, s);
  FAST_INSTANCES(FAST_DISPATCH)
#undef FAST_DISPATCH
  return (int)hipErrorInvalidValue;
}

// The launcher's plan for a shape on the current device.
bool fast_choose_here(int N, int C, int D, int H, int W, FastChoice* ch, FastLimits* lim) {
  int dev = 0;
  return fast_shape_ok(N, C, D, H, W) && fast_device_limits(lim, &dev) &&
         fast_choose(*lim, N, C, D, H, W, ch);
}

}  // namespace

// Tile configuration the launcher picks for a shape, without launching.
// cfg[0..9] = {RH, segs, hch, td, groups, threads, smem bytes, tiles_w,
// tiles_h, chunks_d}. Returns 0, or -1 when no configuration fits. cfg[0]
// is the plain RH (bench.py prints it); conv3d_fast_code names the instance.
extern "C" int conv3d_fast_config(int N, int C, int D, int H, int W, int* cfg) {
  FastChoice ch;
  FastLimits lim;
  if (!fast_choose_here(N, C, D, H, W, &ch, &lim)) return -1;
  const int vals[10] = {ch.rh, ch.g.segs, ch.g.hch, ch.g.td, ch.g.groups, ch.threads,
                        ch.smem, ch.g.tiles_w, ch.g.tiles_h, ch.g.chunks_d};
  for (int i = 0; i < 10; ++i) cfg[i] = vals[i];
  return 0;
}

// cfg[0] as launch_conv3d_fast_with takes it for the configuration the
// launcher picks (plain RH for RH's first instance, 100 * MINB + RH for
// another: on CUDA 400 + RH is the 64-register one), or -1 when none fits.
extern "C" int conv3d_fast_code(int N, int C, int D, int H, int W) {
  FastChoice ch;
  FastLimits lim;
  if (!fast_choose_here(N, C, D, H, W, &ch, &lim)) return -1;
  return fast_encode(lim, ch);
}

// Launch with an explicit configuration {code, segs, hch, td, groups}, for
// tuning sweeps: code = RH runs RH's first instance, 100 * MINB + RH the
// instance built with that launch bound (on CUDA: 300 + RH the 80-register
// one, 400 + RH the 64-register one). Returns the launch status, or
// hipErrorInvalidValue when this platform has no such instance or the
// configuration does not fit this shape on this device.
extern "C" int launch_conv3d_fast_with(const void* x, const void* w, void* y,
                                       int N, int C, int D, int H, int W,
                                       const int* cfg, void* stream) {
  FastChoice ch;
  FastLimits lim;
  int rh = 0, minb = 0, dev = 0;
  if (!fast_shape_ok(N, C, D, H, W) || !fast_device_limits(&lim, &dev) ||
      !fast_decode(lim, cfg[0], &rh, &minb) ||
      fast_plan(lim, N, C, D, H, W, rh, minb, cfg[1], cfg[2], cfg[3], cfg[4], &ch) < 0)
    return (int)hipErrorInvalidValue;
  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);
}

// x, y: (N, C, D, H, W) bf16; w: (C, 1, 3, 5, 5) bf16.
extern "C" int launch_conv3d_fast(const void* x, const void* w, void* y, int N,
                                  int C, int D, int H, int W, void* stream) {
  if (!fast_shape_ok(N, C, D, H, W)) return (int)hipErrorInvalidValue;
  FastLimits lim;
  int dev = 0;
  if (!fast_device_limits(&lim, &dev)) return (int)hipErrorInvalidValue;
  // Remember the last shape's choice (and the device it was made for): the
  // search costs host time.
  static int last[6] = {-1, 0, 0, 0, 0, 0};
  static FastChoice ch;
  if (last[0] != dev || last[1] != N || last[2] != C || last[3] != D || last[4] != H ||
      last[5] != W) {
    if (!fast_choose(lim, N, C, D, H, W, &ch)) return (int)hipErrorInvalidValue;
    last[0] = dev; last[1] = N; last[2] = C; last[3] = D; last[4] = H; last[5] = W;
  }
  return fast_dispatch(ch, lim, x, w, y, N, C, D, H, W, stream);
}
#endif
