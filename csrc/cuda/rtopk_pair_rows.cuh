// Exact top-k of 16-bit rows (bfloat16, float16) by packed-pair arithmetic (pair_rows_kernel):
// G lanes a row, E elements a lane held as E / 2 32-bit words of two, never widened to floats.
//
// Why: the lane kernels stage 16-bit rows as floats and do per element what they do for fp32
// rows, so a bf16 row costs as many instructions as an fp32 one for half the bytes (H200 paper
// grid: bf16 0.371 of its floor against fp32 0.590, the same times).  Here a compare is one
// instruction for two elements (set.ge.u32.bf16x2) and an IADD3 sums two such masks, so a
// counting pass over the row costs 0.75 instructions an element, min / max 0.5 each, and nothing
// goes through shared memory but the selected columns.
//   load:   the row's 16-byte words straight into registers (lane l of a row: elements
//           [l E, l E + E)); the k smallest as the k largest of -x (the sign bits flipped);
//           each 32-element chunk's words re-paired so that word i holds elements i and 16 + i:
//           the masks below then come out in index order;
//   search: min / max (NaN-propagating: a row with NaN or +inf takes them out first), then a
//           bisection over [min, max] in which every threshold is a 16-bit value: the count of
//           elements >= t decides; exactly k ends it (take every element >= t), else the bracket
//           [lo, hi) shrinks until its keys are adjacent (the k-th value is lo: take every
//           element >= hi, then the first of those equal to lo by index).  Midpoints in value
//           for the first kPairValueSteps steps (randn rows end there), then in key (at most 16
//           more: heavy tails, values spread over many binades);
//   emit:   a mask a chunk (one set.ge and one LOP3 a word), the ties' masks trimmed to their
//           quota, the columns staged in index order, then flushed coalesced, the values re-read
//           from the row (L1 / L2); rank order (the k largest, k <= 32 / 64 / 128 at G = 2 / 4 /
//           8): at k <= 16 / 24 / 32 each output ranked by counting the row's 32-bit keys
//           (value order, then index) above its own and written at its rank, past it the keys
//           sorted by a bitonic network.
// NaN and +inf (directed) are taken ahead of the search when fewer than k (NaN for the k smallest
// set below every value), and the first k of them by rank and index, with no search, when more;
// a row whose k-th value is -inf tied with such a NaN is left to the value kernel's row body
// (warp_value_row) after the flush, in the same launch.  Exact mode, index order, k <= kStageK
// only; the answer is the one
// every backend gives (the k largest, equal values by index; -0.0 and +0.0 equal).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "rtopk_kernels_common.cuh"
#include "rtopk_warp_values.cuh"

namespace rtopk {
namespace cuda_detail {

// Per-half fallbacks of the packed ops, in floats: bf16 set before sm_90, and everything outside
// device code (tests/emu runs this kernel on the CPU).  max / min propagate NaN, +0 above -0.
// (op: 0 ge, 1 eq, 2 NaN; Ops::to_float reads a half.)
template <typename Ops>
__device__ __forceinline__ uint32_t pair_halves_cmp(uint32_t a, uint32_t b, int op) {
  uint32_t d = 0u;
  for (int h = 0; h < 2; ++h) {
    const float x = Ops::to_float((a >> (16 * h)) & 0xFFFFu);
    const float y = Ops::to_float((b >> (16 * h)) & 0xFFFFu);
    const bool r = op == 0 ? x >= y : op == 1 ? x == y : x != x;
    d |= r ? 0xFFFFu << (16 * h) : 0u;
  }
  return d;
}
template <typename Ops>
__device__ __forceinline__ uint32_t pair_halves_minmax(uint32_t a, uint32_t b, bool is_max) {
  uint32_t d = 0u;
  for (int h = 0; h < 2; ++h) {
    const uint32_t ha = (a >> (16 * h)) & 0xFFFFu, hb = (b >> (16 * h)) & 0xFFFFu;
    const float x = Ops::to_float(ha), y = Ops::to_float(hb);
    uint32_t r;
    if (x != x || y != y)
      r = 0x7FFFu;
    else if (x == y)
      r = is_max ? (ha & hb) : (ha | hb);  // (zeros: +0 the larger)
    else
      r = (x > y) == is_max ? ha : hb;
    d |= r << (16 * h);
  }
  return d;
}

// Two 16-bit values a 32-bit word.  ge / eq: 0xFFFF in each half where the compare holds; high:
// the high half as a float, for the row's moments (PairPlan).
template <typename scalar_t>
struct PairOps;

template <>
struct PairOps<__nv_bfloat16> {
  static constexpr uint32_t kExp = 0x7F80u;  // exponent bits: all set for +-inf and NaN
  // (set with bf16x2 operands is sm_90's; before it, each half as a float.)
  __device__ __forceinline__ static uint32_t ge(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t d;
    asm("set.ge.u32.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pair_halves_cmp<PairOps>(a, b, 0);
#endif
  }
  __device__ __forceinline__ static uint32_t eq(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t d;
    asm("set.eq.u32.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pair_halves_cmp<PairOps>(a, b, 1);
#endif
  }
  __device__ __forceinline__ static uint32_t nan(uint32_t a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    uint32_t d;
    asm("set.nan.u32.bf16x2 %0, %1, %1;" : "=r"(d) : "r"(a));
    return d;
#else
    return pair_halves_cmp<PairOps>(a, a, 2);
#endif
  }
  __device__ __forceinline__ static uint32_t max(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pair_halves_minmax<PairOps>(a, b, true);
#endif
  }
  __device__ __forceinline__ static uint32_t min(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("min.NaN.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pair_halves_minmax<PairOps>(a, b, false);
#endif
  }
  // (The word read as a float: the low half rides below the high one's mantissa, within one of
  // its ulps; no instruction.)
  __device__ __forceinline__ static float high(uint32_t w) { return __uint_as_float(w); }
  __device__ __forceinline__ static float to_float(uint32_t h) { return __uint_as_float(h << 16); }
  __device__ __forceinline__ static uint32_t from_float(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
  // A value step's threshold from its midpoint f: f rounded toward zero to a bf16 by its bits (two
  // instructions, against the conversion, the shift back and the pairing), t2 in both halves.
  // (Strictly inside the ends whenever a bf16 lies between them, as the rounded midpoint is:
  // checked over every pair of finite bf16 values 2 .. 100 apart.)
  __device__ __forceinline__ static float threshold(float f, uint32_t& t2) {
    const uint32_t b = __float_as_uint(f);
    t2 = __byte_perm(b, 0, 0x3232);
    return __uint_as_float(b & 0xFFFF0000u);
  }
};

template <>
struct PairOps<__half> {
  static constexpr uint32_t kExp = 0x7C00u;
  __device__ __forceinline__ static uint32_t ge(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("set.ge.u32.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pair_halves_cmp<PairOps>(a, b, 0);
#endif
  }
  __device__ __forceinline__ static uint32_t eq(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("set.eq.u32.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pair_halves_cmp<PairOps>(a, b, 1);
#endif
  }
  __device__ __forceinline__ static uint32_t nan(uint32_t a) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("set.nan.u32.f16x2 %0, %1, %1;" : "=r"(d) : "r"(a));
    return d;
#else
    return pair_halves_cmp<PairOps>(a, a, 2);
#endif
  }
  __device__ __forceinline__ static uint32_t max(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pair_halves_minmax<PairOps>(a, b, true);
#endif
  }
  __device__ __forceinline__ static uint32_t min(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("min.NaN.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
#else
    return pair_halves_minmax<PairOps>(a, b, false);
#endif
  }
  __device__ __forceinline__ static float high(uint32_t w) {
#if defined(__CUDA_ARCH__)
    float d;  // (one HADD2.F32 of the high half, no shift)
    asm("{\n\t.reg .f16 l, h;\n\tmov.b32 {l, h}, %1;\n\tcvt.f32.f16 %0, h;\n\t}"
        : "=f"(d)
        : "r"(w));
    return d;
#else
    return to_float(w >> 16);
#endif
  }
  __device__ __forceinline__ static float to_float(uint32_t h) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
  }
  __device__ __forceinline__ static uint32_t from_float(float f) {
    return __half_as_ushort(__float2half_rn(f));
  }
  // A value step's threshold from its midpoint f (rounded to nearest), t2 in both halves.
  __device__ __forceinline__ static float threshold(float f, uint32_t& t2) {
    const uint32_t h = from_float(f);
    t2 = h | (h << 16);
    return to_float(h);
  }
};

// The order-preserving key of a 16-bit value's bits (sign at bit 15 in both types) and back.
// -0.0 keys just below +0.0; they compare equal, so no count tells them apart (the bracket's
// ends never sit on both), except a row maximum of -0.0, which the kernel makes +0.0.
__device__ __forceinline__ int pair_key(uint32_t b) {
  return int(b ^ ((b & 0x8000u) ? 0xFFFFu : 0x8000u));
}
__device__ __forceinline__ uint32_t pair_bits(int key) {
  return uint32_t(key) ^ ((key & 0x8000) ? 0x8000u : 0xFFFFu);
}

// A row's shape: G lanes a row, E elements a lane (a multiple of 32: whole mask words).
template <int G, int E>
struct PairCfg {
  static_assert(G == 2 || G == 4 || G == 8 || G == 16, "G lanes a row, a power of two");
  static_assert(E % 32 == 0 && E >= 32, "whole 32-element chunks");
  static constexpr int kWords = E / 2;
  static constexpr int kChunks = E / 32;
  static constexpr int kVecs = E / 8;  // 16-byte loads a lane
  static constexpr int kRows = 32 / G;
  static constexpr int kCols = G * E;
  static constexpr int kVpt = kCols / 32;  // the fallback row body's values a lane
  // Shorter rows take another shape: the fallback row body's level must be the row's own.
  static constexpr int kMinCols = 32 * warp_slots_below(kVpt) + 1;
};

// One warp a block, a block a warp's rows: blocks start as others end, so the SMs stay evenly
// loaded to the end of the launch (a resident grid whose warps walked the rows left ~20% of
// the warps idle in its last round).
constexpr int kPairBlockWarps = 1;
constexpr int kPairOutStride = kStageK + 8;  // a row's staged columns (16-bit)
// Value midpoints for this many steps, then key midpoints (each step then halves the key range).
constexpr int kPairValueSteps = 12;

// A launch's constants (pair_plan): the bracket's low end by groups of `level` 16-byte words
// (pair_level), and the search's first two probes as a normal row would have them: the k-th
// largest of n normal values lies near mean + z sd (z the normal quantile of 1 - k / n), within
// about sqrt(p (1 - p) / n) / phi(z) sd of it (p = k / n).  So the first probe is mean + z sd,
// from the moments of half the row's elements (inv_n = 2 / cols), the second `step` sd from it
// on the side its count points to when that count is within `gate` of k; then bisection as
// before.  A row whose moments are not finite (NaN, inf) or whose probes fall outside its
// bracket takes the midpoints; the answer never depends on them.  Only the index-order instances
// of E <= 96 at the k pair_plan allows take them.  (bf16 randn, `benchmarks/pair_search_model.py
// randn guided`: passes a warp 768 / k = 64 8.8 -> 6.6, 256 / k = 64 10.7 -> 8.3, 512 / k = 128
// 10.7 -> 7.6; x^5 rows about as before.)
struct PairPlan {
  int level;
  float inv_n;  // 2 / cols
  float z;
  float step;
  float gate;
};
// Rank order in the kernel (the k largest only), k <= pair_sort_k(G): at k <= pair_net_k(G) each
// output ranked against its row's k by counting (k^2 / 16 warp instructions a row; notes v65 item
// 12, v66), the rank keys in the row's staging past the columns (PairSmem: 32-bit keys from
// kKeyAt, 16-byte aligned), then the outputs' value bits (kValAt: the flush reads them there, not
// from the row); past it the keys sorted in registers by a bitonic network, 16 a lane, a row's in
// a segment of P = 32, 64 or 128 (the warp's 512 keys: 32 / G rows of at most 16 G), staged from
// kNetKeyAt, the values from kNetValAt.  The network's cost a row is about fixed by P and G (~18
// warp instructions at G = 2, P = 32; ~34 at G = 4, where half the lanes sort padding), the
// count's grows as k^2: the count up to k = 16 at G = 2, 24 at G = 4, 32 at G = 8.
constexpr int kPairCountK = 32;
constexpr int pair_sort_k(int G) { return 16 * G < 128 ? 16 * G : 128; }
constexpr int pair_net_k(int G) { return G == 2 ? 16 : G == 4 ? 24 : kPairCountK; }

// Two int64 outputs by one 16-byte store (p 16-byte aligned) where `pred` holds, predicated inside
// the asm (no branch around it).  (A longlong2 or uint4 store through the cast pointer came out of
// the compiler as two 8-byte stores.)
__device__ __forceinline__ void pair_store_2x64_if(int64_t* p, uint64_t a, uint64_t b, bool pred) {
#if defined(__CUDA_ARCH__)
  asm volatile(
      "{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %3, 0;\n\t@q st.global.v2.u64 [%0], {%1, %2};\n\t}"
      :
      : "l"(p), "l"(a), "l"(b), "r"(int(pred))
      : "memory");
#else
  if (pred) {
    p[0] = int64_t(a);
    p[1] = int64_t(b);
  }
#endif
}

// A 16-bit value's rank key for the k largest, directed: NaN above everything, -0 as +0 (equal
// values rank by index: the low 16 bits of the 32-bit key hold 0xFFFF - position).
template <typename Ops>
__device__ __forceinline__ uint32_t pair_rank_key(uint32_t b, int p) {
  uint32_t hi;
  if ((b & 0x7FFFu) > Ops::kExp)
    hi = 0xFFFFu;
  else
    hi = uint32_t(pair_key((b & 0x7FFFu) == 0u ? 0u : b));
  return (hi << 16) | (0xFFFFu - uint32_t(p));
}

// Each output's rank key and value bits into its row's staging, `slots` a row (row e / slots by
// the multiply inv = ceil(2^20 / slots), position e % slots; the slots past k get key 0, below
// every real key: their low halves are 0xFFFF - position), keys from KEY_AT (32-bit), values from
// VAL_AT; the values' loads four a lane issued before their stores.  (No row here is left to the
// fallback: those arise for the k smallest only.)
template <typename Ops, int STRIDE, int KEY_AT, int VAL_AT>
__device__ __forceinline__ void pair_stage_rank_keys(uint16_t (*rows)[STRIDE], const uint16_t* raw,
                                                     int nrows, int cols, int k, int slots,
                                                     uint32_t inv, int lane) {
  const int nk = nrows * slots;
  for (int e0 = 0; e0 < nk; e0 += 128) {
    int at[4], pp[4];
    uint16_t bits[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int e = e0 + 32 * j + lane;
      const int gg = int((uint32_t(e) * inv) >> 20);
      at[j] = e < nk ? gg : -1;
      pp[j] = e - gg * slots;
      const bool real = at[j] >= 0 && pp[j] < k;
      const int cc = real ? rows[gg][pp[j]] : 0;
      bits[j] = real ? __ldg(raw + int64_t(gg) * cols + cc) : uint16_t(0);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (at[j] >= 0) {
        uint16_t* const row = rows[at[j]];
        const bool real = pp[j] < k;
        reinterpret_cast<uint32_t*>(row + KEY_AT)[pp[j]] =
            real ? pair_rank_key<Ops>(bits[j], pp[j]) : 0u;
        if (real) row[VAL_AT + pp[j]] = bits[j];
      }
    }
  }
  __syncwarp();
}

// Rank order by a bitonic network (the k largest, pair_net_k(G) < k <= P_MAX): each row's keys in a
// segment of P = 32, 64 or 128 (the least power of two >= k; padding keys 0) staged from KEY_AT
// with the values from VAL_AT by pair_stage_rank_keys, loads and stores coalesced (output e of the
// warp by lane e % 32); then key i of the warp (row i / P, position i % P) in lane i / 16's
// register i % 16, four 16-byte shared loads a lane, sorted descending in registers (strides < 16
// within a lane, wider ones by shuffles) and stored back; then output e written from the staged
// column and value its sorted key names.
template <typename Ops, int P_MAX, int STRIDE, int KEY_AT, int VAL_AT, typename scalar_t>
__device__ __forceinline__ void pair_rank_network(uint16_t (*rows)[STRIDE], const uint16_t* raw,
                                                  scalar_t* ov, int64_t* oi, int nrows, int cols,
                                                  int k, uint32_t inv_k, int lane) {
  static_assert(P_MAX * (32 / (P_MAX / 16)) == 512 && P_MAX <= 128, "16 keys a lane, a row's P");
  const int lp = k > 64 ? 7 : k > 32 ? 6 : 5;  // (log2 P; P <= P_MAX by the dispatch)
  const int P = 1 << lp;
  pair_stage_rank_keys<Ops, STRIDE, KEY_AT, VAL_AT>(rows, raw, nrows, cols, k, P, (1u << 20) >> lp,
                                                    lane);
  const int myrow = (lane * 16) >> lp, mypos = (lane * 16) & (P - 1);
  const bool mine = myrow < nrows;
  uint4* const seg = reinterpret_cast<uint4*>(
      reinterpret_cast<uint32_t*>(rows[mine ? myrow : 0] + KEY_AT) + mypos);
  uint32_t key[16];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint4 w = mine ? seg[q] : make_uint4(0u, 0u, 0u, 0u);
    key[4 * q] = w.x;
    key[4 * q + 1] = w.y;
    key[4 * q + 2] = w.z;
    key[4 * q + 3] = w.w;
  }
  // Merges of size s = 2 .. P: a block of s descending where bit s of i is clear, ascending where
  // set, so each half of the next merge is bitonic; the last merge (s = P) descending throughout.
#pragma unroll
  for (int ls = 1; (1 << ls) <= P_MAX; ++ls) {
    const int s = 1 << ls;
    if (s > P) break;
    const bool last = s == P;
#pragma unroll
    for (int lt = ls - 1; lt >= 0; --lt) {
      const int t = 1 << lt;
      if (t >= 16) {
        const int lm = t / 16;
        const bool lower = (lane & lm) == 0;
        const bool desc = last || ((lane * 16) & s) == 0;  // (s >= 32: the lane's bits only)
#pragma unroll
        for (int r = 0; r < 16; ++r) {
          const uint32_t o = __shfl_xor_sync(kFullMask, key[r], lm);
          key[r] = desc == lower ? ::max(key[r], o) : ::min(key[r], o);
        }
      } else {
#pragma unroll
        for (int r = 0; r < 16; ++r) {
          if (r & t) continue;
          const bool desc = last || ((lane * 16 + r) & s) == 0;
          const uint32_t a = key[r], b = key[r | t];
          const uint32_t hi = ::max(a, b), lo = ::min(a, b);
          key[r] = desc ? hi : lo;
          key[r | t] = desc ? lo : hi;
        }
      }
    }
  }
  if (mine) {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      seg[q] = make_uint4(key[4 * q], key[4 * q + 1], key[4 * q + 2], key[4 * q + 3]);
  }
  __syncwarp();
  const int total = nrows * k;
  for (int e = lane; e < total; e += 32) {
    const int gg = int((uint32_t(e) * inv_k) >> 20), rank = e - gg * k;
    const uint16_t* const row = rows[gg];
    const int p = int(0xFFFFu - (reinterpret_cast<const uint32_t*>(row + KEY_AT)[rank] & 0xFFFFu));
    reinterpret_cast<uint16_t*>(ov)[e] = row[VAL_AT + p];
    oi[e] = row[p];
  }
}

template <int G, int E, bool kSorted = false>
struct PairSmem {
  using C = PairCfg<G, E>;
  using B = WarpValueBufs<C::kVpt, false>;
  // A row's staging: its columns (at most kStageK); in rank order by counting (k <= pair_net_k(G))
  // its keys from kKeyAt and values from kValAt, by the network its values from kNetValAt.
  static constexpr int kKeyAt = kPairCountK + 8;
  static constexpr int kValAt = kKeyAt + 2 * kPairCountK;
  static constexpr int kNetKeyAt = kPairOutStride;
  static constexpr int kNetValAt = kNetKeyAt + 2 * pair_sort_k(G);
  static constexpr int kStride = kSorted ? kNetValAt + pair_sort_k(G) : kPairOutStride;
  static_assert(kKeyAt % 8 == 0 && kNetKeyAt % 8 == 0 && kStride % 8 == 0 &&
                    kValAt + kPairCountK <= kPairOutStride,
                "16-byte aligned keys and rows; the counted rank's staging within the columns'");
  struct Fallback {
    typename B::Val val;
    typename B::Idx idx;
    alignas(16) typename B::StageV ov;
    alignas(16) typename B::StageI oi;
    alignas(16) typename B::Sort sort;
  };
  union alignas(16) Warp {
    uint16_t cols[C::kRows][kStride];
    Fallback fb;
  };
};

// Warps an SM: the registers a lane's words leave (E = 96, 128: 20 warps; 64: 24, where 32 spilled
// 16-72 bytes once the odd rows' path was in).
template <int E>
constexpr int kPairMinBlocks = (E >= 96 ? 20 : 24) / kPairBlockWarps;

// The flush's values from a shared copy of the warp's rows (kCopy, below) in index order at E <= 96
// from this k: the copy lengthens the load phase (~1900-3200 cycles a warp at 768 with its stores
// after the bracket), which only the longer flushes of k >= 64 repay (notes v75 item 6, H100, 2^18
// x 768: -5.6% at k = 64, -6.0% at k = 128; v74 item 2: +4.6% at k = 32).  (Its 4.6-6.5 KB a warp
// still leave 20 / 24 blocks an SM, but less of the SM's 256 KB to L1: +1..+3% without the copy.)
constexpr int kPairCopyMinK = 64;

template <typename scalar_t, int G, int E, bool kLargest, bool kSorted = false, bool kCopy = false>
__global__ void __launch_bounds__(kPairBlockWarps * 32, kPairMinBlocks<E>)
    pair_rows_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                     int64_t* __restrict__ out_indices, int64_t rows, int cols, int k,
                     PairPlan plan) {
  static_assert(kLargest || !kSorted, "rank order for the k largest only");
  using C = PairCfg<G, E>;
  using Ops = PairOps<scalar_t>;
  using S = PairSmem<G, E, kSorted>;
  __shared__ typename S::Warp smem[kPairBlockWarps];
  // kCopy: a copy of the warp's rows here for the flush's gathers, which read back from global
  // memory missed L1 (~1000 cycles a flush trip at 768, notes v73; the SM streams its L1's size in
  // less than a warp's turn).  Each lane's E elements, then 16 bytes of padding (the 16-byte stores
  // of a warp's lanes fall in distinct banks).
  static_assert(!kCopy || (!kSorted && E <= 96), "the copy in the index-order flush of E <= 96");
  constexpr int kCopyVecs = E / 8 + 1;  // 16-byte words a lane's segment
  __shared__ uint4 rowcopy[kPairBlockWarps][kCopy ? 32 * kCopyVecs : 1];
  const int lane = threadIdx.x & 31;
  const int warp = __shfl_sync(kFullMask, int(threadIdx.x / 32), 0);  // (warp-uniform loop)
  const int g = lane / G, l = lane % G;
  typename S::Warp& sw = smem[warp];
  // The lane's elements past the row's end are padding (whole 16-byte words; the last lanes of
  // a short row may hold none).
  const int nreal = ::min(::max(cols - l * E, 0), E);
  // (Guided probes, PairPlan: the index-order instances of E <= 96 at the k pair_plan allows.)
  const bool guide = !kSorted && E <= 96 && plan.z == plan.z;
  constexpr uint32_t kSign2 = 0x80008000u;
  // -inf in both halves (directed: padding ranks below every finite value).
  constexpr uint32_t kNegInf2 = ((0x8000u | Ops::kExp) << 16) | (0x8000u | Ops::kExp);
  constexpr uint32_t kPosInf2 = (Ops::kExp << 16) | Ops::kExp;
  const uint32_t inv_k = ((1u << 20) + uint32_t(k) - 1u) / uint32_t(k);  // e / k by a multiply
  // (The flush in pairs: even k, so that a warp's outputs pair within rows at aligned offsets.)
  const bool pairs_out = (k & 1) == 0 && reinterpret_cast<uintptr_t>(out_values) % 4 == 0 &&
                         reinterpret_cast<uintptr_t>(out_indices) % 16 == 0;
  const int64_t nblk = (rows + C::kRows - 1) / C::kRows;

  for (int64_t blk = int64_t(blockIdx.x) * kPairBlockWarps + warp; blk < nblk;
       blk += int64_t(gridDim.x) * kPairBlockWarps) {
    const int64_t r0 = blk * C::kRows;
    const int nrows = int(min(int64_t(C::kRows), rows - r0));
    const bool live = g < nrows;
    // Load: 16-byte words; padding (and rows past the end) as -inf.
    uint32_t w[C::kWords];
    const scalar_t* const src = in + (r0 + g) * int64_t(cols) + l * E;
    uint4* const rcopy = rowcopy[warp] + (kCopy ? lane * kCopyVecs : 0);
    if constexpr (kCopy) __syncwarp();  // (the previous block's flush read the copy)
#pragma unroll
    for (int v = 0; v < C::kVecs; ++v) {
      uint4 q = make_uint4(kNegInf2, kNegInf2, kNegInf2, kNegInf2);
      if (live && 8 * v < nreal) {
        q = __ldg(reinterpret_cast<const uint4*>(src) + v);
        if constexpr (!kLargest) {
          q.x ^= kSign2;
          q.y ^= kSign2;
          q.z ^= kSign2;
          q.w ^= kSign2;
        }
      }
      w[4 * v] = q.x;
      w[4 * v + 1] = q.y;
      w[4 * v + 2] = q.z;
      w[4 * v + 3] = q.w;
    }
    // Each 16-byte word's maximum (NaN-propagating, both halves) and the row's: a row with NaN
    // or +inf (directed) takes the odd rows' path below; -inf needs nothing of its own (its key
    // is the lowest, and a threshold is never -inf).
    uint32_t vmax[C::kVecs];
    uint32_t mx = kNegInf2;
#pragma unroll
    for (int v = 0; v < C::kVecs; ++v) {
      uint32_t a = Ops::max(Ops::max(w[4 * v], w[4 * v + 1]), Ops::max(w[4 * v + 2], w[4 * v + 3]));
      a = Ops::max(a, __byte_perm(a, 0, 0x1032));
      vmax[v] = a;
      mx = Ops::max(mx, a);
    }
    // The row's sum and sum of squares for the first probes (PairPlan), over the high halves (a
    // sample of half the row) in floats: two float-pipe instructions a word, off the integer
    // pipe that bounds the search (packed bf16x2 sums of both halves cost ~8% of the kernel's
    // time on the H200, notes v71 item 2).  Padding left out; NaN / inf make them NaN / inf.
    float m1 = 0.f, m2 = 0.f;
    if (guide) {
      float m1b = 0.f, m2b = 0.f;
#pragma unroll
      for (int v = 0; v < C::kVecs; ++v) {
        if (8 * v < nreal) {
#pragma unroll
          for (int j = 0; j < 4; j += 2) {
            const float a = Ops::high(w[4 * v + j]), b = Ops::high(w[4 * v + j + 1]);
            m1 += a;
            m2 = fmaf(a, a, m2);
            m1b += b;
            m2b = fmaf(b, b, m2b);
          }
        }
      }
      m1 += m1b;
      m2 += m2b;
#pragma unroll
      for (int o = 1; o < G; o *= 2) {
        m1 += __shfl_xor_sync(kFullMask, m1, o);
        m2 += __shfl_xor_sync(kFullMask, m2, o);
      }
    }
    // The bracket's low end: the smallest maximum of the row's groups of V words (host-chosen:
    // the widest with at least k groups; each group's maximum is an element >= it), or with
    // V = 0 the row's minimum.
    uint32_t mn = kPosInf2;
    const auto group_min = [&](auto vc) {
      constexpr int V = decltype(vc)::value;
#pragma unroll
      for (int v0 = 0; v0 < C::kVecs; v0 += V) {
        uint32_t m = vmax[v0];
#pragma unroll
        for (int j = 1; j < V && v0 + j < C::kVecs; ++j) m = Ops::max(m, vmax[v0 + j]);
        if (8 * v0 < nreal) mn = Ops::min(mn, m);
      }
    };
    switch (plan.level) {
      case 8:
        group_min(std::integral_constant<int, 8>{});
        break;
      case 4:
        group_min(std::integral_constant<int, 4>{});
        break;
      case 2:
        group_min(std::integral_constant<int, 2>{});
        break;
      case 1:
        group_min(std::integral_constant<int, 1>{});
        break;
      default:
#pragma unroll
        for (int v = 0; v < C::kVecs; ++v) {
          const uint32_t m =
              Ops::min(Ops::min(w[4 * v], w[4 * v + 1]), Ops::min(w[4 * v + 2], w[4 * v + 3]));
          if (8 * v < nreal) mn = Ops::min(mn, m);
        }
        mn = Ops::min(mn, __byte_perm(mn, 0, 0x1032));
    }
#pragma unroll
    for (int o = 1; o < G; o *= 2) {
      mx = Ops::max(mx, __shfl_xor_sync(kFullMask, mx, o));
      mn = Ops::min(mn, __shfl_xor_sync(kFullMask, mn, o));
    }
    mx &= 0xFFFFu;
    mn &= 0xFFFFu;
    if (mx == 0x8000u) mx = 0u;  // -0.0 as +0.0: nothing is >= the value past it
    // The copy's stores here, after the bracket's shuffles, not as the loads arrive (an STS waits
    // for its load's data: in the load loop they held the warp to the loads' arrival order).
    if constexpr (kCopy) {
#pragma unroll
      for (int v = 0; v < C::kVecs; ++v)
        rcopy[v] = make_uint4(w[4 * v], w[4 * v + 1], w[4 * v + 2], w[4 * v + 3]);
    }
    // A row whose maximum is NaN, +inf or -inf (odd): handled after the re-pairing below.
    const bool odd = live && (mx & Ops::kExp) == Ops::kExp;
    bool ok = live;
    // Re-pair each chunk: word i of a chunk holds its elements i (low half) and 16 + i (high).
    uint32_t u[C::kWords];
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c)
#pragma unroll
      for (int i = 0; i < 16; ++i)
        u[16 * c + i] =
            __byte_perm(w[16 * c + i / 2], w[16 * c + 8 + i / 2], (i & 1) ? 0x7632 : 0x5410);

    // Odd rows: the elements that rank above every finite value (NaN and +inf for the k largest;
    // +inf -- the input's -inf -- for the k smallest) are taken outright (spm, a chunk's bits) and
    // set to -inf in the registers, as NaN is for the k smallest (it ranks last); the search then
    // looks for kk = k less them over the rest.  A row with more of them than k (cls) keeps its
    // registers and takes the first k by rank and index with no search, through the ties' quota:
    // cls 1, the first k of the first class (NaN for the k largest, else the input's -inf), its
    // mask in spm; cls 2, all of the first class and the first k - n1 of the second (+inf, found
    // by the ties' compare).  A row whose k-th value is a -inf tied with a NaN set to -inf goes to
    // the fallback.  A warp without odd rows skips all this.
    uint32_t spm[C::kChunks];
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c) spm[c] = 0u;
    int kk = k, cls = 0, n1 = 0;
    bool nan_low = false;  // (the k smallest) NaN in the row, now -inf
    if (__any_sync(kFullMask, odd)) {
      uint32_t mx2 = kNegInf2, mn2 = kPosInf2, nans = 0u, first[C::kChunks];
      int ns = 0;
#pragma unroll
      for (int c = 0; c < C::kChunks; ++c) {
        first[c] = 0u;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const uint32_t x = u[16 * c + i];
          const uint32_t nanm = Ops::nan(x), infm = Ops::eq(x, kPosInf2);
          const uint32_t bad = odd ? nanm | infm : 0u;
          spm[c] |= (kLargest ? bad : infm & bad) & (0x00010001u << i);
          first[c] |= (kLargest ? nanm : infm) & bad & (0x00010001u << i);
          nans |= nanm & bad;
          const uint32_t y = (x & ~bad) | (kNegInf2 & bad);
          mx2 = Ops::max(mx2, y);
          mn2 = Ops::min(mn2, y);  // (padding is -inf too: a bracket from -inf is still one)
        }
        ns += __popc(spm[c]);
        n1 += __popc(first[c]);
      }
      mx2 = Ops::max(mx2, __byte_perm(mx2, 0, 0x1032));
      mn2 = Ops::min(mn2, __byte_perm(mn2, 0, 0x1032));
#pragma unroll
      for (int o = 1; o < G; o *= 2) {
        mx2 = Ops::max(mx2, __shfl_xor_sync(kFullMask, mx2, o));
        mn2 = Ops::min(mn2, __shfl_xor_sync(kFullMask, mn2, o));
        ns += __shfl_xor_sync(kFullMask, ns, o);
        n1 += __shfl_xor_sync(kFullMask, n1, o);
        nans |= __shfl_xor_sync(kFullMask, nans, o);
      }
      if (odd) {
        mx = mx2 & 0xFFFFu;
        mn = mn2 & 0xFFFFu;
        if (mx == 0x8000u) mx = 0u;
        kk = k - ns;
        cls = kk >= 0 ? 0 : k <= n1 ? 1 : 2;
        nan_low = !kLargest && nans != 0u;
      }
      // The searched odd rows' specials to -inf; a cls row's mask to its first class.
#pragma unroll
      for (int c = 0; c < C::kChunks; ++c) {
        if (cls) spm[c] = first[c];
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          uint32_t& x = u[16 * c + i];
          // (NaN, +-inf by their bits: the first loop's compares, reused, would stay live.)
          const uint32_t bad = odd && !cls ? __vcmpgeu2(x & ~kSign2, kPosInf2) : 0u;
          x = (x & ~bad) | (kNegInf2 & bad);
        }
      }
    }

    // Elements >= t (t2: t in both halves) of the row.
    const auto count_ge = [&](uint32_t t2) {
      uint32_t acc[4] = {0u, 0u, 0u, 0u};
#pragma unroll
      for (int i = 0; i < C::kWords; i += 2)
        acc[(i / 2) & 3] += Ops::ge(u[i], t2) + Ops::ge(u[i + 1], t2);
      // The masks' sum is a (2^16 - 1) - b 2^16 (mod 2^32) for a low and b high halves set (each
      // < 2^15), so its negation t = (b - a) 2^16 + a: a its low half, b - a its high half
      // (signed), and the count a + b = 2 a + (t >> 16).  (Negated in the merge, decoded in 3.)
      const int t = int(0u - acc[0] - acc[1] - acc[2] - acc[3]);
      int n = 2 * (t & 0xFFFF) + (t >> 16);
#pragma unroll
      for (int o = 1; o < G; o *= 2) n += __shfl_xor_sync(kFullMask, n, o);
      return n;
    };

    // The search: lo's count >= k, hi's (c_hi) < k, or both ends at t once t's count is exactly k
    // (c_hi = k); lo_f / hi_f their values (lo / hi their keys).  Done: take every element >= tgt,
    // then the first `need` equal to teq by index.
    float lo_f = Ops::to_float(mn), hi_f = Ops::to_float(pair_bits(pair_key(mx) + 1));
    int c_hi = 0;
    bool done = !ok || cls;
    // (cls rows: nothing is >= a NaN threshold; cls 2's ties are the +inf.)
    uint32_t tgt = cls ? Ops::kExp | (Ops::kExp >> 1) : 0u, teq = cls == 2 ? Ops::kExp : 0u;
    int need = cls == 1 ? k : cls == 2 ? k - n1 : 0;
    // The value phase: midpoints in value while they fall strictly inside the bracket, in
    // floats only (~30 instructions a step besides the compares and their sums; the key phase's
    // steps, with the key midpoint and the keys' updates beside, ~60).  A row leaves it when its
    // midpoint is not inside (ends adjacent or equal, or one not finite: the row's -inf), or
    // after kPairValueSteps steps (the warp's: a row that left early has fewer value midpoints
    // left in the key phase).  (randn rows end in it; notes v65.)
    // A count of exactly kk moves both ends to t (c_hi = kk): the value phase's next midpoint is
    // not inside, and the key phase's first check ends the row with tgt = t and need = 0.  (No
    // `done` / tgt updates in the steps: two predicated selects; notes v68 item 5.)
    bool vphase = !done;
    int step = 0;
    // (A -inf low end -- an all -inf group, or the odd rows' specials -- would end the phase: its
    // first probe is 0 instead where hi is above it, as the key midpoint nearly is.  Only the
    // first: a count at 0 below k leaves lo at -inf and hi at 0, whose midpoint ends the phase.)
    float mid = lo_f == -INFINITY && hi_f > 0.f ? 0.f : lo_f * 0.5f + hi_f * 0.5f;
    const auto value_step = [&](float m, int& c) {
      uint32_t t2;
      const float vf = Ops::threshold(m, t2);
      vphase = vphase && step < kPairValueSteps && vf > lo_f && vf < hi_f;
      if (!__any_sync(kFullMask, vphase)) return false;
      c = count_ge(t2);
      lo_f = vphase && c >= kk ? vf : lo_f;
      const bool down = vphase && c <= kk;
      hi_f = down ? vf : hi_f;
      c_hi = down ? c : c_hi;
      ++step;
      return true;
    };
    int c = 0;
    if (guide) {
      // The first two steps guided (PairPlan): mean + z sd where it falls inside the bracket,
      // then `step` sd from it toward the k-th value where the count was near k.  (Outside the
      // loop, so that its steps pay nothing for them.)
      const float mean = m1 * plan.inv_n, sd = sqrtf(m2 * plan.inv_n - mean * mean);
      const float est = mean + plan.z * sd;
      uint32_t t2;
      float gf = Ops::threshold(est, t2);
      const bool guided = gf > lo_f && gf < hi_f;  // (false for NaN)
      if (value_step(guided ? est : mid, c)) {
        mid = lo_f * 0.5f + hi_f * 0.5f;
        const float g2 = est + (c >= kk ? plan.step : -plan.step) * sd;
        gf = Ops::threshold(g2, t2);
        if (guided && fabsf(float(c - kk)) <= plan.gate && gf > lo_f && gf < hi_f) mid = g2;
      }
    }
    while (value_step(mid, c)) mid = lo_f * 0.5f + hi_f * 0.5f;
    // The key phase (ends by adjacent keys at the latest: at most 16 more steps).
    int lo = pair_key(Ops::from_float(lo_f)), hi = pair_key(Ops::from_float(hi_f));
    for (;; ++step) {
      if (!done && hi - lo <= 1) {
        done = true;
        tgt = pair_bits(hi);
        teq = pair_bits(lo);
        need = kk - c_hi;
      }
      if (!__any_sync(kFullMask, !done)) break;
      // The key midpoint, or the value midpoint where it lies strictly inside (in value: then
      // in key too).
      uint32_t t = pair_bits((lo + hi) >> 1);
      if (step < kPairValueSteps) {
        const uint32_t vt = Ops::from_float(lo_f * 0.5f + hi_f * 0.5f);
        const float vf = Ops::to_float(vt);
        if (vf > lo_f && vf < hi_f) t = vt;
      }
      const int c = count_ge(t | (t << 16));
      const int tk = pair_key(t);
      const float tf = Ops::to_float(t);
      const bool up = !done && c >= kk, down = !done && c <= kk;
      lo = up ? tk : lo;
      lo_f = up ? tf : lo_f;
      hi = down ? tk : hi;
      hi_f = down ? tf : hi_f;
      c_hi = down ? c : c_hi;
    }

    // (The k smallest) a k-th value of -inf tied with the NaN set to -inf: the fallback's.
    if (nan_low && need > 0 && teq == (0x8000u | Ops::kExp)) ok = false;

    // Take masks, index order (bit i of chunk c: element 32 c + i of the lane).
    uint32_t take[C::kChunks];
    const uint32_t tgt2 = tgt | (tgt << 16);
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c) {
      uint32_t m = 0u;
#pragma unroll
      for (int i = 0; i < 16; ++i) m |= Ops::ge(u[16 * c + i], tgt2) & (0x00010001u << i);
      take[c] = ok ? m | (cls == 1 ? 0u : spm[c]) : 0u;
    }
    if (__any_sync(kFullMask, need > 0)) {
      // Ties at the k-th value: the row's first `need` of them by index.
      const uint32_t teq2 = teq | (teq << 16);
      uint32_t eqm[C::kChunks];
      int ne = 0;
#pragma unroll
      for (int c = 0; c < C::kChunks; ++c) {
        uint32_t m = 0u;
#pragma unroll
        for (int i = 0; i < 16; ++i) m |= Ops::eq(u[16 * c + i], teq2) & (0x00010001u << i);
        eqm[c] = ok && need > 0 ? (cls == 1 ? spm[c] : m & ~spm[c]) : 0u;
        ne += __popc(eqm[c]);
      }
      const int before = lane_group_inclusive<G>(ne, l) - ne;
      int quota = min(max(need - before, 0), ne);
#pragma unroll
      for (int c = 0; c < C::kChunks; ++c) {
        uint32_t m = eqm[c], kept = 0u;
        while (quota > 0 && m) {
          const uint32_t low = m & (0u - m);
          kept |= low;
          m ^= low;
          --quota;
        }
        take[c] |= kept;
      }
    }
    // Stage the columns in index order.
    int tc = 0;
#pragma unroll
    for (int c = 0; c < C::kChunks; ++c) tc += __popc(take[c]);
    int pos = lane_group_inclusive<G>(tc, l) - tc;
    __syncwarp();  // (the previous block's flush / fallback read the staging)
    uint16_t* const scol = sw.cols[g];
    // (Two columns a chunk a trip, the chunks side by side: SASS, G = 8, E = 96, 46 instructions a
    // trip of three chunks, against 17 a chunk's trip chunk after chunk.)
    stage_set_bits(take, scol + pos, l * E);
    const unsigned okmask = __ballot_sync(kFullMask, ok);
    __syncwarp();
    // Flush: the warp's rows' k outputs are contiguous, written coalesced.
    scalar_t* const ov = out_values + r0 * k;
    int64_t* const oi = out_indices + r0 * k;
    const uint16_t* const raw = reinterpret_cast<const uint16_t*>(in + r0 * int64_t(cols));
    const int total = nrows * k;
    // The unsorted flushes: a row left to the fallback (below, which rewrites all its outputs)
    // flushes column 0 k times, its staged columns zeroed here, so that no output tests its row;
    // offsets within the warp's staging and rows in 32 bits (row gg's staged output e at byte
    // 2 e + gg (row bytes - 2 k); a warp's rows hold < 2^16 elements), the stores predicated.
    if (!kSorted && __any_sync(kFullMask, live && !ok)) {
      if (live && !ok)
        for (int p = l; p < k; p += G) sw.cols[g][p] = 0;
      __syncwarp();
    }
    // Row gg's element c from the copy: lane gg G + c / E's segment, element c % E.
    [[maybe_unused]] const auto copied = [&](int gg, uint32_t c) -> uint32_t {
      const uint16_t* const rc = reinterpret_cast<const uint16_t*>(rowcopy[warp]);
      // (The k smallest: the copy holds the directed bits; their sign back here.)
      return rc[uint32_t(gg) * uint32_t(G * 8 * kCopyVecs) + c + 8u * (c / uint32_t(E))] ^
             (kLargest ? 0u : 0x8000u);
    };
    [[maybe_unused]] const char* const scols = reinterpret_cast<const char*>(sw.cols);
    [[maybe_unused]] const int rowstep = int(sizeof(sw.cols[0])) - 2 * k;
    if constexpr (kSorted) {
      if (k > pair_net_k(G)) {
        pair_rank_network<Ops, pair_sort_k(G), S::kStride, S::kNetKeyAt, S::kNetValAt>(
            sw.cols, raw, ov, oi, nrows, cols, k, inv_k, lane);
      } else {
        // Rank order by counting: the rank keys and values staged (the key slots up to a multiple
        // of 4 past k zero), then each output ranked by counting the keys above its own, four a
        // shared load, and written at its rank from the staging.
        const int kq = (k + 3) & ~3;
        const uint32_t inv_kq = ((1u << 20) + uint32_t(kq) - 1u) / uint32_t(kq);
        pair_stage_rank_keys<Ops, S::kStride, S::kKeyAt, S::kValAt>(sw.cols, raw, nrows, cols, k,
                                                                    kq, inv_kq, lane);
        for (int e = lane; e < total; e += 32) {
          const int gg = int((uint32_t(e) * inv_k) >> 20), p = e - gg * k;
          const uint16_t* const row = sw.cols[gg];
          const uint4* const keys = reinterpret_cast<const uint4*>(row + S::kKeyAt);
          const uint32_t mine = reinterpret_cast<const uint32_t*>(keys)[p];
          int r = 0;
          for (int q = 0; q < kq / 4; ++q) {
            const uint4 w4 = keys[q];
            r += int(w4.x > mine) + int(w4.y > mine) + int(w4.z > mine) + int(w4.w > mine);
          }
          reinterpret_cast<uint16_t*>(ov)[gg * k + r] = row[S::kValAt + p];
          oi[gg * k + r] = row[p];
        }
      }
    } else if (pairs_out) {
      // Even k: two adjacent outputs of a row a lane (a 32-bit shared load of their columns, one
      // 32-bit store of their values and one 16-byte store of their indices), two pairs a lane a
      // trip, the four loads issued before the stores (four pairs a trip spilled at G = 8, E = 96;
      // two do not).
      const int npairs = total >> 1;
      // 83 instructions a trip against 103 (SASS, G = 2, E = 128; notes v69 item 3).
      uint16_t* const ovh = reinterpret_cast<uint16_t*>(ov);
      for (int q0 = 0; q0 < npairs; q0 += 64) {
        uint32_t cc[2], vv[2];
        int at[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int e = 2 * (q0 + 32 * j + lane);
          const int gg = int((uint32_t(e) * inv_k) >> 20);
          at[j] = e < total ? e : -1;
          cc[j] =
              at[j] >= 0 ? *reinterpret_cast<const uint32_t*>(scols + 2 * e + gg * rowstep) : 0u;
          uint32_t v0, v1;
          if constexpr (kCopy) {  // (past the end: row 0's column 0, unused)
            const int gs = at[j] >= 0 ? gg : 0;
            v0 = copied(gs, cc[j] & 0xFFFFu);
            v1 = copied(gs, cc[j] >> 16);
          } else {
            const uint32_t rb = uint32_t(gg) * uint32_t(cols);
            v0 = at[j] >= 0 ? __ldg(raw + (rb + (cc[j] & 0xFFFFu))) : 0u;
            v1 = at[j] >= 0 ? __ldg(raw + (rb + (cc[j] >> 16))) : 0u;
          }
          vv[j] = v0 | v1 << 16;
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          if (at[j] >= 0) *reinterpret_cast<uint32_t*>(ovh + at[j]) = vv[j];
          pair_store_2x64_if(oi + at[j], cc[j] & 0xFFFFu, cc[j] >> 16, at[j] >= 0);
        }
      }
    } else {
      // Four outputs a lane a trip, their loads issued before their stores (one L1 / L2 round trip
      // a trip, not one an output).
      for (int e0 = 0; e0 < total; e0 += 128) {
        int col[4], at[4];
        uint16_t bits[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int e = e0 + 32 * j + lane;
          const int gg = int((uint32_t(e) * inv_k) >> 20);
          at[j] = e < total ? e : -1;
          col[j] =
              at[j] >= 0 ? *reinterpret_cast<const uint16_t*>(scols + 2 * e + gg * rowstep) : 0;
          if constexpr (kCopy) {
            bits[j] = uint16_t(
                copied(at[j] >= 0 ? gg : 0, uint32_t(col[j])));  // (past the end: row 0's column 0)
          } else {
            const uint32_t rb = uint32_t(gg) * uint32_t(cols);
            bits[j] = at[j] >= 0 ? __ldg(raw + (rb + uint32_t(col[j]))) : uint16_t(0);
          }
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (at[j] >= 0) {
            reinterpret_cast<uint16_t*>(ov)[at[j]] = bits[j];
            oi[at[j]] = col[j];
          }
        }
      }
    }
    // The rows left (a -inf k-th value tied with NaN): the value kernel's row body.
    unsigned left = ~okmask & (0xFFFFFFFFu / ((1u << G) - 1u));
    left &= nrows == C::kRows ? ~0u : (1u << (G * nrows)) - 1u;
    if (left) {
      __syncwarp();
      while (left) {
        const int gg = (__ffs(left) - 1) / G;
        left &= left - 1u;
        const int64_t r = r0 + gg;
#if defined(RTOPK_WARP_EMU)
        if (lane == 0) rtopk_emu_note_fallback();
#endif
        warp_value_row<scalar_t, C::kVpt, kLargest, false>(
            in + r * cols, out_values + r * k, out_indices + r * k, cols, k, -1, 0.f, sw.fb.val,
            sw.fb.idx, sw.fb.ov, sw.fb.oi, sw.fb.sort);
        __syncwarp();
      }
    }
  }
}

// The kernel shape a launch takes: lanes a row G (elements a lane E = cols / G rounded up to a
// shape), or 0: none.  Only 16-bit rows in whole 16-byte words, exact mode, index order (or
// k = 1, or rank order for the k largest at k <= pair_sort_k(G): the unsorted call's shape rules;
// bf16 randn 0.58-0.85 of the time of the paths it replaces, notes v66), k <= kStageK, a 16-byte
// aligned input.  pair_mode (torch.ops.rtopk._set_debug_pair_rows): 1 wherever the shapes allow
// (193..256: G = 2, E = 128; 385..512: 4, 128; 513..768: 8, 96), 3 as 1 with more lanes a row
// (193..256: 4, 64; 385..512: 8, 64), 2 never, 0 the measured dispatch. Measured (H200,
// benchmarks/pair_modes.py, bf16 / fp16 randn, time against the lane / warp kernels; notes v64):
// rows of 256 from 2^17 rows at k <= 32, G = 2: 0.66-0.77; G = 4 from 2^15 rows at k <= 96:
// 0.83-0.95 (G = 2 at k = 96: 0.99-1.10); k = 128 1.00-1.05 (G = 4): not taken; fewer rows, G = 4
// at k = 16 / 32 (2^14 rows): 0.91 / 0.93, at 64..128 1.05-1.16: not taken.  Rows of 512 from 2^17
// rows, G = 4 at k <= 64: 0.63-0.86; G = 8 at k = 96 / 128: 0.86-0.99; fewer rows G = 8 (measured
// at 2^14 .. 2^16 rows, notes v67 item 2: 0.85-0.97 where the old dispatch took the lane kernels or
// G = 4).  Rows of 768, G = 8, every launch: 0.61-0.92.  Other row lengths (257..448, 513..704)
// only when forced: not measured.
constexpr int64_t kPairMinRows = int64_t(1) << 15;
// (pair_rows_shape's lanes a row for the launch's shape, before the rank-order limit.)
inline int pair_rows_lanes(const RowLaunch& a) {
  const bool forced = a.pair_mode == 1 || a.pair_mode == 3;
  const bool wide = a.pair_mode == 3;
  if (a.cols >= PairCfg<2, 128>::kMinCols && a.cols <= 256) {
    if (forced) return wide ? 4 : 2;
    // (k <= 8: the network kernel's, rtopk_net_rows.cuh, as before.)
    if (a.k <= 8 || a.k > (a.rows < kPairMinRows ? 32 : 96)) return 0;
    return a.k <= 32 && a.rows >= (int64_t(1) << 17) ? 2 : 4;
  }
  if (a.cols >= PairCfg<4, 128>::kMinCols && a.cols <= 512) {
    if (forced) return wide ? 8 : 4;
    if (a.cols < 449) return 0;
    return a.k <= 64 && a.rows >= (int64_t(1) << 17) ? 4 : 8;
  }
  if (a.cols >= PairCfg<8, 96>::kMinCols && a.cols <= 768) return forced || a.cols >= 705 ? 8 : 0;
  return 0;
}
template <typename scalar_t>
inline int pair_rows_shape(const scalar_t* in, const RowLaunch& a) {
  if constexpr (sizeof(scalar_t) != 2) {
    return 0;
  } else {
    const bool exact = a.max_iter < 0 && !(static_cast<float>(a.eps) > 0.f);
    // (Rank order: the k largest at k <= pair_sort_k(G) only; notes v65 item 12, v66.)
    const bool ranked = a.sorted && a.k > 1;
    if (a.pair_mode == 2 || !exact || (ranked && !a.largest) || a.k > kStageK || a.cols % 8 != 0 ||
        reinterpret_cast<uintptr_t>(in) % 16 != 0)
      return 0;
    // (The network over staged keys past pair_net_k(G): bf16 sorted 0.68-0.86 of the time of the
    // paths it replaced at k = 64..128, rows of 256 included, 0.83-0.94 of the count's at k = 24 /
    // 32; notes v67 items 1 and 5.)
    const int g = pair_rows_lanes(a);
    return ranked && a.k > pair_sort_k(g) ? 0 : g;
  }
}

// The kernel's `level`: the widest group of V 16-byte words (V in 8, 4, 2, 1) of which a row
// has at least k (the smallest group maximum then has k elements at or above it), else 0.
inline int pair_level(int64_t cols, int64_t k, int G, int E) {
  for (int V = 8; V >= 1; V /= 2) {
    if (8 * V > E) continue;
    int64_t groups = 0;
    for (int l = 0; l < G; ++l) {
      const int64_t n = std::min<int64_t>(std::max<int64_t>(cols - int64_t(l) * E, 0), E);
      groups += (n / 8 + V - 1) / V;
    }
    if (groups >= k) return V;
  }
  return 0;
}

// The launch's PairPlan.  z by two Newton steps on erfc from Abramowitz and Stegun 26.2.23's
// start (|error| < 4.5e-4 there); z NaN (no moments, no guided probe) outside the shapes and k
// below.
inline PairPlan pair_plan(int64_t cols, int64_t k, int G, int E) {
  PairPlan p{pair_level(cols, k, G, E), 2.f / float(cols), NAN, 0.f, 0.f};
  // (Where the H200 measured a gain, notes v71 item 3: G = 8, E = 96 from k = 32; G = 4, E = 64
  // from k = 64; G = 8, E = 64 from k = 96.  Rows of E = 128 and rank order lost 1-5%; so did
  // smaller k, where the passes saved do not pay for the moments.)
  const int64_t k_min = E == 96 ? 32 : E == 64 ? (G == 4 ? 64 : 96) : cols;
  if (k < k_min || k >= cols) return p;
  const double q = double(k) / double(cols), tail = q < 0.5 ? q : 1.0 - q;
  const double t = std::sqrt(-2.0 * std::log(tail));
  double z = t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                     (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
  const double inv_sqrt_2pi = 0.3989422804014327;
  for (int i = 0; i < 2; ++i)  // (the upper tail's quantile: P(X >= z) = tail)
    z += (0.5 * std::erfc(z * 0.7071067811865476) - tail) / (inv_sqrt_2pi * std::exp(-0.5 * z * z));
  if (q > 0.5) z = -z;
  const double phi = inv_sqrt_2pi * std::exp(-0.5 * z * z), v = q * (1.0 - q);
  p.z = float(z);
  // (The spread of the k-th value about mean + z sd, and the sample's error in mean and sd.)
  p.step = float(1.5 * std::sqrt(v / (phi * phi) + 1.0 + 0.5 * z * z) / std::sqrt(double(cols)));
  p.gate = float(4.0 * std::sqrt(v * double(cols)));
  return p;
}

// The instance a launch takes (the emulator's and benchmarks/pair_phases.cu's too, the latter where
// RTOPK_PAIR_ROWS_INSTANCE says this tree has it): rank order for the k largest past k = 1, the
// row copy in index order from kPairCopyMinK at E <= 96.
#define RTOPK_PAIR_ROWS_INSTANCE 1
template <typename scalar_t, int G, int E>
auto pair_rows_instance(bool largest, bool sorted, int64_t k) {
  constexpr bool kMayCopy = E <= 96;
  const bool copy = kMayCopy && k >= kPairCopyMinK;
  if (!largest)
    return copy ? pair_rows_kernel<scalar_t, G, E, false, false, kMayCopy>
                : pair_rows_kernel<scalar_t, G, E, false>;
  if (sorted && k > 1) return pair_rows_kernel<scalar_t, G, E, true, true>;
  return copy ? pair_rows_kernel<scalar_t, G, E, true, false, kMayCopy>
              : pair_rows_kernel<scalar_t, G, E, true>;
}

#ifndef RTOPK_WARP_EMU  // (the emulator calls the kernel itself)
template <typename scalar_t, int G, int E>
void launch_pair_rows_g(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a,
                        cudaStream_t stream) {
  using C = PairCfg<G, E>;
  const auto kernel = pair_rows_instance<scalar_t, G, E>(a.largest, a.sorted, a.k);
  const int64_t warps = (a.rows + C::kRows - 1) / C::kRows;
  const int64_t blocks = (warps + kPairBlockWarps - 1) / kPairBlockWarps;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(blocks, 0x7FFFFFFF));
  kernel<<<grid, kPairBlockWarps * 32, 0, stream>>>(in, ov, oi, a.rows, static_cast<int>(a.cols),
                                                    static_cast<int>(a.k),
                                                    pair_plan(a.cols, a.k, G, E));
}

// Launches the shape pair_rows_shape chose (g: its lanes a row).
template <typename scalar_t>
void launch_pair_rows(const scalar_t* in, scalar_t* ov, int64_t* oi, const RowLaunch& a, int g,
                      cudaStream_t stream) {
  if (a.cols <= 256) {
    g == 4 ? launch_pair_rows_g<scalar_t, 4, 64>(in, ov, oi, a, stream)
           : launch_pair_rows_g<scalar_t, 2, 128>(in, ov, oi, a, stream);
  } else if (a.cols <= 512) {
    g == 8 ? launch_pair_rows_g<scalar_t, 8, 64>(in, ov, oi, a, stream)
           : launch_pair_rows_g<scalar_t, 4, 128>(in, ov, oi, a, stream);
  } else {
    launch_pair_rows_g<scalar_t, 8, 96>(in, ov, oi, a, stream);
  }
}

#endif  // RTOPK_WARP_EMU

}  // namespace cuda_detail
}  // namespace rtopk
