// Group-per-row kernel for 16/32-bit rows too long for one warp's registers (2048 < M <= 16384):
// a block of G warps holds one row in registers as fp32 values, warp w owning the contiguous
// segment [w*S, (w+1)*S) with S = 32*VPT (slot j of lane l is element w*S + j*32 + l, so loads are
// coalesced and index order is warp, then slot, then lane).  Every count is the warp kernel's
// count followed by one exchange of per-warp partials through shared memory (one barrier; the
// partials are double-buffered so that the next exchange cannot overwrite a slot still being
// read).  Exact mode takes the same fast path as the warp kernel (rtopk_warp_values.cuh):
// value-space midpoints until at most 32 elements remain in the bracket, then one warp ranks the
// candidates; at k >= 64 finite rows are cut by whole-row bucket counting instead
// (group_bucket_cut, a separate kernel instance).  Where k <= M / 16 (G <= 8), a finite row is
// first filtered (group_filter_topk): a sample gives a threshold, each warp lists its elements
// above it, the cut and the outputs come from the lists alone; a row the sample misjudges falls
// back to the whole-row path.  NaN and +-inf are counted above or below the finite bracket, so
// they stay on the fast path too; a k-th element that is NaN becomes a Plan.
// Algorithm 2 on finite rows runs the warp kernel's cheap midpoints; everything else (eps, rows
// that do not narrow) runs the shared make_plan() on a group-wide Row.  Results are bit-identical
// to the CPU's (same counts, same arithmetic).  Outputs come out in index order: up to
// group_stage_k(G) per warp are staged in shared memory and written with coalesced stores at the
// warp's offset (one exchange of per-warp counts); larger k counts each warp's share first and
// writes directly.
#pragma once

#include "rtopk_warp_values.cuh"

namespace rtopk {
namespace cuda_detail {

// Outputs staged per warp: up to 512 (34 KB of staging at 8 warps; the static shared memory stays
// under 48 KB), 128 at 16 warps.  Above it each warp counts its share first and writes directly.
constexpr int group_stage_k(int G) { return G <= 8 ? 512 : 128; }

constexpr int kGroupFastPasses = 24;  // whole-row bisection passes before falling back

template <int G>
struct GroupShared {
  uint32_t part[2][5][G];  // per-warp partials, double-buffered
  float cand_v[G][kCandBuf];
  int cand_i[G][kCandBuf];
  float cut_t;
  int cut_idx;
  int bucket[3];  // group_bucket_cut's b*, its count, the count above it
  __align__(16) float stage_v[G][group_stage_k(G) + 32];
  __align__(16) int stage_i[G][group_stage_k(G) + 32];
};

// A value every lane of the warp holds, made visibly warp-uniform to the compiler (values read
// from shared memory are not, and control flow on them would make every later warp-synchronous
// instruction take its divergence-safe form).
template <typename T>
__device__ __forceinline__ T uniform(T v) {
  return __shfl_sync(kFullMask, v, 0);
}

// The block's warps and their exchange area.  Every exchange is made by all threads of the block
// with warp-uniform (indeed block-uniform) control flow.
template <int G>
struct Group {
  GroupShared<G>* s;
  int phase;
  int warp;

  // Publishes N warp-uniform words per warp and waits for every warp's.
  template <int N = 1>
  __device__ __forceinline__ void publish(const uint32_t (&v)[N]) {
    static_assert(N >= 1 && N <= 5, "exchange slots");
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
      for (int i = 0; i < N; ++i) s->part[phase][i][warp] = v[i];
    }
    __syncthreads();
  }
  __device__ __forceinline__ void publish(uint32_t a) { publish<1>({a}); }
  // op over every warp's word in `slot`.
  template <typename T, typename Op>
  __device__ __forceinline__ T fold(int slot, Op op) const {
    T t = T(s->part[phase][slot][0]);
#pragma unroll
    for (int g = 1; g < G; ++g) t = op(t, T(s->part[phase][slot][g]));
    return uniform(t);
  }
  __device__ __forceinline__ uint32_t sum(int slot) const { return fold<uint32_t>(slot, SumOp{}); }
  __device__ __forceinline__ int min_int(int slot) const { return fold<int>(slot, MinOp{}); }
  __device__ __forceinline__ int max_int(int slot) const { return fold<int>(slot, MaxOp{}); }
  __device__ __forceinline__ uint32_t min_u(int slot) const {
    return fold<uint32_t>(slot, MinOp{});
  }
  __device__ __forceinline__ uint32_t max_u(int slot) const {
    return fold<uint32_t>(slot, MaxOp{});
  }
  // Sum over the warps before this one.
  __device__ __forceinline__ uint32_t before(int slot) const {
    uint32_t t = 0;
#pragma unroll
    for (int g = 0; g < G; ++g) t += g < warp ? s->part[phase][slot][g] : 0u;
    return uniform(t);
  }
  // Ends an exchange: the next one writes the other buffer.
  __device__ __forceinline__ void done() { phase ^= 1; }

  __device__ __forceinline__ int total(int v) {
    publish(uint32_t(v));
    const int t = int(sum(0));
    done();
    return t;
  }
};

// A row spread over the group: this warp's segment as a ValueRow (cols = its real elements,
// npad = the rest, copies of the row's element 0), plus the group exchange.  Implements the Row
// interface of make_plan() with group-wide results.
template <int VPT, int G, bool kLargest>
struct GroupRow {
  using T = KeyTraits<float>;
  using Key = T::Key;
  ValueRow<VPT, kLargest> w;
  int base;  // index of this warp's first element
  int cols;  // the whole row
  Group<G> g;

  __device__ __forceinline__ int64_t count_ge(Key t) { return g.total(int(w.count_ge(t))); }
  __device__ __forceinline__ bool key_range(Key& lo, Key& hi, bool finite_only) {
    Key mn, mx;
    w.key_range(mn, mx, finite_only);  // (kMax, 0) for a warp without such elements
    g.template publish<2>({mn, mx});
    lo = g.min_u(0);
    hi = g.max_u(1);
    g.done();
    return hi != 0;
  }
  // Finite rows: elements >= t.
  __device__ __forceinline__ int count_finite(float t) { return g.total(w.count_ge_finite(t)); }
  // Any row, t finite: elements >= t, NaN counted above every t when it ranks high.
  __device__ __forceinline__ int count_any(float t) {
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) c += kLargest ? !(w.v[j] < t) : (w.v[j] >= t);
    const bool pad_in = kLargest ? !(w.pad < t) : (w.pad >= t);
    return g.total(int(warp_sum(c)) - (pad_in ? w.npad : 0));
  }
  template <bool kFinite>
  __device__ __forceinline__ int count(float t) {
    if constexpr (kFinite) {
      return count_finite(t);
    } else {
      return count_any(t);
    }
  }

  // Index of the q-th element (1-based, index order) with pred(v) among the real ones; the caller
  // knows there are at least q.
  template <typename Pred>
  __device__ __forceinline__ int find_qth(Pred pred, int q) {
    const int lane = threadIdx.x & 31;
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) c += w.valid(j) & pred(w.v[j]);
    const int mine = int(warp_sum(c));
    g.publish(uint32_t(mine));
    const int seen0 = int(g.before(0));
    g.done();
    if (seen0 < q && q <= seen0 + mine) {  // warp-uniform: the warp holding the q-th
      int seen = seen0;
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        const unsigned m = __ballot_sync(kFullMask, w.valid(j) & pred(w.v[j]));
        if (seen < q && seen + __popc(m) >= q) {
          const bool last = (m >> lane & 1u) && seen + __popc(m & ((1u << lane) - 1u)) == q - 1;
          if (last) g.s->cut_idx = base + j * 32 + lane;
        }
        seen += __popc(m);
      }
    }
    __syncthreads();
    const int idx = uniform(g.s->cut_idx);
    __syncthreads();  // cut_idx is written again by the next broadcast
    return idx;
  }

  // The cut taking every element above t and the first q (index order) equal to it, as
  // first_ties_cut() in rtopk_warp_values.cuh.
  __device__ __forceinline__ Cut first_ties_cut(float t, int q) {
    return Cut::at(t, find_qth([&](float v) { return v == t; }, q));
  }

  // Min and max of the elements in [lo, hi) ([lo, hi] while hi has not moved).
  __device__ __forceinline__ void bracket_range(float lo, float hi, bool hi_moved, float& cmin,
                                                float& cmax) {
    float mn, mx;
    cuda_detail::bracket_range(w, lo, hi, hi_moved, mn, mx);
    g.template publish<2>({uint32_t(ordered(mn)), uint32_t(ordered(mx))});
    cmin = unordered(g.min_int(0));
    cmax = unordered(g.max_int(1));
    g.done();
  }
};

// Min and max of a row; 0 if it is finite (no NaN, no +-inf), 1 otherwise.
template <int VPT, int G, bool L>
__device__ __forceinline__ int group_min_max(GroupRow<VPT, G, L>& row, float& lo, float& hi) {
  float mn = row.w.v[0], mx = row.w.v[0];
#pragma unroll
  for (int j = 1; j < VPT; ++j) {
    mn = min_nan(mn, row.w.v[j]);
    mx = max_nan(mx, row.w.v[j]);
  }
  const bool fin = finite_float(mn) && finite_float(mx);
  const bool all_fin = __all_sync(kFullMask, fin);
  // (For a row that is not finite the min/max exchanged here are not used.)
  const int omn = all_fin ? warp_min(ordered(mn)) : 0;
  const int omx = all_fin ? warp_max(ordered(mx)) : 0;
  row.g.template publish<3>({uint32_t(omn), uint32_t(omx), all_fin ? 0u : 1u});
  const bool finite = row.g.sum(2) == 0;
  lo = unordered(row.g.min_int(0));
  hi = unordered(row.g.max_int(1));
  row.g.done();
  return finite ? 0 : 1;
}

// The cut at rank r (1-based) among the candidates the warps have compacted into their cand
// lists (n in this warp's, at most kCandSlots in all): one exchange, then one warp ranks them.
template <int G>
__device__ __forceinline__ Cut group_rank_lists(Group<G>& g, int n, int r) {
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  GroupShared<G>* s = g.s;
  g.publish(uint32_t(n));
  if (g.warp == 0) {
    // Lane i takes the i-th candidate of the row in index order.
    int src_w = -1, src_s = 0, seen = 0;
#pragma unroll
    for (int gw = 0; gw < G; ++gw) {
      const int c = int(s->part[g.phase][0][gw]);
      if (src_w < 0 && lane < seen + c) {
        src_w = gw;
        src_s = lane - seen;
      }
      seen += c;
    }
    const bool has = src_w >= 0;
    const float cv = has ? s->cand_v[src_w][src_s] : 0.f;
    const int ci = has ? s->cand_i[src_w][src_s] : INT_MAX;
    float lo2 = unordered(warp_min(has ? ordered(cv) : INT_MAX));
    float hi2 = unordered(warp_max(has ? ordered(cv) : INT_MIN));
    int c_hi2 = __popc(__ballot_sync(kFullMask, has && !(cv < hi2)));
    float t_out = 0.f;
    int idx_out = INT_MAX;
    bool found = false;
    if (c_hi2 >= r) {
      lo2 = hi2;  // the top r candidates all equal the largest
      c_hi2 = 0;
    } else {
      for (;;) {
        const float t = KeyTraits<float>::midpoint(lo2, hi2);
        if (!(lo2 < t && t < hi2)) break;
        const int cnt = __popc(__ballot_sync(kFullMask, has && !(cv < t)));
        if (cnt == r) {
          t_out = t;
          found = true;
          break;
        }
        if (cnt < r) {
          hi2 = t;
          c_hi2 = cnt;
        } else {
          lo2 = t;
        }
      }
    }
    if (!found) {
      // Every candidate in [lo2, hi2) equals lo2: take the first r - c_hi2 of them by index.
      const unsigned tie = __ballot_sync(kFullMask, has && cv == lo2);
      const int q = r - c_hi2;  // >= 1
      const bool last = (tie >> lane & 1u) && __popc(tie & lanes_below) == q - 1;
      const int src = __ffs(__ballot_sync(kFullMask, last)) - 1;
      t_out = lo2;
      idx_out = __shfl_sync(kFullMask, ci, src);
    }
    if (lane == 0) {
      s->cut_t = t_out;
      s->cut_idx = idx_out;
    }
  }
  g.done();
  __syncthreads();
  const Cut cut = Cut::at(uniform(s->cut_t), uniform(s->cut_idx));
  __syncthreads();  // the broadcast slots are written again by the next row
  return cut;
}

// The cut among at most kCandSlots candidates (in_cand(j, v): slot j with value v is one, padding
// never), c_hi elements of the row lying above all of them and c_hi < k <= c_hi + their number:
// each warp compacts its own into shared memory, then one warp ranks them all.
template <int VPT, int G, bool L, typename InCand>
__device__ __forceinline__ Cut group_rank_candidates(GroupRow<VPT, G, L>& row, int k, int c_hi,
                                                     InCand in_cand) {
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  // Each warp compacts its candidates in index order into its own list.
  GroupShared<G>* s = row.g.s;
  const int warp = row.g.warp;
  int n = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const float x = row.w.v[j];
    const bool cand = in_cand(j, x);
    const unsigned m = __ballot_sync(kFullMask, cand);
    if (m == 0u) continue;  // warp-uniform: most slots of a long row hold no candidate
    // Lanes with nothing to store write their own spare slot (unconditional stores).
    const int slot = cand ? n + __popc(m & lanes_below) : kCandSlots + lane;
    s->cand_v[warp][slot] = x;
    s->cand_i[warp][slot] = row.base + j * 32 + lane;
    n += __popc(m);
  }
  return group_rank_lists(row.g, n, k - c_hi);
}

// Exact cut from a bracket, as bracket_cut() in rtopk_warp_values.cuh: [lo, hi) holds c_lo - c_hi
// elements, c_hi lie above it (hi is the closed row maximum while hi_moved is false), and
// c_hi < k <= c_lo.  Whole-row bisection, then one warp ranks the <= 32 candidates.
template <bool kFinite, int VPT, int G, bool L>
__device__ __forceinline__ Cut group_bracket_cut(GroupRow<VPT, G, L>& row, int k, float lo,
                                                 float hi, int c_lo, int c_hi, bool hi_moved) {
  for (int pass = 0; pass < kGroupFastPasses && c_lo - c_hi > 32; ++pass) {
    float t = KeyTraits<float>::midpoint(lo, hi);
    if (!(lo < t && t < hi)) {
      // No float between lo and hi.  A closed hi (the row maximum) is counted itself: then
      // either its copies hold the k-th or [lo, hi) holds lo's alone (rows of a few ulps spent
      // every pass here, then took the general path).
      if (hi_moved || !(lo < hi)) break;
      t = hi;
    }
    const int cnt = row.template count<kFinite>(t);
    if (cnt == k) return Cut::at(t, INT_MAX);
    // (t == hi only when hi is closed: every element >= hi equals it.)
    if (t == hi && cnt > k) return row.first_ties_cut(hi, k - c_hi);
    const bool empty_half = cnt < k ? (hi_moved && cnt == c_hi) : cnt == c_lo;
    if (cnt < k) {
      hi = t;
      c_hi = cnt;
      hi_moved = true;
    } else {
      lo = t;
      c_lo = cnt;
    }
    if (empty_half) {
      float cmin, cmax;
      row.bracket_range(lo, hi, hi_moved, cmin, cmax);
      if (cmin == cmax) return row.first_ties_cut(cmin, k - c_hi);
      lo = cmin;  // nothing lies in [lo, cmin): the count at lo is unchanged
    }
  }
  if (c_lo - c_hi > 32) {
    float cmin, cmax;
    row.bracket_range(lo, hi, hi_moved, cmin, cmax);
    if (cmin == cmax) return row.first_ties_cut(cmin, k - c_hi);
    return Cut::general();
  }

  // The candidates lo <= v < hi (v <= hi while hi is the row maximum).
  return group_rank_candidates(row, k, c_hi, [&](int j, float x) {
    return row.w.valid(j) & !(x < lo) & (!hi_moved | (x < hi));
  });
}

// The group kernel's whole-row cut (finite rows, lo < hi their minimum and maximum), instead of
// bisecting [lo, hi]: every element is counted into one of kGroupBuckets linear buckets of [lo, hi]
// (bucket 0 the largest; shared atomics), one block scan finds the bucket b* of the k-th element,
// and b*'s elements are ranked (group_rank_candidates) or, when more than kCandSlots, bisected in
// their own range.  One count and one scan (three barriers) against group_bracket_cut's ~5-9
// passes of a barrier each, at about three passes' instructions: it pays from k ~ 64 on (notes
// v20), so the kernel instance with it (kBucketCut) is launched for exact mode at such k only.
// `hist` (kGroupBuckets words) is zero on entry and left zero.
constexpr int kGroupBuckets = 1024;
constexpr int64_t kGroupBucketMinK = 64;
// Exact mode filters rows of at least this many elements per selected one (G <= 8).
constexpr int64_t kGroupFilterRatio = 16;

// The bucket b holding rank `rank` (1-based, bucket 0 first) of the kGroupBuckets counters in
// `hist`, its count n and the count in the buckets before it; rank must not exceed the total.
// Thread t owns buckets t * W ...: its total, the totals of the threads before it, and the one
// thread whose buckets hold the rank finds b.  Each thread zeroes its own words for the next use
// (no other thread reads them; the next counts come after further barriers).
template <int G>
__device__ __forceinline__ void group_bucket_rank(Group<G>& g, uint32_t* hist, int rank, int& b,
                                                  int& n, int& above) {
  constexpr int W = kGroupBuckets / (G * 32);
  static_assert(kGroupBuckets % (G * 32) == 0 && (W == 1 || W == 2 || W % 4 == 0), "layout");
  uint32_t c[W], zero[W], total = 0;
  load_words<W>(hist + threadIdx.x * W, c);
#pragma unroll
  for (int i = 0; i < W; ++i) {
    total += c[i];
    zero[i] = 0;
  }
  store_words<W>(hist + threadIdx.x * W, zero);
  const uint32_t incl = warp_inclusive_sum(total);
  g.publish(__shfl_sync(kFullMask, incl, 31));
  const int start = int(g.before(0) + incl - total);
  g.done();
  GroupShared<G>* s = g.s;
  if (start < rank && rank <= start + int(total)) {
    int acc = start;
#pragma unroll
    for (int i = 0; i < W; ++i) {
      if (acc < rank && rank <= acc + int(c[i])) {
        s->bucket[0] = int(threadIdx.x) * W + i;
        s->bucket[1] = int(c[i]);
        s->bucket[2] = acc;
      }
      acc += int(c[i]);
    }
  }
  __syncthreads();  // (the slots are written again only after further exchanges)
  b = uniform(s->bucket[0]);
  n = uniform(s->bucket[1]);
  above = uniform(s->bucket[2]);
}

template <int VPT, int G, bool L>
__device__ __forceinline__ Cut group_bucket_cut(GroupRow<VPT, G, L>& row, int k, float lo, float hi,
                                                uint32_t* hist) {
  constexpr int B = kGroupBuckets;
  float scale;
  if (!linear_bucket_scale<B>(lo, hi, scale))  // block-uniform
    return group_bracket_cut<true>(row, k, lo, hi, row.cols, 0, false);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    if (row.w.valid(j)) atomicAdd(hist + linear_bucket<B>(row.w.v[j], hi, scale), 1u);
  }
  __syncthreads();
  int bstar, n, c_hi;
  group_bucket_rank(row.g, hist, k, bstar, n, c_hi);
  const auto in_bstar = [&](int j, float x) {
    return row.w.valid(j) & (linear_bucket<B>(x, hi, scale) == bstar);
  };
  if (n <= kCandSlots) return group_rank_candidates(row, k, c_hi, in_bstar);
  // Crowded: b*'s own range.  Earlier buckets hold only values above it, later ones only below.
  const float kInf = __int_as_float(0x7f800000);
  float mn = kInf, mx = -kInf;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const bool in = in_bstar(j, row.w.v[j]);
    mn = in ? fminf(mn, row.w.v[j]) : mn;
    mx = in ? fmaxf(mx, row.w.v[j]) : mx;
  }
  row.g.template publish<2>({uint32_t(warp_min(ordered(mn))), uint32_t(warp_max(ordered(mx)))});
  const float cmin = unordered(row.g.min_int(0)), cmax = unordered(row.g.max_int(1));
  row.g.done();
  if (cmin == cmax) return row.first_ties_cut(cmin, k - c_hi);
  return group_bracket_cut<true>(row, k, cmin, nextafterf(cmax, kInf), c_hi + n, c_hi, true);
}

// Exact top-k of a finite row (lo < hi its minimum and maximum) by filtering: one whole-row pass
// besides the load and min/max.  A sample (one element a thread, spread over the row) counted
// into the buckets of [lo, hi] gives t_lo, a value with some margin more than k elements at or
// above it; each warp lists its elements >= t_lo (index order) in its staging area; the k-th
// largest of the lists is found by the bucket cut on the lists alone, and the outputs are written
// from the lists.  Whenever at least k elements are listed the lists hold every element at or
// above the k-th, so the result is exact by construction; the sample only decides the speed.
// Returns false, with the outputs untouched and `hist` zero, where the caller is to take the
// whole-row path instead: scales that are not finite, an expected list size too large, fewer than
// k listed, a warp's list over its staging capacity, or a crowded bucket of the k-th element
// holding more than one value.  (benchmarks/filter_emul.py, a float32 numpy emulation, filtered
// 4345 of 5400 rows of randn, uniform, heavy-tail, tied and few-ulp rows, all exact.)
template <typename scalar_t, int VPT, int G, bool L>
__device__ __forceinline__ bool group_filter_topk(GroupRow<VPT, G, L>& row, int k, float lo,
                                                  float hi, float sample, uint32_t* hist,
                                                  scalar_t* ov, int64_t* oi) {
  constexpr int B = kGroupBuckets, kCap = group_stage_k(G);
  static_assert(kCap >= 512, "the lists live in the staging area");
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  float scale;
  if (!linear_bucket_scale<B>(lo, hi, scale)) return false;  // block-uniform
  // The sample's rank of the bracket: k's share of it, and three standard deviations more.
  constexpr int n_samples = G * 32;
  const float share = float(k) * float(n_samples) / float(row.cols);
  const int r_lo = int(ceilf(share + 3.f * sqrtf(share))) + 2;
  if (r_lo > n_samples) return false;  // the bracket would hold about the whole row
  atomicAdd(hist + linear_bucket<B>(sample, hi, scale), 1u);
  __syncthreads();
  int b_lo, n_b, above_b;
  group_bucket_rank(row.g, hist, r_lo, b_lo, n_b, above_b);
  // The lists' expected size from the sample: ties or clusters at the bracket make it large, and
  // then the whole-row path is cheaper than listing (and overflowing).
  if (int64_t(above_b + n_b) * row.cols > int64_t(n_samples) * min(G * kCap / 2, 4 * k + 512))
    return false;
  // Buckets 0 .. b_lo hold values above hi - (b_lo + 0.5) / scale.
  const float t_lo = hi - (float(b_lo) + 1.f) / scale;
  GroupShared<G>* s = row.g.s;
  const int warp = row.g.warp;
  float* s_v = s->stage_v[warp];
  int* s_i = s->stage_i[warp];
  int n = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const float v = row.w.v[j];
    const bool in = row.w.valid(j) & !(v < t_lo);
    const unsigned m = __ballot_sync(kFullMask, in);
    if (m == 0u) continue;  // warp-uniform
    const int pos = n + __popc(m & lanes_below);
    const int slot = in && pos < kCap ? pos : kCap + lane;  // own spare slot
    s_v[slot] = v;
    s_i[slot] = row.base + j * 32 + lane;
    n += __popc(m);
  }
  row.g.template publish<2>({uint32_t(n), uint32_t(n)});
  const int total = int(row.g.sum(0)), most = int(row.g.max_u(1));
  row.g.done();
  if (total < k || most > kCap) return false;
  __syncwarp();
  // The k-th largest of the lists: the bucket cut on them, over [t_lo, hi].
  float scale2;
  if (!linear_bucket_scale<B>(t_lo, hi, scale2)) return false;
  for (int p = lane; p < n; p += 32) atomicAdd(hist + linear_bucket<B>(s_v[p], hi, scale2), 1u);
  __syncthreads();
  int bstar, n_star, c_hi;
  group_bucket_rank(row.g, hist, k, bstar, n_star, c_hi);
  const auto in_star = [&](float v) { return linear_bucket<B>(v, hi, scale2) == bstar; };
  Cut cut;
  if (n_star > kCandSlots) {
    // Crowded: one value (ties at the k-th) takes its first members by index; otherwise the
    // whole-row path (clusters, heavy tails).
    const float kInf = __int_as_float(0x7f800000);
    float mn = kInf, mx = -kInf;
    unsigned nm = 0;
    for (int p = lane; p < n; p += 32) {
      const float v = s_v[p];
      const bool in = in_star(v);
      mn = in ? fminf(mn, v) : mn;
      mx = in ? fmaxf(mx, v) : mx;
      nm += in;
    }
    const unsigned mine = warp_sum(nm);
    row.g.template publish<3>(
        {uint32_t(warp_min(ordered(mn))), uint32_t(warp_max(ordered(mx))), mine});
    const float cmin = unordered(row.g.min_int(0)), cmax = unordered(row.g.max_int(1));
    const int before = int(row.g.before(2));
    row.g.done();
    if (cmin != cmax) return false;
    const int q = k - c_hi;                       // the q-th member by index is the last one taken
    if (before < q && q <= before + int(mine)) {  // warp-uniform: the warp holding it
      int seen = before;
      for (int p0 = 0; p0 < n; p0 += 32) {
        const int p = p0 + lane;
        const bool in = p < n && in_star(s_v[p]);
        const unsigned m = __ballot_sync(kFullMask, in);
        if (seen < q && seen + __popc(m) >= q && in && seen + __popc(m & lanes_below) == q - 1)
          s->cut_idx = s_i[p];
        seen += __popc(m);
      }
    }
    __syncthreads();
    cut = Cut::at(cmin, uniform(s->cut_idx));
    __syncthreads();  // cut_idx is written again by the next broadcast
  } else {
    int nc = 0;
    for (int p0 = 0; p0 < n; p0 += 32) {  // warp-uniform
      const int p = p0 + lane;
      const float v = p < n ? s_v[p] : 0.f;
      const bool in = p < n && in_star(v);
      const unsigned m = __ballot_sync(kFullMask, in);
      if (m == 0u) continue;
      const int slot = in ? nc + __popc(m & lanes_below) : kCandSlots + lane;
      s->cand_v[warp][slot] = v;
      s->cand_i[warp][slot] = p < n ? s_i[p] : 0;
      nc += __popc(m);
    }
    cut = group_rank_lists(row.g, nc, k - c_hi);
  }
  // Outputs from the lists (index order): this warp's count, then its outputs at its offset.
  const auto takes = [&](float v, int e) {
    return (v > cut.t) | ((v == cut.t) & (e <= cut.idx_t));
  };
  unsigned mine = 0;
  for (int p = lane; p < n; p += 32) mine += takes(s_v[p], s_i[p]);
  row.g.publish(warp_sum(mine));
  const int base = int(row.g.before(0));
  row.g.done();
  int written = 0;
  for (int p0 = 0; p0 < n; p0 += 32) {  // warp-uniform
    const int p = p0 + lane;
    const float v = p < n ? s_v[p] : 0.f;
    const int e = p < n ? s_i[p] : 0;
    const bool t = p < n && takes(v, e);
    const unsigned m = __ballot_sync(kFullMask, t);
    if (t) {
      const int pos = base + written + __popc(m & lanes_below);
      ov[pos] = Elem<scalar_t>::from_compute(directed<L>(v));  // finite: exact
      oi[pos] = e;
    }
    written += __popc(m);
  }
  __syncwarp();  // the staging area is rewritten by this warp's next row
  return true;
}

// Exact cut of a group row, or !ok with `plan` set (the k-th element is NaN) or unset (the general
// path).  NaN ranks above +inf when largest, below -inf otherwise.  mm, lo, hi: group_min_max's.
template <int VPT, int G, bool L>
__device__ __forceinline__ Cut group_exact_cut(GroupRow<VPT, G, L>& row, int k, bool& have_plan,
                                               Plan<uint32_t>& plan, uint32_t* hist, int mm,
                                               float lo, float hi) {
  using T = KeyTraits<float>;
  if (mm == 0) {
    if (lo == hi) return Cut::at(lo, k - 1);  // one value: the first k in index order
    if (hist != nullptr) return group_bucket_cut(row, k, lo, hi, hist);
    return group_bracket_cut<true>(row, k, lo, hi, row.cols, 0, false);
  }
  // NaN or +-inf: the finite range, and the elements above and below it.
  const float kInf = __int_as_float(0x7f800000);
  float wlo, whi;
  int w_pinf, w_ninf, w_nan;
  infinite_row_range(row.w, wlo, whi, w_pinf, w_ninf, w_nan);
  row.g.template publish<5>({uint32_t(ordered(wlo)), uint32_t(ordered(whi)), uint32_t(w_nan),
                             uint32_t(w_pinf), uint32_t(w_ninf)});
  const float flo = unordered(row.g.min_int(0)), fhi = unordered(row.g.max_int(1));
  const int n_nan = int(row.g.sum(2)), n_pinf = int(row.g.sum(3)), n_ninf = int(row.g.sum(4));
  row.g.done();
  const NonFiniteSplit sp = split_non_finite<L>(k, row.cols, n_nan, n_pinf, n_ninf);
  switch (sp.kind) {
    case NonFiniteSplit::kNanTop:
    case NonFiniteSplit::kNanBottom:
      // The first q NaN, and everything ranked above NaN (its key: the highest, or 1).
      have_plan = true;
      plan = sp.kind == NonFiniteSplit::kNanTop ? Plan<uint32_t>{T::kMax, T::kMax, sp.q}
                                                : Plan<uint32_t>{1u, 1u, sp.q};
      return Cut::general();
    case NonFiniteSplit::kPosInf:
      return row.first_ties_cut(kInf, sp.q);
    case NonFiniteSplit::kNegInf:
      return row.first_ties_cut(-kInf, sp.q);
    default:
      // hi just above the finite maximum, open: the elements above the finite range stay out.
      return group_bracket_cut<false>(row, k, flo, nextafterf(fhi, kInf), sp.n_up, sp.n_top, true);
  }
}

// Algorithm 2 on a finite row, exactly as make_plan runs it: the first k elements >= lo.
template <int VPT, int G, bool L>
__device__ __forceinline__ Cut group_early_stop_cut(GroupRow<VPT, G, L>& row, int k,
                                                    int64_t max_iter) {
  float lo, hi;
  if (group_min_max(row, lo, hi) != 0) return Cut::general();
  for (int64_t it = 0; it < max_iter; ++it) {
    const float t = KeyTraits<float>::midpoint(lo, hi);
    const int cnt = row.count_finite(t);
    if (cnt == k) {
      lo = t;
      break;
    }
    const float lo0 = lo, hi0 = hi;
    if (cnt < k) {
      hi = t;
    } else {
      lo = t;
    }
    if (bracket_unchanged(lo, hi, lo0, hi0)) break;  // (the later steps would change nothing)
  }
  return Cut::at(lo, INT_MAX);
}

// Writes, in index order, the first k elements of the row that take_of(j, e, v) accepts (a pure
// function of the element).  k <= group_stage_k(G): each warp stages its share in shared memory,
// then writes it with coalesced stores at its offset; otherwise each warp counts its share first
// and writes directly.
template <typename scalar_t, int VPT, int G, bool L, typename TakeOf>
__device__ __forceinline__ void group_emit(GroupRow<VPT, G, L>& row, int k, TakeOf take_of,
                                           const scalar_t* x, scalar_t* ov, int64_t* oi) {
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  constexpr int kStage = group_stage_k(G);
  const bool stage = k <= kStage;
  GroupShared<G>* s = row.g.s;
  const int warp = row.g.warp;
  float* s_v = s->stage_v[warp];
  int* s_i = s->stage_i[warp];
  int base = 0;
  if (!stage) {
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) c += take_of(j, row.base + j * 32 + lane, row.w.v[j]);
    row.g.publish(warp_sum(c));
    base = int(row.g.before(0));
    row.g.done();
  }
  int written = 0;  // this warp's accepted elements so far
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    if (written >= k || base + written >= k) break;  // warp-uniform
    const int e = row.base + j * 32 + lane;
    const float v = row.w.v[j];
    const bool take = take_of(j, e, v);
    const unsigned take_mask = __ballot_sync(kFullMask, take);
    if (take_mask == 0u) continue;  // warp-uniform
    const int pos = written + __popc(take_mask & lanes_below);
    if (stage) {
      const int slot = take && pos < k ? pos : kStage + lane;  // own spare slot
      s_v[slot] = v;
      s_i[slot] = e;
    } else if (take && base + pos < k) {
      ov[base + pos] = out_value<L>(v, x + e);
      oi[base + pos] = e;
    }
    written += __popc(take_mask);
  }
  if (stage) {
    const int n = min(written, k);
    row.g.publish(uint32_t(n));
    base = int(row.g.before(0));
    row.g.done();
    __syncwarp();
    for (int i = lane; i < n && base + i < k; i += 32) {
      const int e = s_i[i];
      ov[base + i] = out_value<L>(s_v[i], x + e);
      oi[base + i] = e;
    }
    __syncwarp();  // the staging area is rewritten by this warp's next row
  }
}

// Blocks per SM: 16 warps, 128 registers (the 32 values per lane and the search spill below that).
constexpr int group_min_blocks(int G) { return G <= 16 ? 16 / G : 1; }

template <typename scalar_t, int G, int VPT, bool kLargest, bool kBucketCut, bool kFilter = false>
__global__ void __launch_bounds__(G * 32, group_min_blocks(G))
    group_values_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                        int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                        int64_t max_iter, float eps) {
  using E = Elem<scalar_t>;
  using Key = KeyTraits<float>::Key;
  constexpr int S = VPT * 32;
  __shared__ GroupShared<G> sh;
  __shared__ __align__(16) uint32_t hist[kGroupBuckets];
  const int lane = threadIdx.x & 31;
  Group<G> grp{&sh, 0, int(threadIdx.x / 32)};
  const bool exact = max_iter < 0 && !(eps > 0.f);
  const bool early_stop = max_iter > 0 && !(eps > 0.f);
  GroupRow<VPT, G, kLargest> row;
  row.base = grp.warp * S;
  row.cols = cols;
  row.g = grp;
  row.w.cols = max(0, min(cols - row.base, S));
  row.w.npad = S - row.w.cols;
  if ((kBucketCut || kFilter) && exact) {
    for (int i = threadIdx.x; i < kGroupBuckets; i += G * 32) hist[i] = 0;
    __syncthreads();
  }

  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const scalar_t* x = in + r * cols;
    row.w.pad = directed<kLargest>(E::to_compute(x[0]));
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int e = row.base + j * 32 + lane;
      row.w.v[j] = e < cols ? directed<kLargest>(E::to_compute(x[e])) : row.w.pad;
    }
    // The filter path's sample: one element a thread, spread evenly over the row (an L1 hit).
    float sample = 0.f;
    if constexpr (kFilter) {
      if (exact) sample = directed<kLargest>(E::to_compute(x[int(threadIdx.x) * cols / (G * 32)]));
    }
    scalar_t* ov = out_values + r * k;
    int64_t* oi = out_indices + r * k;

    Cut cut = Cut::general();
    bool have_plan = false;
    Plan<Key> plan{0u, 0u, 0};
    if (exact) {
      // Min and max first (group_exact_cut's input; the filter path's bracket).
      float lo, hi;
      const int mm = group_min_max(row, lo, hi);
      if constexpr (kFilter) {
        if (mm == 0 && lo < hi && group_filter_topk<scalar_t>(row, k, lo, hi, sample, hist, ov, oi))
          continue;
      }
      cut = group_exact_cut(row, k, have_plan, plan, kBucketCut ? hist : nullptr, mm, lo, hi);
    }
    if (early_stop) cut = group_early_stop_cut(row, k, max_iter);
    if (cut.ok) {
      // NaN ranks above every t when largest (!(v <= t)), below it otherwise.
      group_emit(
          row, k,
          [&](int j, int e, float v) {
            const bool above = kLargest ? !(v <= cut.t) : (v > cut.t);
            return row.w.valid(j) & (above | ((v == cut.t) & (e <= cut.idx_t)));
          },
          x, ov, oi);
    } else {
      if (!have_plan) plan = make_plan<float>(row, k, max_iter, eps);
      // The plan's quota of ties, as the index of the last one taken.
      const int idx_q =
          plan.quota > 0 ? row.find_qth([&](float v) { return plan.fills(value_key(v, kLargest)); },
                                        int(plan.quota))
                         : -1;
      group_emit(
          row, k,
          [&](int j, int e, float v) {
            const Key key = value_key(v, kLargest);
            return row.w.valid(j) & (plan.takes(key) | (plan.fills(key) & (e <= idx_q)));
          },
          x, ov, oi);
    }
  }
}

}  // namespace cuda_detail
}  // namespace rtopk
