// Top-k of short rows (mixture-of-experts routers: 8..256 experts, k of 1..8) without the value
// kernels' search.  Those pay a fixed ~300 warp instructions a row (min/max, the cut, the staging
// and its flush) that a row of 8 or 64 elements never earns back, and they give a warp to a row of
// 8.  Four kernels instead, all in the tie rule of rtopk_algo.h (directed keys, equal keys by
// index), all giving rank order or index order as asked:
//   rank_rows_kernel    rows of at most 32 elements in exact mode (and every mode at k == cols): G
//                       lanes a row (the power of two >= cols), 32 / G rows a warp; each element's
//                       rank is counted over its row by G shuffles and the elements of rank < k are
//                       the selection.  The rank is the place in rank order, a ballot gives the
//                       place in index order.
//   round_rows_kernel   16/32-bit rows of 17..256 elements at small k (round_rows_max_k), exact
//                       mode: a warp ranks a few rows at once in k rounds, each taking a row's
//                       largest remaining key (lowest index among equal ones) with two warp
//                       reductions; rank order falls out, index order from ranking the k indices.
//   net_rows_kernel     (rtopk_net_rows.cuh) exact mode at k <= 8 on rows of 33..256 elements in
//                       whole 16-byte words, where net_rows_take: a thread a row, a sorting
//                       network keeping the K largest keys; the round kernel keeps the rest.
//   thread_rows_kernel  rows of up to 64 elements (32 in fp64; 33.. in large launches) in the
//                       modes with a plan (max_iter, eps): a thread a row, make_plan (the CPU's)
//                       on the thread's registers (rows in whole 16-byte words of large
//                       launches through a shared tile: thread_tile_rows_kernel).
// Measured against the value kernels (notes v29): exact 2.5-7x faster at 8..16 elements, 1.3-2.7x
// at 17..256 elements with k <= 4, the sorted output 4-10x at 8..16; the thread kernel (notes
// v60, H200, max_iter=4, 2^18 rows): 0.25-0.30x of the time at 8..16 elements and k = 2, 0.42x at
// 32 and k = 4, 0.68-0.88x at k = 8 (rank order 0.18-0.93x).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../rtopk_algo.h"
#include "rtopk_kernels_common.cuh"
#include "rtopk_launch.h"
#include "rtopk_net_rows.cuh"

namespace rtopk {
namespace cuda_detail {

constexpr int kSmallBlockThreads = 256;
constexpr int kSmallBlockWarps = kSmallBlockThreads / 32;
// Row groups a lane loads before it ranks the first: loads in flight for the short rows.
constexpr int kRankGroupsInFlight = 4;

// Exact mode (and every mode at k == cols).
template <typename scalar_t, int G>
__global__ void __launch_bounds__(kSmallBlockThreads)
    rank_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                     int64_t* __restrict__ out_indices, int64_t rows, int cols, int k, bool largest,
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
      const bool take = ok[u] && rank < k;
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

// make_plan's Row over a row held whole by one thread (key 0 past the row's end): a count is N
// add_ge's, the range N compares, no vote or shuffle.
template <typename Key, int N>
struct ThreadRow {
  const Key (&keys)[N];

  __device__ __forceinline__ int64_t count_ge(Key t) const {  // (t >= 1: key 0 never counts)
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) c = add_ge(c, keys[j], t);
    return c;
  }
  __device__ __forceinline__ bool key_range(Key& lo, Key& hi, bool finite_only) const {
    Key mn = KeyTraits<ComputeOf<Key>>::kMax, mx = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const Key key = keys[j];
      const bool use = key != 0 && (!finite_only || key_is_finite(key));
      mn = use && key < mn ? key : mn;
      mx = use && key > mx ? key : mx;
    }
    lo = mn;
    hi = mx;
    return hi != 0;
  }
};

// make_plan on a row's keys held by its thread (key 0 past the row's end), then the selection into
// ov / oi: the values read back from `row` (the input, or a tile of it in shared memory: the
// element's own bits).  Index order: the selection's set bits in turn; rank order (kSorted): k
// rounds of the largest selected key (N compares each).
template <typename scalar_t, int N, bool kSorted>
__device__ __forceinline__ void thread_row_select(const KeyFor<scalar_t> (&keys)[N],
                                                  const scalar_t* row, scalar_t* ov, int64_t* oi,
                                                  int cols, int k, int64_t max_iter,
                                                  typename Elem<scalar_t>::Compute eps) {
  using Key = KeyFor<scalar_t>;
  const ThreadRow<Key, N> trow{keys};
  const Plan<Key> plan = make_plan<typename Elem<scalar_t>::Compute>(trow, k, max_iter, eps);
  // The selection as a bit mask: every key above, then the first `quota` tied ones in index
  // order. (Masks and loops over set bits keep the code small: the unrolled walks took 3K-11K
  // SASS instructions an instance, and the rows' branches through them thrashed the instruction
  // cache.)
  using Mask = std::conditional_t<(N > 32), uint64_t, uint32_t>;
  Mask take = 0, tied = 0;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    take |= Mask(plan.takes(keys[j])) << j;
    tied |= Mask(j < cols && plan.fills(keys[j])) << j;  // (fills: not takes)
  }
  for (int64_t q = plan.quota; q > 0 && tied != 0; --q) {
    take |= tied & (Mask(0) - tied);
    tied &= tied - 1;
  }
  if constexpr (!kSorted) {
    for (int pos = 0; take != 0; ++pos, take &= take - 1) {
      const int j = sizeof(Mask) == 8 ? __ffsll(int64_t(take)) - 1 : __ffs(int(take)) - 1;
      ov[pos] = row[j];
      oi[pos] = j;
    }
  } else {
    // Rank order: a round a place, each the largest key left (the lowest index among equal
    // ones: a strict compare in index order).
    for (int pos = 0; take != 0; ++pos) {
      Key best = 0;
      int at = 0;
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const bool better = ((take >> j) & 1u) && keys[j] > best;
        best = better ? keys[j] : best;
        at = better ? j : at;
      }
      take &= ~(Mask(1) << at);
      ov[pos] = row[at];
      oi[pos] = at;
    }
  }
}

// keys[0..N) from a row of cols elements in whole 16-byte words (key 0 past them): directed keys.
template <typename scalar_t, int N>
__device__ __forceinline__ void keys_from_words(KeyFor<scalar_t> (&keys)[N], const uint4* words_at,
                                                int cols, bool largest) {
  using E = Elem<scalar_t>;
  constexpr int kPer = 16 / int(sizeof(scalar_t));
  static_assert(N % kPer == 0, "whole 16-byte words");
#pragma unroll
  for (int p = 0; p < N / kPer; ++p) {
    union {
      uint4 u;
      scalar_t s[kPer];
    } w;
    if (p * kPer < cols) w.u = words_at[p];
#pragma unroll
    for (int q = 0; q < kPer; ++q)
      keys[p * kPer + q] = p * kPer < cols
                               ? directed_key<typename E::Compute>(E::to_compute(w.s[q]), largest)
                               : KeyFor<scalar_t>(0);
  }
}

// A thread a row (thread_rows_kernel): rows of up to N elements (8, 16, 32 or 64; 32 for fp64) in
// the modes with a plan (max_iter, eps), where the rank kernel's lane groups pay a chain of group
// shuffles a midpoint and the value kernels a warp's fixed ~300 instructions a row (notes v29):
// the row's keys in the thread's registers and make_plan (the CPU's description: the same answer)
// run on them alone, 32 rows a warp.  packs: every row in whole 16-byte words (cols a multiple
// of 16 bytes, the input 16-byte aligned); rows of 9.. of those in launches of
// kThreadTileMinRows take thread_tile_rows_kernel.
template <typename scalar_t, int N, bool kSorted>
__global__ void __launch_bounds__(kSmallBlockThreads, 2)
    thread_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                       int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                       int64_t max_iter, typename Elem<scalar_t>::Compute eps, bool largest,
                       bool packs) {
  using E = Elem<scalar_t>;
  using Compute = typename E::Compute;
  using Key = KeyFor<scalar_t>;
  constexpr int kPer = 16 / int(sizeof(scalar_t));
  static_assert(N % kPer == 0, "whole 16-byte words");
  const int64_t step = int64_t(gridDim.x) * kSmallBlockThreads;
  for (int64_t r = int64_t(blockIdx.x) * kSmallBlockThreads + threadIdx.x; r < rows; r += step) {
    const scalar_t* const x = in + r * cols;
    Key keys[N];
    const auto key_of = [&](scalar_t v) {
      return directed_key<Compute>(E::to_compute(v), largest);
    };
    if (packs) {
      keys_from_words<scalar_t, N>(keys, reinterpret_cast<const uint4*>(x), cols, largest);
    } else {
#pragma unroll
      for (int j = 0; j < N; ++j) keys[j] = j < cols ? key_of(x[j]) : Key(0);
    }
    // (The values re-read from the row: L1 / L2 hits, read just now.)
    thread_row_select<scalar_t, N, kSorted>(keys, x, out_values + r * k, out_indices + r * k, cols,
                                            k, max_iter, eps);
  }
}

// thread_rows_kernel's rows in whole 16-byte words (the input 16-byte aligned) through a shared
// tile: a warp's 32 rows come in by cp.async, coalesced (tile_load), where each thread's own
// 16-byte loads touched 32 rows' lines an instruction; a lane then reads its row from the tile
// (a row stride of an odd number of words: no bank conflicts).  A block a warp.
template <typename scalar_t, int N, bool kSorted>
__global__ void __launch_bounds__(32)
    thread_tile_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                            int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                            int64_t max_iter, typename Elem<scalar_t>::Compute eps, bool largest) {
  using Key = KeyFor<scalar_t>;
  constexpr int kPer = 16 / int(sizeof(scalar_t));
  static_assert(N % kPer == 0, "whole 16-byte words");
  constexpr int MV = N / kPer;
  constexpr int kSV = MV % 2 == 1 ? MV : MV + 1;
  __shared__ uint4 tile[32 * kSV];
  const int lane = threadIdx.x & 31;
  const int words = cols / kPer;
  for (int64_t r0 = int64_t(blockIdx.x) * 32; r0 < rows; r0 += int64_t(gridDim.x) * 32) {
    const int nrows = static_cast<int>(rows - r0 < 32 ? rows - r0 : 32);
    __syncwarp();  // every lane is done with the tile's last rows
    tile_load<MV, kSV>(tile, reinterpret_cast<const uint4*>(in + r0 * cols), nrows, words, lane);
    net_wait(0);
    __syncwarp();
    if (lane >= nrows) continue;
    const uint4* const my_row = tile + lane * kSV;
    Key keys[N];
    keys_from_words<scalar_t, N>(keys, my_row, cols, largest);
    const int64_t r = r0 + lane;
    thread_row_select<scalar_t, N, kSorted>(keys, reinterpret_cast<const scalar_t*>(my_row),
                                            out_values + r * k, out_indices + r * k, cols, k,
                                            max_iter, eps);
  }
}

// Rows of up to this many elements (32 for fp64: two registers a key) take the thread kernel in
// the modes with a plan; and in exact mode too where kThreadRowsExact (off: the rank and round
// kernels are the faster there; a switch for the A/B of notes v60).
template <typename scalar_t>
constexpr int64_t thread_rows_max_cols() {
  return sizeof(scalar_t) == 8 ? 32 : 64;
}
// Rows of more than 32 elements only in launches of at least this many rows: a thread's row is a
// long chain, and fewer rows leave the SMs too few warps to hide it (H200, max_iter=4, 64
// elements, k = 8: 16384 rows 1.49x the value kernel's time, 65536 0.95x, 262144 0.88x; notes v60).
constexpr int64_t kThreadRowsWideMinRows = 65536;
constexpr bool kThreadRowsExact = false;
// Rows of 9.. elements in whole 16-byte words through a shared tile (thread_tile_rows_kernel) in
// launches of at least this many rows (H200, max_iter=4, 2^18 rows of 16 / 32 / 64: 0.78-0.96x of
// the time, rank order 0.86-1.00x; rows of 8 1.05-1.12x; 16384 rows of 64 against the value
// kernels 1.09-1.14x, 4096 1.6-2.1x; notes v61).
constexpr bool kThreadRowsTile = true;
constexpr int64_t kThreadTileMinRows = 65536;

// Blocks for rows_a_warp rows a warp, at most the 2048 threads a SM holds.
inline unsigned small_rows_grid(int64_t rows, int rows_a_warp, int num_sms) {
  const int64_t warps = (rows + rows_a_warp - 1) / rows_a_warp;
  const int64_t wanted = (warps + kSmallBlockWarps - 1) / kSmallBlockWarps;
  const int64_t cap = int64_t(std::max(num_sms, 1)) * (2048 / kSmallBlockThreads);
  return static_cast<unsigned>(std::min(wanted, cap));
}

// Blocks of one warp, a tile of 32 rows each (thread_tile_rows_kernel, net_rows_kernel): a block a
// tile (a grid the SMs hold at once, each warp walking on with an L2 prefetch of its next tile,
// ran the network kernel 1.1-1.2x slower; notes v61), at most 2048 an SM (x's limit is far above).
inline unsigned warp_tiles_grid(int64_t rows, int num_sms) {
  const int64_t tiles = (rows + 31) / 32;
  return static_cast<unsigned>(std::min(tiles, int64_t(std::max(num_sms, 1)) * 2048));
}

#ifndef RTOPK_WARP_EMU  // (the emulator calls the kernels itself)
// f(std::integral_constant<int, P>()) for P the least power of two from kLo up with cols <= P
// (kHi at most): the instance a row length takes.
template <int kLo, int kHi, typename F>
void at_power_of_two(int64_t cols, F&& f) {
  if constexpr (kLo < kHi) {
    if (cols > kLo) return at_power_of_two<2 * kLo, kHi>(cols, f);
  }
  f(std::integral_constant<int, kLo>());
}

// Rows of 2..32 elements, any k, exact mode (or k == cols).  Outputs in rank order when a.sorted.
template <typename scalar_t>
void launch_rank_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                      cudaStream_t stream) {
  const auto launch = [&](auto lanes) {
    constexpr int G = decltype(lanes)::value;
    rank_rows_kernel<scalar_t, G>
        <<<small_rows_grid(a.rows, 32 / G * kRankGroupsInFlight, a.num_sms), kSmallBlockThreads, 0,
           stream>>>(in, ov, oi, a.rows, static_cast<int>(a.cols), static_cast<int>(a.k), a.largest,
                     a.sorted);
  };
  at_power_of_two<2, 32>(a.cols, launch);  // G: the power of two >= cols
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

template <typename scalar_t>
void launch_thread_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                        cudaStream_t stream) {
  using Compute = typename Elem<scalar_t>::Compute;
  const bool packs =
      (a.cols * int64_t(sizeof(scalar_t))) % 16 == 0 && reinterpret_cast<uintptr_t>(in) % 16 == 0;
  const auto launch = [&](auto n) {
    constexpr int N = decltype(n)::value;
    if (kThreadRowsTile && packs && N > 8 && a.rows >= kThreadTileMinRows) {
      const auto kernel = a.sorted ? thread_tile_rows_kernel<scalar_t, N, true>
                                   : thread_tile_rows_kernel<scalar_t, N, false>;
      kernel<<<warp_tiles_grid(a.rows, a.num_sms), 32, 0, stream>>>(
          in, ov, oi, a.rows, static_cast<int>(a.cols), static_cast<int>(a.k), a.max_iter,
          static_cast<Compute>(a.eps), a.largest);
      return;
    }
    const auto kernel =
        a.sorted ? thread_rows_kernel<scalar_t, N, true> : thread_rows_kernel<scalar_t, N, false>;
    kernel<<<small_rows_grid(a.rows, 32, a.num_sms), kSmallBlockThreads, 0, stream>>>(
        in, ov, oi, a.rows, static_cast<int>(a.cols), static_cast<int>(a.k), a.max_iter,
        static_cast<Compute>(a.eps), a.largest, packs);
  };
  // N: the power of two >= cols, from 8.
  at_power_of_two<8, int(thread_rows_max_cols<scalar_t>())>(a.cols, launch);
}

// Where the network kernel is the faster in exact mode (H200, 2^18 rows, against the round and
// value kernels; notes v61): 16-bit rows of 33..128 at k <= 8 (0.42-0.81x of the time) and of
// ..256 at k <= 4 (0.74-0.93x), and since its keys two a word (notes v62) of ..192 at k = 5..8
// (192 elements: 0.43 / 0.55x of the value kernel's time, index / rank order; 193..256 keep the
// four-lane kernel: 256 at k = 8 1.02-1.17x its time); 32-bit rows of 33..64 at k <= 8
// (0.74-0.95x) and of ..128 at k >= 5 (0.68-0.76x; k = 1..4 0.95-1.46x: two passes, and a tile
// twice the size: half the warps an SM), none longer (1.5-2.6x).  (Monotone in cols: an instance
// is built where its shortest row is taken.)
constexpr int64_t net_rows_max_cols(size_t elem) { return elem == 4 ? 128 : kNetMaxCols; }
constexpr bool net_rows_take(int64_t cols, int64_t k, size_t elem) {
  if (cols <= 32 || k > kNetMaxK || cols > net_rows_max_cols(elem)) return false;
  if (elem == 2) return cols <= 192 || k <= 4;
  return elem == 4 && (cols <= 64 || k >= 5);
}

// Exact mode where net_rows_take, rows of whole 16-byte words (input 16-byte aligned).
template <typename scalar_t>
bool launch_net_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                     cudaStream_t stream) {
  if constexpr (sizeof(scalar_t) == 8) {
    return false;
  } else {
    const int64_t bytes = a.cols * int64_t(sizeof(scalar_t));
    if (!net_rows_take(a.cols, a.k, sizeof(scalar_t)) || bytes % 16 != 0 ||
        reinterpret_cast<uintptr_t>(in) % 16 != 0)
      return false;
    bool launched = false;
    const auto launch = [&](auto kk, auto mv) {
      constexpr int K = decltype(kk)::value, MV = decltype(mv)::value;
      // Only the instances net_rows_take picks are built: one whose shortest row (a word past
      // half its words) at its largest k is taken (the rule's k bounds fall on the instances'
      // edges); were another asked for, the other kernels would take the rows.  A block a warp,
      // its tile up to 17 KB.
      constexpr int kPer = 16 / int(sizeof(scalar_t));
      if constexpr (net_rows_take((MV / 2 + 1) * kPer, K, sizeof(scalar_t))) {
        net_rows_kernel<scalar_t, K, MV><<<warp_tiles_grid(a.rows, a.num_sms), 32, 0, stream>>>(
            in, ov, oi, a.rows, static_cast<int>(a.cols), static_cast<int>(a.k), a.largest,
            a.sorted);
        launched = true;
      }
    };
    at_power_of_two<1, kNetMaxK>(a.k, [&](auto kk) {
      // (32-bit rows of more than 32 elements are more than 8 words)
      constexpr int kLo = sizeof(scalar_t) == 4 ? 2 * kNetChunkWords : kNetChunkWords;
      constexpr int kHi = int(net_rows_max_cols(sizeof(scalar_t)) * sizeof(scalar_t) / 16);
      at_power_of_two<kLo, kHi>(bytes / 16, [&](auto mv) { launch(kk, mv); });
    });
    return launched;
  }
}

// The short-row kernels where they apply (returns false where not): rows of up to 32 elements in
// exact mode or at k == cols, rows of up to 64 in the other modes (thread_rows_max_cols), and
// 16/32-bit rows of up to 256 at small k in exact mode.
template <typename scalar_t>
bool launch_small_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                       cudaStream_t stream) {
  using Compute = typename Elem<scalar_t>::Compute;
  if (a.cols > 256) return false;
  // At k == cols every mode takes the whole row: exact mode's answer, without a plan (MoE
  // M = k = 8, max_iter=4: 0.0527 ms through the plan, 0.0139 exact; notes v30).
  const bool exact = exact_mode<Compute>(a) || a.k == a.cols;
  // A thread a row: max_iter / eps on rows of up to thread_rows_max_cols (notes v60).
  if ((!exact || kThreadRowsExact) && a.cols <= thread_rows_max_cols<scalar_t>() &&
      (a.cols <= 32 || a.rows >= kThreadRowsWideMinRows) && a.k < a.cols) {
    launch_thread_rows<scalar_t>(in, ov, oi, a, stream);
    return true;
  }
  if constexpr (sizeof(Compute) == 4) {
    // Rows of 17..32: the 32 shuffles a row of the rank kernel cost more than a few rounds.
    if (exact && a.cols > 16 && a.cols <= 32 && a.k <= round_rows_max_k(1)) {
      launch_round_rows<scalar_t, 1>(in, ov, oi, a, stream);
      return true;
    }
  }
  if (!exact) return false;
  if (launch_net_rows<scalar_t>(in, ov, oi, a, stream)) return true;
  // The rank kernel: exact mode on rows of up to 32.
  if (a.cols <= kRankOrderFreeCols) {
    launch_rank_rows<scalar_t>(in, ov, oi, a, stream);
    return true;
  }
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
