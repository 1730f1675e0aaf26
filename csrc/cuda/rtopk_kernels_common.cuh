// Pieces shared by the CUDA kernels: element conversions and warp reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "../rtopk_algo.h"
#include "rtopk_launch.h"

namespace rtopk {
namespace cuda_detail {

constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr int kWarpBlockThreads = 256;
constexpr int kRowBlockThreads = 512;

// Slots (elements per lane) of the warp-per-row kernels, in the order launch_warp_levels walks: a
// row of n elements takes the first level with 32 * level >= n, so the previous level's slots are
// all real elements.  Returns that previous level (0 for the first), or -1 for a value not in the
// list.
constexpr int kWarpSlotLevels[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
constexpr int warp_slots_below(int vpt) {
  int below = 0;
  for (int level : kWarpSlotLevels) {
    if (level == vpt) return below;
    below = level;
  }
  return -1;
}

template <typename scalar_t>
struct Elem;
template <>
struct Elem<float> {
  using Compute = float;
  using Bits = uint32_t;                             // the raw representation
  static constexpr uint64_t kInfBits = 0x7F800000u;  // |x| above it: NaN
  __device__ static float to_compute(float v) { return v; }
  __device__ static float from_compute(float v) { return v; }
};
template <>
struct Elem<double> {
  using Compute = double;
  using Bits = uint64_t;
  static constexpr uint64_t kInfBits = 0x7FF0000000000000ull;
  __device__ static double to_compute(double v) { return v; }
  __device__ static double from_compute(double v) { return v; }
};
template <>
struct Elem<__half> {
  using Compute = float;
  using Bits = uint16_t;
  static constexpr uint64_t kInfBits = 0x7C00u;
  __device__ static float to_compute(__half v) { return __half2float(v); }
  __device__ static __half from_compute(float v) { return __float2half_rn(v); }  // exact here
};
template <>
struct Elem<__nv_bfloat16> {
  using Compute = float;
  using Bits = uint16_t;
  static constexpr uint64_t kInfBits = 0x7F80u;
  __device__ static float to_compute(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 from_compute(float v) { return __float2bfloat16_rn(v); }
};

// Whether a launch asks for exact mode (no early stop, no precision), as the kernels read it: eps
// in the compute type.
template <typename Compute>
inline bool exact_mode(const RowLaunch& a) {
  return a.max_iter < 0 && !(static_cast<Compute>(a.eps) > Compute(0));
}

template <typename scalar_t>
using KeyFor = typename KeyTraits<typename Elem<scalar_t>::Compute>::Key;

// The directed key (rtopk_algo.h) of an element.
template <typename scalar_t>
__device__ __forceinline__ KeyFor<scalar_t> load_key(const scalar_t* p, bool largest) {
  using E = Elem<scalar_t>;
  return directed_key<typename E::Compute>(E::to_compute(*p), largest);
}

// The value of a selected element: rebuilt from its key, or re-read where the key dropped bits.
template <typename scalar_t>
__device__ __forceinline__ scalar_t key_value(KeyFor<scalar_t> key, const scalar_t* p,
                                              bool largest) {
  using E = Elem<scalar_t>;
  if (key_loses_bits(key)) return *p;
  const auto v = from_key<typename E::Compute>(key);
  return E::from_compute(largest ? v : -v);
}

// Key of a finite directed value: to_key() without its NaN test, and -0.0 made +0.0 by the add.
__device__ __forceinline__ uint32_t finite_value_key(float v) {
  const uint32_t b = __float_as_uint(__fadd_rn(v, 0.f));
  return b ^ (uint32_t(int(b) >> 31) | 0x80000000u);
}

struct MinOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct SumOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};

// Asks L2 for the bytes [p, p + bytes) ahead of their loads: a warp's next block of rows while it
// finishes the current one, so that those loads wait on an L2 hit rather than on DRAM.  One bulk
// prefetch (the TMA unit, lane 0) over the 16-byte-aligned interior; moves nothing into the SM, no
// register waits on it.  sm_90 only: a prefetch a 128-byte line a lane, the older cards' form,
// cost more than it saved on the H200 (notes v40), so below sm_90 (and outside device code) none.
__device__ __forceinline__ void prefetch_l2(const void* p, int64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + 15) & ~uintptr_t(15);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + uintptr_t(bytes)) & ~uintptr_t(15);
  if ((threadIdx.x & 31) == 0 && e > a)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a), "r"(uint32_t(e - a)));
#else
  (void)p;
  (void)bytes;
#endif
}

// Inclusive sum over a row's G lanes (l: the lane's place in its group of G; the lane and pair
// kernels' rows).
template <int G>
__device__ __forceinline__ int lane_group_inclusive(int v, int l) {
#pragma unroll
  for (int o = 1; o < G; o *= 2) {
    const int t = __shfl_up_sync(kFullMask, v, o, G);
    v += l >= o ? t : 0;
  }
  return v;
}

// T (8 or 16 bits) into shared memory where `pred` holds, predicated inside the asm (a plain `if`
// came out of the compiler as a branch around the store: BSSY / BRA / BSYNC).
template <typename T>
__device__ __forceinline__ void shared_store_if(T* p, uint32_t v, bool pred) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2, "8 or 16 bits");
#if defined(__CUDA_ARCH__)
  const uint32_t a = uint32_t(__cvta_generic_to_shared(p));
  if constexpr (sizeof(T) == 1)
    asm volatile(
        "{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q st.shared.u8 [%0], %1;\n\t}" ::"r"(a),
        "r"(v), "r"(int(pred))
        : "memory");
  else
    asm volatile(
        "{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q st.shared.u16 [%0], %1;\n\t}" ::"r"(a),
        "h"(uint16_t(v)), "r"(int(pred))
        : "memory");
#else
  if (pred) *p = T(v);
#endif
}

// A lane's selected columns staged in index order (the lane and pair kernels' emit): each set bit
// b of mask[i] stored as T(base + 32 i + b) at out[its place among the set bits].  Two bits a mask
// a trip, the lowest from the front and the highest from the back (one left: the same slot
// twice), the masks side by side with an empty mask's stores predicated off, so a warp's trips
// are its fullest lane-mask's over two (not the sum over masks of each one's fullest) and the
// masks' chains (find the bits, store, clear) overlap (notes v73 items 6, 7).
template <int N, typename T>
__device__ __forceinline__ void stage_set_bits(const uint32_t (&mask)[N], T* out, int base) {
  uint32_t m[N];
  T* front[N];
  T* back[N];
  uint32_t any = 0u;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    m[i] = mask[i];
    front[i] = out;
    out += __popc(m[i]);
    back[i] = out - 1;
    any |= m[i];
  }
  while (any) {
    any = 0u;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const bool has = m[i] != 0u;
      const int lo_b = __ffs(m[i]) - 1, hz = __clz(m[i]);  // (m = 0: -1, 32; stores off)
      shared_store_if(front[i], uint32_t(base + 32 * i + lo_b), has);
      shared_store_if(back[i], uint32_t(base + 32 * i + 31 - hz), has);
      front[i] = has ? front[i] + 1 : front[i];
      back[i] = has ? back[i] - 1 : back[i];
      // (The lowest bit off, then the highest; m = 0 stays 0.)
      m[i] = (m[i] & (m[i] - 1u)) & ~(0x80000000u >> (hz & 31));
      any |= m[i];
    }
  }
}

// Butterfly reduction: every lane ends with the result.
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

template <typename Key>
__device__ __forceinline__ Key warp_min(Key v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (sizeof(Key) == 4) return __reduce_min_sync(kFullMask, v);  // one instruction
#endif
  return warp_reduce(v, MinOp{});
}
template <typename Key>
__device__ __forceinline__ Key warp_max(Key v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (sizeof(Key) == 4) return __reduce_max_sync(kFullMask, v);
#endif
  return warp_reduce(v, MaxOp{});
}

__device__ __forceinline__ unsigned warp_sum(unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_add_sync(kFullMask, v);
#else
  return warp_reduce(v, SumOp{});
#endif
}
// Inclusive prefix sum over the lanes: lane l gets the sum of lanes 0 .. l (kFromTop: of lanes
// l .. 31).
template <bool kFromTop = false, typename T>
__device__ __forceinline__ T warp_inclusive_sum(T v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const T t = kFromTop ? __shfl_down_sync(kFullMask, v, o) : __shfl_up_sync(kFullMask, v, o);
    v += (kFromTop ? lane + o < 32 : lane >= o) ? t : T(0);
  }
  return v;
}

// c + (key >= t): the borrow of key - t carried into the add (two instructions; the compiler's
// compare-and-select took three).
__device__ __forceinline__ unsigned add_ge(unsigned c, uint32_t key, uint32_t t) {
#if defined(__CUDA_ARCH__)
  unsigned r;
  asm("{\n\t.reg .u32 d;\n\tsub.cc.u32 d, %1, %2;\n\taddc.u32 %0, %3, 0;\n\t}"
      : "=r"(r)
      : "r"(key), "r"(t), "r"(c));
  return r;
#else  // (the emulators of tests/emu)
  return c + (key >= t);
#endif
}
__device__ __forceinline__ unsigned add_ge(unsigned c, uint64_t key, uint64_t t) {
  return c + (key >= t);
}

// Writes, in index order, the elements a Plan selects from a warp's register-resident row (slot j
// of lane l is element j*32 + l).  key_of(j) gives slot j's key, value_of(j, e) its output value.
template <int VPT, typename Key, typename scalar_t, typename KeyOf, typename ValueOf>
__device__ __forceinline__ void emit_plan(const Plan<Key>& plan, int cols, int k, scalar_t* ov,
                                          int64_t* oi, KeyOf key_of, ValueOf value_of) {
  const int lane = threadIdx.x & 31;
  const unsigned lanes_below = (1u << lane) - 1u;
  int written = 0;
  int64_t ties = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    if (written >= k) break;  // warp-uniform
    const int e = j * 32 + lane;
    const Key key = key_of(j);
    const bool valid = e < cols;
    const bool above = valid && plan.takes(key);
    const bool tie = valid && plan.fills(key);
    const unsigned tie_mask = __ballot_sync(kFullMask, tie);
    const bool take = above || (tie && ties + __popc(tie_mask & lanes_below) < plan.quota);
    const unsigned take_mask = __ballot_sync(kFullMask, take);
    if (take) {
      const int pos = written + __popc(take_mask & lanes_below);
      ov[pos] = value_of(j, e);
      oi[pos] = e;
    }
    ties += __popc(tie_mask);
    written += __popc(take_mask);
  }
}

// Bitonic sort of P unsigned integers (P = 16 .. 1024, a power of two) into descending order,
// E = max(1, P/32) per lane: element lane*E + j is c[j].  Steps between a lane's own elements are
// register compare-exchanges; the others exchange with lane ^ (stride / E) by shuffle.  One compare
// per exchange: a pair swaps when (b > a) equals the pair's direction (two ISETP and a select per
// word for 64-bit integers, not a max and a min); equal integers may swap, which changes nothing.
// With P = 16 each half-warp sorts its own 16.
template <int P, typename T>
struct WarpSort {
  static constexpr int E = P >= 32 ? P / 32 : 1;

  __device__ __forceinline__ static void run(T (&c)[E]) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int size = 2; size <= P; size <<= 1) {
      // Blocks of `size` alternate direction (even ones descending); within a lane (size < E)
      // that depends on j alone.
      const bool lane_desc = size < E || (lane & (size / E)) == 0;
#pragma unroll
      for (int stride = size / 2; stride > 0; stride >>= 1) {
        if (stride < E) {
#pragma unroll
          for (int j = 0; j < E; ++j) {
            if (j & stride) continue;
            const bool desc = size < E ? (j & size) == 0 : lane_desc;
            const T a = c[j], b = c[j | stride];
            const bool swap = (b > a) == desc;
            c[j] = swap ? b : a;
            c[j | stride] = swap ? a : b;
          }
        } else {
          const int lx = stride / E;
          // The lower lane of a descending pair keeps the larger element, and so on.
          const bool keep_max = lane_desc == ((lane & lx) == 0);
#pragma unroll
          for (int j = 0; j < E; ++j) {
            const T o = __shfl_xor_sync(kFullMask, c[j], lx);
            c[j] = (o > c[j]) == keep_max ? o : c[j];
          }
        }
      }
    }
  }
};

// Grid for a kernel whose blocks walk the rows: `wanted` blocks, capped at what stays resident on
// the device at once (the occupancy query; 1 block per SM if the query fails).
template <typename Kernel>
unsigned resident_grid(Kernel kernel, int threads, int64_t wanted, int num_sms) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess ||
      per_sm < 1) {
    (void)cudaGetLastError();  // (a failed query leaves an error behind)
    per_sm = 1;
  }
  const int64_t cap = int64_t(num_sms > 1 ? num_sms : 1) * per_sm;
  return static_cast<unsigned>(wanted < cap ? wanted : cap);
}

}  // namespace cuda_detail
}  // namespace rtopk
