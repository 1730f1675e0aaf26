// Operator schemas, argument checks, output allocation and the Python module stub.
#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <Python.h>
#include <torch/library.h>

#include <atomic>
#include <cmath>
#include <limits>

#include "rtopk_op.h"

namespace rtopk {
namespace {
// Test hook: when set, outputs are filled with NaN / -1 before the kernels run, so any slot a
// kernel fails to write shows up in the tests.
std::atomic<bool> g_poison_outputs{false};
void set_debug_poison(bool enabled) { g_poison_outputs.store(enabled); }

std::atomic<int> g_lane_mode{0};
void set_debug_lane_rows(int64_t mode) {
  TORCH_CHECK(mode >= 0 && mode <= 2,
              "_set_debug_lane_rows: mode must be 0 (measured dispatch), 1 (lane kernels wherever "
              "the row shape allows) or 2 (never), got ",
              mode);
  g_lane_mode.store(static_cast<int>(mode));
}

std::atomic<int> g_pair_mode{0};
void set_debug_pair_rows(int64_t mode) {
  TORCH_CHECK(mode >= 0 && mode <= 3,
              "_set_debug_pair_rows: mode must be 0 (measured dispatch), 1 (packed-pair kernels "
              "wherever the row shape allows), 2 (never) or 3 (as 1, more lanes a row), got ",
              mode);
  g_pair_mode.store(static_cast<int>(mode));
}

void check_dtype_and_mode(const char* op, bool drop_in, const at::Tensor& t, int64_t max_iter,
                          double eps) {
  const auto dtype = t.scalar_type();
  const bool supported =
      dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16 || dtype == at::kDouble;
  if (!supported && drop_in) {
    // The exception kinds torch.topk raises for the same inputs (it also takes integers, which
    // rtopk does not: replace_torch_topk() routes those back to torch.topk).
    TORCH_CHECK_TYPE(!at::isComplexType(dtype), op,
                     ": input must be float32, float16, bfloat16 or float64, got ", dtype);
    TORCH_CHECK_NOT_IMPLEMENTED(
        false, op, ": input must be float32, float16, bfloat16 or float64, got ", dtype);
  }
  TORCH_CHECK(supported, op, ": values must be float32, float16, bfloat16 or float64, got ", dtype);
  TORCH_CHECK(max_iter == -1 || max_iter >= 1, op,
              ": max_iter must be -1 (no early stopping) or an integer >= 1, got ", max_iter);
  TORCH_CHECK(!std::isnan(eps) && eps >= 0.0, op, ": eps must be >= 0 (0 means exact), got ", eps);
}

// Rows along the last dimension of a tensor with at least one dimension.
RowProblem make_problem(const at::Tensor& rows_last, int64_t k, int64_t max_iter, double eps,
                        bool largest, bool sorted) {
  std::vector<int64_t> out_shape = rows_last.sizes().vec();
  out_shape.back() = k;
  RowProblem p;
  p.input = rows_last.contiguous();
  p.values = at::empty(out_shape, rows_last.options());
  p.indices = at::empty(out_shape, rows_last.options().dtype(at::kLong));
  if (g_poison_outputs.load(std::memory_order_relaxed)) {
    p.values.fill_(std::numeric_limits<double>::quiet_NaN());
    p.indices.fill_(-1);
  }
  p.cols = rows_last.size(-1);
  p.rows = p.cols == 0 ? 0 : rows_last.numel() / p.cols;
  p.k = k;
  p.max_iter = max_iter;
  p.eps = eps;
  p.largest = largest;
  p.sorted = sorted;
  p.sorted_done = false;
  return p;
}

// Integer sort keys of selected values in rank order (rtopk_algo.h's directed keys as signed
// integers): -0.0 == +0.0, NaN above every number when largest and below every number otherwise.
// Sorting integers keeps every NaN of either sign in one place, which torch.sort of some
// floating types does not.
at::Tensor rank_keys(const at::Tensor& values, bool largest) {
  const bool wide = values.scalar_type() == at::kDouble;
  at::Tensor f = wide ? values : values.to(at::kFloat);
  f = at::where(f == 0, at::zeros_like(f), f);
  const at::Tensor bits = f.view(wide ? at::kLong : at::kInt);
  const int64_t top = wide ? 63 : 31;
  const int64_t magnitude = wide ? std::numeric_limits<int64_t>::max() : 0x7fffffff;
  // Negative floats: flip the magnitude bits, so that the signed order is the float order.
  at::Tensor key =
      at::bitwise_xor(bits, at::bitwise_and(at::bitwise_right_shift(bits, top), magnitude));
  if (!largest) key = at::neg(key);  // never the most negative integer: that is a NaN's
  const int64_t nan_key = largest ? magnitude : -magnitude - 1;
  return at::where(at::isnan(f), at::full({}, nan_key, key.options()), key);
}

void solve_rows(RowProblem& p, RowSolver solve) {
  if (p.rows == 0 || p.k == 0) return;
  solve(p);
  if (!p.sorted || p.sorted_done || p.k == 1) return;
  // The solver left index order: rank the k selected elements of each row (never the input).  A
  // stable sort keeps equal keys in index order, as the kernels' own sort does; the values are
  // moved through an integer view so that NaN payloads and -0.0 keep their bits.
  const at::Tensor perm = std::get<1>(
      at::sort(rank_keys(p.values, p.largest), /*stable=*/true, -1, /*descending=*/true));
  const auto int_type = p.values.element_size() == 2   ? at::kShort
                        : p.values.element_size() == 4 ? at::kInt
                                                       : at::kLong;
  p.values = p.values.view(int_type).gather(-1, perm).view(p.values.scalar_type());
  p.indices = p.indices.gather(-1, perm);
}
}  // namespace

int debug_lane_mode() { return g_lane_mode.load(std::memory_order_relaxed); }
int debug_pair_mode() { return g_pair_mode.load(std::memory_order_relaxed); }
bool debug_poison() { return g_poison_outputs.load(std::memory_order_relaxed); }

std::tuple<at::Tensor, at::Tensor> run_rtopk(const at::Tensor& values, int64_t k, int64_t max_iter,
                                             double eps, RowSolver solve) {
  check_dtype_and_mode("rtopk", false, values, max_iter, eps);
  if (values.dim() == 0) {
    TORCH_CHECK(k == 0 || k == 1, "rtopk: k must be 0 or 1 for a 0-dim tensor, got k=", k);
    // A 0-dim input is one row of one element; k=1 gives 0-dim outputs, k=0 empty ones.
    RowProblem p = make_problem(values.reshape({1}), k, max_iter, eps, true, false);
    solve_rows(p, solve);
    if (k == 1) return {p.values.reshape({}), p.indices.reshape({})};
    return {p.values, p.indices};
  }
  const int64_t cols = values.size(-1);
  TORCH_CHECK(k >= 0 && k <= cols, "rtopk: k must be in [0, ", cols,
              "] (the size of the last dimension), got k=", k);
  RowProblem p = make_problem(values, k, max_iter, eps, true, false);
  solve_rows(p, solve);
  return {p.values, p.indices};
}

std::tuple<at::Tensor, at::Tensor> run_topk(const at::Tensor& self, int64_t k, int64_t dim,
                                            bool largest, bool sorted, int64_t max_iter, double eps,
                                            RowSolver solve) {
  check_dtype_and_mode("rtopk.topk", true, self, max_iter, eps);
  // Raises IndexError naming the allowed range, as torch.topk does.
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  if (self.dim() == 0) {
    // torch.topk gives 0-dim outputs for a 0-dim input, with k=0 as with k=1.
    TORCH_CHECK(k == 0 || k == 1, "rtopk.topk: k must be 0 or 1 for a 0-dim input, got k=", k);
    RowProblem p = make_problem(self.reshape({1}), 1, max_iter, eps, largest, sorted);
    solve_rows(p, solve);
    return {p.values.reshape({}), p.indices.reshape({})};
  }
  const int64_t size = self.size(d);
  TORCH_CHECK(k >= 0 && k <= size, "rtopk.topk: k must be in [0, ", size, "] (the size of dim ", d,
              "), got k=", k);
  const bool last = d == self.dim() - 1;
  RowProblem p = make_problem(last ? self : self.movedim(d, -1), k, max_iter, eps, largest, sorted);
  solve_rows(p, solve);
  if (last) return {p.values, p.indices};
  // Outputs contiguous in the input's dimension order, like torch.topk's.
  return {p.values.movedim(-1, d).contiguous(), p.indices.movedim(-1, d).contiguous()};
}

}  // namespace rtopk

TORCH_LIBRARY(rtopk, m) {
  m.def(
      "rtopk(Tensor values, int k, int max_iter=-1, float eps=0.0) -> (Tensor values, Tensor "
      "indices)");
  m.def(
      "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True, int max_iter=-1, "
      "float eps=0.0) -> (Tensor values, Tensor indices)");
  m.def("_set_debug_poison(bool enabled) -> ()", &rtopk::set_debug_poison);
  m.def("_set_debug_lane_rows(int mode) -> ()", &rtopk::set_debug_lane_rows);
  m.def("_set_debug_pair_rows(int mode) -> ()", &rtopk::set_debug_pair_rows);
}

// `import rtopk._C` loads this shared library, which runs the registrations above.
extern "C" {
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
}
