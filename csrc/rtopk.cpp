// Operator schema, argument checks, and the Python module stub that loads the library.
#include <ATen/ATen.h>
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
}  // namespace

RowProblem prepare_problem(const at::Tensor& values, int64_t k, int64_t max_iter, double eps) {
  const auto dtype = values.scalar_type();
  TORCH_CHECK(
      dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16 || dtype == at::kDouble,
      "rtopk: values must be float32, float16, bfloat16 or float64, got ", dtype);
  TORCH_CHECK(max_iter == -1 || max_iter >= 1,
              "rtopk: max_iter must be -1 (no early stopping) or an integer >= 1, got ", max_iter);
  TORCH_CHECK(!std::isnan(eps) && eps >= 0.0, "rtopk: eps must be >= 0 (0 means exact), got ", eps);

  const int64_t cols = values.dim() == 0 ? 1 : values.size(-1);
  if (values.dim() == 0) {
    TORCH_CHECK(k == 0 || k == 1, "rtopk: k must be 0 or 1 for a 0-dim tensor, got k=", k);
  } else {
    TORCH_CHECK(k >= 0 && k <= cols, "rtopk: k must be in [0, ", cols,
                "] (the size of the last dimension), got k=", k);
  }

  std::vector<int64_t> out_shape;
  if (values.dim() == 0) {
    // Like torch.topk: a 0-dim input gives 0-dim outputs for k=1; k=0 gives empty ones.
    if (k == 0) out_shape.push_back(0);
  } else {
    out_shape = values.sizes().vec();
    out_shape.back() = k;
  }

  RowProblem p;
  p.input = values.contiguous();
  p.values = at::empty(out_shape, values.options());
  p.indices = at::empty(out_shape, values.options().dtype(at::kLong));
  if (g_poison_outputs.load(std::memory_order_relaxed)) {
    p.values.fill_(std::numeric_limits<double>::quiet_NaN());
    p.indices.fill_(-1);
  }
  p.cols = cols;
  p.rows = cols == 0 ? 0 : values.numel() / cols;
  p.k = k;
  p.max_iter = max_iter;
  p.eps = eps;
  return p;
}

}  // namespace rtopk

TORCH_LIBRARY(rtopk, m) {
  m.def(
      "rtopk(Tensor values, int k, int max_iter=-1, float eps=0.0) -> (Tensor values, Tensor "
      "indices)");
  m.def("_set_debug_poison(bool enabled) -> ()", &rtopk::set_debug_poison);
}

TORCH_LIBRARY_IMPL(rtopk, CPU, m) { m.impl("rtopk", &rtopk::rtopk_cpu); }

// `import rtopk._C` loads this shared library, which runs the registrations above.
extern "C" {
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
}
