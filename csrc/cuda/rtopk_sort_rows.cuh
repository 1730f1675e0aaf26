// Rank order for outputs the top-k kernels left in index order (rows above 2048 elements, k above
// the in-kernel sort's 128): one warp per output row of k <= 1024 (value, index) pairs, sorted in
// place.  Each element becomes one integer, (rank key << w) | (L - position): the directed key of
// rtopk_algo.h on the raw bits (16 bits for half types, 32 for float), and the position in the
// row, which is index order, so that equal keys keep index order, as the host's stable sort and
// the in-kernel sort do.  A bitonic network sorts the integers in registers (WarpSort); the value
// and index of each rank are then fetched by position from a shared-memory copy of the row, so
// NaN payloads and -0.0 keep their bits.  float64 and k > 1024 keep the host sort.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "rtopk_kernels_common.cuh"

namespace rtopk {
namespace cuda_detail {

constexpr int kSortRowsMaxK = 1024;

// The integer a 16/32-bit element is sorted as: rank key and position in one word of twice the
// element's width.
template <typename scalar_t>
using SortComp =
    typename std::conditional<sizeof(scalar_t) == 2, uint32_t, unsigned long long>::type;

// Directed key of a float's raw bits (rtopk_algo.h's directed_key, at the element's own width):
// order-preserving, +-0 equal, NaN above everything (largest) or at key 1, below every number.
template <typename scalar_t>
__device__ __forceinline__ uint32_t sort_rank_key(uint32_t b, bool largest) {
  constexpr int kW = 8 * sizeof(typename Elem<scalar_t>::Bits);
  constexpr uint32_t kSign = 1u << (kW - 1), kAll = kSign | (kSign - 1u);
  const uint32_t mag = b & (kSign - 1u);
  if (mag > Elem<scalar_t>::kInfBits) return largest ? kAll : 1u;  // NaN
  if (mag == 0) return kSign;
  if (!largest) b ^= kSign;
  return (b & kSign) ? (~b & kAll) : (b | kSign);
}

// Shared-memory slot of row position p: one word skipped per 32, so that a lane reading its
// E = P / 32 consecutive positions and a warp reading 32 consecutive ones are both conflict-free.
__device__ __forceinline__ int sort_skew(int p) { return p + (p >> 5); }

template <int P>
struct SortRowsShape {
  static constexpr int kWarps = P >= 1024 ? 2 : 4;  // 48 KB of static shared memory at most
  static constexpr int kSlots = P + P / 32;
  // 16 warps per SM at least (128 registers): holding a row's loads in flight would take more.
  static constexpr int kMinBlocks = P >= 1024 ? 1 : 4;
};

template <typename scalar_t, int P>
__global__ void __launch_bounds__(SortRowsShape<P>::kWarps * 32, SortRowsShape<P>::kMinBlocks)
    sort_rows_kernel(scalar_t* values, int64_t* indices, int64_t rows, int k, bool largest) {
  using Bits = typename Elem<scalar_t>::Bits;
  using Comp = SortComp<scalar_t>;
  using Shape = SortRowsShape<P>;
  constexpr int E = P / 32;
  constexpr int kPosBits = 8 * sizeof(Comp) / 2;  // the low half holds L - position
  constexpr Comp kPosTop = (Comp(1) << kPosBits) - 1;
  static_assert(P >= 32 && P <= kSortRowsMaxK && (P & (P - 1)) == 0, "P: a power of two");
  __shared__ uint32_t s_bits[Shape::kWarps][Shape::kSlots];
  __shared__ int64_t s_idx[Shape::kWarps][Shape::kSlots];
  // The warp index through a shuffle: the compiler then knows the row loop is warp-uniform and
  // emits the network's shuffles without divergence-safe copies.
  const int lane = threadIdx.x & 31, warp = __shfl_sync(kFullMask, int(threadIdx.x >> 5), 0);
  uint32_t* sb = s_bits[warp];
  int64_t* si = s_idx[warp];
  Bits* vbits = reinterpret_cast<Bits*>(values);
  for (int64_t row = int64_t(blockIdx.x) * Shape::kWarps + warp; row < rows;
       row += int64_t(gridDim.x) * Shape::kWarps) {
    Bits* rv = vbits + row * k;
    int64_t* ri = indices + row * k;
    // All of the row's loads in flight at once (unrolled to P, predicated on k; a loop over k
    // waited for each load in turn), then the copy in shared memory.
    {
      uint32_t vb[E];
      int64_t ix[E];
#pragma unroll
      for (int t = 0; t < E; ++t) {
        const int p = t * 32 + lane;
        vb[t] = p < k ? uint32_t(rv[p]) : 0u;
        ix[t] = p < k ? ri[p] : 0;
      }
#pragma unroll
      for (int t = 0; t < E; ++t) {
        sb[sort_skew(t * 32 + lane)] = vb[t];
        si[sort_skew(t * 32 + lane)] = ix[t];
      }
    }
    __syncwarp();
    // Lane l holds positions l*E .. l*E + E - 1; padding (0) sorts below every element, whose
    // key is at least 1.
    Comp c[E];
#pragma unroll
    for (int j = 0; j < E; ++j) {
      const int p = lane * E + j;
      const Comp key = sort_rank_key<scalar_t>(sb[sort_skew(p)], largest);
      c[j] = p < k ? (key << kPosBits) | (kPosTop - Comp(p)) : Comp(0);
    }
    WarpSort<P, Comp>::run(c);
    // Rank r = lane*E + j comes from position kPosTop - low half.  Everything is read before the
    // copy is overwritten in rank order.
    uint32_t vb[E];
    int64_t ix[E];
#pragma unroll
    for (int j = 0; j < E; ++j) {
      const int p = int(kPosTop - (c[j] & kPosTop));
      const bool real = lane * E + j < k;
      vb[j] = real ? sb[sort_skew(p)] : 0u;
      ix[j] = real ? si[sort_skew(p)] : 0;
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j < E; ++j) {
      const int r = lane * E + j;
      sb[sort_skew(r)] = vb[j];
      si[sort_skew(r)] = ix[j];
    }
    __syncwarp();
#pragma unroll
    for (int t = 0; t < E; ++t) {
      const int p = t * 32 + lane;
      if (p < k) {
        rv[p] = Bits(sb[sort_skew(p)]);
        ri[p] = si[sort_skew(p)];
      }
    }
    __syncwarp();  // the copy is rewritten for the warp's next row
  }
}

template <typename scalar_t, int P>
void launch_sort_rows_p(scalar_t* values, int64_t* indices, int64_t rows, int k, bool largest,
                        int num_sms, cudaStream_t stream) {
  constexpr int kWarps = SortRowsShape<P>::kWarps;
  const auto kernel = sort_rows_kernel<scalar_t, P>;
  const unsigned grid = resident_grid(kernel, kWarps * 32, (rows + kWarps - 1) / kWarps, num_sms);
  kernel<<<grid, kWarps * 32, 0, stream>>>(values, indices, rows, k, largest);
}

}  // namespace cuda_detail

template <typename scalar_t>
bool launch_sort_rows(scalar_t* values, int64_t* indices, int64_t rows, int64_t k, bool largest,
                      int num_sms, cudaStream_t stream) {
  using namespace cuda_detail;
  if constexpr (std::is_same<scalar_t, double>::value) {
    return false;  // 64-bit keys: the host sort
  } else {
    if (rows < 1 || k < 2 || k > kSortRowsMaxK) return false;
    const int kk = static_cast<int>(k);
#define RTOPK_SORT_CASE(P)                                                                \
  if (kk <= (P)) {                                                                        \
    launch_sort_rows_p<scalar_t, P>(values, indices, rows, kk, largest, num_sms, stream); \
    return true;                                                                          \
  }
    RTOPK_SORT_CASE(32)
    RTOPK_SORT_CASE(64)
    RTOPK_SORT_CASE(128)
    RTOPK_SORT_CASE(256)
    RTOPK_SORT_CASE(512)
    RTOPK_SORT_CASE(1024)
#undef RTOPK_SORT_CASE
    return false;
  }
}

}  // namespace rtopk
