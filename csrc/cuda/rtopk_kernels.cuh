// CUDA kernels for rtopk, templated on the element type; instantiated per dtype in rtopk_*.cu.
//
// Rows of up to kWarpMaxCols elements: the paper's design, one warp per row.  The warp loads the
// row once into registers as order-preserving keys (element j*32+lane in lane `lane`, slot j, so
// every load is coalesced), runs the shared search (rtopk_algo.h) with one warp reduction per
// count, then emits the selection in index order with ballot + popc.
// Longer rows: one block per row, counting straight from global memory (L1/L2 absorb the
// re-reads); the emit pass walks the row in block-sized chunks with a block-wide prefix.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "../rtopk_algo.h"
#include "rtopk_kernels_common.cuh"
#include "rtopk_launch.h"
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
                     int64_t max_iter, typename Elem<scalar_t>::Compute eps) {
  using Compute = typename Elem<scalar_t>::Compute;
  using Key = KeyFor<scalar_t>;
  constexpr int kWarps = kWarpBlockThreads / 32;
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  const int64_t stride = int64_t(gridDim.x) * kWarps;

  for (int64_t r = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; r < rows; r += stride) {
    const scalar_t* x = in + r * cols;
    WarpRow<Key, VPT> row;
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      const int e = j * 32 + lane;
      row.keys[j] = e < cols ? load_key(x + e) : Key(0);
    }

    const Plan<Key> plan = make_plan<Compute>(row, k, max_iter, eps);

    scalar_t* ov = out_values + r * k;
    int64_t* oi = out_indices + r * k;
    int written = 0;
    int64_t ties = 0;
#pragma unroll
    for (int j = 0; j < VPT; ++j) {
      if (written >= k) break;  // warp-uniform
      const int e = j * 32 + lane;
      const Key key = row.keys[j];
      const bool valid = e < cols;
      const bool above = valid && plan.takes(key);
      const bool tie = valid && plan.fills(key);
      const unsigned tie_mask = __ballot_sync(kFullMask, tie);
      const bool take = above || (tie && ties + __popc(tie_mask & lanes_below) < plan.quota);
      const unsigned take_mask = __ballot_sync(kFullMask, take);
      if (take) {
        const int pos = written + __popc(take_mask & lanes_below);
        ov[pos] = key_value(key, x + e);
        oi[pos] = e;
      }
      ties += __popc(tie_mask);
      written += __popc(take_mask);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// One block per row for long rows; the block's threads share every count.  Rows of up to
// kBlockCacheBytes are converted to keys once into shared memory, so the search's passes read
// shared memory; longer rows are re-read from global memory (L1/L2) on every pass.
constexpr int kBlockCacheBytes = 44 * 1024;  // static shared memory stays under 48 KB

template <typename scalar_t>
struct BlockRow {
  using Key = KeyFor<scalar_t>;
  static constexpr int kWarps = kRowBlockThreads / 32;
  static constexpr int kCacheKeys = kBlockCacheBytes / sizeof(Key);
  const scalar_t* x;
  int64_t n;
  const Key* cache;  // the row's keys in shared memory, or nullptr
  int64_t* s_count;  // kWarps slots
  Key* s_lo;         // kWarps slots
  Key* s_hi;         // kWarps slots

  __device__ __forceinline__ Key key_at(int64_t e) const {
    return cache != nullptr ? cache[e] : load_key(x + e);
  }

  __device__ int64_t count_ge(Key t) const {
    unsigned c = 0;  // < 2^32: a thread sees at most n / kRowBlockThreads elements
    if (cache != nullptr) {
      for (int e = threadIdx.x; e < n; e += kRowBlockThreads) c += cache[e] >= t;
    } else {
      for (int64_t e = threadIdx.x; e < n; e += kRowBlockThreads) c += load_key(x + e) >= t;
    }
    c = warp_sum(c);
    if ((threadIdx.x & 31) == 0) s_count[threadIdx.x / 32] = c;
    __syncthreads();
    int64_t total = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) total += s_count[w];
    __syncthreads();
    return total;
  }

  __device__ bool key_range(Key& lo, Key& hi, bool finite_only) const {
    Key mn = KeyTraits<ComputeOf<Key>>::kMax, mx = 0;
    for (int64_t e = threadIdx.x; e < n; e += kRowBlockThreads) {
      const Key key = key_at(e);
      const bool use = !finite_only || key_is_finite(key);
      mn = (use && key < mn) ? key : mn;
      mx = (use && key > mx) ? key : mx;
    }
    mn = warp_min(mn);
    mx = warp_max(mx);
    if ((threadIdx.x & 31) == 0) {
      s_lo[threadIdx.x / 32] = mn;
      s_hi[threadIdx.x / 32] = mx;
    }
    __syncthreads();
    lo = s_lo[0];
    hi = s_hi[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) {
      lo = s_lo[w] < lo ? s_lo[w] : lo;
      hi = s_hi[w] > hi ? s_hi[w] : hi;
    }
    __syncthreads();
    return hi != 0;
  }
};

// Exclusive prefix over the warps of the block of one per-warp count, plus the block total.
template <int kWarps>
__device__ __forceinline__ void block_prefix(unsigned* s_slots, unsigned mine, unsigned& before,
                                             unsigned& total) {
  if ((threadIdx.x & 31) == 0) s_slots[threadIdx.x / 32] = mine;
  __syncthreads();
  before = 0;
  total = 0;
  const int warp = threadIdx.x / 32;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const unsigned v = s_slots[w];
    before += w < warp ? v : 0u;
    total += v;
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kRowBlockThreads)
    block_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                      int64_t* __restrict__ out_indices, int64_t rows, int64_t cols, int64_t k,
                      int64_t max_iter, typename Elem<scalar_t>::Compute eps) {
  using Compute = typename Elem<scalar_t>::Compute;
  using Key = KeyFor<scalar_t>;
  constexpr int kWarps = kRowBlockThreads / 32;
  __shared__ Key s_cache[BlockRow<scalar_t>::kCacheKeys];
  __shared__ int64_t s_count[kWarps];
  __shared__ Key s_lo[kWarps];
  __shared__ Key s_hi[kWarps];
  __shared__ unsigned s_ties[kWarps];
  __shared__ unsigned s_takes[kWarps];
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;

  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const scalar_t* x = in + r * cols;
    const bool cached = cols <= BlockRow<scalar_t>::kCacheKeys;
    if (cached) {
      for (int e = threadIdx.x; e < cols; e += kRowBlockThreads) s_cache[e] = load_key(x + e);
      __syncthreads();
    }
    const BlockRow<scalar_t> row{x, cols, cached ? s_cache : nullptr, s_count, s_lo, s_hi};
    const Plan<Key> plan = make_plan<Compute>(row, k, max_iter, eps);

    scalar_t* ov = out_values + r * k;
    int64_t* oi = out_indices + r * k;
    int64_t written = 0, ties = 0;
    for (int64_t base = 0; base < cols && written < k; base += kRowBlockThreads) {
      const int64_t e = base + threadIdx.x;
      const bool valid = e < cols;
      const Key key = valid ? row.key_at(e) : Key(0);
      const bool above = valid && plan.takes(key);
      const bool tie = valid && plan.fills(key);
      const unsigned tie_mask = __ballot_sync(kFullMask, tie);
      unsigned ties_before, ties_total;
      block_prefix<kWarps>(s_ties, __popc(tie_mask), ties_before, ties_total);
      const bool take =
          above || (tie && ties + ties_before + __popc(tie_mask & lanes_below) < plan.quota);
      const unsigned take_mask = __ballot_sync(kFullMask, take);
      unsigned takes_before, takes_total;
      block_prefix<kWarps>(s_takes, __popc(take_mask), takes_before, takes_total);
      if (take) {
        const int64_t pos = written + takes_before + __popc(take_mask & lanes_below);
        ov[pos] = key_value(key, x + e);
        oi[pos] = e;
      }
      ties += ties_total;
      written += takes_total;
      __syncthreads();  // the slots are rewritten by the next chunk
    }
  }
}

// ---------------------------------------------------------------------------------------------
template <typename scalar_t, int VPT>
void launch_warp_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, int64_t rows, int64_t cols,
                      int64_t k, int64_t max_iter, double eps, int num_sms, cudaStream_t stream) {
  using Compute = typename Elem<scalar_t>::Compute;
  constexpr int kWarps = kWarpBlockThreads / 32;
  const int64_t wanted = (rows + kWarps - 1) / kWarps;
  const int64_t cap = int64_t(std::max(num_sms, 1)) * 32;
  const unsigned grid = static_cast<unsigned>(std::min(wanted, cap));
  if constexpr (sizeof(Compute) == 4) {
    warp_values_kernel<scalar_t, VPT><<<grid, kWarpBlockThreads, 0, stream>>>(
        in, ov, oi, rows, static_cast<int>(cols), static_cast<int>(k), max_iter,
        static_cast<float>(eps));
  } else {
    warp_rows_kernel<scalar_t, VPT><<<grid, kWarpBlockThreads, 0, stream>>>(
        in, ov, oi, rows, static_cast<int>(cols), static_cast<int>(k), max_iter,
        static_cast<Compute>(eps));
  }
}

}  // namespace cuda_detail

template <typename scalar_t>
void launch_rtopk(const scalar_t* in, scalar_t* ov, int64_t* oi, int64_t rows, int64_t cols,
                  int64_t k, int64_t max_iter, double eps, int num_sms, cudaStream_t stream) {
  using namespace cuda_detail;
  using Compute = typename Elem<scalar_t>::Compute;
  // Registers per lane for the keys: up to 64 32-bit keys or 32 64-bit keys.
  constexpr int64_t kWarpMaxCols = sizeof(KeyFor<scalar_t>) == 4 ? 2048 : 1024;
#define RTOPK_WARP_CASE(VPT)                                                                    \
  if (cols <= 32 * (VPT)) {                                                                     \
    launch_warp_rows<scalar_t, VPT>(in, ov, oi, rows, cols, k, max_iter, eps, num_sms, stream); \
    return;                                                                                     \
  }
  // Slots per lane rise in steps of at most 50% so that padding wastes little (768 -> 24 slots).
  RTOPK_WARP_CASE(1)
  RTOPK_WARP_CASE(2)
  RTOPK_WARP_CASE(3)
  RTOPK_WARP_CASE(4)
  RTOPK_WARP_CASE(6)
  RTOPK_WARP_CASE(8)
  RTOPK_WARP_CASE(12)
  RTOPK_WARP_CASE(16)
  RTOPK_WARP_CASE(24)
  RTOPK_WARP_CASE(32)
  if constexpr (kWarpMaxCols >= 2048) {
    RTOPK_WARP_CASE(48)
    RTOPK_WARP_CASE(64)
  }
#undef RTOPK_WARP_CASE
  const int64_t cap = int64_t(std::max(num_sms, 1)) * 8;
  const unsigned grid = static_cast<unsigned>(std::min(rows, cap));
  block_rows_kernel<scalar_t><<<grid, kRowBlockThreads, 0, stream>>>(
      in, ov, oi, rows, cols, k, max_iter, static_cast<Compute>(eps));
}

}  // namespace rtopk
