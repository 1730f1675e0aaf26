// Exact top-k of short rows at small k (mixture-of-experts routers: 33..256 experts, top-1..8):
// a thread a row, and a sorting network that keeps the K largest keys seen (K >= k, a power of
// two up to 8) while the row streams past.  Where the value kernels pay a warp's fixed ~300
// instructions a row and the round kernel k rounds of two warp reductions, this costs a few
// min/max a key, on registers: per K keys a sort (19 compare-exchanges at K = 8), an
// element-wise max against the kept list (the top K of both, a bitonic sequence) and a bitonic
// clean (12 at K = 8): 8.75 compare-exchanges a key at K = 8, 5.5 at 4, 3 at 2, one max at 1.
//
// A warp takes 32 rows at a time: their bytes (contiguous) come into shared memory through
// cp.async in chunks of eight 16-byte words a row, coalesced, each chunk its own group so that
// the first is ranked while the rest arrive; a lane then reads its own row in 16-byte words
// (a row stride of an odd number of words: no bank conflicts).
//   16-bit rows: the 16-bit key of a value with the row index in 9 bits below it, reversed, is
//   unique and orders equal values by index: the network's list is the answer in rank order,
//   one pass.
//   32-bit rows: the list holds keys alone (equal keys are not told apart), which gives the
//   k-th key T and how many keys are above it; a second pass over the row (in shared memory)
//   takes every key above T and the first (k - above) equal to T in index order, the tie rule of
//   rtopk_algo.h.
// Rows must be whole 16-byte words (cols * sizeof(scalar_t) % 16 == 0) and the input 16-byte
// aligned; the launch checks both.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../rtopk_algo.h"
#include "rtopk_kernels_common.cuh"

namespace rtopk {
namespace cuda_detail {

constexpr int kNetMaxK = 8;
constexpr int kNetMaxCols = 256;
// 16-byte words a row takes in one cp.async group (a warp's chunk: 32 rows of 128 bytes).
constexpr int kNetChunkWords = 8;

// cp.async of 16 bytes global -> shared, in groups (sm_80+; the emulator copies at once).
__device__ __forceinline__ void net_copy16(uint4* dst, const uint4* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto s = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
#else
  *dst = *src;
#endif
}
__device__ __forceinline__ void net_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Until at most `pending` groups are in flight (0..7: a constant once the chunk loop unrolls).
__device__ __forceinline__ void net_wait(int pending) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define RTOPK_NET_WAIT(n)                                     \
  case n:                                                     \
    asm volatile("cp.async.wait_group " #n ";" ::: "memory"); \
    break;
  switch (pending) {
    RTOPK_NET_WAIT(0)
    RTOPK_NET_WAIT(1)
    RTOPK_NET_WAIT(2)
    RTOPK_NET_WAIT(3)
    RTOPK_NET_WAIT(4)
    RTOPK_NET_WAIT(5)
    RTOPK_NET_WAIT(6)
    default:
      asm volatile("cp.async.wait_group 7;" ::: "memory");
  }
#undef RTOPK_NET_WAIT
#else
  (void)pending;
#endif
}

// A warp's copies of rows [0, nrows) x 16-byte words [0, words) of src (rows of `words` words,
// contiguous) into tile (a row every kSV words), in MV / kCW groups of kCW words a row, each
// group committed (empty ones past the row too: a wait's count is a constant).  A copy
// instruction covers 32 / kCW rows' runs of kCW words: coalesced.
template <int MV, int kSV>
__device__ __forceinline__ void tile_load(uint4* tile, const uint4* src, int nrows, int words,
                                          int lane) {
  constexpr int kCW = MV < kNetChunkWords ? MV : kNetChunkWords;
  static_assert(MV % kCW == 0 && (kCW & (kCW - 1)) == 0, "whole groups of a power of two");
#pragma unroll
  for (int c = 0; c < MV / kCW; ++c) {
#pragma unroll
    for (int t = 0; t < kCW; ++t) {
      const int v = lane + 32 * t;
      const int i = v / kCW, w = c * kCW + v % kCW;
      if (i < nrows && w < words) net_copy16(&tile[i * kSV + w], src + int64_t(i) * words + w);
    }
    net_commit();
  }
}

// 0xFFFF in each 16-bit half whose sign bit is set (PRMT's sign replication; the emulator's body
// portable).
__device__ __forceinline__ uint32_t net_signs2(uint32_t a) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32 %0, %1, 0, 0xBB99;" : "=r"(d) : "r"(a));
  return d;
#else
  return (a & 0x8000u ? 0xFFFFu : 0u) | (a & 0x80000000u ? 0xFFFF0000u : 0u);
#endif
}

// Compare-exchange into descending order.
__device__ __forceinline__ void net_ce(uint32_t& a, uint32_t& b) {
  const uint32_t hi = max(a, b), lo = min(a, b);
  a = hi;
  b = lo;
}

template <int K>
__device__ __forceinline__ void net_sort(uint32_t (&x)[K]) {
  static_assert(K == 1 || K == 2 || K == 4 || K == 8, "K: 1, 2, 4 or 8");
  if constexpr (K == 2) {
    net_ce(x[0], x[1]);
  } else if constexpr (K == 4) {
    net_ce(x[0], x[1]);
    net_ce(x[2], x[3]);
    net_ce(x[0], x[2]);
    net_ce(x[1], x[3]);
    net_ce(x[1], x[2]);
  } else if constexpr (K == 8) {  // 19 comparators, depth 6 (optimal for 8 inputs)
    net_ce(x[0], x[2]);
    net_ce(x[1], x[3]);
    net_ce(x[4], x[6]);
    net_ce(x[5], x[7]);
    net_ce(x[0], x[4]);
    net_ce(x[1], x[5]);
    net_ce(x[2], x[6]);
    net_ce(x[3], x[7]);
    net_ce(x[0], x[1]);
    net_ce(x[2], x[3]);
    net_ce(x[4], x[5]);
    net_ce(x[6], x[7]);
    net_ce(x[2], x[4]);
    net_ce(x[3], x[5]);
    net_ce(x[1], x[4]);
    net_ce(x[3], x[6]);
    net_ce(x[1], x[2]);
    net_ce(x[3], x[4]);
    net_ce(x[5], x[6]);
  }
}

// list (descending) := the K largest of list and x (x is sorted here).
template <int K>
__device__ __forceinline__ void net_merge(uint32_t (&list)[K], uint32_t (&x)[K]) {
  if constexpr (K == 1) {
    list[0] = max(list[0], x[0]);
  } else {
    net_sort<K>(x);
    // Descending against ascending, element-wise max: the top K of both, a bitonic sequence.
#pragma unroll
    for (int i = 0; i < K; ++i) list[i] = max(list[i], x[K - 1 - i]);
#pragma unroll
    for (int d = K / 2; d > 0; d /= 2)
#pragma unroll
      for (int i = 0; i < K; ++i)
        if ((i & d) == 0) net_ce(list[i], list[i + d]);
  }
}

constexpr int kNetIndexBits = 9;  // > log2(kNetMaxCols): a composite key is never 0

// K >= k, a power of two; MV: the row's 16-byte words at most (a multiple of kNetChunkWords).
template <typename scalar_t, int K, int MV>
__global__ void __launch_bounds__(32)
    net_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                    int64_t* __restrict__ out_indices, int64_t rows, int cols, int k, bool largest,
                    bool sorted) {
  static_assert(MV % kNetChunkWords == 0 && MV / kNetChunkWords <= 8, "whole chunks, 8 at most");
  using E = Elem<scalar_t>;
  using Key = uint32_t;
  constexpr bool kComposite = sizeof(scalar_t) == 2;
  static_assert(sizeof(scalar_t) == 4 || kComposite, "16/32-bit rows");
  constexpr int kPer = 16 / int(sizeof(scalar_t));  // elements a 16-byte word
  constexpr int kSV = MV + 1;                       // a row's stride in words: odd
  constexpr int kChunks = MV / kNetChunkWords;
  constexpr int kGroupWords = K > kPer ? K / kPer : 1;  // words a network group spans
  __shared__ uint4 tile[32 * kSV];
  const int lane = threadIdx.x & 31;
  const int words = cols / kPer;
  const uint4* const my_row = tile + lane * kSV;
  // An order-preserving key from the raw bits, branch-free (the shared to_key branches on NaN
  // and zero): sign | magnitude -> kSign +- magnitude (+0 and -0 meet at kSign), NaN of either
  // sign -> kNaN.  The k smallest: the key of -v (the sign bit flipped), NaN at the bottom.  Only
  // compared with one another, never with rtopk_algo.h's keys.
  using Bits = typename E::Bits;
  constexpr uint32_t kSign = 1u << (8 * sizeof(scalar_t) - 1);
  const uint32_t flip = largest ? 0u : kSign;
  // (Numbers' keys are >= 1.  NaN's 0 in the k smallest of 32-bit rows equals the list's empty
  // slots: harmless, the second pass reads the row itself; 16-bit composites are >= 256.)
  const uint32_t nan_key = largest ? (kSign << 1) - 1 : 0u;
  // A 16-bit key with the index below it, reversed: unique, and equal values ordered by index.
  // (A multiply-add: ptxas makes it one LEA, where a shift and an OR took two LOP3 and a shift.)
  const auto composite = [](uint32_t key16, int j) -> Key {
    return key16 * (1u << kNetIndexBits) + Key((1 << kNetIndexBits) - 1 - j);
  };
  const auto key_of = [&](Bits bits, int j) -> Key {
    const uint32_t b = uint32_t(bits) ^ flip;
    const uint32_t a = b & (kSign - 1);
    const uint32_t m = b & kSign ? 0xFFFFFFFFu : 0u;
    const uint32_t key = a > uint32_t(E::kInfBits) ? nan_key : kSign + ((a ^ m) - m);
    if constexpr (kComposite) {
      return composite(key, j);
    } else {
      (void)j;
      return key;
    }
  };
  // 16-bit rows: the same keys two at a time from a 32-bit word of two values (the even element's
  // in the low half; 9 instructions a word and 2 a key for its index, where key_of takes ~13 a
  // key): per half kSign + a or kSign - a (no half borrows from the other: a <= 0x7FFF), NaN halves
  // (a + (0x7FFF - inf) reaches bit 15, never bit 16) set to nan_key.  H200, bf16, 2^18 rows
  // (notes v62): 0.80-0.86x of key_of's time at k <= 4, 0.91-0.93x at k = 8 on rows of 128; not at
  // K = 8 on rows of 64 (1.02x, rank order 1.15x).  (Two keys a word through the network too,
  // VIMNMX.U16x2, and a second pass for the indices: 1.09-1.39x at k = 8 on rows of 64.)
  constexpr bool kPairs = kComposite && !(K == 8 && MV == 8);
  const uint32_t nan2 = nan_key * 0x10001u, negs = largest ? 0u : ~0u;
  const auto keys2_of = [&](uint32_t w) -> uint32_t {
    const uint32_t neg = net_signs2(w) ^ negs;  // (the flip's sign bits)
    const uint32_t key = ((w & ~neg) | 0x80008000u) - (w & neg & 0x7FFF7FFFu);
    const uint32_t nan =
        net_signs2((w & 0x7FFF7FFFu) + (0x7FFFu - uint32_t(E::kInfBits)) * 0x10001u);
    return (key & ~nan) | (nan2 & nan);
  };
  for (int64_t r0 = int64_t(blockIdx.x) * 32; r0 < rows; r0 += int64_t(gridDim.x) * 32) {
    const int nrows = static_cast<int>(rows - r0 < 32 ? rows - r0 : 32);
    const uint4* const src = reinterpret_cast<const uint4*>(in + r0 * cols);
    __syncwarp();  // every lane is done with the tile's last rows
    tile_load<MV, kSV>(tile, src, nrows, words, lane);
    Key list[K];
#pragma unroll
    for (int i = 0; i < K; ++i) list[i] = 0;  // below every key and composite
    int best_at = 0;                          // (32-bit rows at K == 1)
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      net_wait(kChunks - 1 - c);
      __syncwarp();
      if (c * kNetChunkWords < words) {
        // A network group's words at a time (keys made just before they merge: fewer live).
#pragma unroll
        for (int u = 0; u < kNetChunkWords; u += kGroupWords) {
          Key keys[kGroupWords * kPer];
#pragma unroll
          for (int gw = 0; gw < kGroupWords; ++gw) {
            const int w = c * kNetChunkWords + u + gw;
            union {
              uint4 u4;
              Bits b[kPer];
            } word;
            word.u4 = w < words ? my_row[w] : make_uint4(0, 0, 0, 0);
            if constexpr (kPairs) {
              const uint32_t x[4] = {word.u4.x, word.u4.y, word.u4.z, word.u4.w};
#pragma unroll
              for (int q = 0; q < 4; ++q) {
                const uint32_t k2 = keys2_of(x[q]);
                const int j = w * kPer + 2 * q;
                keys[gw * kPer + 2 * q] =
                    w < words ? composite(__byte_perm(k2, 0, 0x4410), j) : Key(0);
                keys[gw * kPer + 2 * q + 1] =
                    w < words ? composite(__byte_perm(k2, 0, 0x4432), j + 1) : Key(0);
              }
            } else {
#pragma unroll
              for (int q = 0; q < kPer; ++q)
                keys[gw * kPer + q] = w < words ? key_of(word.b[q], w * kPer + q) : Key(0);
            }
          }
          if constexpr (!kComposite && K == 1) {
            // The largest key and its first index: one pass (a strict compare keeps the first).
#pragma unroll
            for (int q = 0; q < kPer; ++q) {
              const bool better = keys[q] > list[0];
              list[0] = better ? keys[q] : list[0];
              best_at = better ? (c * kNetChunkWords + u) * kPer + q : best_at;
            }
          } else {
#pragma unroll
            for (int g = 0; g < kGroupWords * kPer / K; ++g) {
              Key x[K];
#pragma unroll
              for (int i = 0; i < K; ++i) x[i] = keys[g * K + i];
              net_merge<K>(list, x);
            }
          }
        }
      }
    }
    if (lane >= nrows) continue;
    const int64_t r = r0 + lane;
    scalar_t* const ov = out_values + r * k;
    int64_t* const oi = out_indices + r * k;
    const scalar_t* const row = reinterpret_cast<const scalar_t*>(my_row);
    if constexpr (kComposite) {
      // The list is the answer in rank order; index order ranks the k indices.
      int idx[K];
#pragma unroll
      for (int i = 0; i < K; ++i)
        idx[i] = (1 << kNetIndexBits) - 1 - int(list[i] & ((1u << kNetIndexBits) - 1));
#pragma unroll
      for (int i = 0; i < K; ++i) {
        if (i < k) {
          int pos = i;
          if (!sorted) {
            pos = 0;
#pragma unroll
            for (int j = 0; j < K; ++j) pos += j < k && idx[j] < idx[i];
          }
          ov[pos] = row[idx[i]];
          oi[pos] = idx[i];
        }
      }
    } else if constexpr (K == 1) {
      ov[0] = row[best_at];
      oi[0] = best_at;
    } else {
      // The k-th key, how many keys are above it, and so how many equal to it to take.
      // (list[k - 1] as a min: an indexed read would put the list in local memory)
      Key kth = list[0];
#pragma unroll
      for (int i = 1; i < K; ++i) kth = i < k ? min(kth, list[i]) : kth;
      int quota = k;
#pragma unroll
      for (int i = 0; i < K; ++i) quota -= i < k && list[i] > kth;
      // A chunk's taken elements as a bit mask (no branch a key), then its set bits in index
      // order; rank order gives each taken key the first unused slot of the list that holds its
      // key (the list holds the taken keys exactly, equal ones in index order).
      static_assert(kNetChunkWords * kPer == 32, "a chunk's keys in one mask");
      unsigned used = 0;
      int n = 0;
      for (int c = 0; c < kChunks && c * kNetChunkWords < words && n < k; ++c) {
        unsigned take = 0;
#pragma unroll
        for (int u = 0; u < kNetChunkWords; ++u) {
          const int w = c * kNetChunkWords + u;
          if (w < words) {
            union {
              uint4 u4;
              Bits b[kPer];
            } word;
            word.u4 = my_row[w];
#pragma unroll
            for (int q = 0; q < kPer; ++q) {
              const Key key = key_of(word.b[q], 0);
              const bool tie = key == kth;
              const bool t = key > kth || (tie && quota > 0);
              quota -= t && tie;
              take |= unsigned(t) << (u * kPer + q);
            }
          }
        }
        for (; take != 0; take &= take - 1, ++n) {
          const int j = c * 32 + __ffs(int(take)) - 1;
          const scalar_t v = row[j];
          int pos = n;
          if (sorted) {
            const Key key = key_of(reinterpret_cast<const Bits&>(v), 0);
            unsigned eq = 0;
#pragma unroll
            for (int i = 0; i < K; ++i) eq |= (i < k && list[i] == key) ? 1u << i : 0u;
            pos = __ffs(int(eq & ~used)) - 1;
            used |= 1u << pos;
          }
          ov[pos] = v;
          oi[pos] = j;
        }
      }
    }
  }
}

}  // namespace cuda_detail
}  // namespace rtopk
