// CUDA kernels for rtopk, templated on the element type; instantiated per dtype in rtopk_*.cu.
//
// Rows of up to kWarpMaxCols elements: the paper's design, one warp per row, the row loaded once
// into registers (element j*32+lane in lane `lane`, slot j, so every load is coalesced), searched
// with one warp reduction per count, and emitted in index order with ballot + popc.  16/32-bit
// inputs use the value-backed kernel of rtopk_warp_values.cuh; float64 uses the key-backed kernel
// below, which runs the shared search (rtopk_algo.h) as it stands.
// 16/32-bit rows of more than 2048 elements in exact mode with k <= 512 and enough rows to fill the
// device: one warp per row streaming it through a list of candidates (rtopk_stream_values.cuh).
// Other 16/32-bit rows of 2049..16384 elements: one block of warps per row, the row in registers
// (rtopk_group_values.cuh).  Longer rows, and float64 rows above 1024: one block per row.  Rows
// whose keys fit a block's shared memory are converted once into it (longer ones are re-read
// from global memory on each pass); the emit gives every thread a contiguous segment and places it
// with one block scan.  (The cache is dynamic shared memory up to the device's opt-in limit: 227
// KB, ~57K 32-bit keys, on sm_90.)  Few long rows (fewer than the device's SMs take well, one a
// block or a warp) are cut into segments instead: rtopk_launch.h's split_rows (exact mode, the
// streaming kernel over the segments) and split_early_rows (max_iter, rtopk_split_rows.cuh), chosen
// by the glue.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "../rtopk_algo.h"
#include "rtopk_group_values.cuh"
#include "rtopk_kernels_common.cuh"
#include "rtopk_lane_rows.cuh"
#include "rtopk_launch.h"
#include "rtopk_pair_rows.cuh"
#include "rtopk_small_rows.cuh"
#include "rtopk_sort_rows.cuh"
#include "rtopk_stream_values.cuh"
#include "rtopk_warp_values.cuh"

namespace rtopk {
namespace cuda_detail {

// ---------------------------------------------------------------------------------------------
// One warp per row, the row held in registers: slot j of lane l is element j*32 + l.
template <typename Key, int VPT>
struct WarpRow {
  Key keys[VPT];

  __device__ __forceinline__ int64_t count_ge(Key t) const {
    unsigned c = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) c += keys[j] >= t;
    return warp_sum(c);
  }

  __device__ __forceinline__ bool key_range(Key& lo, Key& hi, bool finite_only) const {
    Key mn = KeyTraits<ComputeOf<Key>>::kMax, mx = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      // Padding (key 0) is below every real key, and never finite.
      const bool use = finite_only ? key_is_finite(keys[j]) : keys[j] != 0;
      mn = (use && keys[j] < mn) ? keys[j] : mn;
      mx = (use && keys[j] > mx) ? keys[j] : mx;
    }
    lo = warp_min(mn);
    hi = warp_max(mx);
    return hi != 0;
  }
};

template <typename scalar_t, int VPT>
__global__ void __launch_bounds__(kWarpBlockThreads)
    warp_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                     int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                     int64_t max_iter, typename Elem<scalar_t>::Compute eps, bool largest) {
  using Compute = typename Elem<scalar_t>::Compute;
  using Key = KeyFor<scalar_t>;
  constexpr int kWarps = kWarpBlockThreads / 32;
  const int lane = threadIdx.x & 31;
  const int64_t stride = int64_t(gridDim.x) * kWarps;

  // (The warp index through a shuffle: a warp-uniform row loop, see warp_values_kernel.)
  const int warp = __shfl_sync(kFullMask, int(threadIdx.x / 32), 0);
  for (int64_t r = int64_t(blockIdx.x) * kWarps + warp; r < rows; r += stride) {
    const scalar_t* x = in + r * cols;
    WarpRow<Key, VPT> row;
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int e = j * 32 + lane;
      row.keys[j] = e < cols ? load_key(x + e, largest) : Key(0);
    }

    const Plan<Key> plan = make_plan<Compute>(row, k, max_iter, eps);

    emit_plan<VPT>(
        plan, cols, k, out_values + r * k, out_indices + r * k, [&](int j) { return row.keys[j]; },
        [&](int j, int e) { return key_value(row.keys[j], x + e, largest); });
  }
}

// ---------------------------------------------------------------------------------------------
// One block per row for long rows; the block's threads share every count.  Rows whose keys fit the
// dynamic shared memory a block may opt into (block_cache_bytes) are converted to keys once into
// shared memory, so the search's passes read shared memory; longer rows are re-read from global
// memory (L1/L2) on every pass, which counts the thresholds of the search's next four steps at
// once.  (A static 44 KB cache, 11264 32-bit keys, left 8192 rows of 20000..32768 fp32 at
// max_iter=4 re-read ~5 times: 1.26-1.66 ms on an H100 where one pass takes 0.22-0.36; notes v57.)

// A row re-read from global memory pays a pass for every count; the searches' next kAheadDepth
// steps can ask for one of 2^kAheadDepth - 1 thresholds (a tree: each step's two outcomes), so
// such a row counts all of them, and the bracket's lower end (the count at lo that Algorithm 2
// asks for when lo never moves), in one pass (rtopk_algo.h's look-ahead): max_iter=4 takes key
// range + 1 + emit passes instead of key range + 4..5 + emit, exact mode's 32 key bits 8 + 1.
// H200, 8192 rows of 20000..65536 fp32, max_iter=4: 0.45-0.62x the time (notes v54).
constexpr int kAheadLoads = 4;
template <typename Key>
struct AheadTable {
  Key keys[kAheadKeys];
  unsigned long long counts[kAheadKeys];
  int n;  // entries valid for the block's current row (0 at each row's start)
};

// directed_key (rtopk_algo.h) without branches, for the passes whose cost is the instructions an
// element: (largest ? v : -v) + 0 (exact, and -0 + 0 is +0: both zeros get kZero), then the sign's
// arithmetic shift flips the bits (about 6 instructions where the selects took 9; equal to
// directed_key on every fp32 bit pattern in both directions, checked on the host).
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
template <typename Compute>
__device__ __forceinline__ typename KeyTraits<Compute>::Key directed_key_sel(Compute v,
                                                                             bool largest) {
  using T = KeyTraits<Compute>;
  using Key = typename T::Key;
  using Signed = std::make_signed_t<Key>;
  const Key b = T::bits(add_rn(largest ? v : -v, Compute(0)));
  const Key key = b ^ (Key(Signed(b) >> (T::kBits - 1)) | T::kZero);
  return v != v ? (largest ? T::kMax : Key(1)) : key;
}

// A row read from global memory in 16-byte packs at 16-byte addresses: pack v holds elements
// [v * kPer - pre, v * kPer - pre + kPer), pre being the row start's offset in its pack, so that a
// row that does not start 16-byte aligned is still read in aligned vectors.  Only the first and
// the last pack can hang over the row's ends; they are read an element at a time.
template <typename scalar_t>
struct RowPacks {
  using E = Elem<scalar_t>;
  using Bits = typename E::Bits;
  using Compute = typename E::Compute;
  static constexpr int kPer = 16 / int(sizeof(scalar_t));
  union Pack {
    uint4 u;
    Bits b[kPer];
  };
  const Bits* x;
  int64_t n;
  int pre;
  int64_t count;  // packs

  __device__ RowPacks(const scalar_t* row, int64_t n_)
      : x(reinterpret_cast<const Bits*>(row)),
        n(n_),
        pre(int((reinterpret_cast<uintptr_t>(row) & 15u) / sizeof(scalar_t))),
        count((n_ + pre + kPer - 1) / kPer) {}

  __device__ __forceinline__ int64_t first_elem(int64_t v) const { return v * kPer - pre; }
  __device__ __forceinline__ bool whole(int64_t v) const {
    return first_elem(v) >= 0 && first_elem(v) + kPer <= n;
  }
  __device__ __forceinline__ bool in_row(int64_t v, int q) const {
    return first_elem(v) + q >= 0 && first_elem(v) + q < n;
  }
  __device__ __forceinline__ Pack load_whole(int64_t v) const {
    Pack p;
    p.u = *reinterpret_cast<const uint4*>(x + first_elem(v));
    return p;
  }
  // Any pack: the slots outside the row hold 0 (in_row() tells them apart).
  __device__ __forceinline__ Pack load(int64_t v) const {
    if (whole(v)) return load_whole(v);
    Pack p;
#pragma unroll
    for (int q = 0; q < kPer; ++q) p.b[q] = in_row(v, q) ? x[first_elem(v) + q] : Bits(0);
    return p;
  }
  __device__ __forceinline__ static Compute value(const Pack& p, int q) {
    if constexpr (std::is_same<scalar_t, float>::value) {
      return __uint_as_float(p.b[q]);
    } else if constexpr (std::is_same<scalar_t, double>::value) {
      return __longlong_as_double(static_cast<long long>(p.b[q]));
    } else if constexpr (std::is_same<scalar_t, __nv_bfloat16>::value) {
      return __uint_as_float(uint32_t(p.b[q]) << 16);
    } else {
      return __half2float(__ushort_as_half(p.b[q]));
    }
  }

  // f(key) for every element, in no particular order, over the block's threads, kLoads packs a
  // thread loaded before their keys are used.  (Thresholds read from shared memory four at a time,
  // to leave registers for more loads in flight, measured 1.02-1.09x slower: notes v55.)
  template <int kLoads, typename F>
  __device__ __forceinline__ void for_each_key(bool largest, F&& f) const {
    const int64_t first = whole(0) ? 0 : 1;
    const int64_t last = (count > first && whole(count - 1)) ? count : count - 1;  // [first, last)
    int64_t v = first + threadIdx.x;
    for (; v + (kLoads - 1) * kRowBlockThreads < last; v += kLoads * kRowBlockThreads) {
      Pack p[kLoads];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) p[u] = load_whole(v + u * kRowBlockThreads);
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
#pragma unroll
        for (int q = 0; q < kPer; ++q) f(directed_key_sel<Compute>(value(p[u], q), largest));
      }
    }
    for (; v < last; v += kRowBlockThreads) {
      const Pack p = load_whole(v);
#pragma unroll
      for (int q = 0; q < kPer; ++q) f(directed_key_sel<Compute>(value(p, q), largest));
    }
    // The packs over the row's ends (thread 0: the first, the last warp's lane 0: the last).
    const bool head = first == 1 && threadIdx.x == 0;
    const bool tail = last < count && last >= first && threadIdx.x == kRowBlockThreads - 32;
    if (head || tail) {
      const int64_t w = head ? 0 : count - 1;
      const Pack p = load(w);
#pragma unroll
      for (int q = 0; q < kPer; ++q) {
        if (in_row(w, q)) f(directed_key_sel<Compute>(value(p, q), largest));
      }
    }
  }
};

// The block's minimum and maximum of the threads' mn and mx, in every thread (s_lo, s_hi: kWarps
// slots each; free again when it returns).
template <int kWarps, typename Key>
__device__ __forceinline__ void block_min_max(Key& mn, Key& mx, Key* s_lo, Key* s_hi) {
  mn = warp_min(mn);
  mx = warp_max(mx);
  if ((threadIdx.x & 31) == 0) {
    s_lo[threadIdx.x / 32] = mn;
    s_hi[threadIdx.x / 32] = mx;
  }
  __syncthreads();
  mn = s_lo[0];
  mx = s_hi[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) {
    mn = s_lo[w] < mn ? s_lo[w] : mn;
    mx = s_hi[w] > mx ? s_hi[w] : mx;
  }
  __syncthreads();
}

// The cached instance's row (block_rows): block_cache_keys(cols) keys, the launch's dynamic shared
// memory.
extern __shared__ uint4 block_rows_cache[];

// kStreamed: rows longer than the cache, re-read on every pass (then cache is nullptr), with the
// look-ahead; the cached rows' instance compiles without it.
template <typename scalar_t, bool kStreamed = false>
struct BlockRow {
  using Key = KeyFor<scalar_t>;
  static constexpr int kWarps = kRowBlockThreads / 32;
  static constexpr bool kLooksAhead = kStreamed;
  const scalar_t* x;
  int64_t n;
  bool largest;
  const Key* cache;   // the row's keys in shared memory, or nullptr
  unsigned* s_count;  // 2 * kWarps slots, 16-byte aligned (count_ge)
  Key* s_lo;          // kWarps slots
  Key* s_hi;          // kWarps slots
  AheadTable<Key>* ahead;
  int cache_words;     // block_rows_cache's 16-byte words as block_fill_cache wrote them: whole
                       // packs, 0 past the row
  Key row_lo, row_hi;  // the cached row's key range (block_fill_cache's), for key_range
  // (32-bit keys only: the fp64 instance spilled 24 bytes with the range in its fill.)
  static constexpr bool kFillRange = !kStreamed && sizeof(Key) == 4;
  mutable int half = 0;  // the s_count half of the next count_ge

  // f(key) for every key of the cached row and the 0 keys around it (below every element's key),
  // a 16-byte word a thread at a time (conflict-free; a key a load was ~1.7x the instructions).
  template <typename F>
  __device__ __forceinline__ void for_each_cached(F&& f) const {
    for_each_cached_at([&](Key key, int) { f(key); });
  }
  // The same with each key's position in the cache (the row's element e at e + cache_pre()).
  template <typename F>
  __device__ __forceinline__ void for_each_cached_at(F&& f) const {
    constexpr int kPerWord = 16 / int(sizeof(Key));
    union Word {
      uint4 u;
      Key k[kPerWord];
    };
    for (int i = threadIdx.x; i < cache_words; i += kRowBlockThreads) {
      Word w;
      w.u = block_rows_cache[i];
#pragma unroll
      for (int j = 0; j < kPerWord; ++j) f(w.k[j], i * kPerWord + j);
    }
  }
  __device__ __forceinline__ int cache_pre() const {
    return int(cache - reinterpret_cast<const Key*>(block_rows_cache));
  }

  // The count at t from the look-ahead table (rows not cached only).
  __device__ bool ahead_has(Key t, int64_t& c) const {
    if (!kStreamed) return false;
    const int m = ahead->n;
    for (int j = 0; j < m; ++j) {
      if (ahead->keys[j] == t) {
        c = static_cast<int64_t>(ahead->counts[j]);
        return true;
      }
    }
    return false;
  }

  // Counts of the table's keys (written by thread 0) in one pass over the row.
  __device__ void count_ahead() const {
    __syncthreads();
    const int m = ahead->n;
    Key th[kAheadKeys];
#pragma unroll
    for (int j = 0; j < kAheadKeys; ++j) th[j] = ahead->keys[j < m ? j : 0];
    unsigned c[kAheadKeys];
#pragma unroll
    for (int j = 0; j < kAheadKeys; ++j) c[j] = 0;
    // The packs' loads issued before their compares: a pass is bound by the bytes in flight.
    RowPacks<scalar_t>(x, n).template for_each_key<kAheadLoads>(largest, [&](Key key) {
#pragma unroll
      for (int j = 0; j < kAheadKeys; ++j) c[j] = add_ge(c[j], key, th[j]);
    });
    if (threadIdx.x < kAheadKeys) ahead->counts[threadIdx.x] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kAheadKeys; ++j) {
      const unsigned w = warp_sum(c[j]);
      if ((threadIdx.x & 31) == 0 && j < m) atomicAdd(&ahead->counts[j], (unsigned long long)w);
    }
    __syncthreads();
  }

  // Bisection of [lo, hi] (make_plan) and key bits (exact_plan): the next steps' thresholds.
  template <typename Compute>
  __device__ void look_ahead_values(Compute lo, Compute hi, int64_t steps) const {
    int64_t c;
    if (ahead_has(to_key<Compute>(KeyTraits<Compute>::midpoint(lo, hi)), c)) return;
    __syncthreads();  // every thread has read the table
    if (threadIdx.x == 0) ahead->n = value_thresholds_ahead<Compute>(lo, hi, steps, ahead->keys);
    count_ahead();
  }
  __device__ void look_ahead_keys(Key t, int b) const {
    int64_t c;
    if (ahead_has(Key(t | (Key(1) << b)), c)) return;
    __syncthreads();
    if (threadIdx.x == 0) ahead->n = key_thresholds_ahead<Key>(t, b, ahead->keys);
    count_ahead();
  }

  // This thread's share of a streamed row's count at t.
  __device__ __noinline__ unsigned count_pass(Key t) const {
    unsigned c = 0;
    RowPacks<scalar_t>(x, n).template for_each_key<kAheadLoads>(largest,
                                                                [&](Key key) { c += key >= t; });
    return c;
  }

  __device__ int64_t count_ge(Key t) const {
    int64_t known;
    if (ahead_has(t, known)) return known;
    unsigned c = 0;  // < 2^32: a thread sees at most n / kRowBlockThreads elements
    if constexpr (kStreamed) {
      c = count_pass(t);
    } else {
      if (t == 0) return n;  // (the cache's 0 keys count from t = 1 on only)
      for_each_cached([&](Key key) { c = add_ge(c, key, t); });  // (2 instructions a key, not 3)
    }
    // The warps' sums into alternate halves of s_count, so that one barrier a count suffices: a
    // half is written again two counts on, past the next count's barrier, which every thread
    // reaches after reading it.  (Read as 16-byte words: a count's serial tail.)
    static_assert(kWarps % 4 == 0, "whole 16-byte words of warp sums");
    unsigned* slots = s_count + half * kWarps;
    half ^= 1;
    c = warp_sum(c);
    if ((threadIdx.x & 31) == 0) slots[threadIdx.x / 32] = c;
    __syncthreads();
    int64_t total = 0;
#pragma unroll
    for (int w = 0; w < kWarps / 4; ++w) {
      const uint4 q = reinterpret_cast<const uint4*>(slots)[w];
      total += int64_t(q.x) + q.y + q.z + q.w;
    }
    return total;
  }

  __device__ bool key_range(Key& lo, Key& hi, bool finite_only) const {
    if constexpr (kStreamed) return key_range_pass(lo, hi, finite_only);
    // (The fill's range; the finite elements' range is a pass only where the row holds NaN or inf.)
    if (kFillRange && (!finite_only || (key_is_finite(row_lo) && key_is_finite(row_hi)))) {
      lo = row_lo;
      hi = row_hi;
      return true;
    }
    return range_where(lo, hi, [&](Key key) { return !finite_only || key_is_finite(key); });
  }
  // (Out of line, as count_pass: the searches reach them from many places, and each inlined copy
  // of a pass over packs is long.  count_ahead stays inlined: out of line it spilled.)
  __device__ __noinline__ bool key_range_pass(Key& lo, Key& hi, bool finite_only) const {
    return range_where(lo, hi, [&](Key key) { return !finite_only || key_is_finite(key); });
  }

  // Min and max of the keys that use(key) accepts; false if there are none.
  template <typename Use>
  __device__ bool range_where(Key& lo, Key& hi, Use use) const {
    Key mn = KeyTraits<ComputeOf<Key>>::kMax, mx = 0;
    const auto see = [&](Key key) {
      const bool in = use(key);
      mn = (in && key < mn) ? key : mn;
      mx = (in && key > mx) ? key : mx;
    };
    if constexpr (kStreamed) {
      RowPacks<scalar_t>(x, n).template for_each_key<kAheadLoads>(largest, see);
    } else {
      for_each_cached([&](Key key) {
        if (key != 0) see(key);  // (not an element)
      });
    }
    block_min_max<kWarps>(mn, mx, s_lo, s_hi);
    lo = mn;
    hi = mx;
    return hi != 0;
  }
};

// Exclusive prefix over the block's threads of a 32-bit count, and the block's total, by one
// barrier: two 16-bit counts packed (lo | hi << 16) scan at once where every block-wide sum stays
// below 2^16.  The kWarps slots are rewritten only past the caller's next barrier (or a second
// set).
template <int kWarps>
__device__ __forceinline__ unsigned block_exclusive_sum(unsigned* slots, unsigned mine,
                                                        unsigned& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const unsigned incl = warp_inclusive_sum(mine);
  if (lane == 31) slots[warp] = incl;
  __syncthreads();
  unsigned before = incl - mine;
  total = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const unsigned t = slots[w];
    before += w < warp ? t : 0u;
    total += t;
  }
  return before;
}

// Exact mode for a row cached in shared memory: midpoint bisection in value space until at most
// 32 elements remain in the bracket, then one warp ranks those candidates.  NaN and +-inf stay
// outside the bracket (counted above or below it); a pass that finds half of the bracket empty
// snaps the bracket to its elements' key range, so rows of few distinct values end in a tie.
// Returns false (use make_plan) when the k-th element is not finite or the bracket does not
// narrow.
template <typename scalar_t>
__device__ bool block_fast_exact_plan(const BlockRow<scalar_t>& row, int64_t k,
                                      Plan<KeyFor<scalar_t>>& plan, int* s_n,
                                      KeyFor<scalar_t>* s_ck, int* s_ci,
                                      Plan<KeyFor<scalar_t>>* s_plan) {
  using Compute = typename Elem<scalar_t>::Compute;
  using T = KeyTraits<Compute>;
  using Key = KeyFor<scalar_t>;
  const int n = static_cast<int>(row.n);
  Key kmin, kmax;
  row.key_range(kmin, kmax, false);
  if (kmin == kmax) {
    plan = Plan<Key>{kmax, kmax, k};
    return true;
  }
  // [lo, hi) holds c_lo - c_hi elements ([lo, hi] while hi is the row's maximum, not moved).
  int64_t c_lo = n, c_hi = 0;
  bool hi_moved = false;
  Compute lo = from_key<Compute>(kmin), hi = from_key<Compute>(kmax);
  if (!key_is_finite(kmin) || !key_is_finite(kmax)) {
    // NaN or +-inf.  c_hi: elements ranked above every finite one (+inf, NaN when it ranks
    // high); c_lo: those at or above the finite minimum.
    const bool any_finite = row.key_range(kmin, kmax, true);
    c_hi = row.count_ge(any_finite ? Key(kmax + 1) : T::kPosInf);
    c_lo = any_finite ? row.count_ge(kmin) : c_hi;
    if (k <= c_hi) {  // the k-th is NaN (ranked high) or +inf: a tie there
      const int64_t c_nan = row.count_ge(T::kMax);
      plan = k <= c_nan ? Plan<Key>{T::kMax, T::kMax, k}
                        : Plan<Key>{T::kPosInf, T::kPosInf, k - c_nan};
      return true;
    }
    if (k > c_lo) {  // the k-th is -inf or NaN (ranked low, key 1): a tie there
      const int64_t c_up = row.count_ge(T::kNegInf);
      plan = k <= c_up ? Plan<Key>{T::kNegInf, T::kNegInf, k - c_lo}
                       : Plan<Key>{Key(1), Key(1), k - c_up};
      return true;
    }
    lo = from_key<Compute>(kmin);
    hi = from_key<Compute>(Key(kmax + 1));  // open above the finite maximum
    hi_moved = true;
  }
  for (int pass = 0; pass < 40 && c_lo - c_hi > 32; ++pass) {
    const Compute t = T::midpoint(lo, hi);
    if (!(lo < t && t < hi)) break;
    const Key kt = to_key<Compute>(t);
    const int64_t c = row.count_ge(kt);
    if (c == k) {
      plan = Plan<Key>{Key(kt - 1), kt, 0};
      return true;
    }
    const bool empty_half = c < k ? (hi_moved && c == c_hi) : c == c_lo;
    if (c < k) {
      hi = t;
      c_hi = c;
      hi_moved = true;
    } else {
      lo = t;
      c_lo = c;
    }
    if (empty_half) {
      const Key klo = to_key<Compute>(lo), khi = to_key<Compute>(hi);
      Key bmin, bmax;
      row.range_where(bmin, bmax, [&](Key key) { return key >= klo && (!hi_moved || key < khi); });
      if (bmin == bmax) {  // one value left in the bracket: a tie, first ones by index
        plan = Plan<Key>{bmin, bmin, k - c_hi};
        return true;
      }
      lo = from_key<Compute>(bmin);  // nothing lies in [lo, bmin): the count at lo is unchanged
    }
  }
  if (c_lo - c_hi > 32) return false;

  // Collect the candidates (any order); the index breaks ties below.
  const Key klo = to_key<Compute>(lo), khi = to_key<Compute>(hi);
  if (threadIdx.x == 0) *s_n = 0;
  __syncthreads();
  const int pre = row.cache_pre();
  row.for_each_cached_at([&](Key key, int pos) {  // (key 0 around the row: below klo)
    if (key >= klo && (!hi_moved || key < khi)) {
      const int slot = atomicAdd(s_n, 1);
      s_ck[slot] = key;
      s_ci[slot] = pos - pre;
    }
  });
  __syncthreads();
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const int m = *s_n;
    const bool has = lane < m;
    const Key ck = has ? s_ck[lane] : Key(0);
    const int ci = has ? s_ci[lane] : 0;
    // Rank in (key descending, index ascending) order.
    int rank = 0;
    for (int j = 0; j < m; ++j) {
      const Key kj = s_ck[j];
      const int ij = s_ci[j];
      rank += (kj > ck) || (kj == ck && ij < ci);
    }
    const int r = static_cast<int>(k - c_hi);  // 1 <= r <= m
    const unsigned at = __ballot_sync(kFullMask, has && rank == r - 1);
    const Key kth = s_ck[__ffs(at) - 1 < 0 ? 0 : __ffs(at) - 1];
    const unsigned ties = __ballot_sync(kFullMask, has && ck == kth && rank < r);
    if (lane == 0) *s_plan = Plan<Key>{kth, kth, __popc(ties)};
  }
  __syncthreads();
  plan = *s_plan;
  __syncthreads();
  return true;
}

// Emit for a row re-read from global memory: the row in index order, a pack a thread a chunk
// (kRowBlockThreads packs), the next chunk's pack loaded while the current one is placed; one block
// scan of (taken, filled) counts a chunk places them.  It stops at the chunk that completes the k
// outputs: Algorithm 2 emits the first k elements at or above lo, which a randn row holds long
// before its end.  (The cached rows' emit, below, reads its row twice from shared memory.)  The
// indices written are index_base + the element's position in x (a segment of a longer row).
template <typename scalar_t>
__device__ __forceinline__ void block_emit_streamed(
    const scalar_t* __restrict__ x, int64_t n, bool largest, const Plan<KeyFor<scalar_t>>& plan,
    int64_t k, scalar_t* __restrict__ ov, int64_t* __restrict__ oi,
    unsigned (*s_sums)[kRowBlockThreads / 32], int64_t index_base = 0) {
  using Packs = RowPacks<scalar_t>;
  using Key = KeyFor<scalar_t>;
  using Compute = typename Elem<scalar_t>::Compute;
  constexpr int kWarps = kRowBlockThreads / 32;
  constexpr int kPer = Packs::kPer;
  const Packs packs(x, n);
  int64_t taken = 0, filled = 0;  // over the chunks before (block-uniform)
  int64_t v = threadIdx.x;
  typename Packs::Pack cur = packs.load(v < packs.count ? v : 0);
  for (int parity = 0; v - threadIdx.x < packs.count; v += kRowBlockThreads, parity ^= 1) {
    const int64_t vn = v + kRowBlockThreads;
    typename Packs::Pack nxt;
    if (vn < packs.count) nxt = packs.load(vn);
    Key keys[kPer];
    unsigned takes = 0, fills = 0;
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      keys[q] = directed_key_sel<Compute>(Packs::value(cur, q), largest);
      const bool ok = v < packs.count && packs.in_row(v, q);
      takes |= unsigned(ok && plan.takes(keys[q])) << q;
      fills |= unsigned(ok && plan.fills(keys[q])) << q;
    }
    // (Both counts < 2^16: a chunk holds kRowBlockThreads * kPer <= 4096 elements.)
    const unsigned mine = unsigned(__popc(takes)) | (unsigned(__popc(fills)) << 16);
    // (Two slot sets: a chunk's slots are rewritten two chunks on, past a barrier.)
    unsigned total;
    const unsigned before = block_exclusive_sum<kWarps>(s_sums[parity], mine, total);
    if (takes | fills) {
      int64_t t_before = taken + (before & 0xFFFFu), f_before = filled + (before >> 16);
#pragma unroll
      for (int q = 0; q < kPer; ++q) {
        const bool take = (takes >> q) & 1u;
        const bool fill = ((fills >> q) & 1u) && f_before < plan.quota;
        if (take || fill) {
          const int64_t pos = t_before + min(f_before, plan.quota);
          const int64_t e = packs.first_elem(v) + q;
          ov[pos] = key_value(keys[q], x + e, largest);
          oi[pos] = index_base + e;
        }
        t_before += take;
        f_before += (fills >> q) & 1u;
      }
    }
    taken += total & 0xFFFFu;
    filled += total >> 16;
    if (taken + min(filled, plan.quota) >= k) break;  // (uniform: every output is written)
    cur = nxt;
  }
}

// The cache's keys for a row of n elements: the row's 16-byte packs whole (the first and last may
// hang over its ends), so that each pack's keys are stored as whole 16-byte words.
// (The cached emit scans its counts as 16-bit halves: below every device's shared memory today,
// 227 KB, 58K 32-bit keys.)
constexpr int64_t kBlockCacheMaxKeys = int64_t(1) << 16;
template <typename scalar_t>
constexpr int64_t block_cache_keys(int64_t n) {
  return n + 2 * (16 / int64_t(sizeof(scalar_t)));
}

// The row's keys into the cache, a pack's keys at cache + pack * kPer (the row's first element at
// cache + the pack's offset, RowPacks::pre): kFillLoads packs a thread loaded before any is
// stored, each stored in 16-byte words (2-way bank conflicts for 16-bit packs, whose 8 keys are
// 32 bytes, none for 32 / 64-bit ones; a key a store was 4- and 8-way), the slots of the first and
// last packs outside the row as key 0 (below every element's).  Returns the row's offset in the
// cache, and in *words the cache's 16-byte words; with kRange, mn and mx take this thread's
// elements' keys in (the row's key range once reduced over the block: no range pass over the
// cache).  (Two loads a thread: four spilled at 64 registers, and 96 registers would leave one
// block an SM.)
constexpr int kFillLoads = 2;
template <typename scalar_t, bool kRange>
__device__ __forceinline__ int block_fill_cache(const scalar_t* __restrict__ x, int64_t n,
                                                bool largest, KeyFor<scalar_t>* cache, int* words,
                                                KeyFor<scalar_t>& mn, KeyFor<scalar_t>& mx) {
  using Packs = RowPacks<scalar_t>;
  using Key = KeyFor<scalar_t>;
  using Compute = typename Elem<scalar_t>::Compute;
  constexpr int kPer = Packs::kPer;
  constexpr int kWords = kPer * int(sizeof(Key)) / 16;
  static_assert(kWords * 16 == kPer * int(sizeof(Key)), "a pack's keys fill 16-byte words");
  union Keys {
    Key k[kPer];
    uint4 u[kWords];
  };
  const Packs packs(x, n);
  // (32-bit positions: the row fits shared memory.  Only the first and the last pack can hang over
  // the row's ends: the others convert without a check an element, ~5 instructions a key less.)
  const int count = static_cast<int>(packs.count), len = static_cast<int>(n);
  const auto convert = [&](const typename Packs::Pack& p, int v, auto in_row) {
    Keys ks;
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      const Key key = directed_key_sel<Compute>(Packs::value(p, q), largest);
      const bool in = in_row(q);
      ks.k[q] = in ? key : Key(0);
      if (kRange) {
        mn = (in && key < mn) ? key : mn;
        mx = ks.k[q] > mx ? ks.k[q] : mx;
      }
    }
    uint4* dst = reinterpret_cast<uint4*>(cache + v * kPer);
#pragma unroll
    for (int w = 0; w < kWords; ++w) dst[w] = ks.u[w];
  };
  for (int v0 = threadIdx.x; v0 < count; v0 += kFillLoads * kRowBlockThreads) {
    typename Packs::Pack p[kFillLoads];
#pragma unroll
    for (int u = 0; u < kFillLoads; ++u) {
      const int v = v0 + u * kRowBlockThreads;
      if (v < count) p[u] = packs.load(v);
    }
#pragma unroll
    for (int u = 0; u < kFillLoads; ++u) {
      const int v = v0 + u * kRowBlockThreads;
      const int first = v * kPer - packs.pre;  // the pack's first element
      if (first >= 0 && first + kPer <= len) {
        convert(p[u], v, [](int) { return true; });
      } else if (v < count) {
        convert(p[u], v, [&](int q) { return first + q >= 0 && first + q < len; });
      }
    }
  }
  *words = int(packs.count) * kWords;
  return packs.pre;
}

template <typename scalar_t, bool kStreamed>
__device__ __forceinline__ void block_rows(const scalar_t* __restrict__ in,
                                           scalar_t* __restrict__ out_values,
                                           int64_t* __restrict__ out_indices, int64_t rows,
                                           int64_t cols, int64_t k, int64_t max_iter,
                                           typename Elem<scalar_t>::Compute eps, bool largest) {
  using Compute = typename Elem<scalar_t>::Compute;
  using Key = KeyFor<scalar_t>;
  constexpr int kWarps = kRowBlockThreads / 32;
  Key* const s_cache = reinterpret_cast<Key*>(block_rows_cache);
  __shared__ __align__(16) unsigned s_count[2 * kWarps];
  __shared__ Key s_lo[kWarps];
  __shared__ Key s_hi[kWarps];
  __shared__ Key s_ck[32];
  __shared__ int s_ci[32];
  __shared__ int s_n;
  __shared__ Plan<Key> s_plan;
  __shared__ AheadTable<Key> s_ahead;
  __shared__ unsigned s_sums[kStreamed ? 2 : 1][kWarps];
  const bool exact = max_iter < 0 && !(eps > Compute(0));

  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const scalar_t* x = in + r * cols;
    constexpr bool cached = !kStreamed;  // (the row fits the cache: the launch's choice)
    Key* cache = nullptr;
    int words = 0;
    Key row_lo = KeyTraits<Compute>::kMax, row_hi = 0;
    if (cached) {
      constexpr bool kRange = BlockRow<scalar_t, kStreamed>::kFillRange;
      cache = s_cache +
              block_fill_cache<scalar_t, kRange>(x, cols, largest, s_cache, &words, row_lo, row_hi);
      if (kRange) {
        block_min_max<kWarps>(row_lo, row_hi, s_lo, s_hi);  // (its barriers order the stores)
      } else {
        __syncthreads();
      }
      // The block's next row into L2 while this one is searched from the cache, so that its fill
      // waits on L2 rather than on DRAM (two blocks an SM leave DRAM idle during the passes).
      if (r + gridDim.x < rows && threadIdx.x < 32)
        prefetch_l2(x + int64_t(gridDim.x) * cols, cols * int64_t(sizeof(scalar_t)));
    }
    // (The table's reset is ordered before its first read by the key-range pass's barrier, after
    // the last row's reads by the barrier closing that row.)
    if (threadIdx.x == 0) s_ahead.n = 0;
    const BlockRow<scalar_t, kStreamed> row{x,    cols,     largest, cache,  s_count, s_lo,
                                            s_hi, &s_ahead, words,   row_lo, row_hi};
    Plan<Key> plan;
    bool planned = false;
    if constexpr (cached) {
      planned = exact && block_fast_exact_plan(row, k, plan, &s_n, s_ck, s_ci, &s_plan);
    }
    if (!planned) {
      plan = make_plan<Compute>(row, k, max_iter, eps);
    }

    scalar_t* ov = out_values + r * k;
    int64_t* oi = out_indices + r * k;
    if constexpr (kStreamed) {
      block_emit_streamed(x, cols, largest, plan, k, ov, oi, s_sums);
    } else {
      // Emit: each thread owns a contiguous run of the cache's 16-byte words (an odd number, so
      // that a quarter warp's 16-byte loads fall in distinct banks); one block scan of (taken,
      // tied) counts gives every thread its output position and its share of the ties, in index
      // order.  The keys around the row are 0, below every element's key (>= 1): a floor of at
      // least 1 keeps them out of the ties, so no key's position is checked.
      // (32-bit positions: a cached row fits shared memory; 64-bit ones spilled, loops unrolled.)
      constexpr int kPerWord = 16 / int(sizeof(Key));
      union Word {
        uint4 u;
        Key k[kPerWord];
      };
      const int words = row.cache_words;
      const int run = ((words + kRowBlockThreads - 1) / kRowBlockThreads) | 1;
      const int wbegin = min(int(threadIdx.x) * run, words);
      const int wend = min(wbegin + run, words);
      const Key above = plan.above, least = plan.floor > Key(0) ? plan.floor : Key(1);
      // Keys <= above and keys >= least: taken = the rest of the first, tied = the second less the
      // taken ones (none when least > above).
      unsigned at_most = 0, at_least = 0;
#pragma unroll 2
      for (int i = wbegin; i < wend; ++i) {
        Word w;
        w.u = block_rows_cache[i];
#pragma unroll
        for (int j = 0; j < kPerWord; ++j) {
          at_most = add_ge(at_most, above, w.k[j]);
          at_least = add_ge(at_least, w.k[j], least);
        }
      }
      const int taken = (wend - wbegin) * kPerWord - int(at_most);
      const int tied = max(int(at_least) - taken, 0);
      // (Packed: a cached row has fewer than kBlockCacheMaxKeys = 2^16 keys.)
      unsigned total;
      const unsigned before =
          block_exclusive_sum<kWarps>(s_sums[0], unsigned(taken) | unsigned(tied) << 16, total);
      const int taken_before = int(before & 0xFFFFu), tied_before = int(before >> 16);
      const int quota = int(plan.quota);  // (<= k <= the row's length)
      int my_ties = min(max(quota - tied_before, 0), tied);
      int pos = taken_before + min(tied_before, quota);
      // (A thread stops once its share is placed: with max_iter, most threads place nothing.)
      const int last = pos + taken + my_ties;
      const int pre = row.cache_pre();
      for (int i = wbegin; i < wend && pos < last; ++i) {
        Word w;
        w.u = block_rows_cache[i];
#pragma unroll
        for (int j = 0; j < kPerWord; ++j) {
          const Key key = w.k[j];
          bool take = key > above;
          if (!take && my_ties > 0 && key >= least) {
            take = true;
            --my_ties;
          }
          if (take) {
            const int e = i * kPerWord + j - pre;
            ov[pos] = key_value(key, x + e, largest);
            oi[pos] = e;
            ++pos;
          }
        }
      }
    }
    __syncthreads();  // the shared row is rewritten by the next row
  }
}

// The dynamic shared memory a block of `kernel` may take on the current device: the most (its
// opt-in limit less its static shared memory; the kernel's limit raised to that on the device's
// first call, the same value from every host thread, so no launch sees a smaller one), and the
// most that leaves two blocks an SM.  0 where a query fails: the streamed instance then runs.
struct BlockCache {
  size_t one_block, two_blocks;
};
template <typename Kernel>
BlockCache block_cache_bytes(Kernel kernel) {
  constexpr int kDevices = 64;
  static std::atomic<long long> known[kDevices];  // (one + 1) << 32 | two per device; 0: not yet
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();  // (not the caller's launch error)
    return BlockCache{0, 0};
  }
  if (device < kDevices) {
    const long long have = known[device].load(std::memory_order_relaxed);
    if (have > 0) return BlockCache{size_t((have >> 32) - 1), size_t(have & 0xFFFFFFFF)};
  }
  int optin = 0, per_sm = 0, reserved = 0;
  cudaFuncAttributes fa{};
  int one = 0, two = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) ==
          cudaSuccess &&
      cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) ==
          cudaSuccess &&
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) ==
          cudaSuccess &&
      cudaFuncGetAttributes(&fa, kernel) == cudaSuccess && size_t(optin) > fa.sharedSizeBytes &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           optin - int(fa.sharedSizeBytes)) == cudaSuccess) {
    one = optin - int(fa.sharedSizeBytes);
    two = std::max(0, std::min(one, per_sm / 2 - reserved - int(fa.sharedSizeBytes)));
  } else {
    (void)cudaGetLastError();
  }
  if (device < kDevices) known[device].store((long long)(one + 1) << 32 | two);
  return BlockCache{size_t(one), size_t(two)};
}

// Rows cached in shared memory (60 registers; as many blocks an SM as their caches fit: 2 for
// 20000 32-bit keys, 1 from ~28K, 4 up to ~13K), and rows past the cache, whose
// look-ahead counters would take 91 registers and one block an SM: held to 64 for two (no spills
// in the count loops; the A/B of notes v54 item 5 ran this way).
template <typename scalar_t>
__global__ void __launch_bounds__(kRowBlockThreads)
    block_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                      int64_t* __restrict__ out_indices, int64_t rows, int64_t cols, int64_t k,
                      int64_t max_iter, typename Elem<scalar_t>::Compute eps, bool largest) {
  block_rows<scalar_t, false>(in, out_values, out_indices, rows, cols, k, max_iter, eps, largest);
}
template <typename scalar_t>
__global__ void __launch_bounds__(kRowBlockThreads, 2)
    block_rows_streamed_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                               int64_t* __restrict__ out_indices, int64_t rows, int64_t cols,
                               int64_t k, int64_t max_iter, typename Elem<scalar_t>::Compute eps,
                               bool largest) {
  block_rows<scalar_t, true>(in, out_values, out_indices, rows, cols, k, max_iter, eps, largest);
}

// ---------------------------------------------------------------------------------------------
// Returns whether the outputs come out in rank order.
template <typename scalar_t, int VPT>
bool launch_warp_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                      cudaStream_t stream) {
  static_assert(warp_slots_below(VPT) >= 0, "VPT must be one of kWarpSlotLevels");
  using Compute = typename Elem<scalar_t>::Compute;
  // At most 256 warps a SM's worth of blocks; each warp then walks rows at the grid's stride.
  const auto grid_of = [&](int warps) {
    const int64_t wanted = (a.rows + warps - 1) / warps;
    const int64_t cap = int64_t(std::max(a.num_sms, 1)) * (256 / warps);
    return static_cast<unsigned>(std::min(wanted, cap));
  };
  if constexpr (sizeof(Compute) == 4) {
    // Separate instantiations for largest / smallest and sorted / unsorted: the common case pays
    // nothing (registers, code) for the others.  Rank order is only produced for staged outputs.
    const bool sort = a.sorted && a.k > 1 && a.k <= kStageK;
    const int n = static_cast<int>(a.cols), k = static_cast<int>(a.k);
    const float eps = static_cast<float>(a.eps);
    const auto launch = [&](auto kernel) {
      kernel<<<grid_of(kValueBlockWarps), kValueBlockWarps * 32, 0, stream>>>(in, ov, oi, a.rows, n,
                                                                              k, a.max_iter, eps);
    };
    if (a.largest) {
      sort ? launch(warp_values_kernel<scalar_t, VPT, true, true>)
           : launch(warp_values_kernel<scalar_t, VPT, true, false>);
    } else {
      sort ? launch(warp_values_kernel<scalar_t, VPT, false, true>)
           : launch(warp_values_kernel<scalar_t, VPT, false, false>);
    }
    return sort;  // (k = 1 is in rank order either way)
  } else {
    warp_rows_kernel<scalar_t, VPT>
        <<<grid_of(kWarpBlockThreads / 32), kWarpBlockThreads, 0, stream>>>(
            in, ov, oi, a.rows, static_cast<int>(a.cols), static_cast<int>(a.k), a.max_iter,
            static_cast<Compute>(a.eps), a.largest);
    return false;
  }
}

// One block of G warps per row (16/32-bit rows of up to 32 * VPT * G elements).  The grid is
// what fits on the device at once; each block then walks rows.  Exact mode takes the filter path
// (group_filter_topk) at k <= cols / 16, else at k >= 64 the instance with the whole-row bucket
// cut (group_bucket_cut); below, the bisection costs less.
template <typename scalar_t, int G, int VPT>
void launch_group_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                       cudaStream_t stream) {
  const auto launch = [&](auto kernel) {
    const unsigned grid = resident_grid(kernel, G * 32, a.rows, a.num_sms);
    kernel<<<grid, G * 32, 0, stream>>>(in, ov, oi, a.rows, static_cast<int>(a.cols),
                                        static_cast<int>(a.k), a.max_iter,
                                        static_cast<float>(a.eps));
  };
  const bool exact = exact_mode<float>(a);
  const bool bucket_cut = exact && a.k >= kGroupBucketMinK;
  // The filter path where its lists stay short against the row (k <= cols / 16; notes v21:
  // 0.84-0.96 of the time there, 1.04-1.10 at k = cols / 8).  Its fallback is the cut this k takes
  // anyway (bucket cut or bisection): fp32 measured faster so at k = 8 than with the bucket cut
  // always, and the 16-bit filter instance with the bucket cut ran bf16 k = 8 at 1.35x the
  // bisection one. 16-bit rows of 8 warps at k < 64 keep the plain path (that instance spilled 248
  // bytes, 1.06x).
  constexpr bool k16 = sizeof(scalar_t) == 2;
  if constexpr (G <= 8) {
    if (exact && a.k * kGroupFilterRatio <= a.cols && a.k <= group_stage_k(G)) {
      if (bucket_cut) {
        a.largest ? launch(group_values_kernel<scalar_t, G, VPT, true, true, true>)
                  : launch(group_values_kernel<scalar_t, G, VPT, false, true, true>);
        return;
      }
      if constexpr (!(k16 && G == 8)) {
        a.largest ? launch(group_values_kernel<scalar_t, G, VPT, true, false, true>)
                  : launch(group_values_kernel<scalar_t, G, VPT, false, false, true>);
        return;
      }
    }
  }
  if (a.largest) {
    bucket_cut ? launch(group_values_kernel<scalar_t, G, VPT, true, true>)
               : launch(group_values_kernel<scalar_t, G, VPT, true, false>);
  } else {
    bucket_cut ? launch(group_values_kernel<scalar_t, G, VPT, false, true>)
               : launch(group_values_kernel<scalar_t, G, VPT, false, false>);
  }
}

// 16/32-bit rows longer than a warp's registers hold (kWarpMaxCols) and up to kGroupMaxCols
// elements take the group kernel: G warps of 32 values per lane (VPT = 32 measured faster than 16
// with twice the warps, and the warp kernel faster than the group kernel up to 2048 elements).
constexpr int64_t kGroupMaxCols = 16384;

template <typename scalar_t>
bool launch_group(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                  cudaStream_t stream) {
  if (a.cols <= 4096) {
    launch_group_rows<scalar_t, 4, 32>(in, ov, oi, a, stream);
  } else if (a.cols <= 8192) {
    launch_group_rows<scalar_t, 8, 32>(in, ov, oi, a, stream);
  } else {
    launch_group_rows<scalar_t, 16, 32>(in, ov, oi, a, stream);
  }
  return false;
}

// Walks kWarpSlotLevels in order: a row of n elements takes the first level with 32 * level >= n
// (the value kernels rely on that order: warp_slots_below).  Returns false when the row is longer
// than every level up to kMaxCols; else launches and sets `sorted` (whether the outputs come out
// in rank order).
template <typename scalar_t, int64_t kMaxCols, int I = 0>
bool launch_warp_levels(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                        cudaStream_t stream, bool& sorted) {
  constexpr int kLevels = int(sizeof(kWarpSlotLevels) / sizeof(kWarpSlotLevels[0]));
  if constexpr (I < kLevels) {
    constexpr int VPT = kWarpSlotLevels[I];
    if constexpr (32 * int64_t(VPT) <= kMaxCols) {
      if (a.cols <= 32 * VPT) {
        sorted = launch_warp_rows<scalar_t, VPT>(in, ov, oi, a, stream);
        return true;
      }
      return launch_warp_levels<scalar_t, kMaxCols, I + 1>(in, ov, oi, a, stream, sorted);
    }
  }
  return false;
}

}  // namespace cuda_detail

template <typename scalar_t>
bool launch_rtopk(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                  cudaStream_t stream) {
  using namespace cuda_detail;
  using Compute = typename Elem<scalar_t>::Compute;
  // Registers per lane for the keys: up to 64 32-bit keys or 32 64-bit keys.
  constexpr int64_t kWarpMaxCols = sizeof(KeyFor<scalar_t>) == 4 ? 2048 : 1024;
  if constexpr (sizeof(scalar_t) == 2) {
    if (const int g = pair_rows_shape(in, a)) {
      launch_pair_rows<scalar_t>(in, ov, oi, a, g, stream);
      return a.sorted;  // (rank order where asked: the k largest at k <= pair_sort_k(G), or k == 1)
    }
  }
  if (launch_small_rows<scalar_t>(in, ov, oi, a, stream)) return a.sorted;
  if constexpr (sizeof(Compute) == 4) {
    if (a.cols > kWarpMaxCols && stream_applies(a)) {
      launch_stream_rows<scalar_t>(in, ov, oi, a, stream);
      return false;
    }
    if (a.cols > kWarpMaxCols && a.cols <= kGroupMaxCols)
      return launch_group<scalar_t>(in, ov, oi, a, stream);
  }
  if constexpr (sizeof(Compute) == 4) {
    if (lane_rows_apply(in, a)) {
      launch_lane_rows<scalar_t>(in, ov, oi, a, stream);
      return a.sorted;  // (rank order when sorted: the kernel's sorted instance, or k == 1)
    }
  }
  // Slots per lane rise in steps of at most 50% so that padding wastes little (768 -> 24 slots).
  bool sorted = false;
  if (launch_warp_levels<scalar_t, kWarpMaxCols>(in, ov, oi, a, stream, sorted)) return sorted;
  const int64_t cap = int64_t(std::max(a.num_sms, 1)) * 8;
  const unsigned grid = static_cast<unsigned>(std::min(a.rows, cap));
  // Rows cached in shared memory: their passes are reads of it, but a block a SM filling its cache
  // waits on memory alone, where the streamed instance counts max_iter <= 4's thresholds in one
  // pass; at two blocks an SM the cache pays in every mode (H100, fp32, max_iter=4: 8192 x 20000
  // 0.71x the streamed time, 8192 x 32768 / 4096 x 50000 0.96-1.07x; max_iter=8 0.59x / 0.80-0.84x;
  // exact at 8192 x 20000, k = 1024, 0.38x; notes v57).
  const size_t cache = size_t(block_cache_keys<scalar_t>(a.cols)) * sizeof(KeyFor<scalar_t>);
  const BlockCache fits = block_cache_bytes(block_rows_kernel<scalar_t>);
  const bool few_steps = a.max_iter >= 1 && a.max_iter <= 4;
  if (block_cache_keys<scalar_t>(a.cols) < kBlockCacheMaxKeys &&
      cache <= (few_steps ? fits.two_blocks : fits.one_block)) {
    block_rows_kernel<scalar_t><<<grid, kRowBlockThreads, cache, stream>>>(
        in, ov, oi, a.rows, a.cols, a.k, a.max_iter, static_cast<Compute>(a.eps), a.largest);
  } else {
    block_rows_streamed_kernel<scalar_t><<<grid, kRowBlockThreads, 0, stream>>>(
        in, ov, oi, a.rows, a.cols, a.k, a.max_iter, static_cast<Compute>(a.eps), a.largest);
  }
  return false;
}

template <typename scalar_t>
void launch_split_segments(const scalar_t* in, scalar_t* cand_values, int64_t* cand_indices,
                           const RowLaunch& a, RowSplit s, cudaStream_t stream) {
  static_assert(sizeof(scalar_t) <= 4, "the streaming kernel takes 16/32-bit rows");
  static_assert(kSplitMaxK == cuda_detail::kStreamMaxK,
                "split_rows keeps to the streaming kernel's k");
  cuda_detail::launch_stream_items<scalar_t>(in, cand_values, cand_indices, a, s.seg, s.segs,
                                             stream);
}

// The heaviest instances are explicitly instantiated in their own files (csrc/cuda/inst/), so that
// they compile in parallel: the group kernels (about a minute each per dtype), the warp kernels
// of 48 and 64 values per lane, the streaming kernels and the four-lane kernels.  A dtype's main
// file declares them extern before it instantiates launch_rtopk; each inst/ file defines one part.
#define RTOPK_GROUP_ROWS(T, G)                                                                     \
  template void cuda_detail::launch_group_rows<T, G, 32>(const T*, T*, int64_t*, const RowLaunch&, \
                                                         cudaStream_t)
#define RTOPK_WARP_ROWS(T, VPT)                                                                 \
  template bool cuda_detail::launch_warp_rows<T, VPT>(const T*, T*, int64_t*, const RowLaunch&, \
                                                      cudaStream_t)
#define RTOPK_STREAM_ROWS(T)                                                                       \
  template void cuda_detail::launch_stream_items<T>(const T*, T*, int64_t*, const RowLaunch&, int, \
                                                    int, cudaStream_t)
#define RTOPK_LANE_ROWS(T)                                                                 \
  template void cuda_detail::launch_lane_rows<T>(const T*, T*, int64_t*, const RowLaunch&, \
                                                 cudaStream_t)
#define RTOPK_PAIR_ROWS(T)                                                                      \
  template void cuda_detail::launch_pair_rows<T>(const T*, T*, int64_t*, const RowLaunch&, int, \
                                                 cudaStream_t)
#define RTOPK_EXTERN_PARTS(T)     \
  extern RTOPK_LANE_ROWS(T);      \
  extern RTOPK_STREAM_ROWS(T);    \
  extern RTOPK_GROUP_ROWS(T, 4);  \
  extern RTOPK_GROUP_ROWS(T, 8);  \
  extern RTOPK_GROUP_ROWS(T, 16); \
  extern RTOPK_WARP_ROWS(T, 48);  \
  extern RTOPK_WARP_ROWS(T, 64)

}  // namespace rtopk
