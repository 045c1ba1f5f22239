// Step 6: the fast variant (NCDHW in, NCDHW out, fp32 accumulation).
// This is the file to edit when optimizing; its kernels are conv3d_fast*.
//
// Work split. A block owns one (n, c) and a box of td x TH x TW outputs,
// TW = 4 * segs, TH = RH * hch * groups. Thread (dl, hc, seg) computes 4
// adjacent output columns of `groups` runs of RH output rows at depth
// d0 + dl.
//
// 1. Fill. The (td + 2) x (TH + 4) x (TW + 8) input box (zeros outside the
//    tensor) is copied to shared memory as fp32, so each value is widened
//    once rather than at every use. A small table first records where each
//    box row starts in global memory (or -1 outside the tensor); then each
//    thread owns one 4-wide column group and walks box rows, issuing
//    FAST_FILL_BATCH 8-byte loads (4 bf16 each) before storing any, so
//    their latencies overlap. Groups land 2 columns early so that every
//    compute window below starts 16-byte aligned.
// 2. Compute, one filter plane kd at a time, so only its 25 weights sit in
//    registers (from shared memory): each of the thread's RH + 4 input rows
//    is read once as an 8-wide window (two 16-byte shared loads) and feeds
//    every output row it touches: up to 5 kh x 5 kw x 4 columns = 100 FMAs
//    per window. Accumulators acc[RH][4] use compile-time indices (fully
//    unrolled), so they stay in registers; results leave as 8-byte stores.
//    About 80 registers per thread let three 256-thread blocks share an SM,
//    so one block's fill overlaps the others' arithmetic.
// The host picks (RH, segs, hch, td, groups) per shape with a cost model
// fitted to sweeps on an H100 (see RESULTS.md); launch_conv3d_fast_with runs
// any configuration, for new sweeps.
#include "portable.h"

#define FAST_R 4             // outputs per thread along W
#define FAST_MAX_THREADS 256
#define FAST_WS_FLOATS 96    // weights: 3 planes of 25, each padded to 32 floats
#define FAST_MIN_BLOCKS 3    // resident blocks per SM the register budget aims at
#define FAST_FILL_BATCH 8    // global loads in flight per thread during the fill
#define FAST_SMEM_MAX (100 * 1024)

struct FastGeom {
  int segs, hch, td;          // threads along W, H, D
  int groups;                 // row groups each thread walks (TH = RH*hch*groups)
  int tiles_w, tiles_h, chunks_d;
  int rows_box;               // TH + 4
  int stride;                 // floats per shared row (multiple of 4, >= TW + 8)
  int table;                  // ints reserved for the row-offset table (multiple of 4)
};

template <int RH>
__global__ void __launch_bounds__(FAST_MAX_THREADS, FAST_MIN_BLOCKS)
conv3d_fast_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                   bf16* __restrict__ y, int C, int D, int H, int W,
                   FastGeom g) {
  extern __shared__ kmcp_f4 fast_smem[];
  float* ws = reinterpret_cast<float*>(fast_smem);
  int* rowoff = reinterpret_cast<int*>(ws + FAST_WS_FLOATS);
  float* box = ws + FAST_WS_FLOATS + g.table + 4;  // 4 floats of slack in front

  const int TW = FAST_R * g.segs, TH = RH * g.hch * g.groups;
  unsigned b = blockIdx.x;  // 32-bit decode: the host keeps blocks < 2^31
  const int tw = (int)(b % g.tiles_w);
  b /= g.tiles_w;
  const int th = (int)(b % g.tiles_h);
  b /= g.tiles_h;
  const int dc = (int)(b % g.chunks_d);
  const unsigned nc = b / g.chunks_d;
  const int c = (int)(nc % (unsigned)C);
  const int w0 = tw * TW, h0 = th * TH, d0 = dc * g.td;
  const int plane = H * W;  // the host checks D * H * W < 2^31
  const bf16* xin = x + (long long)nc * D * plane;

  const int tid = threadIdx.x;
  const int nthreads = blockDim.x;
  const int nrows = (g.td + 2) * g.rows_box;  // box rows over all planes

  // ---- 1a. weights, and where each box row starts in global memory ----
  for (int t = tid; t < KMCP_TAPS; t += nthreads)
    ws[(t / 25) * 32 + t % 25] = to_f32(w[(long long)c * KMCP_TAPS + t]);
  for (int rr = tid; rr < g.table; rr += nthreads) {
    const int pl = rr / g.rows_box, r = rr - pl * g.rows_box;
    const int gd = d0 - 1 + pl, gh = h0 - 2 + r;
    rowoff[rr] = (rr < nrows && gd >= 0 && gd < D && gh >= 0 && gh < H) ? gd * plane + gh * W : -1;
  }
  __syncthreads();

  // ---- 1b. fill: box column cc holds global column w0 - 2 + cc ----
  // Thread (row slot, q) copies 4-wide column group q (global columns
  // w0 - 4 + 4q ..) of box rows r0, r0 + rows_par, ... Loads are issued
  // FAST_FILL_BATCH at a time before any is stored; groups outside the
  // tensor are zeros.
  {
    const int Q = g.segs + 2;           // 4-wide column groups per box row
    const int rows_par = nthreads / Q;  // box rows filled side by side
    const int q = tid % Q;
    const int gw = w0 - 4 + 4 * q;
    float* dst0 = box + 4 * q - 2;      // group q lands on box columns 4q-2 .. 4q+1
    if (W % 4 == 0) {
      const bool col_in = gw >= 0 && gw < W;  // whole group inside or outside
      const bf16* src = xin + gw;             // + row offset from the table
      for (int r0 = (tid < rows_par * Q) ? tid / Q : nrows; r0 < nrows;
           r0 += FAST_FILL_BATCH * rows_par) {
        kmcp_u2 u[FAST_FILL_BATCH];
#pragma unroll
        for (int k = 0; k < FAST_FILL_BATCH; ++k) {
          const int off = rowoff[r0 + k * rows_par];  // -1 past the last row
          u[k] = kmcp_u2{0u, 0u};
          if (col_in && off >= 0)  // a predicated load, not a branch
            u[k] = *reinterpret_cast<const kmcp_u2*>(src + off);
        }
#pragma unroll
        for (int k = 0; k < FAST_FILL_BATCH; ++k) {
          const int rr = r0 + k * rows_par;
          if (rr < nrows) {
            float* d = dst0 + rr * g.stride;
            *reinterpret_cast<kmcp_f2*>(d) = kmcp_f2{lo_f32(u[k].x), hi_f32(u[k].x)};
            *reinterpret_cast<kmcp_f2*>(d + 2) = kmcp_f2{lo_f32(u[k].y), hi_f32(u[k].y)};
          }
        }
      }
    } else {  // general widths: element loads, same placement
      for (int rr = (tid < rows_par * Q) ? tid / Q : nrows; rr < nrows; rr += rows_par) {
        const int off = rowoff[rr];
        float t[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          t[j] = (off >= 0 && gw + j >= 0 && gw + j < W) ? to_f32(xin[off + gw + j]) : 0.0f;
        float* d = dst0 + rr * g.stride;
        *reinterpret_cast<kmcp_f2*>(d) = kmcp_f2{t[0], t[1]};
        *reinterpret_cast<kmcp_f2*>(d + 2) = kmcp_f2{t[2], t[3]};
      }
    }
  }
  __syncthreads();

  // ---- 2./3. compute ----
  const int seg = tid % g.segs;
  const int hc = (tid / g.segs) % g.hch;
  const int dl = tid / (g.segs * g.hch);
  if (dl >= g.td) return;

  const int plane_stride = g.rows_box * g.stride;
  const int od = d0 + dl, ow = w0 + 4 * seg;
  const bool live = od < D && ow < W;
  const bool full4 = (W % 4) == 0 && ow + 3 < W;

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
      const int oh0 = h0 + row0;
      bf16* yrow = y + ((long long)nc * D + od) * plane + (long long)oh0 * W + ow;
#pragma unroll
      for (int o = 0; o < RH; ++o) {
        if (oh0 + o < H) {
          bf16* dstp = yrow + (long long)o * W;
          if (full4) {
            kmcp_u2 pk2;
            pk2.x = pack_bf16x2(acc[o][0], acc[o][1]);
            pk2.y = pack_bf16x2(acc[o][2], acc[o][3]);
            *reinterpret_cast<kmcp_u2*>(dstp) = pk2;
          } else {
#pragma unroll
            for (int j = 0; j < FAST_R; ++j)
              if (ow + j < W) dstp[j] = to_bf16(acc[o][j]);
          }
        }
      }
    }
  }
}

// Explicit instantiations: every RH the host may pick (also keeps the
// kernels in device-only builds, where the launcher is left out).
template __global__ void conv3d_fast_kernel<4>(const bf16*, const bf16*, bf16*, int, int, int, int, FastGeom);
template __global__ void conv3d_fast_kernel<6>(const bf16*, const bf16*, bf16*, int, int, int, int, FastGeom);
template __global__ void conv3d_fast_kernel<7>(const bf16*, const bf16*, bf16*, int, int, int, int, FastGeom);
template __global__ void conv3d_fast_kernel<8>(const bf16*, const bf16*, bf16*, int, int, int, int, FastGeom);

#if KMCP_HOST_LAUNCHERS
namespace {

struct FastChoice {
  int rh;
  FastGeom g;
  int threads;
  int smem;
};

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// Fills *out for one candidate; returns its estimated cost in issue cycles
// per SM (lower is better), or -1 when the candidate does not fit.
double fast_plan(int N, int C, int D, int H, int W, int sms, int rh, int segs,
                 int hch, int td, int groups, FastChoice* out) {
  const int threads = segs * hch * td;
  if (threads < 1 || threads > FAST_MAX_THREADS || groups < 1) return -1.0;
  const int rows_par = threads / (segs + 2);
  if (rows_par < 1) return -1.0;  // the fill needs one full box row of threads
  const int TW = FAST_R * segs, TH = rh * hch * groups;
  // No more than one spare thread column / row group / depth of padding.
  if (TW >= W + FAST_R || TH >= H + rh * hch || td > D) return -1.0;
  int stride = TW + 8;
  if ((stride * rh) % 32 == 0) stride += 4;  // spread row chunks over banks
  const int nrows = (td + 2) * (TH + 4);
  const int table = (nrows + FAST_FILL_BATCH * rows_par + 3) / 4 * 4;
  const long long smem =
      4LL * (FAST_WS_FLOATS + table + 4 + (long long)nrows * stride);
  if (smem > FAST_SMEM_MAX) return -1.0;
  const long long tiles_w = ceil_div(W, TW), tiles_h = ceil_div(H, TH),
                  chunks_d = ceil_div(D, td);
  const long long blocks = (long long)N * C * tiles_w * tiles_h * chunks_d;
  if (blocks > 0x7fffffffLL) return -1.0;
  // Issue cycles per thread and a latency term, fitted to sweeps of all
  // candidate configurations on an H100 (see RESULTS.md).
  // Measured: the RH = 4 and 6 instances issue their FMAs ~10% / ~4% more
  // efficiently than RH = 7 and 8 (smaller unrolled bodies).
  const double fma_eff = rh <= 4 ? 0.90 : rh <= 6 ? 0.96 : 1.0;
  const double compute =
      groups * (75.0 * FAST_R * rh * fma_eff + 6.0 * (rh + 4) + 8.0 * rh + 200.0);
  const double fill = 20.0 * ceil_div(nrows, rows_par) + 2.0 * ceil_div(table, threads) + 300.0;
  const int warps = (int)ceil_div(threads, 32);
  const double block_issue = warps * (compute + fill) / 4.0;  // 4 schedulers per SM
  // Registers per thread under __launch_bounds__(FAST_MAX_THREADS, FAST_MIN_BLOCKS).
  const int regs = 65536 / (FAST_MAX_THREADS * FAST_MIN_BLOCKS) / 8 * 8;
  long long resident = 65536 / (regs * 32 * warps);
  const long long by_smem = 232448 / (smem + 1024);
  resident = resident < by_smem ? resident : by_smem;
  if (resident < 1) return -1.0;
  // The fill's memory latency is exposed less the more blocks share an SM.
  const double wave = resident * block_issue + 40000.0 / (double)(resident * resident * resident);
  const double cost = (double)ceil_div(blocks, (long long)sms * resident) * wave;
  if (out) {
    out->rh = rh;
    out->g.segs = segs; out->g.hch = hch; out->g.td = td; out->g.groups = groups;
    out->g.tiles_w = (int)tiles_w; out->g.tiles_h = (int)tiles_h;
    out->g.chunks_d = (int)chunks_d;
    out->g.rows_box = TH + 4;
    out->g.stride = stride;
    out->g.table = table;
    out->threads = threads;
    out->smem = (int)smem;
  }
  return cost;
}

bool fast_rh_supported(int rh) { return rh == 4 || rh == 6 || rh == 7 || rh == 8; }

bool fast_choose(int N, int C, int D, int H, int W, FastChoice* best) {
  static int sms = 0;
  if (sms == 0) {
    int dev = 0;
    if (hipGetDevice(&dev) != hipSuccess ||
        hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, dev) != hipSuccess ||
        sms <= 0)
      sms = 100;
  }
  static const int rhs[] = {4, 6, 7, 8};
  double best_cost = -1.0;
  // First pass, the space the cost model was fitted on: whole warps, 128 to
  // 256 threads, the W tile a 1/k share of the row (k = 1..4), <= 15%
  // padding along each axis. Second pass (small or odd shapes where nothing
  // qualifies): anything that fits.
  const int s0 = (W + FAST_R - 1) / FAST_R;
  for (int strict = 1; strict >= 0 && best_cost < 0; --strict)
    for (int rh : rhs)
      for (int td = 1; td <= 16; ++td)
        for (int hch = 1; hch <= 32; ++hch)
          for (int segs = 1; segs <= 32; ++segs)
            for (int groups = 1; groups <= 4; ++groups) {
              const int threads = segs * hch * td;
              const long long TW = FAST_R * segs, TH = (long long)rh * hch * groups;
              const bool share = segs == (s0 + 0) / 1 || segs == (s0 + 1) / 2 ||
                                 segs == (s0 + 2) / 3 || segs == (s0 + 3) / 4;
              if (strict && (!share || threads % 32 != 0 || threads < 128 ||
                             ceil_div(W, TW) * TW * 20 > W * 23LL ||
                             ceil_div(H, TH) * TH * 20 > H * 23LL ||
                             ceil_div(D, td) * td * 20 > D * 23LL))
                continue;
              FastChoice cand;
              const double cost =
                  fast_plan(N, C, D, H, W, sms, rh, segs, hch, td, groups, &cand);
              if (cost < 0) continue;
              if (best_cost < 0 || cost < best_cost) {
                best_cost = cost;
                *best = cand;
              }
            }
  return best_cost >= 0;
}

template <int RH>
int fast_run(const FastChoice& ch, const void* x, const void* w, void* y,
             int N, int C, int D, int H, int W, hipStream_t stream) {
  static bool raised = false;
  if (ch.smem > 48 * 1024 && !raised) {
    hipError_t e = hipFuncSetAttribute((const void*)conv3d_fast_kernel<RH>,
                                       hipFuncAttributeMaxDynamicSharedMemorySize,
                                       FAST_SMEM_MAX);
    if (e != hipSuccess) return (int)e;
    raised = true;
  }
  const long long blocks = (long long)N * C * ch.g.tiles_w * ch.g.tiles_h * ch.g.chunks_d;
  conv3d_fast_kernel<RH><<<dim3((unsigned)blocks), dim3(ch.threads), ch.smem, stream>>>(
      (const bf16*)x, (const bf16*)w, (bf16*)y, C, D, H, W, ch.g);
  return (int)hipGetLastError();
}

int fast_dispatch(const FastChoice& ch, const void* x, const void* w, void* y,
                  int N, int C, int D, int H, int W, void* stream) {
  hipStream_t s = (hipStream_t)stream;
  switch (ch.rh) {
    case 4: return fast_run<4>(ch, x, w, y, N, C, D, H, W, s);
    case 6: return fast_run<6>(ch, x, w, y, N, C, D, H, W, s);
    case 7: return fast_run<7>(ch, x, w, y, N, C, D, H, W, s);
    case 8: return fast_run<8>(ch, x, w, y, N, C, D, H, W, s);
    default: return (int)hipErrorInvalidValue;
  }
}

bool fast_shape_ok(int N, int C, int D, int H, int W) {
  return N > 0 && C > 0 && D > 0 && H > 0 && W > 0 &&
         (long long)D * H * W < 0x7fffffffLL;
}

}  // namespace

// Tile configuration the launcher picks for a shape, without launching.
// cfg[0..9] = {RH, segs, hch, td, groups, threads, smem bytes, tiles_w,
// tiles_h, chunks_d}. Returns 0, or -1 when no configuration fits.
extern "C" int conv3d_fast_config(int N, int C, int D, int H, int W, int* cfg) {
  FastChoice ch;
  if (!fast_shape_ok(N, C, D, H, W) || !fast_choose(N, C, D, H, W, &ch)) return -1;
  const int vals[10] = {ch.rh, ch.g.segs, ch.g.hch, ch.g.td, ch.g.groups, ch.threads,
                        ch.smem, ch.g.tiles_w, ch.g.tiles_h, ch.g.chunks_d};
  for (int i = 0; i < 10; ++i) cfg[i] = vals[i];
  return 0;
}

// Launch with an explicit configuration {RH, segs, hch, td, groups}, for
// tuning sweeps. Returns the launch status, or hipErrorInvalidValue when the
// configuration does not fit this shape.
extern "C" int launch_conv3d_fast_with(const void* x, const void* w, void* y,
                                       int N, int C, int D, int H, int W,
                                       const int* cfg, void* stream) {
  FastChoice ch;
  if (!fast_shape_ok(N, C, D, H, W) || !fast_rh_supported(cfg[0]) ||
      fast_plan(N, C, D, H, W, 1, cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], &ch) < 0)
    return (int)hipErrorInvalidValue;
  return fast_dispatch(ch, x, w, y, N, C, D, H, W, stream);
}

// x, y: (N, C, D, H, W) bf16; w: (C, 1, 3, 5, 5) bf16.
extern "C" int launch_conv3d_fast(const void* x, const void* w, void* y, int N,
                                  int C, int D, int H, int W, void* stream) {
  if (!fast_shape_ok(N, C, D, H, W)) return (int)hipErrorInvalidValue;
  // Remember the last shape's choice: the search costs host time.
  static int last[5] = {0, 0, 0, 0, 0};
  static FastChoice ch;
  if (last[0] != N || last[1] != C || last[2] != D || last[3] != H || last[4] != W) {
    if (!fast_choose(N, C, D, H, W, &ch)) return (int)hipErrorInvalidValue;
    last[0] = N; last[1] = C; last[2] = D; last[3] = H; last[4] = W;
  }
  return fast_dispatch(ch, x, w, y, N, C, D, H, W, stream);
}
#endif
