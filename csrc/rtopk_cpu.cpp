// CPU backend: the shared algorithm over one row at a time, rows in parallel.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "rtopk_algo.h"
#include "rtopk_op.h"

namespace rtopk {
namespace {

// directed_key (rtopk_algo.h) as arithmetic and masks, so that the loops converting a row
// vectorize (with its branches they stayed scalar, "control flow in loop": a NaN test a key was a
// third of a 256 x 65536 call, perf).  The same key for every input: checked over all 2^32 float
// bit patterns, both directions.  -0.0 + 0.0 is +0.0, whose bits make kZero; a negative's bits
// are flipped, a positive's sign bit set; NaN takes the direction's NaN key.
template <typename Compute>
struct KeyMap {
  using T = KeyTraits<Compute>;
  using Key = typename T::Key;
  using SKey = typename std::make_signed<Key>::type;
  Compute sign;
  Key nan_key;
  explicit KeyMap(bool largest)
      : sign(largest ? Compute(1) : Compute(-1)), nan_key(largest ? T::kMax : Key(1)) {}
  Key operator()(Compute v) const {
    const Compute f = v * sign + Compute(0);
    const Key b = T::bits(f);
    const Key key = b ^ (Key(SKey(b) >> (T::kBits - 1)) | T::kZero);
    const Key nan = Key(0) - Key(v != v);
    return (key & ~nan) | (nan_key & nan);
  }
};

template <typename Key>
struct CpuRow {
  const Key* keys;
  int64_t n;

  int64_t count_ge(Key t) const {
    // 32-bit partial counts: the compiler's vector loop then adds the compare masks directly
    // (a 64-bit count widened every lane: 13 SSE instructions per 4 keys instead of 8).
    constexpr int64_t kChunk = int64_t(1) << 30;
    int64_t c = 0;
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
      const int64_t j1 = std::min(n, j0 + kChunk);
      uint32_t part = 0;
      for (int64_t j = j0; j < j1; ++j) part += keys[j] >= t;
      c += part;
    }
    return c;
  }

  bool key_range(Key& lo, Key& hi, bool finite_only) const {
    lo = KeyTraits<ComputeOf<Key>>::kMax;
    hi = 0;
    bool any = false;
    for (int64_t j = 0; j < n; ++j) {
      const Key key = keys[j];
      if (!finite_only || key_is_finite(key)) {
        lo = std::min(lo, key);
        hi = std::max(hi, key);
        any = true;
      }
    }
    return any;
  }
};

// Exact mode on long rows: the k-th largest key T by a radix select, 11 key bits a level from
// the top, each level's histogram over the keys that share the bits above (the first level's over
// the whole row, the others' over candidates copied out at the second level and narrowed in place).
// Returns Plan{T, T, k - count(> T)}: the selection exact_plan's plan makes (its early stop at a
// candidate c with exactly k keys >= c takes those k keys, all of them >= T, in index order too),
// with 3 passes over a fp32 row instead of up to 33 counts.  hist: kRadixBins slots; cand: n.
constexpr int kRadixDigit = 11;
constexpr int kRadixBins = 1 << kRadixDigit;
constexpr int64_t kRadixMinCols = 1024;  // shorter: 2048 bins a level cost more than L1 counts

template <typename Key>
Plan<Key> radix_exact_plan(const Key* keys, int64_t n, int64_t k, uint32_t* hist, Key* cand) {
  constexpr int kBits = KeyTraits<ComputeOf<Key>>::kBits;
  int64_t need = k;  // the rank of T among the candidates left, from the top
  // The level's bin holding the need-th largest candidate, from the top (the bins above it leave
  // need).
  const auto pick = [&](int bins) {
    int b = bins - 1;
    while (need > int64_t(hist[b])) {
      need -= hist[b];
      --b;
    }
    return Key(b);
  };
  int width = kRadixDigit, shift = kBits - kRadixDigit;
  std::fill(hist, hist + kRadixBins, 0u);
  for (int64_t j = 0; j < n; ++j) ++hist[keys[j] >> shift];
  Key b = pick(1 << width);
  Key prefix = b << shift;
  int64_t m = 0;  // candidates: the keys in that bin
  for (int64_t j = 0; j < n; ++j) {
    cand[m] = keys[j];
    m += (keys[j] >> shift) == b;
  }
  for (int hi = shift; hi > 0; hi = shift) {
    width = std::min(kRadixDigit, hi);
    shift = hi - width;
    const Key mask = Key((Key(1) << width) - 1);
    std::fill(hist, hist + (1 << width), 0u);
    for (int64_t i = 0; i < m; ++i) ++hist[(cand[i] >> shift) & mask];
    b = pick(1 << width);
    prefix |= b << shift;
    int64_t kept = 0;
    for (int64_t i = 0; i < m; ++i) {
      const Key c = cand[i];
      cand[kept] = c;
      kept += ((c >> shift) & mask) == b;
    }
    m = kept;
  }
  return Plan<Key>{prefix, prefix, need};
}

// Exact mode on long rows at small k: a threshold L from a sample of the row's keys (every
// (M / s)-th, s = M / 16 within 64..kSampleKeys), the r-th largest of them with r well above the k
// * s / M that fall at or above T (the row's k-th largest key) on average; one pass then converts
// the row and keeps the keys >= L with their indices (blocks of 16 with none skipped), and the
// radix select runs on those.  Once k keys are >= L, every key >= T is among them, in index order,
// so the plan and its picks are the whole row's; a row where fewer are (a sample that missed) takes
// the full path.  The row's keys are then neither stored nor read again: one pass over the input
// where the full path makes four over the keys.
constexpr int kSampleKeys = 1024;

// L (false: k is too large a share of the row for a sample to narrow it).
template <typename Compute, typename scalar_t, typename Key>
bool sample_threshold(const scalar_t* x, int64_t n, int64_t k, const KeyMap<Compute>& key_of,
                      Key* sample, Key& L) {
  const int64_t s = std::min<int64_t>(kSampleKeys, std::max<int64_t>(64, n / 16));
  const double mean = double(k) * double(s) / double(n);
  const int64_t r = int64_t(std::ceil(mean + 4.0 * std::sqrt(mean) + 4.0));
  if (r > s / 8) return false;
  for (int64_t i = 0; i < s; ++i) sample[i] = key_of(static_cast<Compute>(x[i * n / s]));
  std::nth_element(sample, sample + (r - 1), sample + s, std::greater<Key>());
  L = sample[r - 1];
  return true;
}

// The keys >= L and their indices, in index order; returns how many.  A chunk of the row is
// converted into `buf` first (the plain map the compiler vectorizes), then blocks of 16 with no
// key >= L (a vector compare) are skipped.  buf: kFilterChunk keys.
constexpr int kFilterChunk = 512;
template <typename Compute, typename scalar_t, typename Key>
int64_t keys_at_least(const scalar_t* x, int64_t n, const KeyMap<Compute>& key_of, Key L, Key* buf,
                      Key* keys, int64_t* index) {
  constexpr int kBlock = 16;
  int64_t m = 0;
  for (int64_t c0 = 0; c0 < n; c0 += kFilterChunk) {
    const int len = int(std::min<int64_t>(kFilterChunk, n - c0));
    for (int i = 0; i < len; ++i) buf[i] = key_of(static_cast<Compute>(x[c0 + i]));
    for (int b0 = 0; b0 < len; b0 += kBlock) {
      const int b1 = std::min(len, b0 + kBlock);
      unsigned at_least = 0;  // (a count, not a bool: the compiler vectorizes it)
      for (int i = b0; i < b1; ++i) at_least += buf[i] >= L;
      if (at_least == 0) continue;
      for (int i = b0; i < b1; ++i) {
        keys[m] = buf[i];
        index[m] = c0 + i;
        m += buf[i] >= L;
      }
    }
  }
  return m;
}

// Exact mode by k maximum passes (cpu_rows): at k = 1 on every row, else on short rows at small k.
constexpr int64_t kFewMaxK = 8;
constexpr int64_t kFewMaxCols = 64;

template <typename scalar_t>
void cpu_rows(RowProblem& p) {
  using Compute =
      typename std::conditional<std::is_same<scalar_t, double>::value, double, float>::type;
  using Key = typename KeyTraits<Compute>::Key;
  const scalar_t* in = p.input.data_ptr<scalar_t>();
  scalar_t* out_v = p.values.data_ptr<scalar_t>();
  int64_t* out_i = p.indices.data_ptr<int64_t>();
  const int64_t M = p.cols, k = p.k;
  const Compute eps = static_cast<Compute>(p.eps);
  const bool largest = p.largest, sorted = p.sorted;
  const KeyMap<Compute> key_of(largest);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(M, 1));

  const bool exact = p.max_iter < 0 && !(eps > Compute(0));
  const bool radix = exact && M >= kRadixMinCols;
  const bool few = exact && (k == 1 || (k <= kFewMaxK && M <= kFewMaxCols));
  if (k == M && !sorted) {
    // Every mode selects the whole row: the rows themselves in index order (as the CUDA glue's
    // run() does).
    p.values.copy_(p.input);
    p.indices.copy_(at::arange(M, p.indices.options()));
    p.sorted_done = false;
    return;
  }
  at::parallel_for(0, p.rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<Key> keys(M);
    std::vector<Key> cand(radix ? M : 0);
    // (Left uninitialized: only its first candidates are ever touched.)
    std::unique_ptr<int64_t[]> cand_index(radix && k > 1 ? new int64_t[M] : nullptr);
    std::vector<uint32_t> hist(radix ? kRadixBins : 0);
    std::vector<std::pair<Key, int64_t>> picked;
    Key filter_buf[kFilterChunk];
    const CpuRow<Key> row{keys.data(), M};
    // The plan's rule for the next element in index order (ties: the fills seen so far).
    const auto pick = [&](const Plan<Key>& plan, int64_t& ties, Key key, int64_t j) {
      if (plan.takes(key) || (plan.fills(key) && ties++ < plan.quota)) picked.emplace_back(key, j);
    };
    // Rank order: key descending, equal keys in index order (the order they were picked in).
    const auto write = [&](int64_t r, const scalar_t* x) {
      if (sorted) {
        std::stable_sort(picked.begin(), picked.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
      }
      for (int64_t i = 0; i < k; ++i) {
        out_v[r * k + i] = x[picked[i].second];
        out_i[r * k + i] = picked[i].second;
      }
    };
    for (int64_t r = begin; r < end; ++r) {
      const scalar_t* x = in + r * M;
      Key L;
      if (radix && k > 1 && sample_threshold<Compute>(x, M, k, key_of, cand.data(), L)) {
        // (keys: the candidates' keys; cand: the radix select's scratch.)
        const int64_t m =
            keys_at_least<Compute>(x, M, key_of, L, filter_buf, keys.data(), cand_index.get());
        if (m >= k) {
          const Plan<Key> plan = radix_exact_plan(keys.data(), m, k, hist.data(), cand.data());
          picked.clear();
          int64_t ties = 0;
          for (int64_t i = 0; i < m && int64_t(picked.size()) < k; ++i)
            pick(plan, ties, keys[i], cand_index[i]);
          write(r, x);
          continue;
        }
      }
      for (int64_t j = 0; j < M; ++j) {
        keys[j] = key_of(static_cast<Compute>(x[j]));
      }
      if (few) {
        // The largest key and its first index, k times, each taken one set to 0 (below every
        // element's key): exact mode's selection in rank order (equal keys by index), where a
        // plan costs more than k vector passes over a short row (notes v57).
        int64_t at[kFewMaxK];
        for (int64_t i = 0; i < k; ++i) {
          Key best = 0;
          for (int64_t j = 0; j < M; ++j) best = std::max(best, keys[j]);
          int64_t j = 0;
          while (keys[j] != best) ++j;
          at[i] = j;
          keys[j] = 0;
        }
        if (!sorted) {  // index order: the taken ones are the row's keys of 0
          for (int64_t j = 0, i = 0; i < k; ++j) {
            at[i] = j;
            i += keys[j] == 0;
          }
        }
        for (int64_t i = 0; i < k; ++i) {
          out_v[r * k + i] = x[at[i]];
          out_i[r * k + i] = at[i];
        }
        continue;
      }
      const Plan<Key> plan = radix ? radix_exact_plan(keys.data(), M, k, hist.data(), cand.data())
                                   : make_plan<Compute>(row, k, p.max_iter, eps);
      picked.clear();
      int64_t ties = 0;
      if (M >= kRadixMinCols) {
        // Blocks of 16 keys with none the plan can emit (none >= lowest: a vector compare) are
        // skipped, nearly all of them on a long row.
        const Key lowest = plan.above == KeyTraits<Compute>::kMax
                               ? plan.floor
                               : std::min(plan.floor, Key(plan.above + 1));
        for (int64_t j0 = 0; j0 < M && int64_t(picked.size()) < k; j0 += 16) {
          const int64_t j1 = std::min(M, j0 + 16);
          unsigned at_least = 0;
          for (int64_t j = j0; j < j1; ++j) at_least += keys[j] >= lowest;
          for (int64_t j = j0; at_least && j < j1 && int64_t(picked.size()) < k; ++j)
            pick(plan, ties, keys[j], j);
        }
      } else {
        for (int64_t j = 0; j < M && int64_t(picked.size()) < k; ++j) pick(plan, ties, keys[j], j);
      }
      write(r, x);
    }
  });
  p.sorted_done = sorted;
}

void solve_cpu(RowProblem& p) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, p.input.scalar_type(), "rtopk_cpu",
                                  [&] { cpu_rows<scalar_t>(p); });
}

void check_cpu(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_cpu(), "rtopk: expected a CPU tensor, got ", t.device());
}

std::tuple<at::Tensor, at::Tensor> rtopk_cpu(const at::Tensor& values, int64_t k, int64_t max_iter,
                                             double eps) {
  check_cpu(values);
  return run_rtopk(values, k, max_iter, eps, &solve_cpu);
}

std::tuple<at::Tensor, at::Tensor> topk_cpu(const at::Tensor& self, int64_t k, int64_t dim,
                                            bool largest, bool sorted, int64_t max_iter,
                                            double eps) {
  check_cpu(self);
  return run_topk(self, k, dim, largest, sorted, max_iter, eps, &solve_cpu);
}

}  // namespace
}  // namespace rtopk

TORCH_LIBRARY_IMPL(rtopk, CPU, m) {
  m.impl("rtopk", &rtopk::rtopk_cpu);
  m.impl("topk", &rtopk::topk_cpu);
}
