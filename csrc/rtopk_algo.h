// The one description of the rtopk algorithm, shared by the CPU and CUDA backends.
//
// Every comparison is made on an order-preserving unsigned key of the element's value in the
// compute type (fp32 for 16/32-bit inputs, fp64 for fp64).  All NaNs share the largest key
// (NaN ranks above +inf, as in torch.topk) and -0.0/+0.0 share one key, so "ties" are exact
// equality of keys.  Key 0 is never the key of a real value: backends use it for padding.
// The k smallest are the k largest directed keys (directed_key): keys of -v, NaN lowest.
//
// A backend supplies a Row (how to count and reduce over one row); make_plan() runs the search
// and returns a Plan that says which elements to emit; the backend then walks the row in index
// order and emits them.  Because the plan depends only on counts and on IEEE arithmetic done in
// the same order, every backend selects bit-identical indices.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define RTOPK_HD __host__ __device__ __forceinline__
#else
#define RTOPK_HD inline
#endif

namespace rtopk {

template <typename Compute>
struct KeyTraits;

template <>
struct KeyTraits<float> {
  using Key = uint32_t;
  static constexpr int kBits = 32;
  static constexpr Key kMax = 0xFFFFFFFFu;     // every NaN
  static constexpr Key kZero = 0x80000000u;    // -0.0 and +0.0
  static constexpr Key kNegInf = 0x007FFFFFu;  // -inf
  static constexpr Key kPosInf = 0xFF800000u;  // +inf
  RTOPK_HD static Key bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    Key b;
    std::memcpy(&b, &f, sizeof(b));
    return b;
#endif
  }
  RTOPK_HD static float from_bits(Key b) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(b);
#else
    float f;
    std::memcpy(&f, &b, sizeof(f));
    return f;
#endif
  }
  // Midpoint without overflow; explicit rounding steps so nvcc cannot fuse them into an FMA
  // (the CPU build disables contraction too), keeping CPU and CUDA thresholds identical.
  RTOPK_HD static float midpoint(float lo, float hi) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(__fmul_rn(lo, 0.5f), __fmul_rn(hi, 0.5f));
#else
    return lo * 0.5f + hi * 0.5f;
#endif
  }
};

template <>
struct KeyTraits<double> {
  using Key = uint64_t;
  static constexpr int kBits = 64;
  static constexpr Key kMax = 0xFFFFFFFFFFFFFFFFull;
  static constexpr Key kZero = 0x8000000000000000ull;
  static constexpr Key kNegInf = 0x000FFFFFFFFFFFFFull;
  static constexpr Key kPosInf = 0xFFF0000000000000ull;
  RTOPK_HD static Key bits(double f) {
#if defined(__CUDA_ARCH__)
    return static_cast<Key>(__double_as_longlong(f));
#else
    Key b;
    std::memcpy(&b, &f, sizeof(b));
    return b;
#endif
  }
  RTOPK_HD static double from_bits(Key b) {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double(static_cast<long long>(b));
#else
    double f;
    std::memcpy(&f, &b, sizeof(f));
    return f;
#endif
  }
  RTOPK_HD static double midpoint(double lo, double hi) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(__dmul_rn(lo, 0.5), __dmul_rn(hi, 0.5));
#else
    return lo * 0.5 + hi * 0.5;
#endif
  }
};

// Order-preserving key: flip all bits of negatives, set the sign bit of positives.
template <typename Compute>
RTOPK_HD typename KeyTraits<Compute>::Key to_key(Compute v) {
  using T = KeyTraits<Compute>;
  using Key = typename T::Key;
  if (v != v) return T::kMax;
  if (v == Compute(0)) return T::kZero;
  const Key b = T::bits(v);
  return (b & T::kZero) ? Key(~b) : Key(b | T::kZero);
}

// Inverse of to_key (NaN comes back as a canonical NaN, -0.0 as +0.0).
template <typename Compute>
RTOPK_HD Compute from_key(typename KeyTraits<Compute>::Key k) {
  using T = KeyTraits<Compute>;
  using Key = typename T::Key;
  return T::from_bits((k & T::kZero) ? Key(k & ~T::kZero) : Key(~k));
}

// Key of v in the selection's direction.  largest: to_key(v).  Smallest: the key of -v, with NaN
// ranked below every number (key 1, unused by to_key), as torch.topk(largest=False) ranks it
// last.  Every mode then selects the k largest directed keys, and the value-space searches
// (Algorithms 1 and 2) run on -v.
template <typename Compute>
RTOPK_HD typename KeyTraits<Compute>::Key directed_key(Compute v, bool largest) {
  using Key = typename KeyTraits<Compute>::Key;
  if (v != v) return largest ? KeyTraits<Compute>::kMax : Key(1);
  return to_key<Compute>(largest ? v : -v);
}

// The compute type whose keys are of type Key.
template <typename Key>
using ComputeOf = typename std::conditional<sizeof(Key) == 4, float, double>::type;

// Keys whose value must be re-read from the input to keep its exact bits (NaN payload, -0.0).
template <typename Key>
RTOPK_HD bool key_loses_bits(Key k) {
  using T = KeyTraits<ComputeOf<Key>>;
  return k == T::kMax || k == T::kZero || k == 1;  // NaN (either direction), +-0.0
}

// Finite values have keys strictly between those of -inf and +inf (padding key 0 is below both).
template <typename Key>
RTOPK_HD bool key_is_finite(Key k) {
  using T = KeyTraits<ComputeOf<Key>>;
  return k > T::kNegInf && k < T::kPosInf;
}

// What to emit from a row: every element with key > above, then, in index order, the first
// `quota` elements with floor <= key <= above.  make_plan guarantees that the first group has at
// most k elements and the second at least quota, and that the two add up to exactly k.
template <typename Key>
struct Plan {
  Key above;
  Key floor;
  int64_t quota;

  // Emitted whatever its position.
  RTOPK_HD bool takes(Key key) const { return key > above; }
  // Emitted if among the first `quota` such elements in index order.
  RTOPK_HD bool fills(Key key) const { return key <= above && key >= floor; }
};

// Row interface used by make_plan (all results uniform across the threads that share the row):
//   int64_t count_ge(Key t)    number of elements with key >= t   (t >= 1)
//   bool key_range(Key& lo, Key& hi, bool finite_only)
//                              min/max key over the row's elements (only the finite ones if
//                              finite_only); false if there are none
// and, optionally, for a row that pays a pass over memory for every count but can count several
// thresholds in one (a Row with `static constexpr bool kLooksAhead`): before each step the
// searches call
//   look_ahead_values(Compute lo, Compute hi, int64_t steps)   (bisection of [lo, hi]; steps
//                                                               left, -1 for no bound)
//   look_ahead_keys(Key t, int b)                              (key bits from bit b down)
// and every count they then ask for until the next call is one of value_thresholds_ahead's /
// key_thresholds_ahead's (below; exact_plan's last count, at t + 1, and Algorithm 1's at an unmoved
// hi are not), so that such a row counts them all in one pass.  The plan is unchanged.
//
// Modes:
//   max_iter == -1, eps == 0: exact.  Bisect the key bits for the k-th largest key T, starting
//       below the common prefix of the row's min and max keys (at most kBits counts; stop early
//       once exactly k keys are >= the candidate).  Emit every key > T and the lowest-indexed
//       keys == T.  (Any way of finding T selects the same elements: the CPU backend's radix
//       select on rows of 1024+ elements, rtopk_cpu.cpp.)
//   max_iter == -1, eps > 0: Algorithm 1.  Bisect arithmetic midpoints of [lo, hi] (finite min and
//       max of the row) until exactly k elements are >= the midpoint, the bracket is no wider than
//       eps*|max|, or no representable midpoint is left.  Emit everything >= hi, then fill from
//       [lo, hi) in index order (and, if -inf leaves too few, with the -inf in index order).  If k
//       or more elements are >= the row's finite max (ties there, +inf, NaN) the bracket cannot
//       separate them, and the exact search ranks them instead.
//   max_iter >= 1: Algorithm 2.  At most max_iter midpoints (stopping early only once exactly k
//       are >= lo or a step leaves the bracket as it was, both of which leave the result
//       unchanged, or when eps > 0 and the bracket is narrow);
//       emit the first k elements in index order that are >= lo (then -inf in index order if too
//       few are).
// NaN is >= every threshold and +inf/-inf compare as infinities, all through the key order.
// The look-ahead's thresholds: every count the next steps (at most kAheadDepth) of a value
// bisection of [lo, hi] (with `steps` left, -1 for no bound) can ask for, computed as make_plan
// computes them: lo's key (the count at lo, asked for when lo never moves), then the midpoints'
// keys breadth first (node i's children 2i: fewer than k at or above its midpoint, 2i + 1: at
// least k).  Returns how many keys were written (at most kAheadKeys).
constexpr int kAheadDepth = 4;
constexpr int kAheadKeys = 1 << kAheadDepth;
template <typename Compute>
RTOPK_HD int value_thresholds_ahead(Compute lo, Compute hi, int64_t steps,
                                    typename KeyTraits<Compute>::Key* keys) {
  using T = KeyTraits<Compute>;
  const int d = (steps < 0 || steps >= kAheadDepth) ? kAheadDepth : static_cast<int>(steps);
  Compute nlo[kAheadKeys], nhi[kAheadKeys];
  nlo[1] = lo;
  nhi[1] = hi;
  keys[0] = to_key<Compute>(lo);
  int m = 1;
  for (int i = 1; i < (1 << d); ++i) {
    const Compute t = T::midpoint(nlo[i], nhi[i]);
    keys[m++] = to_key<Compute>(t);
    if (2 * i + 1 < kAheadKeys) {
      nlo[2 * i] = nlo[i];
      nhi[2 * i] = t;
      nlo[2 * i + 1] = t;
      nhi[2 * i + 1] = nhi[i];
    }
  }
  return m;
}

// The same for exact_plan's key bits: the candidates of bits b, b - 1, ... (at most kAheadDepth of
// them) from the prefix t, breadth first (node i's children 2i: the bit stays clear, 2i + 1: set).
template <typename Key>
RTOPK_HD int key_thresholds_ahead(Key t, int b, Key* keys) {
  const int d = b + 1 < kAheadDepth ? b + 1 : kAheadDepth;
  Key nt[kAheadKeys];
  nt[1] = t;
  int m = 0, bit = b + 1;
  for (int i = 1; i < (1 << d); ++i) {
    if ((i & (i - 1)) == 0) --bit;  // i = 1, 2, 4, 8: a level's first node
    const Key cand = nt[i] | (Key(1) << bit);
    keys[m++] = cand;
    if (2 * i + 1 < kAheadKeys) {
      nt[2 * i] = nt[i];
      nt[2 * i + 1] = cand;
    }
  }
  return m;
}

template <typename Row, typename = void>
struct LooksAhead : std::false_type {};
template <typename Row>
struct LooksAhead<Row, std::void_t<decltype(std::remove_cv_t<Row>::kLooksAhead)>>
    : std::bool_constant<std::remove_cv_t<Row>::kLooksAhead> {};

template <typename Compute, typename Row>
RTOPK_HD Plan<typename KeyTraits<Compute>::Key> exact_plan(Row& row, int64_t k) {
  using T = KeyTraits<Compute>;
  using Key = typename T::Key;
  Key lo, hi;
  row.key_range(lo, hi, false);
  if (lo == hi) return Plan<Key>{hi, hi, k};  // one distinct key: the first k in index order
  // T lies in [lo, hi], so it shares their common prefix; start with the bits below it clear
  // (count_ge(t) >= k holds for any t <= lo).
  int top = T::kBits - 1;
  while (!(((lo ^ hi) >> top) & Key(1))) --top;
  const Key below = (top == T::kBits - 1) ? T::kMax : Key((Key(1) << (top + 1)) - 1);
  Key t = lo & Key(~below);
  for (int b = top; b >= 0; --b) {
    if constexpr (LooksAhead<Row>::value) row.look_ahead_keys(t, b);
    const Key cand = t | (Key(1) << b);
    const int64_t c = row.count_ge(cand);
    if (c >= k) {
      if (c == k) return Plan<Key>{Key(cand - 1), cand, 0};
      t = cand;
    }
  }
  const int64_t greater = (t == hi) ? 0 : row.count_ge(Key(t + 1));
  return Plan<Key>{t, t, k - greater};
}

// Whether a bisection step left the bracket as it was.  Such a step leaves it so at every later
// one (the same midpoint, the same count: both depend on the values alone), so Algorithm 2 may end
// its max_iter steps there with the same result.  Without it a row whose k-th value is tied past k
// spins through every step: max_iter = 10^12 ran for hours (a hung kernel on the GPU).
template <typename Compute>
RTOPK_HD bool bracket_unchanged(Compute lo, Compute hi, Compute lo0, Compute hi0) {
  return lo == lo0 && hi == hi0;
}

template <typename Compute, typename Row>
RTOPK_HD Plan<typename KeyTraits<Compute>::Key> make_plan(Row& row, int64_t k, int64_t max_iter,
                                                          Compute eps) {
  using T = KeyTraits<Compute>;
  using Key = typename T::Key;
  if (max_iter < 0 && !(eps > Compute(0))) return exact_plan<Compute>(row, k);

  Key klo, khi;
  Compute lo = 0, hi = 0;
  if (row.key_range(klo, khi, true)) {
    lo = from_key<Compute>(klo);
    hi = from_key<Compute>(khi);
  }
  const Compute stop_width = eps * (hi < Compute(0) ? -hi : hi);
  const bool use_eps = eps > Compute(0);
  int64_t c_lo = -1, c_hi = -1;  // counts at lo / hi, -1 while unknown
  for (int64_t it = 0; max_iter < 0 || it < max_iter; ++it) {
    if (use_eps && !(hi - lo > stop_width)) break;
    if constexpr (LooksAhead<Row>::value)
      row.look_ahead_values(lo, hi, max_iter < 0 ? int64_t(-1) : max_iter - it);
    const Compute t = T::midpoint(lo, hi);
    // Algorithm 1 ends when the bracket cannot shrink (this bounds it by the type's exponent
    // range: < 300 steps in fp32, < 2100 in fp64); Algorithm 2 runs its max_iter steps as written.
    if (max_iter < 0 && !(t > lo && t < hi)) break;
    const int64_t c = row.count_ge(to_key<Compute>(t));
    if (c == k) {
      lo = hi = t;
      c_lo = c_hi = c;
      break;
    }
    const Compute lo0 = lo, hi0 = hi;
    if (c < k) {
      hi = t;
      c_hi = c;
    } else {
      lo = t;
      c_lo = c;
    }
    if (bracket_unchanged(lo, hi, lo0, hi0)) break;
  }
  const Key key_lo = to_key<Compute>(lo);
  const Key key_hi = to_key<Compute>(hi);
  if (max_iter < 0) {
    if (c_hi < 0) c_hi = row.count_ge(key_hi);
    if (c_hi >= k) {
      if (c_hi == k) return Plan<Key>{Key(key_hi - 1), key_hi, 0};
      return exact_plan<Compute>(row, k);
    }
  }
  if (c_lo < 0) c_lo = row.count_ge(key_lo);
  if (c_lo >= k) {
    if (max_iter >= 0) return Plan<Key>{T::kMax, key_lo, k};
    return Plan<Key>{Key(key_hi - 1), key_lo, k - c_hi};
  }
  // Too few elements >= lo (the row holds -inf): take them all, then the rest in index order.
  return Plan<Key>{Key(key_lo - 1), Key(0), k - c_lo};
}

}  // namespace rtopk
