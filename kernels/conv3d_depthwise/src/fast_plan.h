// fast_plan.h: the host-side planning of step 6 (fast.hip), in plain C++.
//
// What is here: the tile geometry the kernel reads (FastGeom), the kernel
// instances each platform builds, the device limits a plan is made for
// (FastLimits), and the cost model that picks a configuration per shape
// (fast_plan, fast_choose). Nothing here calls a GPU runtime or holds device
// code, so a host compiler builds it alone: the tests evaluate the plans
// offline with the H100's and the MI350X's limits, and compare the compiled
// kernels' registers and occupancy with what the plans assume. fast.hip reads
// the limits from the device (fast_device_limits) and launches the plan.
#pragma once

#define FAST_R 4             // outputs per thread along W
#define FAST_MAX_THREADS 256
#define FAST_WS_FLOATS 96    // weights: 3 planes of 25, each padded to 32 floats
// Largest shared-memory box a plan may use (and the device's own per-block
// limit below it: 64 KiB on gfx942).
#define FAST_SMEM_MAX (100 * 1024)
// Registers are allocated per thread in steps of 8 on both vendors: 256 per
// warp on NVIDIA, VGPR granule 8 on gfx90a / gfx942 / gfx950.
#define FAST_REG_GRANULE 8

// Fill modes (FastGeom::fill).
#define FAST_FILL_ELEM 0
#define FAST_FILL_8B 1
#define FAST_FILL_16B 2

// ---- kernel instances ----
// conv3d_fast_kernel<RH, MINB> is built for a list of (RH, MINB) pairs, MINB
// being the second __launch_bounds__ argument. That argument does not mean
// the same on both platforms, and the register budget it leaves decides
// whether the unrolled compute loop spills:
//   * CUDA: at least MINB resident blocks of FAST_MAX_THREADS threads per SM,
//     so regsPerMultiprocessor / (256 * MINB) registers per thread, rounded
//     down to 8: 3 -> 80, 4 -> 64 on the H100. Each RH is built for both: 80
//     registers never spill; 64 let a fourth block in where shared memory
//     allows it, for a few more instructions (the cost model weighs both).
//   * HIP (amdgpu_waves_per_eu): at least MINB waves on each SIMD, so the VGPR
//     file per SIMD lane / MINB VGPRs per lane, rounded down to 8: 512 / 3 ->
//     168, 512 / 4 -> 128 on gfx950. The AMD compiler keeps more values live
//     than nvcc here (108 VGPRs for RH = 4, 144 for 6, 166 for 7, 182 for 8),
//     so each RH gets the one bound its loop fits without spilling: RH = 4 at
//     4 waves, 6 and 7 at 3, 8 at 2. (Built with the CUDA list, RH = 6, 7 and 8
//     spilled 15, 53 and 116 VGPRs at 4 waves, and RH = 8 spilled 16 at 3. A
//     256-thread block is one wave per SIMD, so a fourth wave is a fourth block,
//     which LDS admits only for boxes of at most 40 KiB on gfx950.)
// Order matters: on equal cost the first instance wins, and plain RH in
// launch_conv3d_fast_with's cfg[0] means RH's first instance.
#define FAST_INSTANCES_CUDA(X) X(4, 3) X(6, 3) X(7, 3) X(8, 3) X(4, 4) X(6, 4) X(7, 4) X(8, 4)
#define FAST_INSTANCES_HIP(X) X(4, 4) X(6, 3) X(7, 3) X(8, 2)
// The two CUDA budgets by name (the cost model has terms measured for each).
#define FAST_MINB_80 3
#define FAST_MINB_64 4
// launch_conv3d_fast_with's cfg[0]: RH alone asks for RH's first instance,
// 100 * MINB + RH for that exact one (on CUDA: 300 + RH the 80-register
// instance, 400 + RH the 64-register one).
#define FAST_CODE_64 (100 * FAST_MINB_64)

// n / d for 0 <= n < 2^31 as (2n * mul) >> (32 + shift), with
// shift = ceil(log2 d) and mul = ceil(2^(31 + shift) / d) < 2^32: exact,
// because n * (mul * d - 2^(31 + shift)) < 2^31 * d <= 2^(31 + shift).
// d = 1 works too (mul = 2^31, shift = 0).
struct FastDiv {
  unsigned mul;
  int shift;
};

struct FastGeom {
  int segs, hch, td;          // threads along W, H, D
  int groups;                 // row groups each thread walks (TH = RH*hch*groups)
  int tiles_w, tiles_h, chunks_d;
  int rows_box;               // TH + 4
  int nrows;                  // box rows over all planes: (td + 2) * rows_box
  int stride;                 // floats per shared row (multiple of 4, >= TW + 8; TW + 12 for 16-byte fills)
  int table;                  // ints reserved for the row-offset table (multiple of 4)
  int table_rows;             // table entries written: >= rows_par * fill_rows
  int fill;                   // FAST_FILL_*
  int items;                  // fill pieces per box row
  int rows_par;               // box rows filled side by side: threads / items
  int fill_rows;              // box rows per fill thread: ceil(nrows / rows_par)
  FastDiv div_tw, div_th, div_cd, div_c;  // block index decode
  FastDiv div_rows;           // box row -> (plane, row)
  FastDiv div_items;          // thread -> (row slot, piece) in the fill
  FastDiv div_segs, div_hch;  // thread -> (dl, hc, seg) in the compute
};

// ---- device limits ----
// What a plan needs to know about the device. fast.hip reads most of it from
// the runtime's device properties (fast_device_limits); the rest no property
// reports, and portable.h gives it per platform.
struct FastLimits {
  int sms;                  // multiProcessorCount: SMs / CUs
  int warp;                 // warpSize: 32 (NVIDIA) or 64 (CDNA)
  long long regs_per_sm;    // regsPerMultiprocessor: 32-bit registers per SM / CU
  int threads_per_sm;       // maxThreadsPerMultiProcessor
  long long smem_per_sm;    // shared memory (LDS) per SM / CU for resident blocks
  long long smem_reserved;  // reservedSharedMemPerBlock: system use per resident block
  long long smem_per_block; // sharedMemPerBlockOptin: the most one block may use
  int schedulers;           // warp schedulers (SM sub-partitions) / SIMDs per SM or CU
  int lanes;                // FP32 lanes per scheduler: one warp instruction takes warp / lanes cycles
  int per_simd_bounds;      // 1: MINB is waves per SIMD (HIP), 0: blocks per SM (CUDA)
};

struct FastInstance {
  int rh, minb;
};

// The instances built for the platform the limits describe.
inline int fast_instances(const FastLimits& lim, const FastInstance** list) {
#define FAST_INSTANCE_ENTRY(RH, MINB) {RH, MINB},
  static const FastInstance cuda[] = {FAST_INSTANCES_CUDA(FAST_INSTANCE_ENTRY)};
  static const FastInstance hip[] = {FAST_INSTANCES_HIP(FAST_INSTANCE_ENTRY)};
#undef FAST_INSTANCE_ENTRY
  if (lim.per_simd_bounds) {
    *list = hip;
    return (int)(sizeof(hip) / sizeof(hip[0]));
  }
  *list = cuda;
  return (int)(sizeof(cuda) / sizeof(cuda[0]));
}

inline bool fast_limits_ok(const FastLimits& lim) {
  return lim.sms > 0 && lim.warp > 0 && lim.regs_per_sm > 0 && lim.threads_per_sm >= lim.warp &&
         lim.smem_per_sm > 0 && lim.smem_reserved >= 0 && lim.smem_per_block > 0 &&
         lim.schedulers > 0 && lim.lanes > 0;
}

// Registers per thread the compiler may use in an instance built with
// __launch_bounds__(FAST_MAX_THREADS, minb) (see the instance lists above).
inline int fast_regs(const FastLimits& lim, int minb) {
  const long long threads = lim.per_simd_bounds
                                ? (long long)lim.schedulers * lim.warp * minb  // minb waves per SIMD
                                : (long long)FAST_MAX_THREADS * minb;          // minb blocks per SM
  return (int)(lim.regs_per_sm / threads / FAST_REG_GRANULE * FAST_REG_GRANULE);
}

// Waves per SIMD (AMD) that fit in the registers of an instance: what the
// compiler reports as the kernel's occupancy when registers limit it.
inline int fast_waves_per_simd(const FastLimits& lim, int minb) {
  const long long per_lane = lim.regs_per_sm / ((long long)lim.schedulers * lim.warp);
  const long long by_regs = per_lane / fast_regs(lim, minb);
  const long long most = lim.threads_per_sm / ((long long)lim.schedulers * lim.warp);
  return (int)(by_regs < most ? by_regs : most);
}

// Blocks of `warps` warps per SM / CU that the registers of an instance allow.
inline long long fast_resident_by_regs(const FastLimits& lim, int minb, int warps) {
  if (lim.per_simd_bounds)  // registers are a per-SIMD file: whole waves per SIMD
    return (long long)lim.schedulers * fast_waves_per_simd(lim, minb) / warps;
  const long long by_regs = lim.regs_per_sm / ((long long)fast_regs(lim, minb) * lim.warp * warps);
  const long long by_threads = lim.threads_per_sm / ((long long)lim.warp * warps);
  return by_regs < by_threads ? by_regs : by_threads;
}

// Largest box a plan may use: FAST_SMEM_MAX, or less where the device's
// per-block limit is lower.
inline long long fast_smem_cap(const FastLimits& lim) {
  return lim.smem_per_block < FAST_SMEM_MAX ? lim.smem_per_block : FAST_SMEM_MAX;
}

struct FastChoice {
  int rh;
  int minb;       // the instance's second __launch_bounds__ argument
  FastGeom g;
  int threads;
  int smem;
  int resident;   // blocks per SM / CU the plan counts on
};

inline long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// The reciprocal FastDiv needs for a divisor d >= 1 (see fast_div).
inline FastDiv make_div(int d) {
  int shift = 0;
  while ((1LL << shift) < d) ++shift;
  FastDiv f;
  f.mul = (unsigned)(((1ULL << (31 + shift)) + (unsigned long long)d - 1) / (unsigned long long)d);
  f.shift = shift;
  return f;
}

// The widest fill the shape allows (the 16-byte fill also needs a 16-byte
// aligned x, which the launch checks), and its pieces per box row.
inline int fill_mode(int W, int segs) {
  if (W % 8 == 0 && segs % 2 == 0) return FAST_FILL_16B;
  return W % 4 == 0 ? FAST_FILL_8B : FAST_FILL_ELEM;
}
inline int fill_items(int mode, int segs) {
  return mode == FAST_FILL_16B ? (FAST_R * segs) / 8 + 2 : segs + 2;
}
// Table entries the fill reads in a mode: every fill thread walks the same
// number of rows, so the last ones may run past the box.
inline int fill_table_rows(int mode, int segs, int threads, int nrows) {
  if (mode == FAST_FILL_ELEM) return nrows;  // that loop checks its rows
  const int rows_par = threads / fill_items(mode, segs);
  return rows_par * (int)ceil_div(nrows, rows_par);
}
inline void set_fill(FastGeom* g, int mode, int threads) {
  g->fill = mode;
  g->items = fill_items(mode, g->segs);
  g->rows_par = threads / g->items;
  g->fill_rows = (int)ceil_div(g->nrows, g->rows_par);
  g->table_rows = fill_table_rows(mode, g->segs, threads, g->nrows);
  g->div_items = make_div(g->items);
}

// Fills *out for one candidate; returns its estimated cost in issue cycles
// per SM (lower is better), or -1 when the candidate does not fit.
inline double fast_plan(const FastLimits& lim, int N, int C, int D, int H, int W, int rh, int minb,
                 int segs, int hch, int td, int groups, FastChoice* out) {
  const int threads = segs * hch * td;
  if (threads < 1 || threads > FAST_MAX_THREADS || groups < 1) return -1.0;
  // The fill needs one full box row of threads in every mode; the element
  // and 8-byte modes use the most pieces per row (segs + 2).
  if (threads / (segs + 2) < 1) return -1.0;
  const int TW = FAST_R * segs, TH = rh * hch * groups;
  // No more than one spare thread column / row group / depth of padding.
  if (TW >= W + FAST_R || TH >= H + rh * hch || td > D) return -1.0;
  const int nrows = (td + 2) * (TH + 4);
  const long long smem_cap = fast_smem_cap(lim);
  // The widest fill whose box fits (the 16-byte one needs 4 more floats per
  // row, which can push a large box over the limit).
  int mode = fill_mode(W, segs), stride = 0, table = 0;
  long long smem = 0;
  for (;; mode = FAST_FILL_8B) {
    // Row stride: TW + 4 columns are used; the fills write up to TW + 5
    // (8-byte) or TW + 9 (16-byte pieces, see FastPiece16).
    stride = mode == FAST_FILL_16B ? TW + 12 : TW + 8;
    if ((stride * rh) % 32 == 0) stride += 4;  // spread row chunks over banks
    // Room for the table of this fill and of the 8-byte fill the launch
    // falls back to when x is not 16-byte aligned.
    int trows = fill_table_rows(mode, segs, threads, nrows);
    const int trows8 = fill_table_rows(FAST_FILL_8B, segs, threads, nrows);
    if (W % 4 == 0 && trows8 > trows) trows = trows8;
    table = (trows + 3) / 4 * 4;
    smem = 4LL * (FAST_WS_FLOATS + table + 8 + (long long)nrows * stride);
    if (smem <= smem_cap || mode != FAST_FILL_16B) break;
  }
  if (smem > smem_cap) return -1.0;
  const int rows_par = threads / fill_items(mode, segs);
  const long long tiles_w = ceil_div(W, TW), tiles_h = ceil_div(H, TH),
                  chunks_d = ceil_div(D, td);
  const long long blocks = (long long)N * C * tiles_w * tiles_h * chunks_d;
  if (blocks > 0x7fffffffLL) return -1.0;
  // Issue cycles per thread and a latency term, fitted to sweeps of all
  // candidate configurations on an H100 (see RESULTS.md). v5 rescaled the
  // fill and setup terms by SASS instruction counts, when the fill got wider
  // loads and the divisions became multiplies: per fill slot (one piece of
  // one box row) ~23 instructions for 16-byte pieces, ~17 for 8-byte ones,
  // batching included (was 20 for every 4 columns), setup ~170 (was ~300),
  // and ~30 less per row group for the output stores.
  // Measured: the RH = 4 and 6 instances issue their FMAs ~10% / ~4% more
  // efficiently than RH = 7 and 8 (smaller unrolled bodies).
  const double fma_eff = rh <= 4 ? 0.90 : rh <= 6 ? 0.96 : 1.0;
  double compute = 75.0 * FAST_R * rh * fma_eff + 6.0 * (rh + 4) + 8.0 * rh + 170.0;
  double per_slot = mode == FAST_FILL_16B ? 23.0 : 17.0;
  if (!lim.per_simd_bounds && minb == FAST_MINB_64) {
    // The 64-register instances, from their SASS: RH = 6, 7 and 8 reload
    // part of the plane's weights every plane (~21 more instructions per
    // plane, 3 planes per group); the 16-byte fill spills (8 local accesses
    // per round of 12 rows, ~1 per slot). RH = 4 issues the same count, but
    // ran ~5% slower than the 80-register instance at equal residency
    // (seg3d, 6 blocks either way): less room to load windows ahead.
    // (No AMD instance is held below what its loop needs: no such terms.)
    compute += rh >= 6 ? 3 * 21.0 : 0.05 * compute;
    if (mode == FAST_FILL_16B) per_slot += 1.0;
  }
  compute *= groups;
  const double fill = per_slot * ceil_div(nrows, rows_par) + 2.0 * ceil_div(table, threads) + 170.0;
  const int warps = (int)ceil_div(threads, lim.warp);
  // Each scheduler issues one warp instruction every warp / lanes cycles: 1
  // on the H100 (32 FP32 lanes per sub-partition), 4 on CDNA (16-lane SIMDs,
  // 64-wide waves).
  const double block_issue = warps * (compute + fill) * (double)(lim.warp / lim.lanes) / lim.schedulers;
  long long resident = fast_resident_by_regs(lim, minb, warps);
  const long long by_smem = lim.smem_per_sm / (smem + lim.smem_reserved);
  resident = resident < by_smem ? resident : by_smem;
  if (resident < 1) return -1.0;
  // Waves of `resident` blocks per SM. A last, partial wave costs the issue
  // slots of the blocks the busiest SM still runs (ceil(rest / sms)), not a
  // whole wave: counting whole waves made 4 blocks per SM look ~4% worse
  // than 3 on x3d_res4 (13.1 -> 14 waves), where it measured ~9% better.
  const int sms = lim.sms;
  const long long per_wave = (long long)sms * resident;
  const long long full = blocks / per_wave, rest = blocks - full * per_wave;
  const double issue_waves = (double)full + (double)ceil_div(rest, sms) / (double)resident;
  // The fill's memory latency is exposed less the more blocks share an SM.
  const double latency = 40000.0 / (double)(resident * resident * resident);
  // Ties (several shapes of box cost the same issue slots) go to the box
  // that reads the fewest bytes.
  const double cost = issue_waves * resident * block_issue +
                      (double)ceil_div(blocks, per_wave) * latency + 1e-3 * (double)nrows * stride;
  if (out) {
    out->rh = rh;
    out->minb = minb;
    FastGeom& g = out->g;
    g.segs = segs; g.hch = hch; g.td = td; g.groups = groups;
    g.tiles_w = (int)tiles_w; g.tiles_h = (int)tiles_h; g.chunks_d = (int)chunks_d;
    g.rows_box = TH + 4;
    g.nrows = nrows;
    g.stride = stride;
    g.table = table;
    set_fill(&g, mode, threads);
    g.div_tw = make_div(g.tiles_w);
    g.div_th = make_div(g.tiles_h);
    g.div_cd = make_div(g.chunks_d);
    g.div_c = make_div(C);
    g.div_rows = make_div(g.rows_box);
    g.div_segs = make_div(segs);
    g.div_hch = make_div(hch);
    out->threads = threads;
    out->smem = (int)smem;
    out->resident = (int)resident;
  }
  return cost;
}

// cfg[0] of launch_conv3d_fast_with -> an instance built for this platform
// (plain RH: RH's first one; 100 * MINB + RH: that one); false if none.
inline bool fast_decode(const FastLimits& lim, int code, int* rh, int* minb) {
  const FastInstance* list = 0;
  const int n = fast_instances(lim, &list);
  const int want_rh = code < 100 ? code : code % 100, want_minb = code < 100 ? 0 : code / 100;
  for (int i = 0; i < n; ++i)
    if (list[i].rh == want_rh && (want_minb == 0 || list[i].minb == want_minb)) {
      *rh = list[i].rh;
      *minb = list[i].minb;
      return true;
    }
  return false;
}

// The code fast_decode takes back for a choice: plain RH for RH's first
// instance (on CUDA, the 80-register one), 100 * MINB + RH otherwise.
inline int fast_encode(const FastLimits& lim, const FastChoice& ch) {
  int rh = 0, minb = 0;
  if (fast_decode(lim, ch.rh, &rh, &minb) && minb == ch.minb) return ch.rh;
  return 100 * ch.minb + ch.rh;
}

inline bool fast_choose(const FastLimits& lim, int N, int C, int D, int H, int W, FastChoice* best) {
  // Measured exceptions: where a tune.py sweep on the H100 (132 SMs) found a
  // configuration clearly faster than the cost model's pick, it is used for
  // that exact shape. The model ranks the deep seg3d volumes' tiles wrongly:
  // it charges the 3-blocks-per-SM tiles with a depth of 8 more latency than
  // they show, and its 4x16x64 pick measured 8-12% slower than them.
  // Everywhere else (other GPUs, AMD, other shapes) the model decides.
  struct Tuned { int N, C, D, H, W, code, segs, hch, td, groups; };
  static const Tuned tuned[] = {
      {2, 64, 64, 64, 64, FAST_CODE_64 + 8, 16, 1, 8, 2},  // seg3d_64: 139.9 us vs 152.5
      {1, 32, 128, 128, 128, 4, 32, 1, 8, 2},              // seg3d_128: 274.9 us vs 311.6
  };
  if (!lim.per_simd_bounds && lim.sms == 132)
    for (const Tuned& t : tuned)
      if (t.N == N && t.C == C && t.D == D && t.H == H && t.W == W) {
        int rh = 0, minb = 0;
        if (fast_decode(lim, t.code, &rh, &minb) &&
            fast_plan(lim, N, C, D, H, W, rh, minb, t.segs, t.hch, t.td, t.groups, best) >= 0)
          return true;
      }
  const FastInstance* list = 0;
  const int instances = fast_instances(lim, &list);
  double best_cost = -1.0;
  // First pass, the space the cost model was fitted on: multiples of 32
  // threads (whole H100 warps), 128 to 256 of them, the W tile a 1/k share of
  // the row (k = 1..4), <= 15% padding along each axis. Second pass (small or
  // odd shapes where nothing qualifies): anything that fits. The first pass
  // stays in steps of 32 on AMD too: whole 64-wide waves left no 128-256
  // thread tile for rows such as 112 columns (x3d_res2 fell to the second
  // pass); a half-empty last wave is charged in full by the cost (warps
  // counts whole waves of the device).
  const int s0 = (W + FAST_R - 1) / FAST_R;
  // Every instance is searched, in list order, so that on CUDA the
  // 80-register one wins ties (it has no spills and fewer instructions).
  for (int strict = 1; strict >= 0 && best_cost < 0; --strict)
    for (int k = 0; k < instances; ++k)
      for (int td = 1; td <= 16; ++td)
        for (int hch = 1; hch <= 32; ++hch)
          for (int segs = 1; segs <= 32; ++segs)
            for (int groups = 1; groups <= 4; ++groups) {
              const int rh = list[k].rh, minb = list[k].minb;
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
                  fast_plan(lim, N, C, D, H, W, rh, minb, segs, hch, td, groups, &cand);
              if (cost < 0) continue;
              if (best_cost < 0 || cost < best_cost) {
                best_cost = cost;
                *best = cand;
              }
            }
  return best_cost >= 0;
}

inline bool fast_shape_ok(int N, int C, int D, int H, int W) {
  return N > 0 && C > 0 && D > 0 && H > 0 && W > 0 &&
         (long long)D * H * W < 0x7fffffffLL;
}
