// Exact top-k of 16/32-bit rows of 193..256 elements with four lanes a row (lane_rows_kernel), and
// of rows of 449..512 with eight lanes a row, four rows a warp and 16-bit bucket counters (from 480
// elements in whole 16-byte vectors: kLaneEight), and of rows of 721..768 with sixteen lanes a row,
// 48 elements a lane and two rows a warp (from 2^17 rows, k > 24: kLaneSixteen).
//
// Why: at 256 elements the value kernel (one warp a row, 8 values a lane) is issue-bound at ~586
// warp instructions a row, about 350 of them per-row work (min/max, scans, the emit's ballots,
// the flush) that a warp pays whole for one row.  Here a warp holds 8 rows, each lane 64
// contiguous elements of one row, so the per-element work is lane-local (no ballot or shuffle a
// slot) and the per-row work is shared by 8 rows (notes v32: 230-255 warp instructions a row).
//   stage:  the warp's 8 rows (contiguous in memory) loaded coalesced into shared memory as
//           directed floats (-x for the k smallest), read back 64 contiguous elements a lane;
//   search: min / max over the row; the bucket u = (hi - v) * scale + 2^23 (an integer-valued
//           float, 0 for the largest values, 255 for the smallest) of every element counted by one
//           shared atomic into 256 byte counters a row; b*, the bucket of the k-th element, from
//           the lanes' totals, a group scan, the owner lane's 64 buckets split over the group and
//           a second scan;
//   select: the elements of buckets below b* are taken, b*'s members too when all are needed,
//           else (at most 32 members) each member ranked against the others (value, then index;
//           the row's list split over its lanes, lane_rank_spread);
//           more than 32 members: further bucket levels over them (lane_crowded);
//   flush:  indices staged in index order, values from the staging, coalesced over the 8 rows.
//   rank order (kSorted, rtopk.topk's sorted=True, k <= 16 with four lanes a row, 32 with eight):
//           the taken elements listed as keys (value, then index), each ranked by its count of
//           larger keys (pairwise: cheap for small k only: kLaneSortedMaxK; notes v36).
//   max_iter (kEarly, index order: kLaneEarly; sixteen lanes for 16-bit rows only): Algorithm
//           2's steps on the lanes' own elements (a count of those >= the midpoint a step, summed
//           over the row's lanes), then the row's first k elements >= lo by the take bits; no
//           buckets.
// NaN and +-inf get buckets of their own (a warp with any of them maps its rows so), rows of one
// key take their first k.  Rows this path does not finish (a finite range beyond float range, a
// subnormal range, b* still crowded after the levels) are left to the value kernel's row body
// (warp_value_row), which the warp runs on each of them after the flush, in the same launch: one
// answer whichever path takes a row (the tie rule of rtopk_algo.h: equal values by index).
// The asm helpers have portable bodies outside device code: tests/emu runs this kernel on the CPU.
#pragma once

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "rtopk_kernels_common.cuh"
#include "rtopk_warp_values.cuh"

namespace rtopk {
namespace cuda_detail {

constexpr int kLaneE = 64;  // elements a lane, contiguous
constexpr int kLaneMaxK = kStageK;
// Staging, in 32-bit words: a lane's 64 elements 68 words apart (68 = 4 mod 32: the group reads of
// 16 bytes a lane fall in distinct banks), a row's G chunks G * 68 words apart.
constexpr int kLaneChunk = kLaneE + 4;
constexpr int kLaneStageWords = 32 * kLaneChunk;

// A row's shape: G lanes a row (4: rows of 193..256 elements; 8: 449..512; 16: 721..768, 48
// elements a lane), 32 / G rows a warp.
template <int G>
struct LaneCfg {
  static_assert(G == 4 || G == 8 || G == 16, "four, eight or sixteen lanes a row");
  static constexpr int kE = G == 16 ? 48 : kLaneE;  // elements a lane, contiguous
  static constexpr int kChunk = kE + 4;             // (48 + 4 = 20 mod 32: distinct bank quads too)
  static constexpr int kRows = 32 / G;              // rows a warp
  static constexpr int kCols = G * kE;              // longest row
  static constexpr int kLogCols = G == 4 ? 8 : 9;   // log2(kCols) (G = 16: not a power of two)
  static constexpr int kMinCols = kCols - kE + 1;   // shorter: the warp kernel (one lane padded)
  static constexpr int kRowWords = G * kChunk;
  // Bytes a bucket counter: a row that is not one key has at most kCols - 1 elements in a bucket.
  static constexpr int kW = kCols <= 256 ? 1 : 2;
  static constexpr int kHistWords = 64 * kW;  // a row's 256 counters
  static constexpr unsigned kGroupBits = (1u << G) - 1u;
  static constexpr unsigned kFirstLanes = ~0u / kGroupBits;  // lane 0 of each row (bit 0 of each G)
  static constexpr int kLaneHistWords = kHistWords / G;      // a lane's share of the row's counters
  static constexpr int kVpt = kCols / 32;  // the fallback row body's values a lane
  using Col = std::conditional_t<G == 4, uint8_t, uint16_t>;  // a column in the sorted lists
};

// (Buckets recomputed from the staging at each pass instead of held in registers, for 96 registers
// and 20 warps an SM instead of 16: 1.03-1.07x the time, notes v37.)
// After the staging, per warp: the rows' 256 counters (64 * kW words a row, the rows' counters at
// 256 * kW-byte steps: an atomic's word address is one OR).  Each row's member list (32 64-bit
// keys) lies over its own counters once they are read (after the cut and the crowded levels); the
// output indices (kLaneOutStride a row, Col) over all of them once b*'s members are ranked.  The
// lanes' spare words and take-bit words lie in the staging's padding (words kE..kE + 3 of each
// lane's chunk: lane_pad).  So a warp needs 10.5 KB, and ten blocks of two warps fit an SM.
constexpr int kLaneAuxWords = 512;
static_assert(LaneCfg<4>::kRows * LaneCfg<4>::kHistWords == kLaneAuxWords &&
                  LaneCfg<8>::kRows * LaneCfg<8>::kHistWords == kLaneAuxWords &&
                  LaneCfg<16>::kRows * LaneCfg<16>::kHistWords <= kLaneAuxWords,
              "the rows' counters fit the aux words");
static_assert(LaneCfg<16>::kRows * LaneCfg<16>::kRowWords <= kLaneStageWords, "staging fits");
constexpr int kLaneOutStride = kLaneMaxK + 8;
constexpr int kLaneWarpWords = kLaneStageWords + kLaneAuxWords;
constexpr int kLaneBlockWarps = 2;
// Blocks an SM (__launch_bounds__): 10 (96 registers, 20 warps an SM) for the 16-bit max_iter
// and sixteen-lane instances, 8 (128 registers, 16 warps) for the others: the exact four- and
// eight-lane instances lost 3-12% at 96 registers (20-56 bytes of spills), and at 16 warps the
// fp32 max_iter and sixteen-lane instances took 0.95-1.00 / 0.93-0.98 of their time at 20, the
// 16-bit sixteen-lane ones 1.03-1.04 (H100, notes v52).  Against the 12.5 KB layout at 16 warps:
// exact fp32 0.87-0.99 of the time at rows of 256 (16 warps still), bf16 0.93-0.98; max_iter=4
// bf16 0.89-0.97 (20 warps).
template <typename scalar_t, int G, bool kEarly>
constexpr int kLaneMinBlocks = sizeof(scalar_t) == 2 && (kEarly || G == 16) ? 10 : 8;
// fp32 rows: about kLaneWalk blocks of rows a warp, each warp's next block prefetched into L2 as
// it flushes the current one (launch_lane_rows_g).  H200 (notes v40): fp32 exact
// 0.93-0.97 of the time at 2^18 and 2^20 rows of 256 (fewer rows: no walk, unchanged); bf16
// 0.98-1.02, and the rank-ordered instances (24 bytes of spills with it) up to 1.06: not there
// then; without spills since notes v45 item 7, they walk too (item 8).
constexpr int kLaneWalk = 4;
template <typename scalar_t>
constexpr bool kLaneWalks = sizeof(scalar_t) == 4;
template <int G>
constexpr bool lane_out_fits() {
  return LaneCfg<G>::kRows * kLaneOutStride * int(sizeof(typename LaneCfg<G>::Col)) <=
         4 * kLaneAuxWords;
}
static_assert(lane_out_fits<4>() && lane_out_fits<8>() && lane_out_fits<16>(),
              "output staging fits");
// Rank-ordered output (kSorted): each row's taken elements as 64-bit keys in its member list (32
// keys), ranked pairwise (k^2 / G compares a lane); the columns in rank order in the row's counter
// words from kLaneRankedAt on (a byte a column with four lanes a row, two with eight), past the
// list's kLaneSortedMaxK keys.
template <int G>
constexpr int kLaneRankedAt = LaneCfg<G>::kHistWords / 2;  // (words from the row's counters)
// The largest k whose rank-ordered output the lane kernel gives, by lanes a row; above it the
// sorted call takes the warp kernel.  Four lanes (H100, 2^18 rows of 256): k = 8 0.82x, 16 0.93x,
// 24 1.04x, 32 1.10x of its time (notes v36).  Eight lanes (half the compares a lane; H100, rows
// of 512, k = 24..32): bf16 0.87-0.92x of its time, fp32 0.98-0.99x from 2^18 rows but 1.08x at
// 2^16 (the rank-ordered fp32 instances did not prefetch then, kLaneWalks), and at k = 16 too
// fp32 1.02x / 1.07x at 2^14 / 2^16 rows (0.96x at 2^18; bf16 0.88-0.98x), so fp32 took it from
// 2^17 rows only (notes v42, v45); on the H200 since the prefetch, fp32 0.81-0.93x at 2^14 / 2^16
// rows, k = 16 / 32 (notes v54): every launch the eight-lane kernel takes.  Sixteen lanes: none
// (1: no rank-ordered instances).
template <int G>
constexpr int kLaneSortedMaxK = G == 4   ? 16
                                : G == 8 ? 32
                                         : 1;
template <int G>
constexpr bool lane_sorted_fits() {
  return kLaneSortedMaxK<G> <= 32 && 2 * kLaneSortedMaxK<G> <= kLaneRankedAt<G> &&
         kLaneRankedAt<G> * 4 + kLaneSortedMaxK<G> * int(sizeof(typename LaneCfg<G>::Col)) <=
             4 * LaneCfg<G>::kHistWords;
}
static_assert(lane_sorted_fits<4>() && lane_sorted_fits<8>() && lane_sorted_fits<16>(),
              "a row's keys fit its member list, its ranked columns its counter words");
// Eight lanes a row (rows of 449..512).  H200, exact, against the warp kernel (notes v41): 512
// elements 0.70-0.86x of its time from 2^16 rows (k = 16..128; bf16 0.65-0.85x), 480 0.96x (fp32)
// / 0.82x (bf16), but 449 1.17x (rows not whole 16-byte vectors: staged element by element) and
// 2^14 rows at k = 16 1.05x (k = 64 / 128 0.93 / 0.91x).  H100 (notes v45): 512 elements fp32
// 0.80-0.98x, bf16 0.69-0.88x from 2^16 rows; 2^14 rows 0.98-1.0x (bf16 k = 64 0.83x); 480 0.96x /
// 0.80x.  Rows that stress the cut took up to 2.4x its randn rows' time until heavy tails were
// mapped by keys (v44) and the rows' counters rotated (v45: two values and few ulps sent every RED
// to two banks); now at most 1.56x (NaN mixed in, 2^20 rows, k = 16; H100, notes v45), within the
// 2x bound of tests/test_slow_rows.py.  Dispatched for kLaneEightMinCols..512.
constexpr bool kLaneEight = true;
constexpr int kLaneEightMinCols = 480;
static_assert(kLaneEightMinCols >= LaneCfg<8>::kMinCols, "the kernel's shortest rows");
// Sixteen lanes a row, two rows a warp, 48 elements a lane (rows of 721..768 in whole 16-byte
// vectors).  H100, exact, against the warp kernel (notes v42), 768 elements: fp32 0.87-0.95x of its
// time at k = 64 / 128 from 2^17 rows, but 1.02-1.09x at k = 16 (where the warp kernel's first
// bracket comes from group maxima, k <= 24) and 1.11-1.12x below 2^17 rows (the per-row work shared
// by two rows only; 128 registers, 16 warps an SM); bf16 0.74-0.84x at k = 64 / 128, 0.95-1.0x at
// 16.  744 elements: k = 128 0.95x (bf16 0.81x), k = 16 1.18x.  But rows that stress the cut take
// more than twice the time of randn rows (2^17 x 768, k = 64: NaN mixed in 2.19x, randn^5 2.09x,
// few ulps 2.03x, two values 2.00x; the bound of tests/test_slow_rows.py is 2x).  With the map
// of notes v44 and the rotated counters of v45 the worst is 1.64x (bf16 two values, k = 32) and
// the kernel is dispatched (notes v46: fp32 0.90-0.98x, bf16 0.80-0.90x of the warp kernel's time
// at 2^17-2^20 x 768, k = 32..128); on the H200 the launches of kLaneMinRows below (notes v54).
constexpr bool kLaneSixteen = true;
// max_iter (Algorithm 2, index order) on the rows exact mode gives this path: the bisection's
// counts over a lane's elements (an FADD and an SHF an element a step), then the first k >= lo by
// the take bits.  H200 A/B against the warp kernel, max_iter=4: four lanes (notes v48) 0.66-0.71x
// of its time at k = 16 (2^18 / 2^20 rows), 0.81x at 32, 0.90x at 64, 0.91-0.98x at 128; eight
// lanes (rows of 512, notes v53) fp32 0.78-0.90x at k = 16..128 from 2^18 rows (2^16: 0.86x at
// k = 16, 0.99x at 128), bf16 0.66-0.85x; sixteen lanes (768) bf16 0.92-0.96x, but fp32 1.05-1.07x
// at 2^18 rows (0.98x at 2^20): fp32 rows of 768 keep the warp kernel.
constexpr bool kLaneEarly = true;
// Which shapes have a max_iter instance (the dispatch and the launch read this one rule: a max_iter
// launch of a shape without one would run the exact instance).
template <typename scalar_t, int G>
constexpr bool kLaneEarlyAt = kLaneEarly && (G != 16 || sizeof(scalar_t) == 2);
// Which launches the lane kernels take, by rows and k (below these the warp kernels: a launch of
// few rows leaves a lane kernel's warps fewer than the SMs hold, each with several rows' serial
// work).  H200, benchmarks/dispatch.py, lane / warp kernel time (notes v54): four lanes (rows of
// 256) at k = 96 / 128, 2^14 and 2^16 rows: exact fp32 0.89-0.95x, bf16 0.88-0.91x, but max_iter=4
// fp32 0.97-1.04x, bf16 0.97-1.05x (those keep the bound of notes v32: from 2^17 rows past k = 64).
// Eight lanes (512), 2^14 rows, k = 16 / 32: exact fp32 0.95 / 0.86x, bf16 0.80 / 0.71x, max_iter=4
// 0.93-0.97x.  Sixteen lanes (768): exact fp32 at 2^14 rows 1.10 / 1.04 / 1.00 / 0.93x (k = 16 /
// 32 / 64 / 128), at 2^16 rows 1.02 / 0.93 / 0.92 / 0.86x, k = 16 at 2^18 / 2^20 rows 1.00 / 0.94x
// (bf16 1.05 / 0.99 / 0.94 / 0.88x, 1.03 / 0.91 / 0.87 / 0.80x, 0.94 / 0.89x); bf16 max_iter=4 at
// 2^14 rows 1.00-1.06x, at 2^16 0.96 / 1.00 / 1.03 / 1.02x, k = 16 at 2^18 / 2^20 0.88 / 0.85x.
constexpr int64_t kLaneMinRows = int64_t(1) << 14;
constexpr int kLaneFourK = 64;  // four lanes at any rows up to this k
constexpr int64_t kLaneFourEarlyRows = int64_t(1) << 17;
constexpr int64_t kLaneSixteenRows = int64_t(1) << 18;     // exact, every k
constexpr int64_t kLaneSixteenMidRows = int64_t(1) << 16;  // exact, k > kLaneSixteenMinK
constexpr int kLaneSixteenMinK = 24;
constexpr int kLaneSixteenSmallK = 48;  // exact from kLaneMinRows rows
constexpr int64_t kLaneSixteenEarlyRows = int64_t(1) << 17;
static_assert((kLaneStageWords * 4) % 512 == 0 && (kLaneWarpWords * 4) % 512 == 0,
              "counters 512-byte aligned");

// The value kernel's buffers for the rows this path leaves (VPT values a lane), placed over the
// staging once the warp's rows are flushed.
template <int VPT, bool kSorted>
struct LaneFallback {
  using B = WarpValueBufs<VPT, kSorted>;
  static constexpr int kValAt = 0;
  static constexpr int kIdxAt = kValAt + kCandBuf;
  static constexpr int kOvAt = kIdxAt + kCandBuf;
  static constexpr int kOiAt = kOvAt + B::kStageRow;
  static constexpr int kSortAt = kOiAt + B::kStageRow;
  static_assert(kOvAt % 4 == 0 && kSortAt % 4 == 0, "16-byte aligned fallback buffers");
  static_assert(kSortAt + 2 * B::kSortSlots <= kLaneStageWords, "fallback fits");
};

// The 16-bit element of a raw half-word.
template <typename scalar_t>
__device__ __forceinline__ float lane_half_bits(uint32_t bits) {
  if constexpr (std::is_same_v<scalar_t, __half>)
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  else
    return __uint_as_float(bits << 16);  // bfloat16: the upper half of a float
}

// The VW elements of a 16-byte load as compute floats.
template <typename scalar_t>
__device__ __forceinline__ void lane_unpack(const uint4& raw, float* f) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(scalar_t) == 4) {
      f[i] = __uint_as_float(w[i]);
    } else {
      f[2 * i] = lane_half_bits<scalar_t>(w[i] & 0xFFFFu);
      f[2 * i + 1] = lane_half_bits<scalar_t>(w[i] >> 16);
    }
  }
}

// A staged (directed) value as the element it was staged from.  fp32 and bf16 bit for bit, a NaN's
// sign and payload too (the staging and directed() move bits only; a bf16 element is the upper half
// of its float), so the flush needs no re-read of NaN from global memory (2^18 rows of 512, NaN
// mixed in: those re-reads were a quarter of the kernel's stall samples, notes v43).  fp16 rounds
// back exactly for numbers; its NaN are re-read by the caller (the conversion may quiet them).
template <typename scalar_t, bool kLargest>
__device__ __forceinline__ scalar_t lane_unstage(float v) {
  const float d = directed<kLargest>(v);
  if constexpr (std::is_same_v<scalar_t, __nv_bfloat16>) {
    __nv_bfloat16_raw r;
    r.x = static_cast<unsigned short>(__float_as_uint(d) >> 16);
    return __nv_bfloat16(r);
  } else {
    return Elem<scalar_t>::from_compute(d);
  }
}

// Word of element c of staged row rr.
template <int G>
__device__ __forceinline__ int lane_stage_at(int rr, int c) {
  using C = LaneCfg<G>;
  if constexpr (C::kE == 64)
    return rr * C::kRowWords + (c >> 6) * kLaneChunk + (c & 63);
  else
    return rr * C::kRowWords + (c / C::kE) * C::kChunk + c % C::kE;
}

// Four loaded elements as directed floats into 16-byte aligned staging words.  (One 16-byte
// store by asm: as a float4 assignment the compiler split it into four where it could not prove
// the address aligned.)
template <bool kLargest>
__device__ __forceinline__ void lane_store4(float* p, const float* f) {
#if defined(__CUDA_ARCH__)
  asm volatile(
      "st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(uint32_t(__cvta_generic_to_shared(p))),
      "f"(directed<kLargest>(f[0])), "f"(directed<kLargest>(f[1])), "f"(directed<kLargest>(f[2])),
      "f"(directed<kLargest>(f[3]))
      : "memory");
#else  // (the warp emulator, tests/emu)
  for (int i = 0; i < 4; ++i) p[i] = directed<kLargest>(f[i]);
#endif
}

// An opaque copy of x: what is computed from it is not hoisted out of the row loop (where it
// would be kept in spilled registers across the loop, notes v34).
__device__ __forceinline__ int lane_opaque(int x) {
#if defined(__CUDA_ARCH__)
  int r;
  asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(x));
  return r;
#else
  return x;
#endif
}

// Stages the warp's rows (nrows of them from src, contiguous) as directed floats; rows past
// nrows as zeros; the slots past cols as copies of the row's first element (kept out of the
// counts and the selection by the caller).  src is 16-byte aligned (the launch checks it).
template <typename scalar_t, int G, bool kLargest>
__device__ __forceinline__ void lane_stage_rows(const scalar_t* __restrict__ src, int nrows,
                                                int cols, float* sf) {
  using E = Elem<scalar_t>;
  using C = LaneCfg<G>;
  constexpr int VW = 16 / sizeof(scalar_t);
  constexpr int kLoads = C::kRows * C::kCols / VW / 32;  // 16-byte loads a lane, at most
  const int lane = threadIdx.x & 31;
  const uint4* src4 = reinterpret_cast<const uint4*>(src);
  if (nrows == C::kRows && cols == C::kCols) {
    // Every load first, then the stores: 16 (fp32) or 8 (16-bit) 16-byte loads a lane in flight.
    // 16-bit rows in 64-element chunks: a lane's vector is 32 staging bytes (two stores), and the
    // vectors of one chunk start 8 words apart, so a quarter warp's eight of a chunk put two lanes
    // on each of four bank quads; with bits 2 and 3 of the lane swapped, a quarter warp stores four
    // vectors of each of two chunks (68 words apart: the other four quads).
    const int p = sizeof(scalar_t) == 2 && C::kE == 64
                      ? (lane & ~12) | ((lane & 4) << 1) | ((lane & 8) >> 1)
                      : lane;
    uint4 raw[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) raw[i] = __ldg(src4 + 32 * i + p);
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int e = (32 * i + p) * VW;
      float f[VW];
      lane_unpack<scalar_t>(raw[i], f);
#pragma unroll
      for (int q = 0; q < VW; q += 4)
        if constexpr (C::kE == 64)
          lane_store4<kLargest>(sf + lane_stage_at<G>(e >> C::kLogCols, (e & (C::kCols - 1)) + q),
                                f + q);
        else  // (e and the row a constant once unrolled)
          lane_store4<kLargest>(sf + lane_stage_at<G>(e / C::kCols, e % C::kCols + q), f + q);
    }
  } else if (nrows == C::kRows && cols % VW == 0) {
    // Rows of whole 16-byte vectors (every eight- and sixteen-lane launch; four-lane rows of a
    // multiple of 4 (fp32) or 8 (16-bit) elements): loaded row by row, all before the first store.
    // Vector v of a row lies in one chunk (VW divides kE), at a staging word that depends on (lane,
    // i) only: computed once for the warp's rows, not for each vector with its row and column
    // stepped (2^18 rows of 744: 1.28x the time of 768, notes v42).
    constexpr int kRowLoads = C::kCols / VW / 32;  // a row's 16-byte loads a lane, at most
    const int nvec = cols / VW;
    const int vl = lane_opaque(lane);  // (what depends on it only is not hoisted out of the rows)
    uint4 raw[C::kRows][kRowLoads];
#pragma unroll
    for (int rr = 0; rr < C::kRows; ++rr) {
      const uint4* const row4 = reinterpret_cast<const uint4*>(src + rr * cols);
#pragma unroll
      for (int i = 0; i < kRowLoads; ++i)
        raw[rr][i] = 32 * i + vl < nvec ? __ldg(row4 + 32 * i + vl) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int i = 0; i < kRowLoads; ++i) {
      if (32 * i + vl >= nvec) break;
      const int at = lane_stage_at<G>(0, (32 * i + vl) * VW);
#pragma unroll
      for (int rr = 0; rr < C::kRows; ++rr) {
        float f[VW];
        lane_unpack<scalar_t>(raw[rr][i], f);
#pragma unroll
        for (int q = 0; q < VW; q += 4)
          lane_store4<kLargest>(sf + rr * C::kRowWords + at + q, f + q);
      }
    }
  } else if (nrows == C::kRows && (C::kRows * cols * int(sizeof(scalar_t))) % 16 == 0) {
    // Rows not in whole vectors, their block in whole 16-byte vectors (with 8 rows a warp always;
    // with 4, unless 16-bit rows of odd length, whose blocks are not 16-byte aligned either), all
    // loaded before the first store.  The vectors' (row, column) stepped by 32 * VW elements (at
    // most two rows a step), stored element by element (a vector may cross a row or a chunk).
    const int nvec = C::kRows * cols / VW;
    uint4 raw[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i)
      raw[i] = 32 * i + lane < nvec ? __ldg(src4 + 32 * i + lane) : make_uint4(0u, 0u, 0u, 0u);
    int rr = 0, c0 = lane_opaque(lane * VW);
    if (c0 >= cols) {  // (lane * VW < 256 < 2 * cols)
      c0 -= cols;
      ++rr;
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      if (32 * i + lane >= nvec) break;
      float f[VW];
      lane_unpack<scalar_t>(raw[i], f);
#pragma unroll
      for (int q = 0; q < VW; ++q) {
        const bool next = c0 + q >= cols;  // (VW < cols: at most one row boundary)
        sf[lane_stage_at<G>(rr + int(next), c0 + q - (next ? cols : 0))] = directed<kLargest>(f[q]);
      }
      c0 += 32 * VW;
#pragma unroll
      for (int t = 0; t < 2; ++t)
        if (c0 >= cols) {
          c0 -= cols;
          ++rr;
        }
    }
  } else {
    // The last, partial block of rows (or a block that is not whole vectors): element by element,
    // rows past nrows zero.
    const int n = nrows * cols;
    const float inv_cols = 1.f / float(cols);
    // (From an opaque lane: its first row, hoisted out of the block loop, was kept in a spilled
    // register.)
    for (int e = lane_opaque(lane); e < C::kRows * cols; e += 32) {
      const int r = int((float(e) + 0.5f) * inv_cols);
      sf[lane_stage_at<G>(r, e - r * cols)] =
          e < n ? directed<kLargest>(E::to_compute(src[e])) : 0.f;
    }
  }
  if (cols < C::kCols) {
    __syncwarp();
    // The rows' first elements read before any padding store (the loads issue together).
    float first[C::kRows];
#pragma unroll
    for (int rr = 0; rr < C::kRows; ++rr) first[rr] = sf[lane_stage_at<G>(rr, 0)];
#pragma unroll
    for (int rr = 0; rr < C::kRows; ++rr)
      for (int c = cols + lane_opaque(lane); c < C::kCols; c += 32)  // (opaque: as above)
        sf[lane_stage_at<G>(rr, c)] = first[rr];
  }
  __syncwarp();
}

// The order-preserving key of a value that is not NaN (+0 for -0: equal values, one key).
__device__ __forceinline__ uint32_t lane_okey(float v) {
  const uint32_t b = __float_as_uint(v + 0.f);
  return b ^ (uint32_t(int32_t(b) >> 31) | 0x80000000u);
}

// An element as a 64-bit key {low: 0xFFFF - index, high: the directed value's order-preserving
// bits}: a larger key ranks first (larger value, then lower index); +0 for -0 (equal values).
// NaN: one key for all, whatever the sign and payload, above every value (kNanTop: the k largest,
// where NaN ranks first) or below (the k smallest, where it ranks last).  Among b*'s members the
// NaN place does not matter: a bucket of NaN holds nothing else.
template <bool kNanTop = true>
__device__ __forceinline__ uint2 lane_member_key(float v, int idx) {
  return make_uint2(0xFFFFu - uint32_t(idx), v != v ? (kNanTop ? 0xFFFFFFFFu : 0u) : lane_okey(v));
}

// The rotation of row g's counters: bucket b is counted in counter (b + lane_rot(g)) mod 256 of
// the row.  Rows' counters lie 256 or 512 bytes apart, so unrotated every row's bucket 0 is in bank
// 0 and its bucket 255 in bank 31, and in rows of few distinct values (two values: buckets 0 and
// 255 only) a RED's lanes of all rows queue on those two banks (H100, 2^18 rows of 256, bf16, k =
// 16: the counting took 4.6x the stall samples of randn rows', notes v45).  Rotated by 16 buckets a
// row, the rows' counters of a bucket lie in distinct banks.  The rotation is u's: lane_map's base
// is 2^23 + lane_rot(g), so u's low byte is the counter's and u compares with 2^23 + rot + b*.
__device__ __forceinline__ uint32_t lane_rot(int g) { return 16u * uint32_t(g); }
__device__ __forceinline__ uint32_t lane_ubits(int g) { return 0x4B000000u + lane_rot(g); }

// The bucket map of a row's directed value v as the integer-valued float 2^23 + bucket (the
// bucket is its low byte).  Finite warps: (top - v) * scale, 0 for the row's largest value.
// Warps with NaN or +-inf (kNonFinite): NaN 0 (kNanFirst: the k largest) or 255, +inf 1, the finite
// values 2..253 from top, -inf 254, by clamps (scale > 0): the infinities come out of the map as
// -inf and +inf and clamp to 1 and 254; NaN passes the NaN-propagating clamps and goes to 0 or 255
// by the last one (5 instructions an element; tests and selects on v took 8, notes v43).  One
// definition for the first level and the crowded levels.  lift (a power of two, lane_lift_of): top
// and scale are in units of v * lift; top - v * lift rounds once, as top - v does with lift 1.
// base: 2^23 plus the row's rotation (lane_rot: u's bits are the counter's byte address, rotated,
// and u itself is still ordered).
template <bool kNonFinite, bool kNanFirst = true>
__device__ __forceinline__ float lane_map(float top, float scale, float base, float v,
                                          float lift = 1.f) {
  if constexpr (!kNonFinite) {
    return fmaf(fmaf(-v, lift, top), scale, base);
  } else {
    const float c =
        min_nan(max_nan(fmaf(fmaf(-v, lift, top), scale, base + 2.f), base + 1.f), base + 254.f);
    return kNanFirst ? fmaxf(c, base) : fminf(c, base + 255.f);
  }
}

// The first map of heavy-tailed rows (lane_heavy): buckets even in the logarithm of the magnitude,
// where linear buckets put most of such a row in one (randn^5 at k = 64: b* ~150 of 256 elements,
// a crowded level; here ~5).  lane_tail_key is a signed key, order-preserving and equal for equal
// values: the magnitude's bits above those of eps (the row's largest magnitude times 2^-32, so
// that the key span holds ~64 binades, not all of float's), 0 below eps, the sign v's (-0 and +0:
// 0).  lane_tail_map is 2^23 + bucket, the bucket the key's distance below the row's top key kt
// shifted right by sh (the key span's bit length less 8): 0..255, 128 or more of them used (ubits:
// the bits of lane_map's base).
__device__ __forceinline__ uint32_t lane_tail_key(float v, float eps, uint32_t eb) {
  const uint32_t m = uint32_t(__float_as_int(v) >> 31);
  return ((__float_as_uint(fmaxf(fabsf(v), eps)) - eb) ^ m) - m;
}
__device__ __forceinline__ float lane_tail_map(float v, float eps, uint32_t eb, uint32_t kt, int sh,
                                               uint32_t ubits) {
  return __uint_as_float(((kt - lane_tail_key(v, eps, eb)) >> sh) + ubits);
}

// Whether a finite row's warp takes lane_tail_map: a sample's mean magnitude (sa: the sum of ns
// elements' magnitudes, times 2^-8) under a tenth of the row's largest magnitude (amax), as in rows
// of heavy tails around 0 (randn^3, randn^5, lognormal, Cauchy: 0.0-0.14 with every eighth element
// of 256; randn rows 0.12-0.46, uniform ones 0.3-0.7).  Rows whose tail is not around 0 keep the
// linear map (and the crowded levels).
__device__ __forceinline__ bool lane_heavy(float sa, int ns, float amax) {
  return sa < 0.1f * 0x1p-8f * float(ns) * amax;  // (sa: magnitudes times 2^-8)
}

// A row whose values span less than 2^-64 (denormals; a few ulps of tiny values) would need a
// scale above FLT_MAX, and one whose span passes FLT_MAX (values near +-FLT_MAX) has no finite
// range: the map works on the values times 2^64, or times 2^-2, instead.  2^64 is exact (such a
// row holds no value above 2^-39 in magnitude: hi - lo is at least an ulp of either end); 2^-2 may
// round subnormal values but keeps their order, all the map needs (equal values share a bucket,
// larger ones never come later: members are ranked by their own values).
__device__ __forceinline__ float lane_lift_of(float lo, float hi) {
  const float span = hi - lo;
  return lo < hi && span < 0x1p-64f                                       ? 0x1p64f
         : span > FLT_MAX && fabsf(lo) <= FLT_MAX && fabsf(hi) <= FLT_MAX ? 0x1p-2f
                                                                          : 1.f;
}

// The lane's elements u (and its row's lo, hi) lifted by lane_lift_of; warps without such a row
// skip it.
template <int N>
__device__ __forceinline__ void lane_lift(float (&u)[N], float& lo, float& hi) {
  const float p = lane_lift_of(lo, hi);
  if (__any_sync(kFullMask, p != 1.f)) {
#pragma unroll
    for (int j = 0; j < N; ++j) u[j] *= p;
    lo *= p;
    hi *= p;
  }
}

// acc plus the counters of one word (four bytes or two halves).
template <int W>
__device__ __forceinline__ int lane_word_sum(uint32_t w, int acc) {
  return W == 1 ? int(__dp4a(w, 0x01010101u, uint32_t(acc)))
                : int(__dp2a_lo(w, 0x0101u, uint32_t(acc)));
}

// The bucket of the kk-th element of a row (kk >= 1, the same in the row's G lanes) from its 256
// counters (kW bytes each, rotated by lane_rot(g)): the lanes' totals over their 256 / G buckets
// (each lane's reads in an order that puts a quarter warp's in distinct bank quads), the group
// scan, the owner lane's buckets split over the group and a second scan.
// Called by the whole warp (its shuffles); found is false when the counts hold fewer than kk
// elements.
struct LaneCut {
  int bstar, nn, chi;  // the bucket, its count, the count of the buckets before it
  bool found;
};
template <int G>
__device__ __forceinline__ LaneCut lane_bucket_cut(const uint32_t* hrow, int kk, int g, int l) {
  using C = LaneCfg<G>;
  // A lane's buckets in kLaneHistWords words: 16 with four or eight lanes (64 bytes or 32 halves),
  // 8 with sixteen (16 halves).
  constexpr int kQ = C::kLaneHistWords / 4;
  constexpr int kQuads = C::kHistWords / 4;
  // The row's rotation in quads (16 buckets: one quad of bytes, two of halves); a quarter warp is
  // two rows of four lanes (of one row with eight or sixteen: the rotation shifts its reads alike).
  const int qr = int(lane_rot(g)) * C::kW / 16;
  const int rot = G == 4 ? 2 * ((l >> 1) ^ (g & 1)) : G == 8 ? (l >> 1) : (l >> 2);
  int tot = 0;
#pragma unroll
  for (int i = 0; i < kQ; ++i) {
    const uint4 q = *reinterpret_cast<const uint4*>(
        hrow + 4 * ((kQ * l + ((i + rot) & (kQ - 1)) + qr) & (kQuads - 1)));
    tot = lane_word_sum<C::kW>(q.x, tot);
    tot = lane_word_sum<C::kW>(q.y, tot);
    tot = lane_word_sum<C::kW>(q.z, tot);
    tot = lane_word_sum<C::kW>(q.w, tot);
  }
  const int inc = lane_group_inclusive<G>(tot, l);
  const int ol =
      __ffs((__ballot_sync(kFullMask, inc - tot < kk && kk <= inc) >> (G * g)) & C::kGroupBits) - 1;
  const int oexc = __shfl_sync(kFullMask, inc - tot, G * g + (ol & (G - 1)));
  // The owner's 256 / G buckets, 256 / G^2 a lane (16 bytes, 4 halves or 1 half).
  constexpr int kB = 256 / (G * G);
  uint32_t c[kB];
  const int wr = 4 * qr;  // (the rotation in words)
  if constexpr (G == 16) {
    const uint32_t q = hrow[(C::kLaneHistWords * (ol & (G - 1)) + (l >> 1) + wr) & 127];
    c[0] = (q >> (16 * (l & 1))) & 0xFFFFu;
  } else if constexpr (C::kW == 1) {
    const uint4 q = *reinterpret_cast<const uint4*>(hrow + ((16 * (ol & 3) + 4 * l + wr) & 63));
    const uint32_t qw[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int t = 0; t < 4; ++t) c[4 * i + t] = (qw[i] >> (8 * t)) & 0xFFu;
  } else {
    const uint2 q =
        *reinterpret_cast<const uint2*>(hrow + ((16 * (ol & (G - 1)) + 2 * l + wr) & 127));
    c[0] = q.x & 0xFFFFu;
    c[1] = q.x >> 16;
    c[2] = q.y & 0xFFFFu;
    c[3] = q.y >> 16;
  }
  int st = 0;
#pragma unroll
  for (int i = 0; i < kB; ++i) st += int(c[i]);
  const int inc2 = lane_group_inclusive<G>(st, l) + oexc;
  const int sl =
      __ffs((__ballot_sync(kFullMask, inc2 - st < kk && kk <= inc2) >> (G * g)) & C::kGroupBits) -
      1;
  int run = inc2 - st, bs = 0, nn = 0, chi = 0;
#pragma unroll
  for (int m = 0; m < kB; ++m) {
    const int nr = run + int(c[m]);
    const bool hit = run < kk && kk <= nr;
    bs = hit ? m : bs;
    nn = hit ? int(c[m]) : nn;
    chi = hit ? run : chi;
    run = nr;
  }
  const int src = G * g + (sl & (G - 1));
  LaneCut r;
  r.bstar = (256 / G) * (ol & (G - 1)) + kB * (sl & (G - 1)) + __shfl_sync(kFullMask, bs, src);
  r.nn = __shfl_sync(kFullMask, nn, src);
  r.chi = __shfl_sync(kFullMask, chi, src);
  r.found = ol >= 0 && sl >= 0;
  return r;
}

// Bucket levels after the first, for a crowded b* (more than 32 members, some taken).
constexpr int kLaneLevels = 4;

// The lane's share of a crowded row's members after the bucket levels: a (taken), m (members of
// the last level's bucket, none taken yet), nn (the row's count of them), need (how many of them
// to take); resolved false: left to the fallback.
struct LaneCrowd {
  uint32_t a0, a1, m0, m1;
  int nn, need;
  bool resolved;
};

// Member j of a lane's mask pair.
__device__ __forceinline__ bool lane_has(uint32_t m0, uint32_t m1, int j) {
  return ((j < 32 ? m0 : m1) >> (j % 32)) & 1u;
}

// f(j) for each member j of a lane's mask pair, lowest first.
template <typename F>
__device__ __forceinline__ void lane_each_set(uint32_t m0, uint32_t m1, F&& f) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    uint32_t m = h ? m1 : m0;
    while (m) {
      const int j = __ffs(m) - 1 + 32 * h;
      m &= m - 1;
      f(j);
    }
  }
}

// The lowest q set bits of m (0 <= q <= popc(m)), by a binary search on the count below a bit.
__device__ __forceinline__ uint32_t lane_first_bits(uint32_t m, int q) {
  if (q <= 0) return 0u;
  if (q >= __popc(m)) return m;
  // p: the largest position with fewer than q set bits below it, which is the q-th set bit.
  int p = 0;
#pragma unroll
  for (int s = 16; s > 0; s >>= 1)
    if (__popc(m & ((1u << (p + s)) - 1u)) < q) p += s;
  return m & ((2u << p) - 1u);
}

// Members (m0, m1) of one key taken by index: the lane's share of the row's first `need` (before:
// the members of the row's earlier lanes, mc: the lane's), added to the take bits (a0, a1).
__device__ __forceinline__ void lane_take_first(uint32_t m0, uint32_t m1, int need, int before,
                                                int mc, uint32_t& a0, uint32_t& a1) {
  const int q = min(max(need - before, 0), mc);
  const int c0 = __popc(m0);
  a0 |= lane_first_bits(m0, min(q, c0));
  a1 |= lane_first_bits(m1, max(q - c0, 0));
}

// The word (a byte offset from the row's counters) and the shift of bucket `bits & 0xFF` (u's
// bits) among counters of W bytes.
template <int W>
__device__ __forceinline__ uint32_t lane_counter_word(uint32_t bits) {
  return W == 1 ? bits & 0xFCu : (bits << 1) & 0x1FCu;
}
template <int W>
__device__ __forceinline__ uint32_t lane_counter_add(uint32_t bits, uint32_t n) {
  // n << the counter's bit offset: 8 (b mod 4) for bytes, 16 (b mod 2) for halves.
  return __funnelshift_l(0u, n, bits << (W == 1 ? 3 : 4));
}
// n (< 256) in byte `bits & 3`: one PRMT (its byte-extract mode b4e takes the byte from the
// selector's two low bits), where lane_counter_add's shift is two instructions (the counts' loops:
// one instruction an element of four).
__device__ __forceinline__ uint32_t lane_byte_at(uint32_t bits, uint32_t n) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32.b4e %0, %1, %2, %3;" : "=r"(d) : "r"(n), "r"(0u), "r"(bits));
  return d;
#else
  return n << (8 * (bits & 3u));
#endif
}
// One in the counter of bucket `bits & 0xFF` among counters of W bytes.
template <int W>
__device__ __forceinline__ uint32_t lane_counter_one(uint32_t bits) {
  if constexpr (W == 1)
    return lane_byte_at(bits, 1u);
  else
    return lane_counter_add<W>(bits, 1u);
}

// Adds v to the shared word at byte address addr.
__device__ __forceinline__ void lane_red(uint32_t addr, uint32_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
#elif defined(RTOPK_WARP_EMU)
  rtopk_emu_shared_add(addr, v);
#endif
}

// Adds n to the counter of bucket `bits & 0xFF` among a row's counters at hbase (n wraps: 0u - c
// takes c back).
template <int W>
__device__ __forceinline__ void lane_count(uint32_t hbase, uint32_t bits, uint32_t n) {
  lane_red(hbase | lane_counter_word<W>(bits), lane_counter_add<W>(bits, n));
}
template <int W>
__device__ __forceinline__ void lane_count_one(uint32_t hbase, uint32_t bits) {
  lane_red(hbase | lane_counter_word<W>(bits), lane_counter_one<W>(bits));
}

// lane_count of one where p, else an add to the lane's spare word (spare: its byte address,
// outside the counters; the lanes' spare words in distinct banks).  No branch: ptxas branches
// around a predicated shared atomic (~5 instructions more an element).  Not an addend of 0 in the
// element's own word: where the elements left out are one value (rows of NaN or -inf) all the
// warp's lanes add to one bank, 2.1-2.5x the time of randn rows (notes v39).
template <int W>
__device__ __forceinline__ void lane_count_if(uint32_t hbase, uint32_t bits, bool p,
                                              uint32_t spare) {
  lane_red(p ? hbase | lane_counter_word<W>(bits) : spare, lane_counter_one<W>(bits));
}
// lane_count of one where p (the finite elements of a warp with NaN or +-inf), else one in byte
// `bits & 3` of the lane's spare word (its NaN, +inf and -inf, counted apart there).
template <int W>
__device__ __forceinline__ void lane_count_class(uint32_t hbase, uint32_t bits, bool p,
                                                 uint32_t spare) {
  lane_red(p ? hbase | lane_counter_word<W>(bits) : spare,
           W == 1 || p ? lane_counter_one<W>(bits) : lane_byte_at(bits, 1u));
}
// The lane's four padding words after its kE staged elements (vrow: its chunk), which nothing
// stages: its spare word (one of them, chosen so that the 32 lanes' spare words fall in distinct
// banks: at 68 or 52 words a chunk, lanes 0..7's chunks start in eight distinct multiples of four
// banks and lane + 8's in lane's) and, once the counts are done, its two take-bit words (the
// first two).
template <int G>
__device__ __forceinline__ uint32_t* lane_pad(const float* vrow) {
  return reinterpret_cast<uint32_t*>(const_cast<float*>(vrow)) + LaneCfg<G>::kE;
}
template <int G>
__device__ __forceinline__ uint32_t* lane_spare_word(const float* vrow) {
  const int lane = threadIdx.x & 31;
  return lane_pad<G>(vrow) + ((lane >> 3) & 3);
}
// (Its byte address, for the atomics.)
template <int G>
__device__ __forceinline__ uint32_t lane_spare(const float* vrow) {
  return uint32_t(__cvta_generic_to_shared(lane_spare_word<G>(vrow)));
}

// Zeroes the warp's rows' counters (the first kRows * kHistWords words of aux) by whole-warp
// 16-byte stores over contiguous words: a quarter warp's in distinct bank quads (each lane zeroing
// its own row's share put four lanes on a quad: 16 wavefronts a store instead of 4, notes v49).
// Called by the whole warp.
template <int G>
__device__ __forceinline__ void lane_zero_counters(uint32_t* aux) {
  using C = LaneCfg<G>;
  static_assert(C::kRows * C::kHistWords % 128 == 0, "whole warp stores");
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < C::kRows * C::kHistWords / 128; ++i)
    *reinterpret_cast<uint4*>(aux + 128 * i + 4 * lane) = make_uint4(0u, 0u, 0u, 0u);
}

// f(j, v) for the lane's E staged elements, read 16 bytes at a time (j a constant once unrolled).
template <int E = kLaneE, typename F>
__device__ __forceinline__ void lane_each(const float* vrow, F&& f) {
#pragma unroll
  for (int i = 0; i < E / 4; ++i) {
    const float4 q = *reinterpret_cast<const float4*>(vrow + 4 * i);
    f(4 * i, q.x);
    f(4 * i + 1, q.y);
    f(4 * i + 2, q.z);
    f(4 * i + 3, q.w);
  }
}

// Bit j of m (element j: word j / 32, bit j % 32) set where u[j] < c, for integer-valued u and c
// (u - c is exact; +0 where equal): each difference's sign shifted in by one funnel shift, the
// elements taken last to first (an FADD and an SHF an element, where a compare, a select of the
// bit and a share of an add to merge the bits took ~2.5, notes v45).
template <int E>
__device__ __forceinline__ void lane_below(const float (&u)[E], float c, uint32_t (&m)[2]) {
  m[0] = m[1] = 0u;
#pragma unroll
  for (int j = E - 1; j >= 0; --j)
    m[j / 32] = __funnelshift_l(__float_as_uint(u[j] - c), m[j / 32], 1);
}

// Bits of the finite elements u >= t (of any float values, not only buckets): ~lane_below, whose
// sign of u - t is that of u < t for finite values (no flush to zero), but for u = -0.0, t = +0.0
// (-0 - +0 = -0): a zero t is taken as -0.0 (u - -0 = u + +0, +0 for either zero).
template <int E>
__device__ __forceinline__ void lane_at_least(const float (&u)[E], float t, uint32_t (&m)[2]) {
  lane_below(u, t == 0.f ? -0.f : t, m);
  m[0] = ~m[0];
  m[1] = ~m[1];
}

// Resolves crowded rows inside the lane path.  Each level: the members' min and max (equal:
// the first `need` by index, done), 256 counters over that range (the same bucket map as the
// first level, so equal values share a bucket and larger values never come later), the bucket of
// the need-th member by lane_bucket_cut; the members of the buckets before it are taken, those of
// it stay members.  Done when at most 32 stay (ranked by the caller) or all are needed.  Each level
// divides the members' range by ~255; a row still crowded after kLaneLevels levels (or whose range
// leaves float range) is left to the fallback.  Out of line: randn rows do not pay registers for
// it.  Called by the whole warp; crowded false for rows that have no crowded b*; tied: members
// known to be equal (NaN or infinite), taken by index at once.
template <int G>
static __device__ __noinline__ LaneCrowd lane_crowded(const float* vrow, uint32_t* hrow,
                                                      uint32_t hbase, uint32_t a0, uint32_t a1,
                                                      uint32_t m0, uint32_t m1, int nn, int need,
                                                      bool crowded, bool tied, int g, int l) {
  const uint32_t spare = lane_spare<G>(vrow);
  const float ub = __uint_as_float(lane_ubits(g));  // (the map's base: the row's rotation)
  bool act = crowded, resolved = false;
  uint32_t r0 = 0u, r1 = 0u;  // the members left to the caller's ranking, once resolved
  if (!act) m0 = m1 = 0u;     // (rows without work: no members; their adds go to spare words)
  for (int level = 0;; ++level) {
    // The members' range (not needed when every row left is tied).
    float lo = __int_as_float(0x7f800000), hi = -lo;
    if (__any_sync(kFullMask, act && !tied))
      lane_each<LaneCfg<G>::kE>(vrow, [&](int j, float v) {
        const bool in = lane_has(m0, m1, j);
        lo = in ? fminf(lo, v) : lo;
        hi = in ? fmaxf(hi, v) : hi;
      });
#pragma unroll
    for (int o = 1; o < G; o *= 2) {
      lo = fminf(lo, __shfl_xor_sync(kFullMask, lo, o));
      hi = fmaxf(hi, __shfl_xor_sync(kFullMask, hi, o));
    }
    const int mc = __popc(m0) + __popc(m1);
    const int before = lane_group_inclusive<G>(mc, l) - mc;
    if (act && (lo == hi || tied)) {
      lane_take_first(m0, m1, need, before, mc, a0, a1);  // (all equal)
      nn = need = 0;
      act = false;
      resolved = true;
    }
    // (As the first level's scale: (hi - v) * scale < 255 for every member; a tiny range lifted.)
    const float lift = lane_lift_of(lo, hi);
    const float top = hi * lift, span = top - lo * lift;
    const float scale = 255.f / span * (1.f - 0x1p-16f);
    if (act && !(level < kLaneLevels && scale <= FLT_MAX && span * scale >= 1.f)) act = false;
    if (!act) m0 = m1 = 0u;
    if (!__any_sync(kFullMask, act)) break;
#pragma unroll
    for (int i = 0; i < LaneCfg<G>::kLaneHistWords / 4; ++i)
      *reinterpret_cast<uint4*>(hrow + LaneCfg<G>::kLaneHistWords * l + 4 * i) =
          make_uint4(0u, 0u, 0u, 0u);
    __syncwarp();
    lane_each<LaneCfg<G>::kE>(vrow, [&](int j, float v) {
      lane_count_if<LaneCfg<G>::kW>(hbase,
                                    __float_as_uint(lane_map<false>(top, scale, ub, v, lift)),
                                    lane_has(m0, m1, j), spare);
    });
    __syncwarp();
    const LaneCut cut = lane_bucket_cut<G>(hrow, max(need, 1), g, l);
    __syncwarp();  // the counters are read (the next level zeroes them)
    // Split: the members of buckets before the cut are taken, those of the cut stay.
    const float cs = __uint_as_float(lane_ubits(g) + uint32_t(cut.bstar));
    const float ch = __uint_as_float(lane_ubits(g) + uint32_t(cut.bstar) + 1u);
    uint32_t lt[2] = {0u, 0u}, le[2] = {0u, 0u};
    lane_each<LaneCfg<G>::kE>(vrow, [&](int j, float v) {
      const float u = lane_map<false>(top, scale, ub, v, lift);
      lt[j / 32] |= u < cs ? 1u << (j % 32) : 0u;
      le[j / 32] |= u < ch ? 1u << (j % 32) : 0u;
    });
    if (act && cut.found) {
      a0 |= lt[0] & m0;
      a1 |= lt[1] & m1;
      m0 &= le[0] & ~lt[0];
      m1 &= le[1] & ~lt[1];
      nn = cut.nn;
      need -= cut.chi;
      if (nn <= 32 || need == nn) {
        act = false;
        resolved = true;
        r0 = m0;
        r1 = m1;
      }
    } else {
      act = false;
    }
    if (!act) m0 = m1 = 0u;
    if (!__any_sync(kFullMask, act)) break;
  }
  return LaneCrowd{a0, a1, r0, r1, nn, need, resolved};
}

// A row's list of n keys (lane_member_key), n odd, ends with a key below every member: the ranking
// reads pairs.  (Written by the group's last lane; n = 0: no list.)
template <int G>
__device__ __forceinline__ void lane_list_pad(uint2* lk, int n, int l) {
  if (l == G - 1 && (n & 1)) lk[n] = make_uint2(0u, 0u);
}

// A key of lane_member_key as one integer.
__device__ __forceinline__ uint64_t lane_key64(uint2 e) { return (uint64_t(e.y) << 32) | e.x; }

// Adds to rank[t] the number of keys in a list of n (lane_member_key; an odd n padded by a zero
// key, below every member) above kv[t]: the list read in pairs, each pair compared with all N.
template <int N>
__device__ __forceinline__ void lane_keys_above(const uint2* lk, int n, const uint64_t (&kv)[N],
                                                int (&rank)[N]) {
  const uint4* const lk2 = reinterpret_cast<const uint4*>(lk);
  for (int q = 0; q < (n + 1) / 2; ++q) {
    const uint4 e = lk2[q];
    const uint64_t k0 = lane_key64(make_uint2(e.x, e.y)), k1 = lane_key64(make_uint2(e.z, e.w));
#pragma unroll
    for (int t = 0; t < N; ++t) rank[t] += int(k0 > kv[t]) + int(k1 > kv[t]);
  }
}

// Ranks items first + l + G t (t < N) of a row's list of n keys (lane_member_key; n = 0: an empty
// list) against the whole list, and calls f(rank, column) for each of them in the list (rank: the
// keys above it).
template <int N, int G, typename F>
__device__ __forceinline__ void lane_rank_items(const uint2* lk, int n, int first, int l, F&& f) {
  uint64_t kv[N];
  int rank[N];
#pragma unroll
  for (int t = 0; t < N; ++t) {
    kv[t] = lane_key64(lk[max(min(first + l + G * t, n - 1), 0)]);  // (past the list: not called)
    rank[t] = 0;
  }
  lane_keys_above(lk, n, kv, rank);
#pragma unroll
  for (int t = 0; t < N; ++t)
    if (first + l + G * t < n) f(rank[t], 0xFFFFu - uint32_t(kv[t]));
}

// A row's list ranked with its items spread over the group's lanes (items l, l + G, ...), at most
// `per` a lane (warp-uniform), 1, 2 or 4 at a time: a warp waits for its busiest lane, so no lane
// ranks more than its share.
template <int G, typename F>
__device__ __forceinline__ void lane_rank_spread(const uint2* lk, int n, int per, int l, F&& f) {
  if (per <= 1) {
    lane_rank_items<1, G>(lk, n, 0, l, f);
  } else if (per <= 2) {
    lane_rank_items<2, G>(lk, n, 0, l, f);
  } else {
    for (int first = 0; first < per * G; first += 4 * G) lane_rank_items<4, G>(lk, n, first, l, f);
  }
}

template <typename scalar_t, int G, bool kLargest, bool kSorted, bool kEarly>
__global__ void __launch_bounds__(kLaneBlockWarps * 32, kLaneMinBlocks<scalar_t, G, kEarly>)
    lane_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                     int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                     int64_t max_iter) {
  static_assert(!(kEarly && kSorted), "max_iter: index order only");
  using C = LaneCfg<G>;
  constexpr int W = C::kW;
  using FB = LaneFallback<C::kVpt, kSorted>;
  constexpr int kE = C::kE;  // elements a lane
  __shared__ __align__(256 * W) uint32_t smem[kLaneBlockWarps][kLaneWarpWords];
  const int lane = threadIdx.x & 31;
  // (Through a shuffle: the block loop is warp-uniform, see warp_values_kernel.)
  const int warp = __shfl_sync(kFullMask, int(threadIdx.x / 32), 0);
  const int g = lane / G, l = lane % G;
  float* const sf = reinterpret_cast<float*>(smem[warp]);
  uint32_t* const aux = smem[warp] + kLaneStageWords;
  const float* const vrow = sf + g * C::kRowWords + l * C::kChunk;  // this lane's kE elements
  // Byte address of row g's counters; the 2^23 of u drops out of its low byte.
  const uint32_t hbase = uint32_t(__cvta_generic_to_shared(aux)) + 256u * W * uint32_t(g);

  // Member keys, over the row's counters.
  uint2* const lk = reinterpret_cast<uint2*>(aux + C::kHistWords * g);
  using Col = typename C::Col;
  Col* const so = reinterpret_cast<Col*>(aux);  // output indices, kLaneOutStride a row
  // (Sorted output: row rr's columns in rank order.)
  const auto ranked = [&](int rr) {
    return reinterpret_cast<Col*>(aux + C::kHistWords * rr + kLaneRankedAt<G>);
  };
  const int npad = C::kCols - cols;
  // The last lane's slots from cols - kE (G - 1) on are padding.
  const int nreal = l == G - 1 ? cols - (G - 1) * kE : kE;
  const uint32_t valid0 = nreal >= 32 ? ~0u : (1u << nreal) - 1u;
  const uint32_t valid1 = nreal >= 64 ? ~0u : nreal <= 32 ? 0u : (1u << (nreal - 32)) - 1u;
  // e / k for e < C::kRows * kLaneMaxK by a multiply.
  const uint32_t inv_k = ((1u << 20) + uint32_t(k) - 1u) / uint32_t(k);
  const int64_t nblk = (rows + C::kRows - 1) / C::kRows;

  for (int64_t blk = int64_t(blockIdx.x) * kLaneBlockWarps + warp; blk < nblk;
       blk += int64_t(gridDim.x) * kLaneBlockWarps) {
    const int64_t r0 = blk * C::kRows;
    const int nrows = int(min(int64_t(C::kRows), rows - r0));
    lane_stage_rows<scalar_t, G, kLargest>(in + r0 * cols, nrows, cols, sf);
    // The lane's elements in registers, then their buckets (u).
    float u[kE];
    lane_each<kE>(vrow, [&](int j, float v) { u[j] = v; });
    // Min / max (NaN-propagating: a row with NaN or +-inf takes the map below).
    // (sa: every eighth element's magnitude times 2^-8, lane_heavy's sample: no sum of values
    // near FLT_MAX overflows.)
    float mn = u[0], mx = mn, sa = fabsf(u[0]) * 0x1p-8f;
#pragma unroll
    for (int j = 1; j < kE; ++j) {
      mn = min_nan(mn, u[j]);
      mx = max_nan(mx, u[j]);
      if (j % 8 == 0) sa = fmaf(fabsf(u[j]), 0x1p-8f, sa);
    }
#pragma unroll
    for (int o = 1; o < G; o *= 2) {
      mn = min_nan(mn, __shfl_xor_sync(kFullMask, mn, o));
      mx = max_nan(mx, __shfl_xor_sync(kFullMask, mx, o));
    }
    // A warp with NaN or +-inf in a row maps all its rows so: NaN in bucket 0 (k largest: NaN
    // ranks first) or 255, +inf 1, the finite values 2..253, -inf 254; each of those four holds
    // equal keys only.  (Warp-uniform: the finite rows' map is the one below.)
    const bool nonfinite = __any_sync(kFullMask, !(isfinite(mn) && isfinite(mx)));
    // The rows' outputs from each lane's take bits (ok: the row's own path finished it), staged and
    // flushed; returns the warp's finished rows (a bit a row, at its first lane).
    const auto emit = [&](uint32_t take0, uint32_t take1, bool ok) -> unsigned {
      const int tc = __popc(take0) + __popc(take1);
      const int tinc = lane_group_inclusive<G>(tc, l);
      // (The shuffle outside the && : every lane must take part in it.)
      const int taken = __shfl_sync(kFullMask, tinc, G * g + G - 1);
      ok = ok && taken == k;
      // Output indices staged in index order; rows whose count is off (none should be) fall back.
      // Rank order (kSorted, k <= kLaneSortedMaxK<G>): the taken elements listed as rank keys
      // instead, then each ranked against its row's list.
      if (ok) {
        int pos = tinc - tc;
        if constexpr (kSorted) {
          lane_each_set(take0, take1,
                        [&](int j) { lk[pos++] = lane_member_key<kLargest>(vrow[j], kE * l + j); });
        } else {
          const uint32_t take[2] = {take0, take1};  // (two columns a half a trip: 31 SASS a trip)
          stage_set_bits(take, so + kLaneOutStride * g + pos, kE * l);
        }
      }
      if constexpr (kSorted) {
        lane_list_pad<G>(lk, ok ? k : 0, l);
        __syncwarp();
        // Each taken column at its rank (k <= kLaneSortedMaxK<G>: up to 4 items a lane).
        Col* const rl = ranked(g);
        lane_rank_spread<G>(lk, ok ? k : 0, (k + G - 1) / G, l,
                            [&](int rank, uint32_t c) { rl[rank] = Col(c); });
      }
      const unsigned okmask = __ballot_sync(kFullMask, ok);
      if constexpr (kLaneWalks<scalar_t>) {
        // The warp's next block into L2 while this one is flushed (earlier, at the block's start
        // or after its cut, the lines were more often gone again before their loads: notes v40).
        const int64_t r1 = r0 + int64_t(gridDim.x) * kLaneBlockWarps * C::kRows;
        if (r1 < rows)
          prefetch_l2(in + r1 * cols,
                      min(int64_t(C::kRows), rows - r1) * cols * int64_t(sizeof(scalar_t)));
      }
      __syncwarp();
      // Flush: the warp's rows' k outputs are contiguous, written coalesced.
      scalar_t* const ov = out_values + r0 * k;
      int64_t* const oi = out_indices + r0 * k;
      // Output c of row gg, at e; nf: the warp may hold NaN (fp16 only: re-read from the input).
      const auto put = [&](auto nf, int gg, int c, int e) {
        const int idx = kSorted ? int(ranked(gg)[c]) : int(so[kLaneOutStride * gg + c]);
        const float v = sf[lane_stage_at<G>(gg, idx)];
        ov[e] = decltype(nf)::value && v != v ? in[(r0 + gg) * cols + idx]
                                              : lane_unstage<scalar_t, kLargest>(v);
        oi[e] = idx;
      };
      const auto rows_flush = [&](auto nf) {
        for (int gg = 0; gg < nrows; ++gg)
          if (okmask >> (G * gg) & 1u)
            for (int c = lane; c < k; c += 32) put(nf, gg, c, gg * k + c);
      };
      constexpr bool kReread = std::is_same_v<scalar_t, __half>;
      if (!kSorted && k % 32 == 0) {
        // Whole warp-iterations a row: the row and its ok bit warp-uniform.  (Rank order: k <= 16.)
        if (kReread && nonfinite)
          rows_flush(std::bool_constant<kReread>{});
        else
          rows_flush(std::false_type{});
      } else {
        for (int e = lane; e < nrows * k; e += 32) {
          const int gg = int((uint32_t(e) * inv_k) >> 20);
          if (okmask >> (G * gg) & 1u) put(std::bool_constant<kReread>{}, gg, e - gg * k, e);
        }
      }
      return okmask;
    };
    // The rows none of the paths above finished, by the warp kernel's row body (max_iter: its
    // mode).
    const auto fallback = [&](unsigned okmask, int64_t fb_iter) {
      __syncwarp();  // the staging is free: the fallback's buffers go there
      unsigned left =
          ~okmask & C::kFirstLanes & (nrows == C::kRows ? ~0u : (1u << (G * nrows)) - 1u);
      while (left) {
        const int gg = (__ffs(left) - 1) / G;
        left &= left - 1;
        const int64_t r = r0 + gg;
#if defined(RTOPK_WARP_EMU)
        if (lane == 0) rtopk_emu_note_fallback();
#endif
        warp_value_row<scalar_t, C::kVpt, kLargest, kSorted>(
            in + r * cols, out_values + r * k, out_indices + r * k, cols, k, fb_iter, 0.f,
            *reinterpret_cast<typename FB::B::Val*>(sf + FB::kValAt),
            *reinterpret_cast<typename FB::B::Idx*>(sf + FB::kIdxAt),
            *reinterpret_cast<typename FB::B::StageV*>(sf + FB::kOvAt),
            *reinterpret_cast<typename FB::B::StageI*>(sf + FB::kOiAt),
            *reinterpret_cast<typename FB::B::Sort*>(sf + FB::kSortAt));
        __syncwarp();
      }
    };
    unsigned okmask = 0u;
    if constexpr (kEarly) {
      // max_iter (Algorithm 2): the steps of fast_early_stop_cut, the same midpoints and counts
      // (so the same bracket), then the row's first k elements >= lo.  Rows with NaN or +-inf go
      // to the fallback (make_plan).  The warp steps until none of its rows moves.
      const bool ok = isfinite(mn) && isfinite(mx);
      float lo = mn, hi = mx;
      bool live = ok;
      uint32_t m[2];
      for (int64_t it = 0; it < max_iter && __any_sync(kFullMask, live); ++it) {
        const float t = KeyTraits<float>::midpoint(lo, hi);
        lane_at_least(u, t, m);
        int c = __popc(m[0] & valid0) + __popc(m[1] & valid1);
#pragma unroll
        for (int o = 1; o < G; o *= 2) c += __shfl_xor_sync(kFullMask, c, o);
        const float lo0 = lo, hi0 = hi;
        if (live && c == k) {
          lo = t;
          live = false;
        } else if (live) {
          if (c < k)
            hi = t;
          else
            lo = t;
          live = !bracket_unchanged(lo, hi, lo0, hi0);
        }
      }
      lane_at_least(u, lo, m);
      const uint32_t m0 = m[0] & valid0, m1 = m[1] & valid1;
      const int mc = __popc(m0) + __popc(m1);
      const int before = lane_group_inclusive<G>(mc, l) - mc;
      uint32_t take0 = 0u, take1 = 0u;
      lane_take_first(m0, m1, k, before, mc, take0, take1);
      if (__any_sync(kFullMask, ok)) okmask = emit(take0, take1, ok);
      fallback(okmask, max_iter);
      continue;
    }
#pragma unroll
    for (int o = 1; o < G; o *= 2) sa += __shfl_xor_sync(kFullMask, sa, o);
    // (Before the lift, as the sample.)
    const bool tail = lane_heavy(sa, G * kE / 8, fmaxf(fabsf(mn), fabsf(mx)));
    // A warp with a heavy-tailed row maps all its rows by their keys (lane_tail_map: rows of one
    // kind share warps; a light row there may take a crowded level, which the heavy row would have
    // run anyway), from their own values (the map needs no lift).
    const bool tailw = !nonfinite && __any_sync(kFullMask, tail && mn < mx);
    if (!nonfinite && !tailw) lane_lift(u, mn, mx);
    // u becomes each element's bucket as the integer-valued float 2^23 + bucket, 0 for the
    // largest.  (hi - v) * scale < 255 for every element by the scale's margin (an IEEE division:
    // the bound holds however small the range), so no bucket passes 255.
    float scale = 255.f / (mx - mn) * (1.f - 0x1p-16f);
    bool ok = isfinite(mn) && isfinite(mx) && mn < mx &&
              (tailw || (scale > 0.f && scale <= FLT_MAX && (mx - mn) * scale >= 1.f));
    // A row of one value (every key equal): its first k elements.
    bool equal = isfinite(mn) && mn == mx;
    // The row's map (lane_map): set below.
    float mtop, mscale;
    // (Every bucket offset by the row's counter rotation, lane_rot.)
    const uint32_t ubits = lane_ubits(g);
    const float ubase = __uint_as_float(ubits);
    if (nonfinite) {
      float fmn = __int_as_float(0x7f800000), fmx = -fmn;
#pragma unroll
      for (int j = 0; j < kE; ++j) {
        const bool fin = fabsf(u[j]) < __int_as_float(0x7f800000);
        fmn = fin ? fminf(fmn, u[j]) : fmn;
        fmx = fin ? fmaxf(fmx, u[j]) : fmx;
      }
#pragma unroll
      for (int o = 1; o < G; o *= 2) {
        fmn = fminf(fmn, __shfl_xor_sync(kFullMask, fmn, o));
        fmx = fmaxf(fmx, __shfl_xor_sync(kFullMask, fmx, o));
      }
      lane_lift(u, fmn, fmx);  // (+-inf and NaN stay as they are)
      const float fs = 251.f / (fmx - fmn) * (1.f - 0x1p-16f);
      const bool spread = fmn < fmx;
      const bool fits =
          !spread || (isfinite(fmx - fmn) && fs <= FLT_MAX && (fmx - fmn) * fs >= 1.f);
      // (At most one finite value: that value at scale 1, so that it maps to bucket 2 and the
      // infinities keep their signs through the map, which a scale of 0 would make NaN.)
      mscale = spread && fits ? fs : 1.f;
      mtop = isfinite(fmx) ? fmx : 0.f;
      float bmn = __int_as_float(0x7f800000), bmx = -bmn;
#pragma unroll
      for (int j = 0; j < kE; ++j) {
        u[j] = lane_map<true, kLargest>(mtop, mscale, ubase, u[j]);
        bmn = fminf(bmn, u[j]);
        bmx = fmaxf(bmx, u[j]);
      }
#pragma unroll
      for (int o = 1; o < G; o *= 2) {
        bmn = fminf(bmn, __shfl_xor_sync(kFullMask, bmn, o));
        bmx = fmaxf(bmx, __shfl_xor_sync(kFullMask, bmx, o));
      }
      // (A finite row whose range does not fit maps every element to bucket 2: not equal.)
      equal = bmn == bmx && fits;
      ok = fits && !equal;
    } else {
      mscale = ok ? scale : 0.f;
      mtop = ok ? mx : 0.f;
      if (tailw) {
#if defined(RTOPK_WARP_EMU)
        if (lane == 0) rtopk_emu_note_tail();
#endif
        // (From the staging: u is not read, so its registers are free for the map.)
        const float eps = fmaxf(fabsf(mn), fabsf(mx)) * 0x1p-32f;
        const uint32_t eb = __float_as_uint(eps), kt = lane_tail_key(mx, eps, eb);
        const int sh = max(24 - __clz(kt - lane_tail_key(mn, eps, eb)), 0);
        lane_each<kE>(vrow,
                      [&](int j, float v) { u[j] = lane_tail_map(v, eps, eb, kt, sh, ubits); });
      } else {
        // One FFMA an element instead of lane_map's two, where every row's offset top * s1 is
        // under 2^22: u = c1 - v s1, rounded once (monotone; equal values, equal u), with s1 the
        // scale times 253 / 255 (span * s1 < 253) and c1 = rn(top s1 + base) + 1, which exceeds
        // top s1 + base by 0.5..1.5: u lies in base + 0..255 (notes v45).
        const float s1 = mscale * (253.f / 255.f);
        const float c1 = fmaf(mtop, s1, ubase) + 1.f;
        if (__all_sync(kFullMask, fabsf(mtop * s1) < 0x1p22f)) {
#pragma unroll
          for (int j = 0; j < kE; ++j) u[j] = fmaf(u[j], -s1, c1);
        } else {
#if defined(RTOPK_WARP_EMU)
          if (lane == 0) rtopk_emu_note_offset();
#endif
#pragma unroll
          for (int j = 0; j < kE; ++j) u[j] = lane_map<false>(mtop, mscale, ubase, u[j]);
        }
      }
    }
    // The padding's bucket: that of the row's first element (lane 0 of the group, slot 0).
    const float upad = __shfl_sync(kFullMask, u[0], G * g);
    // A warp of rows none of which this path finishes (ranges out of float range) goes straight
    // to the fallback.
    if (__any_sync(kFullMask, ok || equal)) {
      // Zero the rows' counters, then count (one byte a bucket: no bucket of a row that is not
      // equal holds more than 255 of its 256 slots).
      lane_zero_counters<G>(aux);
      __syncwarp();
      if (nonfinite) {
        // The finite elements (buckets 2..253) one atomic each; NaN, +inf and -inf (buckets 0 /
        // 255, 1, 254: equal keys, one counter each) into the lane's spare word, a byte each
        // (bucket & 3), then added at once: one atomic an element on a single counter would
        // serialise the lanes of rows of NaN or -inf.
        uint32_t* const spare_w = lane_spare_word<G>(vrow);
        *spare_w = 0u;
#pragma unroll
        for (int j = 0; j < kE; ++j) {
          const uint32_t bits = __float_as_uint(u[j]);
          lane_count_class<W>(hbase, bits, ok && bits - (ubits + 2u) < 252u, lane_spare<G>(vrow));
        }
        const uint32_t cls = *spare_w;  // (this lane's own atomics: in order)
        const uint32_t cb[3] = {ubits + (kLargest ? 0u : 255u), ubits + 1u, ubits + 254u};
#pragma unroll
        for (int c = 0; c < 3; ++c) {
          const uint32_t n = (cls >> (8 * (cb[c] & 3u))) & 0xFFu;
          if (ok && n > 0) lane_count<W>(hbase, cb[c], n);
        }
      } else {
#pragma unroll
        for (int j = 0; j < kE; ++j) {
          const uint32_t bits = __float_as_uint(u[j]);
          if (ok)
            lane_count_one<W>(hbase, bits);  // (rows of one value would serialise on one counter)
        }
      }
      if (ok && npad > 0 && l == G - 1) {
        // The padding slots copy the row's first element: take them back out of its bucket.
        const uint32_t bits = __float_as_uint(upad);
        lane_count<W>(hbase, bits, 0u - uint32_t(npad));
      }
      __syncwarp();
      // b*, the bucket of the k-th element.
      uint32_t* const hrow = aux + C::kHistWords * g;
      const LaneCut cut = lane_bucket_cut<G>(hrow, k, g, l);
      const int bstar = cut.bstar;
      int nn = cut.nn;
      int need = k - cut.chi;  // b*'s members to take: 1 <= need <= nn
      ok = ok && cut.found;
      // More than 32 members of which only some are taken: narrowed by lane_crowded (NaN, +inf
      // and -inf buckets hold equal keys only: tied).
      bool crowded = ok && need < nn && nn > 32;
      const bool tied = nonfinite && (bstar <= 1 || bstar >= 254);
      __syncwarp();  // the counters are read: their words are reused below
      // Take masks: a = bucket < b*, w = bucket <= b* (u is integer-valued).
      const float cs = __uint_as_float(ubits + uint32_t(bstar));
      const float ch = __uint_as_float(ubits + uint32_t(bstar) + 1u);
      uint32_t a[2], w[2];
      lane_below(u, cs, a);
      lane_below(u, ch, w);
      a[0] &= valid0;
      a[1] &= valid1;
      w[0] &= valid0;
      w[1] &= valid1;
      if (__any_sync(kFullMask, crowded)) {
        const LaneCrowd t = lane_crowded<G>(vrow, hrow, hbase, a[0], a[1], w[0] & ~a[0],
                                            w[1] & ~a[1], nn, need, crowded, tied, g, l);
        if (crowded && t.resolved) {
          a[0] = t.a0;
          a[1] = t.a1;
          w[0] = t.a0 | t.m0;
          w[1] = t.a1 | t.m1;
          nn = t.nn;
          need = t.need;
          crowded = false;
        }
      }
      ok = ok && !crowded;
      // b*'s members when only some are taken: listed as 64-bit keys (value, then index: one
      // unsigned compare orders two members), ranked against the list (lane_rank_spread; the
      // take bits in the row's counter words, read by now).
      const bool part = ok && need < nn;
      if (__any_sync(kFullMask, part)) {
        const uint32_t mem0 = part ? w[0] & ~a[0] : 0u, mem1 = part ? w[1] & ~a[1] : 0u;
        const int mc = __popc(mem0) + __popc(mem1);
        const int before = lane_group_inclusive<G>(mc, l) - mc;
        int pos = before;
        // Take-bit words: the lane's two at its lane_pad; lane o's kChunk * (o - l) words away.
        uint32_t* const own_tw = lane_pad<G>(vrow);
        uint32_t* const tw = own_tw - C::kChunk * l;  // (lane 0's)
        *reinterpret_cast<uint2*>(own_tw) = make_uint2(0u, 0u);
        // The members listed, their range on the way.
        float lo = __int_as_float(0x7f800000), hi = -lo;
        lane_each_set(mem0, mem1, [&](int j) {
          const float v = vrow[j];
          lo = fminf(lo, v);
          hi = fmaxf(hi, v);
          lk[pos++] = lane_member_key(v, kE * l + j);
        });
#pragma unroll
        for (int o = 1; o < G; o *= 2) {
          lo = fminf(lo, __shfl_xor_sync(kFullMask, lo, o));
          hi = fmaxf(hi, __shfl_xor_sync(kFullMask, hi, o));
        }
        // Members of one key (b* of NaN, +inf or -inf: tied; finite ties: lo == hi) are taken by
        // index, the first `need`, unranked: pairwise ranking costs the square of the members
        // (NaN mixed in at k = 16: b* the NaN, ~26 members a row of 256; notes v43).
        const bool same = tied || lo == hi;
        if (part && same) lane_take_first(mem0, mem1, need, before, mc, a[0], a[1]);
        const int nl = part && !same ? nn : 0;
        lane_list_pad<G>(lk, nl, l);
        __syncwarp();
        // The `need` first members (rank < need) marked in their owner lanes' take bits (two
        // words a lane: element j of lane l at bit j % 32 of word 2 l + j / 32).  Items a lane: the
        // warp's most (at most 32 members a row).
        lane_rank_spread<G>(lk, nl, __reduce_max_sync(kFullMask, (nl + G - 1) / G), l,
                            [&](int rank, uint32_t c) {
                              // (Column c: element c % kE of lane c / kE.)
                              const uint32_t cj = c % kE;
                              if (rank < need)
                                atomicOr(tw + C::kChunk * (c / kE) + cj / 32, 1u << (cj % 32));
                            });
        __syncwarp();
        const uint2 tb = *reinterpret_cast<const uint2*>(own_tw);
        a[0] |= tb.x;
        a[1] |= tb.y;
        __syncwarp();  // (the lists' words are reused by the output staging)
      }
      // (An equal row: lane l's first k - 64 l real elements.)
      const int qe = min(max(k - kE * l, 0), nreal);
      const uint32_t e0 = qe >= 32 ? ~0u : (1u << qe) - 1u;
      const uint32_t e1 = qe >= 64 ? ~0u : qe <= 32 ? 0u : (1u << (qe - 32)) - 1u;
      const uint32_t take0 = equal ? e0 : part ? a[0] : w[0];
      const uint32_t take1 = equal ? e1 : part ? a[1] : w[1];
      okmask = emit(take0, take1, ok || equal);
    }
    fallback(okmask, -1);
  }
}

#ifndef RTOPK_WARP_EMU  // (the emulator calls the kernel itself)
// Whether the lane kernel takes a launch: exact mode, or max_iter in index order on the same rows
// (kLaneEarlyAt), k <= 128 (rank-ordered output up to kLaneSortedMaxK<G>), a 16-byte aligned
// input, and rows of 16/32-bit elements of 193..256 (four lanes a row), kLaneEightMinCols..512
// (eight) or 721..768 (sixteen) elements, the latter two in whole 16-byte vectors, in launches of
// the rows and k where it was measured faster than the warp kernels (kLaneMinRows and below).
// The tuning hook (a.lane_mode, torch.ops.rtopk._set_debug_lane_rows): 1 drops the thresholds on
// rows and k (the row lengths, k <= 128, the rank-order caps and max_iter's instances stay), 2
// never takes this path; benchmarks/dispatch.py times both in one process.
template <typename scalar_t>
bool lane_rows_apply(const scalar_t* in, const RowLaunch& a) {
  using Compute = typename Elem<scalar_t>::Compute;
  if (a.lane_mode == 2) return false;
  const bool any = a.lane_mode == 1;
  const int64_t r = a.rows;
  const bool vectors = a.cols % (16 / int64_t(sizeof(scalar_t))) == 0;
  const bool four = a.cols >= LaneCfg<4>::kMinCols && a.cols <= LaneCfg<4>::kCols;
  const bool eight =
      kLaneEight && vectors && a.cols >= kLaneEightMinCols && a.cols <= LaneCfg<8>::kCols;
  const bool sixteen =
      kLaneSixteen && vectors && a.cols >= LaneCfg<16>::kMinCols && a.cols <= LaneCfg<16>::kCols;
  // The launches each mode gives this path (the thresholds above).
  const bool exact_rows =
      any || (four && (a.k <= kLaneFourK || r >= kLaneMinRows)) || (eight && r >= kLaneMinRows) ||
      (sixteen && (r >= kLaneSixteenRows || (r >= kLaneSixteenMidRows && a.k > kLaneSixteenMinK) ||
                   (r >= kLaneMinRows && a.k > kLaneSixteenSmallK)));
  const bool early_rows = any || (four && (a.k <= kLaneFourK || r >= kLaneFourEarlyRows)) ||
                          (eight && r >= kLaneMinRows) || (sixteen && r >= kLaneSixteenEarlyRows);
  const int sorted_max = four    ? kLaneSortedMaxK<4>
                         : eight ? kLaneSortedMaxK<8>
                                 : kLaneSortedMaxK<16>;
  const bool ranked = a.sorted && a.k > 1;
  const bool exact = exact_mode<Compute>(a) && (!ranked || a.k <= sorted_max) && exact_rows;
  // max_iter (no eps): the shapes with a max_iter instance, index order.
  const bool early = ((four && kLaneEarlyAt<scalar_t, 4>) || (eight && kLaneEarlyAt<scalar_t, 8>) ||
                      (sixteen && kLaneEarlyAt<scalar_t, 16>)) &&
                     early_rows && a.max_iter > 0 && !(static_cast<Compute>(a.eps) > Compute(0)) &&
                     !ranked;
  return sizeof(Compute) == 4 && (four || eight || sixteen) && (exact || early) &&
         a.k <= kLaneMaxK && reinterpret_cast<uintptr_t>(in) % 16 == 0;
}

template <typename scalar_t, int G>
void launch_lane_rows_g(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                        cudaStream_t stream) {
  const int64_t warps = (a.rows + LaneCfg<G>::kRows - 1) / LaneCfg<G>::kRows;
  const int64_t wanted = (warps + kLaneBlockWarps - 1) / kLaneBlockWarps;
  // About kLaneWalk blocks of rows a warp, so that a warp has a next block to prefetch, but no
  // fewer blocks than kLaneWalk waves of resident ones (each walking fewer blocks then), nor more
  // than 256 warps an SM.  The waves keep the blocks dynamically balanced: with one resident
  // wave walking all the rows, rows of uneven cost (NaN mixed in, heavy tails) took 1.03-1.11x
  // their time at 2^16 rows of 256, randn 0.96x (notes v40).
  const bool sorted = 1 < kLaneSortedMaxK<G> && a.sorted && a.k > 1;
  const int64_t sms = std::max(a.num_sms, 1);
  const int64_t walk = kLaneWalks<scalar_t> ? kLaneWalk : 1;
  const int64_t grid64 = std::min(
      std::max((wanted + walk - 1) / walk, sms * kLaneMinBlocks<scalar_t, G, false> * walk),
      sms * (256 / kLaneBlockWarps));
  const unsigned grid = static_cast<unsigned>(std::min(wanted, grid64));
  auto kernel = a.largest ? lane_rows_kernel<scalar_t, G, true, false, false>
                          : lane_rows_kernel<scalar_t, G, false, false, false>;
  if constexpr (1 < kLaneSortedMaxK<G>) {
    if (sorted)
      kernel = a.largest ? lane_rows_kernel<scalar_t, G, true, true, false>
                         : lane_rows_kernel<scalar_t, G, false, true, false>;
  }
  if constexpr (kLaneEarlyAt<scalar_t, G>) {
    if (a.max_iter > 0)
      kernel = a.largest ? lane_rows_kernel<scalar_t, G, true, false, true>
                         : lane_rows_kernel<scalar_t, G, false, false, true>;
  }
  kernel<<<grid, kLaneBlockWarps * 32, 0, stream>>>(in, ov, oi, a.rows, static_cast<int>(a.cols),
                                                    static_cast<int>(a.k), a.max_iter);
}

template <typename scalar_t>
void launch_lane_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                      cudaStream_t stream) {
  if constexpr (kLaneSixteen) {
    if (a.cols > LaneCfg<8>::kCols) return launch_lane_rows_g<scalar_t, 16>(in, ov, oi, a, stream);
  }
  if constexpr (kLaneEight) {
    if (a.cols > LaneCfg<4>::kCols) return launch_lane_rows_g<scalar_t, 8>(in, ov, oi, a, stream);
  }
  launch_lane_rows_g<scalar_t, 4>(in, ov, oi, a, stream);
}

#endif  // RTOPK_WARP_EMU

}  // namespace cuda_detail
}  // namespace rtopk
