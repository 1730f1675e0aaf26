// Streaming warp-per-row kernel for long 16/32-bit rows in exact mode (more than 2048 elements,
// k <= kStreamMaxK, enough rows to fill the device).
//
// Each warp streams its row through registers in chunks of 16-byte loads, the next chunk in flight
// while the current one is examined, and keeps in shared memory a list, in index order, of the
// elements that may still rank among the row's k largest: every element at first, then, once the
// list has been cut, only those ranked above its least key.  When the list is about to overflow,
// list_cut keeps its top k .. k + k / 4 entries, which raises that threshold.  On a randn row most
// chunks then hold no element above it and cost one compare an element; the row's end cuts the
// list to exactly k (keys of rtopk_algo.h: the exact selection, identical to the CPU's), written
// in index order.  A row whose last element ranks above its first is streamed from its end (a
// sorted row would otherwise refill the list with every chunk).
//
// No block barriers and 72-80 registers a lane: a SM keeps 24 rows in flight, where the group
// kernel (rtopk_group_values.cuh), whose row lives in the registers of 4-16 warps, keeps 4 and
// exchanges partial counts through barriers (latency-bound: notes v21).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "../rtopk_algo.h"
#include "rtopk_kernels_common.cuh"
#include "rtopk_launch.h"

namespace rtopk {
namespace cuda_detail {

constexpr int kStreamWarps = 4;   // warps a block
constexpr int kStreamMaxK = 512;  // a cut list (k + k / 4) leaves room in kStreamListLong
constexpr int kStreamListLong = 1024;
constexpr int kStreamListShort = 512;  // for k <= kStreamShortK: a cheaper first cut
constexpr int kStreamShortK = 64;

// Directed key of a loaded element: directed_key() of rtopk_algo.h without branches (NaN ranks
// above every key for the k largest, below for the k smallest).
template <bool kLargest>
__device__ __forceinline__ uint32_t stream_key(float x) {
  const uint32_t key = finite_value_key(kLargest ? x : -x);
  return x != x ? (kLargest ? KeyTraits<float>::kMax : 1u) : key;
}

// A lane's share of a row: E elements from one load (16 bytes, or one element where the row is not
// 16-byte aligned).
template <typename scalar_t, bool kVec>
struct StreamLoad;
template <typename scalar_t>
struct StreamLoad<scalar_t, false> {
  static constexpr int E = 1;
  using Raw = float;
  __device__ static Raw load(const scalar_t* p) { return Elem<scalar_t>::to_compute(*p); }
  __device__ static Raw zero() { return 0.f; }
  __device__ static float at(const Raw& w, int) { return w; }
};
template <typename scalar_t>
struct StreamLoad<scalar_t, true> {
  static constexpr int E = 16 / sizeof(scalar_t);
  using Raw = uint4;
  __device__ static Raw load(const scalar_t* p) { return *reinterpret_cast<const uint4*>(p); }
  __device__ static Raw zero() { return make_uint4(0u, 0u, 0u, 0u); }
  __device__ static uint32_t word(const Raw& w, int i) {
    return i == 0 ? w.x : i == 1 ? w.y : i == 2 ? w.z : w.w;
  }
  // Element q (a constant after unrolling) as fp32.
  __device__ static float at(const Raw& w, int q) {
    if constexpr (sizeof(scalar_t) == 4) {
      return __uint_as_float(word(w, q));
    } else {
      const uint32_t h = word(w, q / 2);
      if constexpr (std::is_same<scalar_t, __nv_bfloat16>::value) {
        return __uint_as_float(q % 2 == 0 ? h << 16 : h & 0xFFFF0000u);
      } else {
        return __half2float(
            __ushort_as_half(static_cast<unsigned short>(q % 2 == 0 ? h : h >> 16)));
      }
    }
  }
};

// The warp's list in shared memory: entry p holds a directed key (rtopk_algo.h) and an element
// index, in index order.  Passes over it read 16 bytes a lane: entries 128 b + 4 lane .. + 3 in
// step b, so index order within a step is lane, then q; key 0 (no element's: NaN ranks at 1 when
// smallest) pads it to whole steps.
struct StreamList {
  uint32_t* keys;
  int* idx;
  int steps;

  __device__ __forceinline__ uint4 keys_at(int b) const {
    return reinterpret_cast<const uint4*>(keys)[b * 32 + (threadIdx.x & 31)];
  }
  // Min and max key of the entries in [lo, hi] (lo >= 1).
  __device__ __forceinline__ void range_in(uint32_t lo, uint32_t hi, uint32_t& mn,
                                           uint32_t& mx) const {
    uint32_t a = 0xFFFFFFFFu, z = 0u;
    for (int b = 0; b < steps; ++b) {
      const uint4 q = keys_at(b);
      const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const bool in = w[i] >= lo && w[i] <= hi;
        a = min(a, in ? w[i] : 0xFFFFFFFFu);
        z = max(z, in ? w[i] : 0u);
      }
    }
    mn = warp_min(a);
    mx = warp_max(z);
  }
  // Calls f(at, key, index) for every entry that pick(key) || pick_at(key, index) accepts, with
  // `at` the number of accepted entries before it in index order (kFromEnd: after it, the steps
  // then taken last first); returns the number accepted.  f may rewrite entries up to its own
  // (kFromEnd: from its own on), since every lane reads a step before any lane writes.
  template <bool kFromEnd = false, typename Pick, typename F,
            typename PickAt = bool (*)(uint32_t, int)>
  __device__ __forceinline__ int scan(Pick pick, F f, PickAt pick_at = nullptr) const {
    const int lane = threadIdx.x & 31;
    // The lanes whose entries of a step come before this lane's in the scan's order.
    const unsigned before_lanes = kFromEnd ? ~((2u << lane) - 1u) : (1u << lane) - 1u;
    int done = 0;
    for (int bi = 0; bi < steps; ++bi) {
      const int b = kFromEnd ? steps - 1 - bi : bi;
      const uint4 q = keys_at(b);
      const int4 e = reinterpret_cast<const int4*>(idx)[b * 32 + lane];
      const uint32_t kq[4] = {q.x, q.y, q.z, q.w};
      const int eq[4] = {e.x, e.y, e.z, e.w};
      bool flag[4];
      int at = done, total = 0;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        flag[i] = pick(kq[i]);
        if constexpr (!std::is_same<PickAt, bool (*)(uint32_t, int)>::value)
          flag[i] = flag[i] || pick_at(kq[i], eq[i]);
        const unsigned m = __ballot_sync(kFullMask, flag[i]);
        at += __popc(m & before_lanes);
        total += __popc(m);
      }
      __syncwarp();
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int i = kFromEnd ? 3 - j : j;
        if (flag[i]) f(at++, kq[i], eq[i]);
      }
      done += total;
    }
    __syncwarp();
    return done;
  }
};

// Cuts a warp's list in place to the entries at or above some key t with k <= count(>= t) <= cap,
// or, where no bin edge lands there (ties at the k-th key; with cap == k, whenever the k-th key is
// not alone above an edge), to exactly its k highest-ranked entries (key descending, then index).
// The list: n >= k entries in index order at the start of the LC-entry buffer (back: at its end),
// where the kept ones go too.  Returns the number kept, and in kth the least kept key.  The key
// bracket [lo, hi] (at first the list's range) narrows by histograms: one pass counts its entries
// into at most 128 bins of 2^s keys and the bin holding the k-th entry, snapped to its least and
// greatest key, becomes the bracket, until a bin's lower edge counts [k, cap], one key is left, or
// (after two passes) at most 32 entries lie in the bracket, which one warp then ranks.  A pass
// costs about 2.5 counting passes; it replaced a bisection of 4-6 (notes v26).  s_scratch: 129
// words (the bins and one for the rest, then the ranking's 2 x 32).  Not inlined: the kernel's
// instruction cache (notes v24).
template <int LC>
__device__ __noinline__ int list_cut(uint32_t* keys, int* idx, int n, int k, int cap, bool back,
                                     uint32_t& kth, uint32_t* s_scratch) {
  const int lane = threadIdx.x & 31;
  const int steps = (n + 127) / 128;
  const int base = back ? LC - steps * 128 : 0;  // the list's steps start here
  const StreamList list{keys + base, idx + base, steps};
  // Pad to whole steps (behind the list, or in front of it).
  for (int p = lane; p < steps * 128 - n; p += 32) {
    const int at = back ? base + p : n + p;
    keys[at] = 0u;
    idx[at] = INT_MAX;  // (above every `last`)
  }
  __syncwarp();

  uint32_t lo, hi;
  list.range_in(1u, 0xFFFFFFFFu, lo, hi);
  int c_lo = n, c_gt = 0;  // entries with key >= lo, > hi: c_gt < k <= c_lo
  // What is kept: keys above `above`, and those equal to it with an index up to `last`.
  uint32_t above = 0u;
  int last = -1;
  bool found = false;
  // Ranking takes at most 32 entries, and costs more than a pass: at least two passes first.
  for (int pass = 0; c_lo > cap && lo < hi && (c_lo - c_gt > 32 || pass < 2); ++pass) {
    const uint32_t span = hi - lo;
    const int s = max(0, 25 - __clz(span));  // (span >> s) < 128
    reinterpret_cast<uint4*>(s_scratch)[lane] = make_uint4(0u, 0u, 0u, 0u);
    __syncwarp();
    for (int b = 0; b < steps; ++b) {
      const uint4 q = list.keys_at(b);
      const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // Outside [lo, hi] (padding, key 0, wraps above span) into bin 128, no branch.
        const uint32_t d = w[i] - lo;
        atomicAdd(s_scratch + (d <= span ? d >> s : 128u), 1u);
      }
    }
    __syncwarp();
    // Lane l holds bins 4 l .. 4 l + 3; `acc` counts the entries above the bin at hand.
    const uint4 hq = reinterpret_cast<const uint4*>(s_scratch)[lane];
    const int h[4] = {int(hq.x), int(hq.y), int(hq.z), int(hq.w)};
    const int own = h[0] + h[1] + h[2] + h[3];
    // This lane's bins and those of the lanes above.
    const int upper = warp_inclusive_sum<true>(own);
    int acc = c_gt + upper - own, bin = -1, c_bin = 0, c_above = 0;
#pragma unroll
    for (int j = 3; j >= 0; --j) {
      const int with = acc + h[j];
      if (acc < k && with >= k) {
        bin = 4 * lane + j;
        c_bin = with;
        c_above = acc;
      }
      acc = with;
    }
    // (A lane reads and clears only its own bins: no barrier before the next pass.)
    const int src = __ffs(__ballot_sync(kFullMask, bin >= 0)) - 1;
    bin = __shfl_sync(kFullMask, bin, src);
    c_bin = __shfl_sync(kFullMask, c_bin, src);
    c_above = __shfl_sync(kFullMask, c_above, src);
    const uint32_t t = lo + (uint32_t(bin) << s);  // the bin's lower edge: count(>= t) = c_bin
    if (c_bin <= cap) {
      above = t - 1u;
      found = true;
      break;
    }
    const uint32_t width = (1u << s) - 1u;
    hi = hi - t < width ? hi : t + width;
    lo = t;
    c_lo = c_bin;
    c_gt = c_above;
    // (Snapped, a bracket of few distinct keys ends after one more pass, not up to four.)
    list.range_in(lo, hi, lo, hi);
  }
  if (!found && c_lo <= cap) {
    above = lo - 1u;  // every entry from lo up fits
    found = true;
  }
  if (!found) {
    const int r = k - c_gt;  // the k-th entry is the r-th ranked of those in [lo, hi]
    above = lo;
    if (lo == hi) {
      // One key: its first r entries by index.
      int at = -1;
      list.scan([&](uint32_t key) { return key == lo; },
                [&](int before, uint32_t, int e) { at = before == r - 1 ? e : at; });
      last = warp_max(at);
    } else {
      // At most 32 entries in [lo, hi]: gather them in index order, one a lane, and rank them.
      uint32_t* s_ck = s_scratch;
      int* s_ci = reinterpret_cast<int*>(s_scratch + 32);
      const int want = list.scan([&](uint32_t key) { return key >= lo && key <= hi; },
                                 [&](int before, uint32_t key, int e) {
                                   s_ck[before] = key;
                                   s_ci[before] = e;
                                 });
      const bool has = lane < want;
      const uint32_t ck = has ? s_ck[lane] : 0u;
      const int ci = has ? s_ci[lane] : INT_MAX;
      __syncwarp();
      int rank = 0;  // entries ranked above this one: a greater key, or the same key earlier
      for (int j = 0; j < want; ++j) {
        const uint32_t kj = __shfl_sync(kFullMask, ck, j);
        rank += kj > ck || (kj == ck && j < lane);
      }
      const int src = __ffs(__ballot_sync(kFullMask, has && rank == r - 1)) - 1;
      above = __shfl_sync(kFullMask, ck, src);
      last = __shfl_sync(kFullMask, ci, src);
    }
  }
  // Compact what is kept, in place and in order, to the list's first step, or at the buffer's end
  // scanning from the list's end (an entry moves up, never onto one not yet read; before, a move
  // after the compaction cost backward rows ~200 instructions a cut of k = 512: notes v26).
  uint32_t least = 0xFFFFFFFFu;
  const auto pick = [&](uint32_t key) { return key > above; };
  const auto pick_tie = [&](uint32_t key, int e) { return key == above && e <= last; };
  const auto keep_at = [&](int slot, uint32_t key, int e) {
    keys[slot] = key;
    idx[slot] = e;
    least = min(least, key);
  };
  const int kept =
      back ? list.scan<true>(
                 pick, [&](int at, uint32_t key, int e) { keep_at(LC - 1 - at, key, e); }, pick_tie)
           : list.scan(
                 pick, [&](int at, uint32_t key, int e) { keep_at(at, key, e); }, pick_tie);
  kth = warp_min(least);
  return kept;
}

// One row, streamed from its first chunk to its last (back: from the last to the first, the list
// growing down from the buffer's end, still in index order).  Forwards, an element tied with the
// list's k-th key comes later and ranks below it, so only elements above it pass; backwards it
// comes earlier and ranks above, so the threshold is the next key down.  The direction is a
// runtime flag, not a second instantiation: with both paths' code in flight on a SM the kernel
// ran at half speed (instruction cache, notes v24).  Returns where in the buffer the k selected
// entries start.
template <bool kLargest, int LC, int G, typename L, typename scalar_t>
__device__ __forceinline__ int stream_row(const scalar_t* x, int cols, int k, bool back,
                                          uint32_t* keys, int* idx, uint32_t* s_scratch) {
  constexpr int E = L::E;
  constexpr int kGroup = 32 * E;  // elements of one load across the warp
  constexpr int kChunk = G * kGroup;
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  const int chunks = (cols + kChunk - 1) / kChunk;
  const auto passes = [](float v, float thr) {  // v's directed value lies above thr (or is NaN)
    return !((kLargest ? v : -v) <= thr);
  };
  typename L::Raw cur[G], nxt[G];
  const auto load_chunk = [&](typename L::Raw(&buf)[G], int c) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const int e0 = c * kChunk + g * kGroup + lane * E;  // (cols is a multiple of E)
      buf[g] = e0 < cols ? L::load(x + e0) : L::zero();
    }
  };
  load_chunk(cur, back ? chunks - 1 : 0);
  int n = 0;                                 // list entries
  float thr = __uint_as_float(0x7FC00000u);  // NaN: every element passes until the first cut
  bool cut = false, closed = false;
  for (int i = 0; i < chunks && !closed; ++i) {
    const int c = back ? chunks - 1 - i : i;
    if (i + 1 < chunks) load_chunk(nxt, back ? c - 1 : c + 1);
    const int base = c * kChunk;
    if (!cut && (back ? cols - base : base + kChunk) <= LC) {
      // Until the list first fills, it is the row itself: element e at entry e (backwards: at
      // the buffer's end, LC - cols + e).
      const int shift = back ? LC - cols : 0;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const int e0 = base + g * kGroup + lane * E;
        if (e0 < cols) {
          if constexpr (E % 4 == 0) {
#pragma unroll
            for (int q = 0; q < E; q += 4) {
              *reinterpret_cast<uint4*>(keys + shift + e0 + q) =
                  make_uint4(stream_key<kLargest>(L::at(cur[g], q)),
                             stream_key<kLargest>(L::at(cur[g], q + 1)),
                             stream_key<kLargest>(L::at(cur[g], q + 2)),
                             stream_key<kLargest>(L::at(cur[g], q + 3)));
              *reinterpret_cast<int4*>(idx + shift + e0 + q) =
                  make_int4(e0 + q, e0 + q + 1, e0 + q + 2, e0 + q + 3);
            }
          } else {
            keys[shift + e0] = stream_key<kLargest>(L::at(cur[g], 0));
            idx[shift + e0] = e0;
          }
        }
      }
      n = back ? cols - base : min(cols, base + kChunk);
    } else {
      bool any = false;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const bool valid = base + g * kGroup + lane * E < cols;
#pragma unroll
        for (int q = 0; q < E; ++q) any |= valid & passes(L::at(cur[g], q), thr);
      }
      if (__any_sync(kFullMask, any)) {
#pragma unroll
        for (int gi = 0; gi < G; ++gi) {
          // Backwards the loads are taken last first, so that each one's elements go in front of
          // the list (a select a word, not a runtime index into the registers).
          typename L::Raw w = cur[gi];
#pragma unroll
          for (int g = 0; g < G; ++g) w = back && g == G - 1 - gi ? cur[g] : w;
          const int e0 = base + (back ? G - 1 - gi : gi) * kGroup + lane * E;
          const bool valid = e0 < cols;
          bool cand[E];
          bool any_g = false;
#pragma unroll
          for (int q = 0; q < E; ++q) {
            cand[q] = valid & passes(L::at(w, q), thr);
            any_g |= cand[q];
          }
          if (!__any_sync(kFullMask, any_g)) continue;
          if (n + kGroup > LC) {
            // Full: cut the list to its top k .. k + k / 4, and take this load's elements
            // against the new threshold.  Forwards, once it is NaN (the k largest), nothing
            // later ranks above it; backwards only NaN does (+inf passes too, harmlessly).
            uint32_t kth;
            n = list_cut<LC>(keys, idx, n, k, k + k / 4, back, kth, s_scratch);
            cut = true;
            if (kLargest && kth == KeyTraits<float>::kMax) {
              if (!back) {
                closed = true;
                break;
              }
              kth = KeyTraits<float>::kPosInf;
            }
            // Backwards the next key down (-0.0 has no key of its own: then -denorm_min's).
            if (back) kth = kth == KeyTraits<float>::kZero ? kth - 2u : kth - 1u;
            thr = from_key<float>(kth);
#pragma unroll
            for (int q = 0; q < E; ++q) cand[q] = valid & passes(L::at(w, q), thr);
          }
          // Index order within the load: lane, then element.
          int before = 0, total = 0;
#pragma unroll
          for (int q = 0; q < E; ++q) {
            const unsigned m = __ballot_sync(kFullMask, cand[q]);
            before += __popc(m & lanes_below);
            total += __popc(m);
          }
          int pos = (back ? LC - n - total : n) + before;
#pragma unroll
          for (int q = 0; q < E; ++q) {
            if (cand[q]) {
              keys[pos] = stream_key<kLargest>(L::at(w, q));
              idx[pos] = e0 + q;
              ++pos;
            }
          }
          n += total;
        }
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) cur[g] = nxt[g];
  }
  __syncwarp();
  if (n > k) {
    uint32_t kth;
    list_cut<LC>(keys, idx, n, k, k, back, kth, s_scratch);
  }
  return back ? LC - k : 0;
}

// LC: list capacity (entries a warp); G: 16-byte loads a lane a chunk.  A row streams backwards
// when its last element ranks above its first (a sorted row: its top then comes first, and later
// chunks pass nothing; forwards, every chunk would refill the list).  The pair that decides is
// read one row ahead.
// Blocks a SM: 6 fit the 1024-entry lists' shared memory; with 512-entry lists 16-bit rows run 2-3%
// faster at 8 (64 registers), fp32 rows the same (notes v24).
template <typename scalar_t, bool kLargest, bool kVec, int LC, int G, bool kSegs = false>
__global__ void __launch_bounds__(kStreamWarps * 32,
                                  LC == kStreamListShort && sizeof(scalar_t) == 2 ? 8 : 6)
    stream_values_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                         int64_t* __restrict__ out_indices, int64_t rows, int cols, int k, int seg,
                         int segs) {
  using L = StreamLoad<scalar_t, kVec>;
  static_assert(LC % 128 == 0, "list_cut reads the list in steps of 128 keys");
  static_assert(32 * L::E + 5 * (LC == kStreamListShort ? kStreamShortK : kStreamMaxK) / 4 <= LC,
                "a cut list (at most k + k / 4) leaves room for one load's elements");
  __shared__ __align__(16) uint32_t s_keys[kStreamWarps][LC];
  __shared__ __align__(16) int s_idx[kStreamWarps][LC];
  __shared__ __align__(16) uint32_t s_scratch[kStreamWarps][132];  // list_cut's histogram
  const int lane = threadIdx.x & 31;
  // (The warp index through a shuffle: a warp-uniform row loop, see warp_values_kernel.)
  const int warp = __shfl_sync(kFullMask, int(threadIdx.x / 32), 0);
  const int64_t stride = int64_t(gridDim.x) * kStreamWarps;
  // Item r: row r, or (kSegs) segment r % segs of row r / segs, its elements [s * seg, s * seg +
  // seg) (the last segment: to the row's end).  Rows alone keep the row length in the kernel's
  // parameters: a length in a register made one instance spill.
  const auto item = [&](int64_t r, int& n) {
    if constexpr (!kSegs) {
      n = cols;
      return in + r * int64_t(cols);
    } else {
      const int64_t row = r / segs;
      const int first = int(r - row * segs) * seg;
      n = first + seg + seg > cols ? cols - first : seg;  // (the last segment: to the row's end)
      return in + row * int64_t(cols) + first;
    }
  };
  const auto ends = [&](int64_t r) {  // (first, last) of item r, lanes 0 and 1
    int n;
    const scalar_t* x = item(r < rows ? r : 0, n);
    return r < rows && lane < 2 ? Elem<scalar_t>::to_compute(x[lane ? n - 1 : 0]) : 0.f;
  };
  int64_t r = int64_t(blockIdx.x) * kStreamWarps + warp;
  float end = ends(r);
  for (; r < rows; r += stride) {
    int n;
    const scalar_t* x = item(r, n);
    const uint32_t end_key = stream_key<kLargest>(end);
    const bool back = __shfl_sync(kFullMask, end_key, 1) > __shfl_sync(kFullMask, end_key, 0);
    end = ends(r + stride);
    const int at =
        stream_row<kLargest, LC, G, L>(x, n, k, back, s_keys[warp], s_idx[warp], s_scratch[warp]);
    scalar_t* ov = out_values + r * k;
    int64_t* oi = out_indices + r * k;
    // (The segment's first index again here, not kept through the row's stream: registers.)
    const int base = kSegs ? int(r % segs) * seg : 0;
    for (int p = lane; p < k; p += 32) {
      const int e = s_idx[warp][at + p];
      ov[p] = key_value<scalar_t>(s_keys[warp][at + p], x + e, kLargest);
      oi[p] = base + e;
    }
    __syncwarp();  // the list is rewritten by this warp's next row
  }
}

// Whether the streaming kernel takes rows longer than the warp kernel's (the launcher tests that):
// exact mode, rows numerous enough that one warp a row fills the device, k <= kStreamMaxK.  (Until
// its cuts took histograms, k > 384 at 3073..4096 elements stayed with the 4-warp group kernel,
// 3-7% faster there then: notes v24, v26.)
inline bool stream_applies(const RowLaunch& a) {
  return exact_mode<float>(a) && a.k <= kStreamMaxK && a.cols <= INT_MAX - 4096 &&
         a.rows >= 4 * int64_t(a.num_sms > 1 ? a.num_sms : 1);
}

// The streaming kernel over rows (segs == 1), or over segments of seg elements, segs a row (the
// last segment of a row up to its end), each segment's k selected into rows * segs outputs.
template <typename scalar_t>
void launch_stream_items(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a, int seg,
                         int segs, cudaStream_t stream) {
  const int64_t items = a.rows * segs;
  const auto launch = [&](auto kernel) {
    const unsigned grid = resident_grid(kernel, kStreamWarps * 32,
                                        (items + kStreamWarps - 1) / kStreamWarps, a.num_sms);
    kernel<<<grid, kStreamWarps * 32, 0, stream>>>(in, ov, oi, items, static_cast<int>(a.cols),
                                                   static_cast<int>(a.k), seg, segs);
  };
  // 16-byte loads where every row starts 16-byte aligned (and every segment: seg is a multiple
  // of 8 elements; split_rows only cuts such rows).
  const bool vec =
      (a.cols * int64_t(sizeof(scalar_t))) % 16 == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0;
  if (segs > 1 && a.k <= kStreamShortK) {
    a.largest ? launch(stream_values_kernel<scalar_t, true, true, kStreamListShort, 4, true>)
              : launch(stream_values_kernel<scalar_t, false, true, kStreamListShort, 4, true>);
  } else if (segs > 1) {
    a.largest ? launch(stream_values_kernel<scalar_t, true, true, kStreamListLong, 4, true>)
              : launch(stream_values_kernel<scalar_t, false, true, kStreamListLong, 4, true>);
  } else if (vec && a.k <= kStreamShortK) {
    a.largest ? launch(stream_values_kernel<scalar_t, true, true, kStreamListShort, 4>)
              : launch(stream_values_kernel<scalar_t, false, true, kStreamListShort, 4>);
  } else if (vec) {
    a.largest ? launch(stream_values_kernel<scalar_t, true, true, kStreamListLong, 4>)
              : launch(stream_values_kernel<scalar_t, false, true, kStreamListLong, 4>);
  } else {
    a.largest ? launch(stream_values_kernel<scalar_t, true, false, kStreamListLong, 16>)
              : launch(stream_values_kernel<scalar_t, false, false, kStreamListLong, 16>);
  }
}

template <typename scalar_t>
void launch_stream_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                        cudaStream_t stream) {
  launch_stream_items(in, ov, oi, a, static_cast<int>(a.cols), 1, stream);
}

}  // namespace cuda_detail
}  // namespace rtopk
