// CPU backend: the shared algorithm over one row at a time, rows in parallel.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <type_traits>
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
    int64_t c = 0;
    for (int64_t j = 0; j < n; ++j) c += keys[j] >= t;
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

template <typename scalar_t>
void cpu_rows(const RowProblem& p) {
  using Compute =
      typename std::conditional<std::is_same<scalar_t, double>::value, double, float>::type;
  using Key = typename KeyTraits<Compute>::Key;
  const scalar_t* in = p.input.data_ptr<scalar_t>();
  scalar_t* out_v = p.values.data_ptr<scalar_t>();
  int64_t* out_i = p.indices.data_ptr<int64_t>();
  const int64_t M = p.cols, k = p.k;
  const Compute eps = static_cast<Compute>(p.eps);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(M, 1));

  at::parallel_for(0, p.rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<Key> keys(M);
    const CpuRow<Key> row{keys.data(), M};
    for (int64_t r = begin; r < end; ++r) {
      const scalar_t* x = in + r * M;
      for (int64_t j = 0; j < M; ++j) keys[j] = to_key<Compute>(static_cast<Compute>(x[j]));
      const Plan<Key> plan = make_plan<Compute>(row, k, p.max_iter, eps);
      int64_t written = 0, ties = 0;
      for (int64_t j = 0; j < M && written < k; ++j) {
        const Key key = keys[j];
        const bool take = plan.takes(key) || (plan.fills(key) && ties++ < plan.quota);
        if (take) {
          out_v[r * k + written] = x[j];
          out_i[r * k + written] = j;
          ++written;
        }
      }
    }
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> rtopk_cpu(const at::Tensor& values, int64_t k, int64_t max_iter,
                                             double eps) {
  TORCH_CHECK(values.device().is_cpu(), "rtopk: expected a CPU tensor, got ", values.device());
  RowProblem p = prepare_problem(values, k, max_iter, eps);
  if (p.rows > 0 && p.k > 0) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, p.input.scalar_type(), "rtopk_cpu",
                                    [&] { cpu_rows<scalar_t>(p); });
  }
  return {p.values, p.indices};
}

}  // namespace rtopk
