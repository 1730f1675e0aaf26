// CPU backend: the shared algorithm over one row at a time, rows in parallel.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "rtopk_algo.h"
#include "rtopk_op.h"

namespace rtopk {
namespace {

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
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(M, 1));

  const bool exact = p.max_iter < 0 && !(eps > Compute(0));
  const bool radix = exact && M >= kRadixMinCols;
  at::parallel_for(0, p.rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<Key> keys(M);
    std::vector<Key> cand(radix ? M : 0);
    std::vector<uint32_t> hist(radix ? kRadixBins : 0);
    std::vector<std::pair<Key, int64_t>> picked;
    const CpuRow<Key> row{keys.data(), M};
    for (int64_t r = begin; r < end; ++r) {
      const scalar_t* x = in + r * M;
      for (int64_t j = 0; j < M; ++j) {
        keys[j] = directed_key<Compute>(static_cast<Compute>(x[j]), largest);
      }
      if (exact && k == 1) {
        // The largest key, its first index: what the plan selects at k = 1, in two vector passes.
        Key best = 0;  // (below every element's key)
        for (int64_t j = 0; j < M; ++j) best = std::max(best, keys[j]);
        int64_t j = 0;
        while (keys[j] != best) ++j;
        out_v[r] = x[j];
        out_i[r] = j;
        continue;
      }
      const Plan<Key> plan = radix ? radix_exact_plan(keys.data(), M, k, hist.data(), cand.data())
                                   : make_plan<Compute>(row, k, p.max_iter, eps);
      picked.clear();
      int64_t ties = 0;
      const auto pick = [&](int64_t j) {
        const Key key = keys[j];
        if (plan.takes(key) || (plan.fills(key) && ties++ < plan.quota))
          picked.emplace_back(key, j);
      };
      if (M >= kRadixMinCols) {
        // Blocks of 16 keys with none the plan can emit (none >= lowest: a vector compare) are
        // skipped, nearly all of them on a long row.
        const Key lowest = plan.above == KeyTraits<Compute>::kMax
                               ? plan.floor
                               : std::min(plan.floor, Key(plan.above + 1));
        for (int64_t j0 = 0; j0 < M && int64_t(picked.size()) < k; j0 += 16) {
          const int64_t j1 = std::min(M, j0 + 16);
          bool any = false;
          for (int64_t j = j0; j < j1; ++j) any |= keys[j] >= lowest;
          for (int64_t j = j0; any && j < j1 && int64_t(picked.size()) < k; ++j) pick(j);
        }
      } else {
        for (int64_t j = 0; j < M && int64_t(picked.size()) < k; ++j) pick(j);
      }
      // Rank order: key descending, equal keys in index order (the order they were picked in).
      if (sorted) {
        std::stable_sort(picked.begin(), picked.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
      }
      for (int64_t i = 0; i < k; ++i) {
        out_v[r * k + i] = x[picked[i].second];
        out_i[r * k + i] = picked[i].second;
      }
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
