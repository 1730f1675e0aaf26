// Top-k of short rows (mixture-of-experts routers: 8..256 experts, k of 1..8) without the value
// kernels' search.  Those pay a fixed ~300 warp instructions a row (min/max, the cut, the staging
// and its flush) that a row of 8 or 64 elements never earns back, and they give a warp to a row of
// 8.  Two kernels instead, both in the tie rule of rtopk_algo.h (directed keys, equal keys by
// index), both giving rank order or index order as asked:
//   rank_rows_kernel   rows of at most 32 elements (8 for max_iter / eps, unless k == cols): G
//                      lanes a row (the power of two >= cols), 32 / G rows a warp; in exact mode
//                      each element's rank is counted over its row by G shuffles and the elements
//                      of rank < k are the selection; in the other modes make_plan runs on the
//                      row's lane group (the CPU's plan) and the taken elements are ranked the
//                      same way.  The rank is the place in rank order, a ballot gives the place
//                      in index order.
//   round_rows_kernel  16/32-bit rows of 17..256 elements at small k (round_rows_max_k), exact
//                      mode: a warp ranks a few rows at once in k rounds, each taking a row's
//                      largest remaining key (lowest index among equal ones) with two warp
//                      reductions; rank order falls out, index order from ranking the k indices.
// Measured against the value kernels (notes v29): exact 2.5-7x faster at 8..16 elements, 1.3-2.7x
// at 17..256 elements with k <= 4, the sorted output 4-10x at 8..16; max_iter=4 at 8 elements
// 1.4-1.7x.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../rtopk_algo.h"
#include "rtopk_kernels_common.cuh"
#include "rtopk_launch.h"

namespace rtopk {
namespace cuda_detail {

constexpr int kSmallBlockThreads = 256;
constexpr int kSmallBlockWarps = kSmallBlockThreads / 32;
// Row groups a lane loads before it ranks the first: loads in flight for the short rows.
constexpr int kRankGroupsInFlight = 4;

// make_plan's Row (rtopk_algo.h) over a row held one key a lane by the G lanes of `group` (key 0
// past the row's end): Algorithm 2 and the eps search on short rows, with the CPU's plan.  Only the
// group's lanes take part in its votes and shuffles: groups of one warp may leave a loop apart.
template <typename Key, int G>
struct LaneGroupRow {
  Key key;
  unsigned group;

  __device__ __forceinline__ int64_t count_ge(Key t) const {
    return __popc(__ballot_sync(group, key >= t));  // (t >= 1: past the end never counts)
  }
  __device__ __forceinline__ bool key_range(Key& lo, Key& hi, bool finite_only) const {
    const bool use = key != 0 && (!finite_only || key_is_finite(key));
    Key mn = use ? key : KeyTraits<ComputeOf<Key>>::kMax, mx = use ? key : 0;
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) {
      mn = min(mn, __shfl_xor_sync(group, mn, o, G));
      mx = max(mx, __shfl_xor_sync(group, mx, o, G));
    }
    lo = mn;
    hi = mx;
    return hi != 0;
  }
};

// kExact: exact mode (the instance exact calls take: without the plan's registers).
template <typename scalar_t, int G, bool kExact>
__global__ void __launch_bounds__(kSmallBlockThreads)
    rank_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                     int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                     int64_t max_iter, typename Elem<scalar_t>::Compute eps, bool largest,
                     bool sorted) {
  static_assert(G >= 2 && G <= kRankOrderFreeCols && (G & (G - 1)) == 0,
                "G lanes a row: a power of two, at most a warp");
  using E = Elem<scalar_t>;
  using Key = KeyFor<scalar_t>;
  constexpr int R = 32 / G;  // rows a warp
  constexpr int U = kRankGroupsInFlight;
  const int lane = threadIdx.x & 31;
  const int c = lane % G;  // this lane's column
  const int sub = lane / G;
  const unsigned group = G == 32 ? kFullMask : ((1u << G) - 1u) << (sub * G);  // this row's lanes
  const unsigned before = group & ((1u << lane) - 1u);                         // ... of lower index
  // (A warp-uniform row loop, as in the value kernels: no divergence-safe copies of the shuffles.)
  const int warp = __shfl_sync(kFullMask, int(threadIdx.x / 32), 0);
  const int64_t step = int64_t(gridDim.x) * kSmallBlockWarps * R * U;
  for (int64_t base = (int64_t(blockIdx.x) * kSmallBlockWarps + warp) * R * U; base < rows;
       base += step) {
    scalar_t v[U] = {};
    bool ok[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t r = base + u * R + sub;
      ok[u] = c < cols && r < rows;
      if (ok[u]) v[u] = in[r * cols + c];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      // Key 0 (below every real key) for the lanes past the row's end.
      Key key = ok[u] ? directed_key<typename E::Compute>(E::to_compute(v[u]), largest) : Key(0);
      bool take = true;
      if constexpr (!kExact) {
        // The plan of Algorithm 2 / the eps search; then rank what it takes (key 0 for the rest).
        LaneGroupRow<Key, G> row{key, group};
        const Plan<Key> plan = make_plan<typename E::Compute>(row, k, max_iter, eps);
        const bool fills = ok[u] && plan.fills(key);
        const int fills_before = __popc(__ballot_sync(group, fills) & before);
        take = ok[u] && (plan.takes(key) || (fills && fills_before < plan.quota));
        __syncwarp();  // (the groups' plans may have looped apart)
        key = take ? key : Key(0);
      }
      int rank = 0;
      if constexpr (sizeof(scalar_t) == 2) {
        // The fp32 key of a 16-bit value has its low 13 bits all equal (0, or all ones when
        // negative): put the column there, reversed, so that keys are unique and a lower column
        // ranks higher among equal values.  NaN (all ones, or 1) and padding (0) stay extreme.
        key = (key & ~Key(31)) | Key(31 - c);
#pragma unroll
        for (int j = 0; j < G; ++j) rank += __shfl_sync(kFullMask, key, j, G) > key;
      } else {
        // Those above it, then the equal ones before it (a mask of the equal columns).
        unsigned equal = 0;
#pragma unroll
        for (int j = 0; j < G; ++j) {
          const Key o = __shfl_sync(kFullMask, key, j, G);
          rank += o > key;
          equal |= o == key ? 1u << j : 0u;
        }
        rank += __popc(equal & ((1u << c) - 1u));
      }
      take = take && ok[u] && rank < k;
      const unsigned taken = __ballot_sync(kFullMask, take);
      const int pos = sorted ? rank : __popc(taken & before);
      if (take) {
        const int64_t at = (base + u * R + sub) * k + pos;
        out_values[at] = v[u];
        out_indices[at] = c;
      }
    }
  }
}

// Largest k the round kernel takes at VPT values a lane; above it the value kernels' cut costs less
// than k rounds of about 5 * VPT + 5 instructions (measured, notes v29).
constexpr int round_rows_max_k(int vpt) { return vpt <= 3 ? 8 : 4; }
// Rows a warp ranks at once: independent reductions to interleave, and more rows' loads in flight.
constexpr int round_rows_at_once(int vpt) { return vpt <= 2 ? 4 : 2; }

template <typename scalar_t, int VPT>
__global__ void __launch_bounds__(kSmallBlockThreads, 4)
    round_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                      int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                      bool largest, bool sorted) {
  static_assert(sizeof(KeyFor<scalar_t>) == 4, "32-bit keys: one-instruction warp reductions");
  using E = Elem<scalar_t>;
  constexpr int P = round_rows_at_once(VPT);
  constexpr int kFull = warp_slots_below(VPT);  // slots real in every row this kernel gets
  const int lane = threadIdx.x & 31;
  const int warp = __shfl_sync(kFullMask, int(threadIdx.x / 32), 0);
  const int64_t stride = int64_t(gridDim.x) * kSmallBlockWarps * P;
  const auto real = [&](int s) { return s < kFull || s * 32 + lane < cols; };
  // The next P rows are loaded while these are ranked.
  const auto load = [&](int64_t r0, scalar_t(&v)[P][VPT]) {
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        if (r0 + p < rows && real(s)) v[p][s] = in[(r0 + p) * cols + s * 32 + lane];
  };
  int64_t r0 = (int64_t(blockIdx.x) * kSmallBlockWarps + warp) * P;
  scalar_t next[P][VPT] = {};
  if (r0 < rows) load(r0, next);
  for (; r0 < rows; r0 += stride) {
    uint32_t key[P][VPT];  // 0 (below every real key) past the row's end and once taken
#pragma unroll
    for (int p = 0; p < P; ++p)
#pragma unroll
      for (int s = 0; s < VPT; ++s)
        key[p][s] = real(s) ? directed_key<float>(E::to_compute(next[p][s]), largest) : 0u;
    if (r0 + stride < rows) load(r0 + stride, next);
    // Round i's element stays with lane i (k <= 32).  (Rows past the end rank stale registers and
    // write nothing.)
    uint32_t my_key[P] = {}, my_e[P] = {};
    for (int i = 0; i < k; ++i) {
#pragma unroll
      for (int p = 0; p < P; ++p) {
        uint32_t lane_max = key[p][0];
#pragma unroll
        for (int s = 1; s < VPT; ++s) lane_max = max(lane_max, key[p][s]);
        const uint32_t m = __reduce_max_sync(kFullMask, lane_max);
        uint32_t lane_first = 0xFFFFFFFFu;  // this lane's lowest index holding m
#pragma unroll
        for (int s = VPT - 1; s >= 0; --s) lane_first = key[p][s] == m ? s * 32 + lane : lane_first;
        const uint32_t e = __reduce_min_sync(kFullMask, lane_first);
#pragma unroll
        for (int s = 0; s < VPT; ++s) key[p][s] = s * 32 + lane == e ? 0u : key[p][s];
        if (lane == i) {
          my_key[p] = m;
          my_e[p] = e;
        }
      }
    }
#pragma unroll
    for (int p = 0; p < P; ++p) {
      const int64_t r = r0 + p;
      int pos = lane;  // rank order: round order
      if (!sorted) {
        pos = 0;
        for (int j = 0; j < k; ++j) pos += __shfl_sync(kFullMask, my_e[p], j) < my_e[p];
      }
      if (lane < k && r < rows) {
        out_values[r * k + pos] = key_value<scalar_t>(my_key[p], in + r * cols + my_e[p], largest);
        out_indices[r * k + pos] = my_e[p];
      }
    }
  }
}

// Longest rows whose max_iter / eps calls take the rank kernel (make_plan on the lane group).
// Measured (MoE grid, N = 2^18, against the value kernels; notes v29): max_iter=4 at 8 elements
// 0.58-0.69 of the time, at 16 elements 1.05-1.36 (each midpoint a chain of group shuffles).
constexpr int64_t kRankPlanMaxCols = 8;

// Blocks for rows_a_warp rows a warp, at most the 2048 threads a SM holds.
inline unsigned small_rows_grid(int64_t rows, int rows_a_warp, int num_sms) {
  const int64_t warps = (rows + rows_a_warp - 1) / rows_a_warp;
  const int64_t wanted = (warps + kSmallBlockWarps - 1) / kSmallBlockWarps;
  const int64_t cap = int64_t(std::max(num_sms, 1)) * (2048 / kSmallBlockThreads);
  return static_cast<unsigned>(std::min(wanted, cap));
}

#ifndef RTOPK_WARP_EMU  // (the emulator calls the kernels itself)
// Rows of 2..32 elements, any k; `exact`: the instance without the plan.  Outputs in rank order
// when a.sorted.
template <typename scalar_t>
void launch_rank_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a, bool exact,
                      cudaStream_t stream) {
  using Compute = typename Elem<scalar_t>::Compute;
  const auto launch = [&](auto lanes) {
    constexpr int G = decltype(lanes)::value;
    const auto kernel =
        exact ? rank_rows_kernel<scalar_t, G, true> : rank_rows_kernel<scalar_t, G, false>;
    kernel<<<small_rows_grid(a.rows, 32 / G * kRankGroupsInFlight, a.num_sms), kSmallBlockThreads,
             0, stream>>>(in, ov, oi, a.rows, static_cast<int>(a.cols), static_cast<int>(a.k),
                          a.max_iter, static_cast<Compute>(a.eps), a.largest, a.sorted);
  };
  // G: the power of two >= cols.
  if (a.cols <= 2) {
    launch(std::integral_constant<int, 2>());
  } else if (a.cols <= 4) {
    launch(std::integral_constant<int, 4>());
  } else if (a.cols <= 8) {
    launch(std::integral_constant<int, 8>());
  } else if (a.cols <= 16) {
    launch(std::integral_constant<int, 16>());
  } else {
    launch(std::integral_constant<int, 32>());
  }
}

// Rows of more than 32 * warp_slots_below(VPT) and at most 32 * VPT elements (17..32 for VPT = 1),
// exact mode, k <= round_rows_max_k(VPT).
template <typename scalar_t, int VPT>
void launch_round_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                       cudaStream_t stream) {
  const auto kernel = round_rows_kernel<scalar_t, VPT>;
  const int rows_a_warp = round_rows_at_once(VPT);
  kernel<<<small_rows_grid(a.rows, rows_a_warp, a.num_sms), kSmallBlockThreads, 0, stream>>>(
      in, ov, oi, a.rows, static_cast<int>(a.cols), static_cast<int>(a.k), a.largest, a.sorted);
}

// The short-row kernels where they apply (returns false where not): rows of up to 32 elements in
// exact mode or at k == cols (up to 8 in the other modes), and 16/32-bit rows of up to 256 at
// small k in exact mode.
template <typename scalar_t>
bool launch_small_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                       cudaStream_t stream) {
  using Compute = typename Elem<scalar_t>::Compute;
  if (a.cols > 256) return false;
  // At k == cols every mode takes the whole row: exact mode's answer, without a plan (MoE
  // M = k = 8, max_iter=4: 0.0527 ms through the plan, 0.0139 exact; notes v30).
  const bool exact = exact_mode<Compute>(a) || a.k == a.cols;
  if constexpr (sizeof(Compute) == 4) {
    // Rows of 17..32: the 32 shuffles a row of the rank kernel cost more than a few rounds.
    if (exact && a.cols > 16 && a.cols <= 32 && a.k <= round_rows_max_k(1)) {
      launch_round_rows<scalar_t, 1>(in, ov, oi, a, stream);
      return true;
    }
  }
  // The rank kernel: exact mode on rows of up to 32; max_iter / eps only up to kRankPlanMaxCols
  // elements.
  if (a.cols <= kRankOrderFreeCols && (exact || a.cols <= kRankPlanMaxCols)) {
    launch_rank_rows<scalar_t>(in, ov, oi, a, exact, stream);
    return true;
  }
  if (!exact) return false;
  if constexpr (sizeof(Compute) == 4) {
    const auto rounds = [&](auto vpt) {
      constexpr int VPT = decltype(vpt)::value;
      if (a.k > round_rows_max_k(VPT)) return false;
      launch_round_rows<scalar_t, VPT>(in, ov, oi, a, stream);
      return true;
    };
    if (a.cols <= 64) return rounds(std::integral_constant<int, 2>());
    if (a.cols <= 96) return rounds(std::integral_constant<int, 3>());
    if (a.cols <= 128) return rounds(std::integral_constant<int, 4>());
    if (a.cols <= 192) return rounds(std::integral_constant<int, 6>());
    return rounds(std::integral_constant<int, 8>());
  }
  return false;
}

#endif  // RTOPK_WARP_EMU

}  // namespace cuda_detail
}  // namespace rtopk
