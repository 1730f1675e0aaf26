// Warp-per-row kernel for 16/32-bit inputs: the row is held in registers as fp32 values (not keys),
// so every count is one float compare per element, and exact mode takes a fast path:
//   1. one pass for min, max and "all finite";
//   2. bisect arithmetic midpoints of [min, max] over the whole row until at most 32 elements
//      remain inside the bracket (or exactly k lie above a midpoint);
//   3. compact those candidates, in index order, one per lane (shared memory, 256 B per warp) --
//      for k <= list_max_k(), compact every element at or above the bracket into a list (at most
//      k + 31) and take the candidates from it, so that the selection walks the list, not the row;
//   4. finish the bisection on the candidates alone (one ballot per step) and resolve ties at the
//      k-th value by index.
// The unsorted kernel for rows of 193..256 elements skips steps 2-4: it counts the whole row into
// 1024 linear buckets and ranks only the bucket that holds the k-th element (row_bucket_cut).
// The result is the exact set defined in rtopk_algo.h (unique, so identical to the CPU's).
// Rows with NaN or +-inf bisect their finite range with what ranks above it counted above it
// (NaN above +inf for the k largest, below -inf for the k smallest); a k-th element at +-inf is a
// tie cut, one at NaN a plan on the NaN key.  Algorithm 2 (max_iter) on finite rows runs the same
// midpoints as make_plan() with a cheaper count.  Rows where the bracket cannot be narrowed to 32
// elements, max_iter on non-finite rows and the eps mode run the shared make_plan() on a
// value-backed Row instead.  Selected elements are staged in shared memory and written with
// coalesced stores when k <= kStageK (kWideStageK in the unsorted kernels of 32+ values per
// lane), after an in-warp counting sort when rank order is asked for.  The k smallest are found as
// the k largest of -x.
#pragma once

#include <cfloat>
#include <climits>
#include <cstring>

#include "rtopk_kernels_common.cuh"

namespace rtopk {
namespace cuda_detail {

constexpr int kFastPasses = 16;  // whole-row bisection passes before falling back
constexpr int kStageK = 128;     // outputs staged in shared memory (coalesced stores) up to this k
constexpr int kCandSlots = 32;   // candidates compacted for the final bisection
// Buffers carry one spare slot per lane after the real ones (see the compaction).
constexpr int kCandBuf = kCandSlots + 32;
// The staging area first holds the list of elements at or above the exact search's bracket (fewer
// than k above it, at most 32 in it: at most kStageK + 31), then the selected ones.
constexpr int kStageSpare = kStageK + 32;
constexpr int kStageSlots = kStageSpare + 32;
// Unsorted outputs staged up to this k by the kernels of 32+ values per lane (notes v20).
constexpr int kWideStageK = 512;

// Directed key (rtopk_algo.h) of a directed value.
__device__ __forceinline__ uint32_t value_key(float v, bool largest) {
  return v != v ? (largest ? 0xFFFFFFFFu : 1u) : to_key<float>(v);
}

// Whether directed value v ranks at or above the value t: NaN ranks above every value when the k
// largest are asked for, below every value otherwise (as torch.topk ranks it).
template <bool kLargest>
__device__ __forceinline__ bool ranks_ge(float v, float t) {
  return kLargest ? !(v < t) : v >= t;
}

// Row interface over fp32 values for make_plan().  Padding slots hold a copy of element 0 (a real
// value, so min/max need no masking); every count subtracts the padding copies it included.
// Slots below kFullSlots hold real elements in every row (the warp kernel's launch guarantees it:
// warp_slots_below), so their validity tests fold away; 0 where nothing is known (group rows).
template <int VPT, bool kLargest, int kFullSlots = 0>
struct ValueRow {
  using T = KeyTraits<float>;
  using Key = T::Key;
  float v[VPT];  // directed: -x for the k smallest
  float pad;
  int npad;
  int cols;
  // NaN ranks above everything when set, below everything (key 1) otherwise.
  static constexpr bool largest = kLargest;

  __device__ __forceinline__ bool valid(int j) const {
    return j < kFullSlots || j * 32 + int(threadIdx.x & 31) < cols;
  }

  __device__ __forceinline__ int64_t count_ge(Key t) const {
    unsigned c = 0;
    bool pad_in;
    if (t > T::kPosInf) {  // only NaN ranked high (key kMax) is at or above t
      if (!largest) return 0;
#pragma unroll
      for (int j = 0; j < VPT; ++j) c += v[j] != v[j];
      pad_in = pad != pad;
    } else {
      // Keys in (kNegInf, kPosInf] are the non-NaN floats; key >= t <=> value >= from_key(t);
      // every key at or below kNegInf admits all non-NaN elements.  NaN passes when it ranks
      // high, or (key 1) when t <= 1.
      const float x = t <= T::kNegInf ? -__int_as_float(0x7f800000) : from_key<float>(t);
      if (largest || t <= 1) {
#pragma unroll
        for (int j = 0; j < VPT; ++j) c += !(v[j] < x);
        pad_in = !(pad < x);
      } else {
#pragma unroll
        for (int j = 0; j < VPT; ++j) c += v[j] >= x;
        pad_in = pad >= x;
      }
    }
    return int64_t(warp_sum(c)) - (pad_in ? npad : 0);
  }

  // For finite rows only: elements >= t, with one subtract and a sign-bit add per element.
  __device__ __forceinline__ int count_ge_finite(float t) const {
    // v - t is negative exactly when v < t, except (-0) - (+0) = -0: a zero threshold is taken
    // as -0, for which v - t is +0 whenever v is a zero.
    const float tz = t == 0.f ? -0.f : t;
    unsigned below = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) below += __float_as_uint(v[j] - tz) >> 31;
    return VPT * 32 - int(warp_sum(below)) - (pad < t ? 0 : npad);
  }

  // For any row: elements ranked at or above the value t (ranks_ge), one compare and one add each.
  __device__ __forceinline__ int count_ge_ranked(float t) const {
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) c += ranks_ge<largest>(v[j], t);
    return int(warp_sum(c)) - (ranks_ge<largest>(pad, t) ? npad : 0);
  }

  __device__ __forceinline__ bool key_range(Key& lo, Key& hi, bool finite_only) const {
    Key mn = T::kMax, mx = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const Key key = value_key(v[j], largest);
      const bool use = valid(j) && (!finite_only || key_is_finite(key));
      mn = (use && key < mn) ? key : mn;
      mx = (use && key > mx) ? key : mx;
    }
    lo = warp_min(mn);
    hi = warp_max(mx);
    return hi != 0;
  }
};

// Neither +-inf nor NaN (one compare of the magnitude with the largest finite float).
__device__ __forceinline__ bool finite_float(float f) { return fabsf(f) <= 3.402823466e38f; }

// Order-preserving int of a finite float, for the one-instruction warp min/max.
__device__ __forceinline__ int ordered(float f) {
  const int b = __float_as_int(f);
  return b ^ ((b >> 31) & 0x7fffffff);
}
__device__ __forceinline__ float unordered(int o) {
  return __int_as_float(o ^ ((o >> 31) & 0x7fffffff));
}
// min/max that return NaN when either operand is NaN, so one pass also detects NaN.
__device__ __forceinline__ float min_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a != a || b != b) ? __int_as_float(0x7fffffff) : fminf(a, b);
#endif
}
__device__ __forceinline__ float max_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a != a || b != b) ? __int_as_float(0x7fffffff) : fmaxf(a, b);
#endif
}

// Row min and max.  Returns 0 for a finite row, 1 for a row with +-inf but no NaN, 2 with NaN.
template <int VPT, bool L, int F>
__device__ __forceinline__ int finite_min_max(const ValueRow<VPT, L, F>& row, float& lo,
                                              float& hi) {
  float mn = row.v[0], mx = row.v[0];
#pragma unroll
  for (int j = 1; j < VPT; ++j) {
    mn = min_nan(mn, row.v[j]);
    mx = max_nan(mx, row.v[j]);
  }
  const bool fin = finite_float(mn) && finite_float(mx);
  if (!__all_sync(kFullMask, fin)) return __any_sync(kFullMask, mn != mn || mx != mx) ? 2 : 1;
  lo = unordered(warp_min(ordered(mn)));
  hi = unordered(warp_max(ordered(mx)));
  return 0;
}

// A row with +-inf or NaN: its finite range and the number of +inf, -inf and NaN elements.
template <int VPT, bool L, int F>
__device__ __forceinline__ void infinite_row_range(const ValueRow<VPT, L, F>& row, float& lo,
                                                   float& hi, int& n_pinf, int& n_ninf,
                                                   int& n_nan) {
  const float kInf = __int_as_float(0x7f800000);
  float mn = kInf, mx = -kInf;
  unsigned pinf = 0, ninf = 0, nan = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const float x = row.v[j];
    const bool fin = row.valid(j) & (fabsf(x) < kInf);
    mn = fin ? fminf(mn, x) : mn;
    mx = fin ? fmaxf(mx, x) : mx;
    pinf += row.valid(j) & (x == kInf);
    ninf += row.valid(j) & (x == -kInf);
    nan += row.valid(j) & (x != x);
  }
  lo = unordered(warp_min(ordered(mn)));
  hi = unordered(warp_max(ordered(mx)));
  n_pinf = int(warp_sum(pinf));
  n_ninf = int(warp_sum(ninf));
  n_nan = int(warp_sum(nan));
}

// A selection of the form "value > t, or value == t at index <= idx_t", capped at k elements in
// index order.
struct Cut {
  float t = 0.f;
  int idx_t = 0;
  bool ok = false;         // false: use the general path
  bool top_known = false;  // top: the row's maximum, finite (the sorted output's bucket range)
  float top = 0.f;
  // > 0: the staging area holds the list_n elements from which the selection is taken (every
  // selected element, and at most 31 more), in index order or, in the sorting kernels of
  // stage_any_order, lane-major; 0: walk the row.
  int list_n = 0;
  // With ok false: when set, the first `quota` NaN elements by index are taken, and everything
  // else that ranks above NaN (a Plan on the NaN key), instead of the general search.
  bool nan_plan = false;
  int quota = 0;

  // Every element ranked above t, and those equal to t up to index idx_t (INT_MAX: all of them).
  static __device__ __forceinline__ Cut at(float t, int idx_t) {
    Cut c;
    c.t = t;
    c.idx_t = idx_t;
    c.ok = true;
    return c;
  }
  // The same selection, taken from the staging area's list of list_n elements.
  static __device__ __forceinline__ Cut from_list(float t, int idx_t, int list_n) {
    Cut c = at(t, idx_t);
    c.list_n = list_n;
    return c;
  }
  // No cut: the general search (make_plan) decides.
  static __device__ __forceinline__ Cut general() { return Cut(); }
  // The first q NaN elements by index, and everything ranked above NaN.
  static __device__ __forceinline__ Cut nan_first(int q) {
    Cut c;
    c.nan_plan = true;
    c.quota = q;
    return c;
  }
  // This cut, knowing the row's (finite) maximum.
  __device__ __forceinline__ Cut with_top(float row_max) const {
    Cut c = *this;
    c.top_known = true;
    c.top = row_max;
    return c;
  }
};

// Where the k-th element of a row with NaN or +-inf lies, from its counts; shared by the warp
// and group kernels.  Rank order: NaN (largest) > +inf > finite > -inf > NaN (smallest).
struct NonFiniteSplit {
  enum Kind { kFinite, kNanTop, kPosInf, kNegInf, kNanBottom } kind;
  int q;      // the k-th element's place among its equals (all but kFinite)
  int n_top;  // ranked above every finite element
  int n_up;   // ranked at or above the finite minimum
};
template <bool kLargest>
__device__ __forceinline__ NonFiniteSplit split_non_finite(int k, int cols, int n_nan, int n_pinf,
                                                           int n_ninf) {
  const int nan_top = kLargest ? n_nan : 0;
  const int n_top = nan_top + n_pinf;
  const int n_up = cols - n_ninf - (n_nan - nan_top);
  if (k <= nan_top) return {NonFiniteSplit::kNanTop, k, n_top, n_up};
  if (k <= n_top) return {NonFiniteSplit::kPosInf, k - nan_top, n_top, n_up};
  if (k > n_up + n_ninf) return {NonFiniteSplit::kNanBottom, k - n_up - n_ninf, n_top, n_up};
  if (k > n_up) return {NonFiniteSplit::kNegInf, k - n_up, n_top, n_up};
  return {NonFiniteSplit::kFinite, 0, n_top, n_up};
}

// Min and max of the elements in the bracket [lo, hi) ([lo, max] while hi has not moved).
template <int VPT, bool L, int F>
__device__ __forceinline__ void bracket_range(const ValueRow<VPT, L, F>& row, float lo, float hi,
                                              bool hi_moved, float& cmin, float& cmax) {
  const float kInf = __int_as_float(0x7f800000);
  float mn = kInf, mx = -kInf;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const float x = row.v[j];
    const bool in = row.valid(j) & !(x < lo) & (!hi_moved | (x < hi));
    mn = in ? fminf(mn, x) : mn;
    mx = in ? fmaxf(mx, x) : mx;
  }
  cmin = unordered(warp_min(ordered(mn)));
  cmax = unordered(warp_max(ordered(mx)));
}

// Every element above t is taken and q >= 1 of those equal to t, the first ones by index.
template <int VPT, bool L, int F>
__device__ __forceinline__ Cut first_ties_cut(const ValueRow<VPT, L, F>& row, float t, int q) {
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  int seen = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const unsigned m = __ballot_sync(kFullMask, row.valid(j) & (row.v[j] == t));
    if (seen + __popc(m) >= q) {  // warp-uniform
      const bool last = (m >> lane & 1u) && seen + __popc(m & lanes_below) == q - 1;
      const int src = __ffs(__ballot_sync(kFullMask, last)) - 1;
      return Cut::at(t, j * 32 + src);
    }
    seen += __popc(m);
  }
  return Cut::general();  // not reached: the caller counted at least q such elements
}

// Compacts the row's elements that keep(j, e, v) accepts into dst (values) / dst_i (indices), in
// lane-major order (lane 0's in slot order, then lane 1's, ...), for callers to which the order
// does not matter (the sorting kernels rank what they stage).  One warp scan of per-lane counts
// places each lane; a slot then costs a compare, a select and two stores, about 7 instructions
// against the index-order compaction's 18 (ballot, two popc, the running offset).  Lanes with
// nothing to store write their own spare slot, spare + lane.  Returns the number compacted.
template <int VPT, bool L, int F, typename Keep>
__device__ __forceinline__ int compact_lane_major(const ValueRow<VPT, L, F>& row, Keep keep,
                                                  float* dst_v, int* dst_i, int spare) {
  using Bits = typename std::conditional<VPT <= 32, uint32_t, uint64_t>::type;
  const int lane = threadIdx.x & 31;
  // The decisions as one bit per slot: kept in a register or two across the scan, where the
  // compiler would otherwise keep VPT predicates (or spill) to reuse them.
  Bits keep_bits = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) keep_bits |= keep(j, j * 32 + lane, row.v[j]) ? Bits(1) << j : 0;
  const int mine = VPT <= 32 ? __popc(uint32_t(keep_bits)) : __popcll(uint64_t(keep_bits));
  const int incl = warp_inclusive_sum(mine);
  int pos = incl - mine;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const bool c = (keep_bits >> j) & 1u;
    const int slot = c ? pos : spare + lane;
    dst_v[slot] = row.v[j];
    dst_i[slot] = j * 32 + lane;
    pos += c ? 1 : 0;
  }
  return __shfl_sync(kFullMask, incl, 31);
}

// Exact cut from a bracket: [lo, hi) holds c_lo - c_hi elements, c_hi of them lie above it (hi
// is closed, the row's maximum, while hi_moved is false), and c_hi < k <= c_lo.  Whole-row
// bisection, then the candidates.  For k <= kListK (<= kStageK) every element >= lo is listed in
// the staging area, and the selection is then made from the list, not from the row (Cut::list_n);
// with kAnyOrder in lane-major order (compact_lane_major), else in index order.  kUnsorted: called
// from an unsorted kernel (the list's own loop, the c_lo == k entry test); the sorting kernels,
// fetch-bound, keep the smaller code.
template <int kListK, bool kAnyOrder, bool kFinite, bool kUnsorted, int VPT, bool L, int F>
__device__ __forceinline__ Cut bracket_cut(const ValueRow<VPT, L, F>& row, int k, float lo,
                                           float hi, int c_lo, int c_hi, bool hi_moved,
                                           float (&s_val)[kCandBuf], int (&s_idx)[kCandBuf],
                                           float (&s_lv)[kStageSlots], int (&s_li)[kStageSlots]) {
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  static_assert(kListK <= kStageK, "the list lives in the staging area");
  const bool listed = kListK > 0 && k <= kListK;  // (k >= 1 is not known here)
  bool whole = false;  // exactly k elements are >= lo: the list is the selection
  // A caller's first bracket can hold exactly k (group_max_bound).  Tested in the unsorted kernels
  // only, so the sorting kernels keep their code size; where those take the bound (48+
  // values per lane) such a bracket goes through the candidates instead, to the same cut.
  if (kUnsorted && c_lo == k) {
    if (!listed) return Cut::at(lo, INT_MAX);
    whole = true;
  }
  // A pass that finds one half of the bracket empty snaps the bracket to its elements' own range,
  // so rows of few distinct values (ties) finish in a few passes instead of exhausting the
  // bisection.
  for (int pass = 0; !whole && pass < kFastPasses && c_lo - c_hi > 32; ++pass) {
    float t = KeyTraits<float>::midpoint(lo, hi);
    if (!(lo < t && t < hi)) {
      // No float between lo and hi.  A closed hi (the row maximum) is counted itself: then
      // either its copies hold the k-th or [lo, hi) holds lo's alone (as group_bracket_cut).
      if (hi_moved || !(lo < hi)) break;
      t = hi;
    }
    const int cnt = kFinite ? row.count_ge_finite(t) : row.count_ge_ranked(t);
    if (cnt == k) {
      if (!listed) return Cut::at(t, INT_MAX);
      lo = t;
      c_lo = k;
      whole = true;
      break;
    }
    if (t == hi && cnt > k) return first_ties_cut(row, hi, k - c_hi);  // (hi closed)
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
      bracket_range(row, lo, hi, hi_moved, cmin, cmax);
      if (cmin == cmax) return first_ties_cut(row, cmin, k - c_hi);
      lo = cmin;  // nothing lies in [lo, cmin): the count at lo is unchanged
    }
  }
  if (!whole && c_lo - c_hi > 32) {
    float cmin, cmax;
    bracket_range(row, lo, hi, hi_moved, cmin, cmax);
    if (cmin == cmax) return first_ties_cut(row, cmin, k - c_hi);
    return Cut::general();
  }

  // Compact the elements ranked >= lo into the list (k <= kListK: c_lo <= k + 31 of them; in
  // index order unless kAnyOrder), or else, in index order, the candidates lo <= v < hi (v <= hi
  // while hi is the row max) straight into the candidate buffer.
  const bool open = listed || !hi_moved;
  int n = 0;
  if (kAnyOrder && listed) {
    n = compact_lane_major(
        row, [&](int j, int, float x) { return row.valid(j) & ranks_ge<L>(x, lo); }, s_lv, s_li,
        kStageSpare);
  } else {
    // Unconditional stores keep the address math out of a branch (a predicated version measured
    // 13-26% slower); lanes with nothing to store write their own spare slot, so no two lanes ever
    // write one address (racecheck-clean).  In the unsorted kernels the list (every element ranked
    // >= lo) has a loop of its own: one compare a slot and fixed buffers (notes v22: exact about 3%
    // faster at 24 values per lane, 0-3% at 16).  The sorting kernels keep the one loop: with it
    // split, their instruction fetch made the sorted output 2-5% slower at M = 768, k >= 96.
    const auto compact = [&](float* cv, int* ci, int sp, auto cand_of) {
#pragma unroll
      for (int j = 0; j < VPT; ++j) {
        const float x = row.v[j];
        const bool cand = row.valid(j) & cand_of(x);
        const unsigned m = __ballot_sync(kFullMask, cand);
        const int slot = cand ? n + __popc(m & lanes_below) : sp;
        cv[slot] = x;
        ci[slot] = j * 32 + lane;
        n += __popc(m);
      }
    };
    if (kUnsorted && listed)
      compact(s_lv, s_li, kStageSpare + lane, [&](float x) { return ranks_ge<L>(x, lo); });
    else
      compact(listed ? s_lv : s_val, listed ? s_li : s_idx,
              (listed ? kStageSpare : kCandSlots) + lane,
              [&](float x) { return ranks_ge<L>(x, lo) & (open | (x < hi)); });
  }
  __syncwarp();
  const int list_n = listed ? n : 0;
  if (whole) return Cut::from_list(lo, INT_MAX, list_n);
  if (listed) {
    // The candidates are the listed elements below hi: a second compaction, over the few list
    // slots (at most 5) instead of the row.
    int nc = 0;
    for (int p0 = 0; p0 < n; p0 += 32) {
      const int p = p0 + lane;
      const float x = s_lv[p];
      const bool cand = (p < n) & (!hi_moved | (x < hi));
      const unsigned m = __ballot_sync(kFullMask, cand);
      const int slot = cand ? nc + __popc(m & lanes_below) : kCandSlots + lane;
      s_val[slot] = x;
      s_idx[slot] = s_li[p];
      nc += __popc(m);
    }
    n = nc;
    __syncwarp();
  }
  const bool has = lane < n;
  const float cv = has ? s_val[lane] : 0.f;
  const int ci = has ? s_idx[lane] : INT_MAX;
  __syncwarp();  // the buffer is rewritten by this warp's next row

  // The r-th largest candidate, r = k - (elements above the bracket).
  const int r = k - c_hi;
  float lo2 = unordered(warp_min(has ? ordered(cv) : INT_MAX));
  float hi2 = unordered(warp_max(has ? ordered(cv) : INT_MIN));
  int c_hi2 = __popc(__ballot_sync(kFullMask, has && !(cv < hi2)));
  if (c_hi2 >= r) {
    lo2 = hi2;  // the top r candidates all equal the largest
    c_hi2 = 0;
  } else {
    // Invariant: count(>= lo2) >= r > count(>= hi2) = c_hi2.
    for (;;) {
      const float t = KeyTraits<float>::midpoint(lo2, hi2);
      if (!(lo2 < t && t < hi2)) break;
      const int cnt = __popc(__ballot_sync(kFullMask, has && !(cv < t)));
      if (cnt == r) return Cut::from_list(t, INT_MAX, list_n);
      if (cnt < r) {
        hi2 = t;
        c_hi2 = cnt;
      } else {
        lo2 = t;
      }
    }
  }
  // Every candidate in [lo2, hi2) equals lo2: take the first r - c_hi2 of them by index.
  const unsigned tie = __ballot_sync(kFullMask, has && cv == lo2);
  const int q = r - c_hi2;  // >= 1
  // The tie's place by index: its position among the candidates when they are in index order,
  // else the count of tied candidates with a lower index (a lane-major list: one step per tie).
  int below = __popc(tie & lanes_below);
  if (kAnyOrder && listed) {
    below = 0;
    for (unsigned m = tie; m != 0; m &= m - 1)
      below += __shfl_sync(kFullMask, ci, __ffs(m) - 1) < ci;
  }
  const bool last = (tie >> lane & 1u) && below == q - 1;
  const int src = __ffs(__ballot_sync(kFullMask, last)) - 1;
  return Cut::from_list(lo2, __shfl_sync(kFullMask, ci, src), list_n);
}

// Exact cut of a row with +-inf or NaN (finite_min_max() not 0).
template <int kListK, bool kAnyOrder, bool kUnsorted, int VPT, bool L, int F>
__device__ __forceinline__ Cut non_finite_cut(const ValueRow<VPT, L, F>& row, int k,
                                              float (&s_val)[kCandBuf], int (&s_idx)[kCandBuf],
                                              float (&s_lv)[kStageSlots],
                                              int (&s_li)[kStageSlots]) {
  float lo, hi;
  // +-inf or NaN.  In rank order: NaN (largest) > +inf > finite > -inf > NaN (smallest).  Bisect
  // the finite range with what ranks above it counted above it; a k-th element that is itself
  // infinite makes a tie cut at +-inf, one that is NaN a NaN plan.
  const float kInf = __int_as_float(0x7f800000);
  int n_pinf, n_ninf, n_nan;
  infinite_row_range(row, lo, hi, n_pinf, n_ninf, n_nan);
  const NonFiniteSplit sp = split_non_finite<L>(k, row.cols, n_nan, n_pinf, n_ninf);
  switch (sp.kind) {
    case NonFiniteSplit::kNanTop:
    case NonFiniteSplit::kNanBottom:
      return Cut::nan_first(sp.q);
    case NonFiniteSplit::kPosInf:
      return first_ties_cut(row, kInf, sp.q);
    case NonFiniteSplit::kNegInf:
      return first_ties_cut(row, -kInf, sp.q);
    default:
      // hi just above the finite maximum, open: what ranks above it stays out of the bracket.
      return bracket_cut<kListK, kAnyOrder, false, kUnsorted>(
          row, k, lo, nextafterf(hi, kInf), sp.n_up, sp.n_top, true, s_val, s_idx, s_lv, s_li);
  }
}

// Algorithm 2 on a finite row, exactly as make_plan runs it: the first k elements >= lo.
template <int VPT, bool L, int F>
__device__ __forceinline__ Cut fast_early_stop_cut(const ValueRow<VPT, L, F>& row, int k,
                                                   int64_t max_iter) {
  float lo, hi;
  if (finite_min_max(row, lo, hi) != 0) return Cut::general();
  const float top = hi;
  for (int64_t it = 0; it < max_iter; ++it) {
    const float t = KeyTraits<float>::midpoint(lo, hi);
    const int cnt = row.count_ge_finite(t);
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
  return Cut::at(lo, INT_MAX).with_top(top);
}

// Output value of a directed element: undo the negation; NaN is re-read for its payload.
// The value as the kernel ranks it: -v for the k smallest (the sign bit flipped, so that -0.0 and
// NaN payloads survive).  Its own inverse: it maps loaded values in and ranked values back out.
template <bool kLargest>
__device__ __forceinline__ float directed(float v) {
  return kLargest ? v : __uint_as_float(__float_as_uint(v) ^ 0x80000000u);
}

template <bool kLargest, typename scalar_t>
__device__ __forceinline__ scalar_t out_value(float v, const scalar_t* p) {
  return v != v ? *p : Elem<scalar_t>::from_compute(directed<kLargest>(v));
}

// Counting sort of the sorted-output path: 8 one-byte buckets per staged slot (a count or a bucket
// start never exceeds k <= 128), in a per-warp work area that first holds the counts, then the k
// members as 64-bit (key, ~index) composites followed by kMaxBucketFill zeros.
constexpr int sort_buckets(int P) { return 8 * P; }
// sqrt(B - 1), the range of u in the bucket map u^2.
constexpr float sort_bucket_root(int B) {
  return B == 128 ? 11.2694277f : B == 256 ? 15.9687194f : B == 512 ? 22.6053091f : 31.9843712f;
}
static_assert(sort_buckets(16) == 128 && sort_buckets(kStageK) == 1024, "sort_bucket_root's table");
constexpr int kMaxBucketFill = 16;                   // fuller buckets: the bitonic sort instead
constexpr int kSortWork = kStageK + kMaxBucketFill;  // 64-bit slots per warp
static_assert(sort_buckets(kStageK) <= 8 * kSortWork, "the byte counts fit the work area");

// N consecutive 32-bit words with the widest aligned shared-memory accesses.
template <int N, typename T>
__device__ __forceinline__ void load_words(const T* p, T (&v)[N]) {
  static_assert(sizeof(T) == 4 && (N == 1 || N == 2 || N % 4 == 0), "word layout");
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      const uint4 q = reinterpret_cast<const uint4*>(p)[i / 4];
      memcpy(&v[i], &q, sizeof(q));
    }
  } else if constexpr (N == 2) {
    const uint2 q = *reinterpret_cast<const uint2*>(p);
    memcpy(&v[0], &q, sizeof(q));
  } else {
    v[0] = p[0];
  }
}
template <int N, typename T>
__device__ __forceinline__ void store_words(T* p, const T (&v)[N]) {
  static_assert(sizeof(T) == 4 && (N == 1 || N == 2 || N % 4 == 0), "word layout");
  if constexpr (N % 4 == 0) {
#pragma unroll
    for (int i = 0; i < N; i += 4) {
      uint4 q;
      memcpy(&q, &v[i], sizeof(q));
      reinterpret_cast<uint4*>(p)[i / 4] = q;
    }
  } else if constexpr (N == 2) {
    uint2 q;
    memcpy(&q, &v[0], sizeof(q));
    *reinterpret_cast<uint2*>(p) = q;
  } else {
    p[0] = v[0];
  }
}

// Zeroes the byte counts of B = 128 * W buckets (W words per lane).
template <int W>
__device__ __forceinline__ void zero_bucket_counts(uint32_t* s_words) {
  uint32_t zero[W];
#pragma unroll
  for (int i = 0; i < W; ++i) zero[i] = 0;
  store_words<W>(s_words + (threadIdx.x & 31) * W, zero);
}

// Counts an element into byte bucket b when `counted`; returns the bucket's count before it, the
// element's arrival.  Skip = false: uncounted slots add 0 (no branch around the atomic).  Skip =
// true: they skip the atomic and read 0.  Adding 0 serialises where many uncounted slots meet in
// one word (a short row's padding: the whole-row sort, M = 200 18-21% faster, notes v31 item 1);
// the staged sort's slots past k measured 0.3-0.9% slower with the branch, so it adds 0.
template <bool Skip>
__device__ __forceinline__ uint32_t count_in_bucket(uint32_t* s_words, int b, bool counted) {
  const int sh = (b & 3) * 8;
  uint32_t old = 0;
  if constexpr (Skip) {
    if (counted) old = atomicAdd(s_words + (b >> 2), 1u << sh);
  } else {
    old = atomicAdd(s_words + (b >> 2), counted ? 1u << sh : 0u);
  }
  return (old >> sh) & 0xFFu;
}

// Bucket starts in place: the byte counts of B = 128 * W buckets (W words of 4 per lane, each
// count at most kMaxBucketFill) become the exclusive prefix sums, one warp scan.  Within a word,
// w * 0x01010101 holds in each byte the sum of the bytes up to it.  A start past 255 wraps (and
// carries into the bytes after it), which only happens after the first 256 members: callers
// read starts below 256 only.
template <int W>
__device__ __forceinline__ void bucket_starts(uint32_t* s_words) {
  const int lane = threadIdx.x & 31;
  uint32_t w[W];
  load_words<W>(s_words + lane * W, w);
  uint32_t total = 0;
#pragma unroll
  for (int i = 0; i < W; ++i) total = __dp4a(w[i], 0x01010101u, total);  // sum of the bytes
  uint32_t base = warp_inclusive_sum(total) - total;
#pragma unroll
  for (int i = 0; i < W; ++i) {
    const uint32_t incl = w[i] * 0x01010101u;
    w[i] = incl - w[i] + base * 0x01010101u;
    base += incl >> 24;
  }
  store_words<W>(s_words + lane * W, w);
}

// Moves lane l's staged slots l*E ... l*E + E - 1 (indices idx) to their ranks rank[j]; padding
// (slots from k on) to its lane's spare slot.  The values are reloaded (still in place) rather
// than kept live in registers across the ranking.
template <int E>
__device__ __forceinline__ void place_staged(int k, float* s_val, int* s_idx, const int (&rank)[E],
                                             const int (&idx)[E]) {
  const int lane = threadIdx.x & 31;
  float val[E];
  load_words<E>(s_val + lane * E, val);
  __syncwarp();  // every lane's reads of the staging come before the first move
#pragma unroll
  for (int j = 0; j < E; ++j) {
    const int dst = lane * E + j < k ? rank[j] : kStageSpare + lane;
    s_val[dst] = val[j];
    s_idx[dst] = idx[j];
  }
  __syncwarp();
}

// Rank order of k staged elements of one key (lane l holds slots l*E ...): the index order.  For
// the kernels that may stage lane-major (stage_any_order): where the staging is in index order
// already (a selection staged by the row walk) nothing moves, else each element's rank is the
// number of staged indices below its own.
template <int E>
__device__ __forceinline__ void rank_staged_by_index(int k, float* s_val, int* s_idx) {
  const int lane = threadIdx.x & 31;
  int idx[E];
  load_words<E>(s_idx + lane * E, idx);
  bool ascending = true;
#pragma unroll
  for (int j = 0; j + 1 < E; ++j) ascending &= lane * E + j + 1 >= k || idx[j] < idx[j + 1];
  const int next = __shfl_down_sync(kFullMask, idx[0], 1);
  ascending &= (lane + 1) * E >= k || idx[E - 1] < next;
  if (__all_sync(kFullMask, ascending)) return;
  int rank[E] = {};
#pragma unroll 4
  for (int p = 0; p < k; ++p) {
    const int q = s_idx[p];
#pragma unroll
    for (int j = 0; j < E; ++j) rank[j] += int(q < idx[j]);
  }
  place_staged<E>(k, s_val, s_idx, rank, idx);
}

// Puts the k <= P staged elements (s_val: directed values, s_idx: indices, in any order) in rank
// order in place, by a counting sort: a monotone bucket of each value (the square of its scaled
// distance from the maximum when the range is finite, else a shifted key), bucket starts from one
// warp scan of the counts, and inside a bucket each element counts the members that rank above it
// (key greater, or equal at a lower index).  The members are laid out bucket by bucket and later
// buckets rank lower, so an element reads the `fill` slots from its bucket's start (the row's
// fullest bucket) and no bounds: what lies past its bucket never ranks above it (zeros after the
// last member).  Returns false, with the staging untouched, when some bucket holds more than
// kMaxBucketFill.  (Storing each element straight to global memory at its rank instead of the
// coalesced flush was tried: the compiler rebuilds the 64-bit row address for every store, ~16
// instructions an element against ~13 for placement and flush.)
template <int P, bool kLargest, bool kIndexOrder>
__device__ __forceinline__ bool bucket_sort_staged(int k, float* s_val, int* s_idx,
                                                   uint64_t* s_work, float lo_hint, float hi_hint) {
  constexpr int E = P >= 32 ? P / 32 : 1;
  constexpr int B = sort_buckets(P);
  constexpr int kLogB = P == 16 ? 7 : P == 32 ? 8 : P == 64 ? 9 : 10;
  constexpr int W = B / 128;  // count words (4 buckets each) per lane
  static_assert(B == 1 << kLogB && E * 32 >= P, "bucket layout");
  static_assert(E * 32 + kMaxBucketFill <= kSortWork, "members, padding and zeros fit");
  const int lane = threadIdx.x & 31;
  // Lane l takes staged slots l*E ... l*E + E - 1 (vector loads; ties are ordered by index below,
  // not by position); slots past k are padding, with stale data.
  // (The indices are loaded after the scan, the values again for the placement: fewer live
  // registers.)
  float val[E];
  load_words<E>(s_val + lane * E, val);
  uint32_t key[E];
  int bucket[E];
  // Bucket 0 holds the largest.  A finite range [vmin, vmax]: u = (vmax - v) * scale in
  // [0, sqrt(B - 1)] and the bucket u^2, rounded through the fp32 mantissa (2^23 + x): monotone in
  // v, and finer than a linear map just above the k-th value, where top-k values crowd.  Any
  // positive finite scale keeps the map monotone, so an approximate division will do; denormal
  // or overflowing ranges give an infinite or zero scale.  Otherwise: keys shifted to fit B.
  // The caller's range (lo_hint < hi_hint: the cut and the row's finite maximum, so every staged
  // value is finite) saves a reduction.  (Padding is clamped into range, never counted.)
  constexpr float kRoot = sort_bucket_root(B);
  const float hint_scale = __fdividef(kRoot, hi_hint - lo_hint);
  if (lo_hint < hi_hint && hint_scale > 0.f && hint_scale <= FLT_MAX) {  // warp-uniform
#pragma unroll
    for (int j = 0; j < E; ++j) {
      key[j] = finite_value_key(val[j]);
      const float u = (hi_hint - val[j]) * hint_scale;
      const int lin = __float_as_int(fmaf(u, u, 8388608.f)) - 0x4B000000;
      bucket[j] = int(min(uint32_t(lin), uint32_t(B - 1)));
    }
  } else {
    uint32_t lo = 0xFFFFFFFFu, hi = 0;
#pragma unroll
    for (int j = 0; j < E; ++j) {
      key[j] = value_key(val[j], kLargest);
      const bool real = lane * E + j < k;
      lo = real ? min(lo, key[j]) : lo;
      hi = real ? max(hi, key[j]) : hi;
    }
    lo = warp_min(lo);
    hi = warp_max(hi);
    // One key (the k taken are equal: two-value, constant or NaN rows): the rank order is the
    // index order.  The buckets would put all k in one and, past kMaxBucketFill, hand them to the
    // bitonic network (3.2x randn's sorted time, notes v46).  (The check of the staging's order in
    // kernels that stage in index order anyway cost the sorting kernels at 24 and 64 values per
    // lane 3-4% on randn rows, by their spills.)
    if (lo == hi) {
      if constexpr (!kIndexOrder) rank_staged_by_index<E>(k, s_val, s_idx);
      return true;
    }
    const float vmax = from_key<float>(hi);
    const float scale = __fdividef(kRoot, vmax - from_key<float>(lo));
    const bool linear = key_is_finite(lo) && key_is_finite(hi) && scale > 0.f && scale <= FLT_MAX;
    // (hi - lo) >> shift < B.
    const int shift = max(0, 32 - __clz(hi - lo) - kLogB);
#pragma unroll
    for (int j = 0; j < E; ++j) {
      const float u = (vmax - val[j]) * scale;
      const int lin = __float_as_int(fmaf(u, u, 8388608.f)) - 0x4B000000;
      const uint32_t raw = linear ? uint32_t(lin) : (hi - key[j]) >> shift;
      bucket[j] = int(min(raw, uint32_t(B - 1)));
    }
  }
  uint32_t* s_words = reinterpret_cast<uint32_t*>(s_work);
  zero_bucket_counts<W>(s_words);
  __syncwarp();
  int slot[E];
  uint32_t top = 0;
#pragma unroll
  for (int j = 0; j < E; ++j) {
    const bool real = lane * E + j < k;
    slot[j] = int(count_in_bucket<false>(s_words, bucket[j], real));
    top = real ? max(top, uint32_t(slot[j])) : top;
  }
  const int fill = int(warp_max(top)) + 1;  // the fullest bucket's count
  if (fill > kMaxBucketFill) return false;
  __syncwarp();
  bucket_starts<W>(s_words);
  __syncwarp();
  int start[E];
#pragma unroll
  for (int j = 0; j < E; ++j) start[j] = reinterpret_cast<const uint8_t*>(s_work)[bucket[j]];
  __syncwarp();  // the members overwrite the counts
  int idx[E];
  load_words<E>(s_idx + lane * E, idx);
  uint64_t comp[E];
#pragma unroll
  for (int j = 0; j < E; ++j) {
    // Members fill [0, k); padding writes zeros to its own slot in [k, 32E), and the lanes below
    // kMaxBucketFill zero [32E, 32E + kMaxBucketFill): zeros (below every composite, whose keys
    // are >= 1) from k on, with no stores to skip (a branch a slot).
    const int i = lane * E + j;
    comp[j] = (uint64_t(key[j]) << 32) | uint32_t(~idx[j]);
    s_work[i < k ? start[j] + slot[j] : i] = i < k ? comp[j] : 0ull;
  }
  if (lane < kMaxBucketFill) s_work[E * 32 + lane] = 0;
  __syncwarp();
  if (fill > 1) {
    const uint64_t* q[E];
#pragma unroll
    for (int j = 0; j < E; ++j) q[j] = s_work + start[j];
      // Two slots a step: the zeros after the members cover the overshoot.  Not unrolled: a fully
      // unrolled loop crowds the instruction cache (measured: +62% -> +48% sorted cost at k=128).
#pragma unroll 1
    for (int m = 0; m < fill; m += 2) {
#pragma unroll
      for (int j = 0; j < E; ++j) {
        start[j] += int(q[j][0] > comp[j]) + int(q[j][1] > comp[j]);
        q[j] += 2;
      }
    }
  }
  // start[j] is now the rank.
  place_staged<E>(k, s_val, s_idx, start, idx);
  return true;
}

// Linear bucket of a directed value v <= hi, scale = (B - 1) / (hi - lo): 0 for the maximum, about
// B - 1 for the minimum lo, rounded through the fp32 mantissa (2^23 + u).  Monotone: a lower bucket
// holds only larger values.
template <int B>
__device__ __forceinline__ int linear_bucket(float v, float hi, float scale) {
  const float u = (hi - v) * scale;
  return int(min(uint32_t(__float_as_int(u + 8388608.f) - 0x4B000000), uint32_t(B - 1)));
}

// The scale of linear_bucket<B> for the range [lo, hi], lo < hi; false where it is not finite or
// does not span a bucket (overflowing or denormal ranges), for which the callers bisect instead.
template <int B>
__device__ __forceinline__ bool linear_bucket_scale(float lo, float hi, float& scale) {
  scale = __fdividef(float(B - 1), hi - lo);
  return scale > 0.f && scale <= FLT_MAX && (hi - lo) * scale >= 1.f;
}

// Sorted output of a short finite row (at most 256 elements; lo < hi its minimum and maximum) by
// one counting sort of the whole row, with no search for the k-th value first: every element gets
// its rank in the row, and the first k ranks are the exact selection in rank order.  Each element
// is bucketed linearly in [lo, hi] (B = 1024, bucket 0 the largest) and counted by a byte atomic;
// the bucket starts come from one warp scan; element e of bucket b, arrived s-th, is stored as
// the member (key, 0xFFFF - e, s) at start(b) + s.  A member whose bucket starts below k then
// counts the greater members among the `fill` slots from its bucket's start (the row's fullest
// bucket: later buckets hold smaller values) and, if its rank is below k, is placed there in the
// staging area.  Only slots below k + kMaxBucketFill are stored and read, so the work area of the
// staged sort serves.  Returns false, with the staging untouched, for ranges whose scale is not
// finite and rows with more than kMaxBucketFill elements in one bucket (ties, outliers).
template <int VPT, bool L, int F>
__device__ __forceinline__ bool row_counting_sort(const ValueRow<VPT, L, F>& row, int k, float lo,
                                                  float hi, uint64_t* s_work, float* s_val,
                                                  int* s_idx) {
  constexpr int B = 1024, W = B / 128;
  static_assert(VPT * 32 <= 256, "byte counts and starts: at most 256 elements");
  static_assert(B <= 8 * kSortWork, "the byte counts fit the work area");
  const int lane = threadIdx.x & 31;
  const float scale = __fdividef(float(B - 1), hi - lo);
  if (!(scale > 0.f && scale <= FLT_MAX)) return false;  // warp-uniform
  uint32_t* s_words = reinterpret_cast<uint32_t*>(s_work);
  zero_bucket_counts<W>(s_words);
  __syncwarp();
  // Per slot: bucket << 8 | arrival (one register; the arrival is at most 255 before the fill
  // test).  Padding is not counted.
  int packed[VPT];
  uint32_t top = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int b = linear_bucket<B>(row.v[j], hi, scale);
    const uint32_t s = count_in_bucket<true>(s_words, b, row.valid(j));
    top = row.valid(j) ? max(top, s) : top;
    packed[j] = (b << 8) | int(s);
  }
  const int fill = int(warp_max(top)) + 1;
  if (fill > kMaxBucketFill) return false;
  __syncwarp();
  bucket_starts<W>(s_words);
  __syncwarp();
  // Per slot now: member position << 8 | arrival (positions are below 256).
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int start = reinterpret_cast<const uint8_t*>(s_work)[packed[j] >> 8];
    packed[j] = ((start + (packed[j] & 0xFF)) << 8) | (packed[j] & 0xFF);
  }
  __syncwarp();                        // the members overwrite the counts
  const int win = k + kMaxBucketFill;  // <= kSortWork
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int e = j * 32 + lane;
    const int pos = packed[j] >> 8;
    const uint64_t member = (uint64_t(finite_value_key(row.v[j])) << 32) |
                            (uint32_t(0xFFFF - e) << 16) | uint32_t(packed[j] & 0xFF);
    if (row.valid(j) && pos < win) s_work[pos] = member;
  }
  // Every slot below min(cols, win) holds a member; zeros (below every member, whose keys are
  // >= 1) from cols to win.
  if (lane < kMaxBucketFill && row.cols + lane < win) s_work[row.cols + lane] = 0;
  __syncwarp();
  // A member at position p < k + kMaxBucketFill - 1 may rank below k (its bucket starts at
  // p - arrival >= p - 15); one per lane a step, the fill slots from its bucket's start four at
  // a time (fill <= 16: the reads stay below the bucket's start + 16 <= win).
  const int nrank = min(row.cols, win - 1);
  for (int p0 = 0; p0 < nrank; p0 += 32) {  // warp-uniform
    const int p = p0 + lane;
    const uint64_t c = p < nrank ? s_work[p] : 0ull;
    const int start = p - int(uint32_t(c) & 0xFFFFu);
    const bool cand = p < nrank && start < k;
    const uint64_t* q = s_work + (cand ? start : 0);
    int rank = start;
#pragma unroll 1
    for (int m = 0; m < fill; m += 4)
      rank += int(q[m] > c) + int(q[m + 1] > c) + int(q[m + 2] > c) + int(q[m + 3] > c);
    if (cand && rank < k) {
      // The value back from its key (exact but for -0.0, whose key is +0.0's: marked NaN, which
      // the flush re-reads from the input).
      const uint32_t key = uint32_t(c >> 32);
      s_val[rank] =
          key == KeyTraits<float>::kZero ? __int_as_float(0x7fffffff) : from_key<float>(key);
      s_idx[rank] = 0xFFFF - int((uint32_t(c) >> 16) & 0xFFFFu);
    }
  }
  return true;
}

// Counters of the whole-row cut (row_bucket_cut): a byte per bucket, 1024 buckets (1 KB per warp,
// 8 words per lane), for rows of up to 256 elements: the minimum and maximum lie in different
// buckets, so a count stays below 256.
struct RowCutCounts {
  static constexpr int kBuckets = 1024;
  static constexpr int kLaneBuckets = kBuckets / 32;
  static constexpr int kLaneWords = kLaneBuckets / 4;
  static_assert(kBuckets <= 8 * kSortWork, "the counters fit the work area");
};

// Exact cut of a finite row (lo < hi its minimum and maximum) with no bisection: every element is
// counted into a linear bucket of [lo, hi] (bucket 0 the largest), the bucket b* holding the k-th
// element comes from two warp scans (the lanes' totals, then the b*-holding lane's buckets, one per
// lane), and the n elements of b* are ranked directly (value, then index).  Costs about what one
// bisection pass and the count of 32 buckets per lane do, against ~7 passes and a candidate search.
// Returns false where the caller is to bisect the bracket in `br` instead: a crowded b* (more than
// kCandSlots: ties, clusters) leaves that bucket's own value range there; a range whose scale is
// not finite leaves `br` as the caller set it (the whole row's).
struct Bracket {
  float lo, hi;  // [lo, hi) holds c_lo - c_hi elements, c_hi lie above it; hi the maximum if !moved
  int c_lo, c_hi;
  bool hi_moved;
};
template <int VPT, bool L, int F>
__device__ __forceinline__ bool row_bucket_cut(const ValueRow<VPT, L, F>& row, int k, float lo,
                                               float hi, uint32_t* s_words,
                                               float (&s_val)[kCandBuf], int (&s_idx)[kCandBuf],
                                               Cut& cut, Bracket& br) {
  using C = RowCutCounts;
  constexpr int B = C::kBuckets;
  static_assert(VPT * 32 <= 256, "byte counters: at most 256 elements");
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  float scale;
  if (!linear_bucket_scale<B>(lo, hi, scale)) return false;  // warp-uniform
  zero_bucket_counts<C::kLaneWords>(s_words);
  __syncwarp();
  // The buckets packed three to a register (10 bits each; a field test is one LOP3): fewer live
  // registers across the scans.  in_bstar(j) tests slot j's field.
  constexpr int kPackBits = 10;
  static_assert(B <= 1 << kPackBits, "bucket fields");
  uint32_t packed[(VPT + 2) / 3];
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int b = linear_bucket<B>(row.v[j], hi, scale);
    // Padding lanes stay out (a predicated atomic): adding 0 to element 0's counter word from
    // every padded lane serialised the slot (32-way at M = 200; notes v30).
    if (row.valid(j)) atomicAdd(s_words + b / 4, 1u << (b % 4) * 8);
    packed[j / 3] = j % 3 == 0 ? uint32_t(b) : packed[j / 3] | uint32_t(b) << (kPackBits * (j % 3));
  }
  __syncwarp();
  // Lane l counts buckets l * kLaneBuckets ...; the lane whose buckets hold ranks k - 1 (0-based),
  // then its buckets one per lane.
  uint32_t w[C::kLaneWords];
  load_words<C::kLaneWords>(s_words + lane * C::kLaneWords, w);
  uint32_t total = 0;
#pragma unroll
  for (int i = 0; i < C::kLaneWords; ++i)
    total = __dp4a(w[i], 0x01010101u, total);  // the sum of the bytes
  const int incl = warp_inclusive_sum(int(total));
  const int owner = __ffs(__ballot_sync(kFullMask, incl - int(total) < k && k <= incl)) - 1;
  const int before = __shfl_sync(kFullMask, incl - int(total), owner);
  const int b = owner * C::kLaneBuckets + lane;
  const int cnt = reinterpret_cast<const uint8_t*>(s_words)[b];
  const int cincl = warp_inclusive_sum(cnt) + before;
  const int sel = __ffs(__ballot_sync(kFullMask, cincl >= k)) - 1;
  const int bstar = owner * C::kLaneBuckets + sel;
  const int n = __shfl_sync(kFullMask, cnt, sel);
  const int c_hi = __shfl_sync(kFullMask, cincl, sel) - n;  // in the buckets before b*
  const int r = k - c_hi;                                   // 1 <= r <= n
  __syncwarp();  // the counters are rewritten by this warp's next row
  const auto in_bstar = [&](int j) {
    constexpr uint32_t kField = (1u << kPackBits) - 1u;
    const int sh = kPackBits * (j % 3);
    return row.valid(j) & ((packed[j / 3] & (kField << sh)) == uint32_t(bstar) << sh);
  };

  if (n > kCandSlots) {
    const float kInf = __int_as_float(0x7f800000);
    float mn = kInf, mx = -kInf;
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const bool in = in_bstar(j);
      mn = in ? fminf(mn, row.v[j]) : mn;
      mx = in ? fmaxf(mx, row.v[j]) : mx;
    }
    const float cmin = unordered(warp_min(ordered(mn)));
    const float cmax = unordered(warp_max(ordered(mx)));
    if (cmin == cmax) {
      cut = first_ties_cut(row, cmin, r);
      return true;
    }
    // Earlier buckets hold only values above cmax, later ones only values below cmin.
    br = {cmin, nextafterf(cmax, kInf), c_hi + n, c_hi, true};
    return false;
  }
  // The elements of b*, in index order (a ballot a slot; the stores only where b* has some).
  int nc = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const bool in = in_bstar(j);
    const unsigned m = __ballot_sync(kFullMask, in);
    if (m != 0) {  // warp-uniform
      if (in) {
        s_val[nc + __popc(m & lanes_below)] = row.v[j];
        s_idx[nc + __popc(m & lanes_below)] = j * 32 + lane;
      }
      nc += __popc(m);
    }
  }
  __syncwarp();
  const bool has = lane < n;
  const float cv = has ? s_val[lane] : 0.f;
  const int ci = has ? s_idx[lane] : 0;
  __syncwarp();  // the buffer is rewritten by this warp's next row
  // Rank within b*: the larger ones, and the equal ones earlier in index order.
  int rank = 0;
  for (int m = 0; m < n; ++m) {
    const float o = __shfl_sync(kFullMask, cv, m);
    rank += int(o > cv) | int((o == cv) & (m < lane));
  }
  const int src = __ffs(__ballot_sync(kFullMask, has && rank == r - 1)) - 1;
  const float t = __shfl_sync(kFullMask, cv, src);
  const int idx_t = __shfl_sync(kFullMask, ci, src);
  // Equal values share b*: with no later copy of t there, every element ranked >= t is taken.
  cut = Cut::at(t, __any_sync(kFullMask, has && cv == t && ci > idx_t) ? idx_t : INT_MAX);
  return true;
}

// A first bracket for small k from the row's group maxima instead of its minimum (the unsorted
// kernels, and the sorting ones of 48+ values per lane).  Each lane's even and odd slots form two
// groups, so the warp holds 64 group maxima, distinct elements of the row: any value t at or below
// k of them has at least k elements >= t. Five ballot steps over the 64 maxima find such a t near
// their k-th largest; for k <= 24 the elements >= t then mostly fit the 32 the candidate phase
// takes, so one count at t replaces the 3-4 whole-row passes of the bisection of [min, max] (and
// the min).  Measured (notes v23, fp32, N = 2^18): M = 768 k = 8/16/24 11/11/9% faster, M = 512
// 9/8/5%, M = 300 2-4%, M = 2048 k = 16 16%; 3 steps were as good at k <= 16 but worse at 24 and on
// heavy tails.  Returns false (the min/max route) when a group maximum is NaN or +-inf; -inf
// elsewhere is harmless (below every finite t).
constexpr int kGroupMaxK = 24;
constexpr int kGroupMaxSteps = 5;
template <int VPT, bool L, int F>
__device__ __forceinline__ bool group_max_bound(const ValueRow<VPT, L, F>& row, int k, float& lo,
                                                float& hi) {
  static_assert(F >= 2, "both groups of every lane hold a real element");
  const float kInf = __int_as_float(0x7f800000);
  float ge = row.v[0], go = row.v[1];
#pragma unroll
  for (int j = 2; j < VPT; ++j) {
    const float x = row.valid(j) ? row.v[j] : -kInf;  // padding repeats element 0: not a maximum
    if (j % 2 == 0)
      ge = max_nan(ge, x);
    else
      go = max_nan(go, x);
  }
  const bool fin = finite_float(ge) && finite_float(go);
  if (!__all_sync(kFullMask, fin)) return false;
  hi = unordered(warp_max(ordered(fmaxf(ge, go))));
  float a = unordered(warp_min(ordered(fminf(ge, go))));  // all 64 maxima are >= a
  float b = hi;
#pragma unroll 1
  for (int s = 0; s < kGroupMaxSteps; ++s) {
    const float t = KeyTraits<float>::midpoint(a, b);
    if (!(a < t && t < b)) break;
    const int c =
        __popc(__ballot_sync(kFullMask, !(ge < t))) + __popc(__ballot_sync(kFullMask, !(go < t)));
    if (c >= k)
      a = t;
    else
      b = t;
  }
  lo = a;
  return true;
}

// Exact cut of any row: non-finite rows by non_finite_cut, one value by index, otherwise the
// whole-row cut where kRowCut (s_words its counters) and the bisection of the bracket it leaves,
// or the bisection of [min, max].
template <int kListK, bool kAnyOrder, bool kRowCut, bool kUnsorted, int VPT, bool L, int F>
__device__ __forceinline__ Cut fast_exact_cut(const ValueRow<VPT, L, F>& row, int k,
                                              uint32_t* s_words, float (&s_val)[kCandBuf],
                                              int (&s_idx)[kCandBuf], float (&s_lv)[kStageSlots],
                                              int (&s_li)[kStageSlots]) {
  float lo, hi;
  int c_lo = row.cols;
  // One bracket_cut call site whichever way the bracket was found: with a second inlined copy
  // (+2.5k SASS instructions a kernel) the bound made the rows 7-13% slower, not faster (notes
  // v23).
  bool bounded = false;
  // Not in the sorting kernels below 48 values per lane: their time follows their code size
  // (instruction fetch, notes v17); with the bound compiled in, the sorted output at M = 768,
  // k = 64..128 ran 3-9% slower.  At 64 per lane it made the sorted output at k = 8 7-15% faster.
  if constexpr (!kRowCut && (kUnsorted || VPT >= 48) && VPT >= 12) {
    // (lo == hi, all 64 maxima equal to the row's maximum, takes the min/max route.)
    if (k <= kGroupMaxK && group_max_bound(row, k, lo, hi) && lo < hi) {
      c_lo = row.count_ge_finite(lo);
      bounded = true;
    }
  }
  if (!bounded) {
    if (finite_min_max(row, lo, hi) != 0)
      return non_finite_cut<kListK, kAnyOrder, kUnsorted>(row, k, s_val, s_idx, s_lv, s_li);
    if (lo == hi) return Cut::at(lo, k - 1);  // one value: the first k in index order
  }
  // (Without the row cut, constant c_hi and hi_moved: the common case's bisection is specialised
  // for them.)
  Bracket br = {lo, hi, c_lo, 0, false};
  if constexpr (kRowCut) {
    Cut cut;
    if (row_bucket_cut(row, k, lo, hi, s_words, s_val, s_idx, cut, br)) return cut;
  }
  return bracket_cut<kListK, kAnyOrder, true, kUnsorted>(row, k, br.lo, br.hi, br.c_lo, br.c_hi,
                                                         br.hi_moved, s_val, s_idx, s_lv, s_li)
      .with_top(hi);
}

// Whether the unsorted warp kernel at VPT values per lane cuts by whole-row counting
// (row_bucket_cut) rather than by bisection (bracket_cut).  Measured (notes v19, fp32, N = 2^18,
// A/B in one process): 8 values per lane 9-16% faster; 16 and 24 (16-bit counters, 512 buckets)
// -7..+14% and +6..+33%, where the row-walk emit replaced the cheaper list.
constexpr bool row_cut_kernel(int vpt, bool sorted) { return !sorted && vpt == 8; }

// Puts the k <= P staged elements (s_val: directed values, s_idx: indices, in any order) in
// rank order in place: key descending, equal keys in index order.  A bitonic network, for rows
// whose keys crowd into a few counting buckets (ties, outliers).
//   Distinct keys (the common case, P >= 32): sort the 32-bit keys alone, then move each staged
//   element to its key's position, found by binary search in the sorted keys.
//   Otherwise: sort 64-bit (key, ~index) composites, which orders ties by index; the values are
//   rebuilt from the keys, and those whose keys drop bits (+-0, NaN) are marked NaN so that the
//   flush re-reads them from the input.
template <int P, bool kLargest>
__device__ __forceinline__ void bitonic_sort_staged(int k, float* s_val, int* s_idx) {
  constexpr int E = WarpSort<P, uint32_t>::E;
  const int lane = threadIdx.x & 31;
  uint32_t mine[E];
  int idx[E];
  float val[E];
#pragma unroll
  for (int j = 0; j < E; ++j) {
    const int i = lane * E + j;
    val[j] = s_val[i < k ? i : 0];
    idx[j] = s_idx[i < k ? i : 0];
    // Padding keys are 0, below every real key (>= 1).
    mine[j] = i < k ? value_key(val[j], kLargest) : 0u;
  }
  bool tie = true;  // P = 16: straight to the composite sort
  if constexpr (P >= 32) {
    uint32_t key[E];
#pragma unroll
    for (int j = 0; j < E; ++j) key[j] = mine[j];
    WarpSort<P, uint32_t>::run(key);
    // A tie: two equal neighbours among the first k sorted keys.
    const uint32_t next = __shfl_down_sync(kFullMask, key[0], 1);
    tie = lane < 31 && (lane + 1) * E < k && key[E - 1] == next;
#pragma unroll
    for (int j = 0; j + 1 < E; ++j) tie |= lane * E + j + 1 < k && key[j] == key[j + 1];
    tie = __any_sync(kFullMask, tie);
    if (!tie) {
      uint32_t* s_sorted = reinterpret_cast<uint32_t*>(s_val);
      __syncwarp();
#pragma unroll
      for (int j = 0; j < E; ++j) s_sorted[lane * E + j] = key[j];
      __syncwarp();
      // Position = number of keys above mine (binary lifting over the P sorted slots; the
      // padding zeros at the end are never above a real key).
      int pos[E];
#pragma unroll
      for (int j = 0; j < E; ++j) pos[j] = 0;
#pragma unroll
      for (int step = P / 2; step >= 1; step >>= 1) {
#pragma unroll
        for (int j = 0; j < E; ++j) pos[j] += s_sorted[pos[j] + step - 1] > mine[j] ? step : 0;
      }
      __syncwarp();
#pragma unroll
      for (int j = 0; j < E; ++j) {
        if (lane * E + j < k) {
          s_val[pos[j]] = val[j];
          s_idx[pos[j]] = idx[j];
        }
      }
    }
  }
  if (tie) {
    uint64_t c[E];
#pragma unroll
    for (int j = 0; j < E; ++j) c[j] = (uint64_t(mine[j]) << 32) | uint32_t(~idx[j]);
    WarpSort<P, uint64_t>::run(c);
    __syncwarp();
#pragma unroll
    for (int j = 0; j < E; ++j) {
      const int i = lane * E + j;
      const uint32_t key = uint32_t(c[j] >> 32);
      if (i < k) {
        s_val[i] = key_loses_bits(key) ? __int_as_float(0x7fffffff) : from_key<float>(key);
        s_idx[i] = int(~uint32_t(c[j]));
      }
    }
  }
  __syncwarp();
}

// Walks the row in index order and outputs the first k slots that take_of(j, e, v) accepts
// (called once per slot by every lane, in order, so it may ballot).  Up to kCap outputs are
// staged in shared memory (s_ov/s_oi: kStageSlots, or kCap + 32 above kStageK) for
// flush_staged(); more are written straight out in index order.
template <int kCap, typename scalar_t, int VPT, bool L, int F, typename TakeOf>
__device__ __forceinline__ void emit_selected(const ValueRow<VPT, L, F>& row, int k, TakeOf take_of,
                                              const scalar_t* x, scalar_t* ov, int64_t* oi,
                                              float* s_ov, int* s_oi) {
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  const bool stage = k <= kCap;
  int written = 0;
  bool nan_out = false;  // this lane wrote a NaN directly
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    if (written >= k) break;  // warp-uniform
    const int e = j * 32 + lane;
    const float v = row.v[j];
    const bool take = take_of(j, e, v);
    const unsigned take_mask = __ballot_sync(kFullMask, take);
    const int pos = written + __popc(take_mask & lanes_below);
    const bool keep = take && pos < k;
    if (stage) {
      // Own spare slot, as in the compaction (after the list's slots at kStageK).
      const int slot = keep ? pos : (kCap == kStageK ? kStageSpare : kCap) + lane;
      s_ov[slot] = v;
      s_oi[slot] = e;
    } else if (keep) {
      if constexpr (sizeof(scalar_t) == 2) {
        // NaN's own bits come from the input afterwards: a re-read here, one 64-bit address a
        // slot, made the 16-bit kernels at 64 values per lane spill 744 bytes (notes v20).
        ov[pos] = Elem<scalar_t>::from_compute(directed<L>(v));
        nan_out |= v != v;
      } else {
        ov[pos] = out_value<L>(v, x + e);
      }
      oi[pos] = e;
    }
    written += __popc(take_mask);
  }
  if (sizeof(scalar_t) == 2 && !stage && __any_sync(kFullMask, nan_out)) {
    __syncwarp();  // the direct stores above are visible to the whole warp
    for (int p = lane; p < min(written, k); p += 32) {
      const float o = Elem<scalar_t>::to_compute(ov[p]);
      if (o != o) ov[p] = x[oi[p]];
    }
  }
}

// The selection of a listed cut (Cut::list_n > k), made in place: the taken list elements move
// down to the front of the staging area, in list order.  Each group of 32 slots is read before
// any lane writes, and writes only go to positions at or below the slots read so far.
template <bool kLargest>
__device__ __forceinline__ void select_listed(const Cut& cut, float (&s_v)[kStageSlots],
                                              int (&s_i)[kStageSlots]) {
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  int written = 0;
  for (int p0 = 0; p0 < cut.list_n; p0 += 32) {
    const int p = p0 + lane;
    const float v = s_v[p];
    const int e = s_i[p];
    const bool take =
        (p < cut.list_n) & ranks_ge<kLargest>(v, cut.t) & ((v != cut.t) | (e <= cut.idx_t));
    const unsigned m = __ballot_sync(kFullMask, take);
    const int slot = take ? written + __popc(m & lanes_below) : kStageSpare + lane;
    __syncwarp();
    s_v[slot] = v;
    s_i[slot] = e;
    written += __popc(m);
  }
}

// Writes the staged outputs of a row with coalesced stores: in staging order (index order, as the
// unsorted contract wants), or in rank order when `sorted` (k <= kStageK).  kIndexOrder: the
// staging is in index order (false where the kernel may stage lane-major: stage_any_order).
template <typename scalar_t, bool kLargest, bool kIndexOrder>
__device__ __forceinline__ void flush_staged(int k, bool sorted, float lo_hint, float hi_hint,
                                             const scalar_t* x, scalar_t* ov, int64_t* oi,
                                             float* s_ov, int* s_oi, uint64_t* s_work) {
  const int lane = threadIdx.x & 31;
  __syncwarp();
  if (sorted && k > 1) {
    const bool done =
        k <= 16
            ? bucket_sort_staged<16, kLargest, kIndexOrder>(k, s_ov, s_oi, s_work, lo_hint, hi_hint)
        : k <= 32
            ? bucket_sort_staged<32, kLargest, kIndexOrder>(k, s_ov, s_oi, s_work, lo_hint, hi_hint)
        : k <= 64
            ? bucket_sort_staged<64, kLargest, kIndexOrder>(k, s_ov, s_oi, s_work, lo_hint, hi_hint)
            : bucket_sort_staged<128, kLargest, kIndexOrder>(k, s_ov, s_oi, s_work, lo_hint,
                                                             hi_hint);
    // Crowded buckets (ties, outliers): one copy of the network for every k keeps the code,
    // which the instruction cache holds, small.
    if (!done) bitonic_sort_staged<kStageK, kLargest>(k, s_ov, s_oi);
  }
  for (int p = lane; p < k; p += 32) {
    ov[p] = out_value<kLargest>(s_ov[p], x + s_oi[p]);
    oi[p] = s_oi[p];
  }
  __syncwarp();  // the staging buffers are rewritten by this warp's next row
}

// Warps per block of the value kernels.  Two rather than eight: a block's slot on a SM is freed
// when its slowest row ends, and with rows walked at a stride of the grid's warps the last wave
// is finer.  Measured (notes v27, fp32, A/B in one process): 4 warps 0.97-0.995 of the 8-warp
// exact time at N = 2^14..2^18 (N = 2^20 1.000 / 1.003), the sorting kernels 8 / 4 warps 1.012;
// 2 warps against 4: exact 0.995, max_iter=4 0.994, sorted 0.990 (N = 2^14 0.95-1.02).
constexpr int kValueBlockWarps = 2;

// Warps per SM to keep resident, as blocks: caps the registers of the small-row kernels (the
// compiler otherwise spends registers on the rare tie paths and halves occupancy at 16 slots).
// The sorting kernels too (they keep few values live across the sort: measured faster at 40 warps
// than at 32 with 64 registers).  Measured (notes v14, blocks of 8 warps): 48 warps at <= 8 values
// per lane and 40 at 16 are 2.5-4% slower (no spills at 8: the kernels are not short of warps); 32
// at 24 (64 registers, with the warp-uniform row loop no spills) is 1% faster unsorted, 1-8%
// sorted.
constexpr int value_kernel_min_blocks(int vpt) {
  return (vpt <= 8 ? 40 : vpt <= 24 ? 32 : 16) / kValueBlockWarps;
}

// Largest k for which the exact selection is made from the list of elements at or above the
// bracket (bracket_cut) rather than from the whole row.  The list costs a second compaction and an
// in-place selection over its ceil((k + 31) / 32) slots; the row walk costs one emit step per slot
// of the row.  Measured (notes v15, fp32 paper grid): 16 values per lane -1..-14%, 24 -15..-24%;
// 8 per lane unsorted -4% at k = 16 but +3..13% at k >= 64 (and 2-4% on max_iter from the larger
// kernel), sorted -10..-2% up to k = 64.
constexpr int list_max_k(int vpt, bool sorted) {
  return vpt >= 12 ? kStageK : vpt >= 8 && sorted ? 64 : 0;
}

// Whether the sorting kernel stages its selection in lane-major order (compact_lane_major) rather
// than index order.  Measured (fp32, N = 2^18, A/B in one process): sorted output 0.6-1.8 points
// cheaper at 8 values per lane, but 3-4 points dearer at 16 and 8-9 at 24, where the list is
// longer and the scattered stores of a lane-major compaction conflict in the shared-memory banks
// (ncu at 8 per lane: 46 wavefronts for 16 stores a row).
constexpr bool stage_any_order(int vpt, bool sorted) { return sorted && vpt <= 8; }

// Whether the unsorted kernel walks the row with a one-compare take test for a cut that takes
// every element ranked >= t (Cut::idx_t == INT_MAX: exact cuts of exactly k elements, and every
// early-stop cut, which the cap at k then trims): 16 SASS instructions a slot instead of 18.
// Measured (A/Bs in one process): at 8 values per lane exact and max_iter=4 each about 2% faster
// (notes v28); at 12-24, where exact cuts mostly select from a list, max_iter=4 / 8 2-6% faster,
// exact 0-1% slower (16-bit k smallest at 16 values a lane 3%: the second loop's code), at 32+
// exact up to 4% slower (not taken there; notes v30).  The sorting kernels keep one loop.
constexpr bool one_compare_emit(int vpt, bool sorted) { return !sorted && vpt <= 24; }

// Shared buffers of one warp of the value kernels.
template <int VPT, bool kSorted>
struct WarpValueBufs {
  // Unsorted kernels of 32+ values per lane stage up to kWideStageK outputs (k = 129..512 would
  // otherwise be written straight out: a partial store a slot); their staging rows are that long.
  static constexpr int kEmitCap = !kSorted && VPT >= 32 ? kWideStageK : kStageK;
  static constexpr int kStageRow = kEmitCap + 32 > kStageSlots ? kEmitCap + 32 : kStageSlots;
  // The counting sort's work area; the whole-row cut's counters.
  static constexpr int kSortSlots = kSorted || row_cut_kernel(VPT, kSorted) ? kSortWork : 1;
  using Val = float[kCandBuf];
  using Idx = int[kCandBuf];
  using StageV = float[kStageRow];
  using StageI = int[kStageRow];
  using Sort = uint64_t[kSortSlots];
};

// One row of the value kernels (the loop body of warp_values_kernel; the four-lane kernel's
// fallback calls it too): x the row, ov / oi its outputs, the buffers this warp's.
template <typename scalar_t, int VPT, bool kLargest, bool kSorted>
__device__ __forceinline__ void warp_value_row(
    const scalar_t* x, scalar_t* ov, int64_t* oi, int cols, int k, int64_t max_iter, float eps,
    typename WarpValueBufs<VPT, kSorted>::Val& s_val,
    typename WarpValueBufs<VPT, kSorted>::Idx& s_idx,
    typename WarpValueBufs<VPT, kSorted>::StageV& s_ov_row,
    typename WarpValueBufs<VPT, kSorted>::StageI& s_oi_row,
    typename WarpValueBufs<VPT, kSorted>::Sort& s_sort) {
  constexpr bool largest = kLargest;
  using E = Elem<scalar_t>;
  using Key = KeyTraits<float>::Key;
  constexpr int kEmitCap = WarpValueBufs<VPT, kSorted>::kEmitCap;
  constexpr bool kRowCut = row_cut_kernel(VPT, kSorted);
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  // This warp's staging row, seen as the kStageSlots the list and the staged sort work in.
  float(&s_ov)[kStageSlots] = *reinterpret_cast<float(*)[kStageSlots]>(s_ov_row);
  int(&s_oi)[kStageSlots] = *reinterpret_cast<int(*)[kStageSlots]>(s_oi_row);
  const bool exact = max_iter < 0 && !(eps > 0.f);
  const bool early_stop = max_iter > 0 && !(eps > 0.f);
  constexpr bool kAnyOrder = stage_any_order(VPT, kSorted);
  constexpr bool kRowSort = kSorted && VPT * 32 <= 256;  // row_counting_sort
  // The sorting kernels are launched for k <= kStageK only: the paths for larger k fold away.
  // Measured: the sorting kernel at 24 values per lane 12.5k -> 11.2k static instructions, and
  // at M = 768 the sorted output's extra time +19..31% -> +4..18% (ncu before: 29% of the stall
  // samples waiting on instruction fetch, against 6% in the unsorted kernel).
  if (kSorted) __builtin_assume(k <= kStageK);
  // The k smallest are the k largest of -x: directed() on load, and again on output.
  ValueRow<VPT, kLargest, warp_slots_below(VPT)> row;
  row.cols = cols;
  row.npad = VPT * 32 - cols;
  row.pad = directed<kLargest>(E::to_compute(x[0]));
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int e = j * 32 + lane;
    row.v[j] = row.valid(j) ? directed<kLargest>(E::to_compute(x[e])) : row.pad;
  }

  // Sorted output of rows up to 256 elements: one counting sort of the whole row, no search.
  if constexpr (kRowSort) {
    float lo, hi;
    if (exact && finite_min_max(row, lo, hi) == 0 && lo < hi &&
        row_counting_sort(row, k, lo, hi, s_sort, s_ov, s_oi)) {
      flush_staged<scalar_t, kLargest, true>(k, false, 0.f, 0.f, x, ov, oi, s_ov, s_oi, s_sort);
      return;
    }
  }
  Cut cut = Cut::general();
  if (exact)
    cut = fast_exact_cut<list_max_k(VPT, kSorted), kAnyOrder, kRowCut, !kSorted>(
        row, k, reinterpret_cast<uint32_t*>(s_sort), s_val, s_idx, s_ov, s_oi);
  if (early_stop) cut = fast_early_stop_cut(row, k, max_iter);
  if (cut.ok && cut.list_n > 0) {
    if (cut.list_n > k) select_listed<kLargest>(cut, s_ov, s_oi);
  } else if (kAnyOrder && exact && cut.ok && k <= kStageK) {
    // An exact cut selects exactly k elements, and the sort ranks them: any staging order.
    compact_lane_major(
        row,
        [&](int j, int e, float v) {
          return row.valid(j) & ranks_ge<kLargest>(v, cut.t) & ((v != cut.t) | (e <= cut.idx_t));
        },
        s_ov, s_oi, kStageSpare);
  } else if (one_compare_emit(VPT, kSorted) && cut.ok && cut.idx_t == INT_MAX) {
    emit_selected<kEmitCap>(
        row, k, [&](int j, int, float v) { return row.valid(j) & ranks_ge<kLargest>(v, cut.t); }, x,
        ov, oi, s_ov, s_oi);
  } else if (cut.ok) {
    emit_selected<kEmitCap>(
        row, k,
        [&](int j, int e, float v) {
          return row.valid(j) & ranks_ge<kLargest>(v, cut.t) & ((v != cut.t) | (e <= cut.idx_t));
        },
        x, ov, oi, s_ov, s_oi);
  } else {
    // A NaN plan: the NaN key is the highest (largest) or the lowest, 1 (smallest).
    const Key nan_key = largest ? ~Key(0) : Key(1);
    const Plan<Key> plan = cut.nan_plan ? Plan<Key>{nan_key, nan_key, cut.quota}
                                        : make_plan<float>(row, k, max_iter, eps);
    int64_t ties = 0;
    emit_selected<kEmitCap>(
        row, k,
        [&](int j, int, float v) {
          const Key key = value_key(v, largest);
          const bool above = row.valid(j) && plan.takes(key);
          const bool tie = row.valid(j) && plan.fills(key);
          const unsigned tie_mask = __ballot_sync(kFullMask, tie);
          const bool take = above || (tie && ties + __popc(tie_mask & lanes_below) < plan.quota);
          ties += __popc(tie_mask);
          return take;
        },
        x, ov, oi, s_ov, s_oi);
  }
  if (k <= kEmitCap)  // (the sorting kernels' kEmitCap is kStageK)
    // Selected values lie in [cut.t, cut.top] when the cut knows the row's maximum.  (The whole
    // staging rows: k may pass kStageSlots here.)
    flush_staged<scalar_t, kLargest, !kAnyOrder>(k, kSorted, cut.t,
                                                 cut.ok && cut.top_known ? cut.top : cut.t, x, ov,
                                                 oi, s_ov_row, s_oi_row, s_sort);
}

template <typename scalar_t, int VPT, bool kLargest, bool kSorted>
__global__ void __launch_bounds__(kValueBlockWarps * 32, value_kernel_min_blocks(VPT))
    warp_values_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                       int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                       int64_t max_iter, float eps) {
  using Bufs = WarpValueBufs<VPT, kSorted>;
  constexpr int kWarps = kValueBlockWarps;
  __shared__ float s_val[kWarps][kCandBuf];
  __shared__ int s_idx[kWarps][kCandBuf];
  __shared__ __align__(
      16) float s_ov_rows[kWarps][Bufs::kStageRow];  // (16: the sort's vector loads)
  __shared__ __align__(16) int s_oi_rows[kWarps][Bufs::kStageRow];
  __shared__ __align__(16) uint64_t s_sort[kWarps][Bufs::kSortSlots];
  // The warp index through a shuffle tells the compiler that the row loop is warp-uniform;
  // otherwise every ballot, reduction and shuffle gets a divergence-safe copy (BRA.DIV), which
  // doubles the code.  Measured (fp32 paper grid): max_iter=4 4-11% faster everywhere, sorted
  // output 2-10 points cheaper, exact unsorted 0-4% faster at 8 values per lane but 2-6% slower
  // at 16 (which keeps the plain index) and at 24 with 3 blocks (at 4 blocks, 1% faster).
  constexpr bool kUniformRows = kSorted || VPT <= 8 || VPT == 24;
  const int warp =
      kUniformRows ? __shfl_sync(kFullMask, int(threadIdx.x / 32), 0) : int(threadIdx.x / 32);
  const int64_t stride = int64_t(gridDim.x) * kWarps;
  for (int64_t r = int64_t(blockIdx.x) * kWarps + warp; r < rows; r += stride)
    warp_value_row<scalar_t, VPT, kLargest, kSorted>(
        in + r * cols, out_values + r * k, out_indices + r * k, cols, k, max_iter, eps, s_val[warp],
        s_idx[warp], s_ov_rows[warp], s_oi_rows[warp], s_sort[warp]);
}

}  // namespace cuda_detail
}  // namespace rtopk
