// Torch-side glue shared by every backend: argument checks and output allocation.
#pragma once

#include <ATen/core/Tensor.h>

#include <tuple>

namespace rtopk {

// A validated call, flattened to rows: rows x cols in, rows x k out.
struct RowProblem {
  at::Tensor input;    // contiguous
  at::Tensor values;   // output values, contiguous, shape batch + (k,)
  at::Tensor indices;  // output int64 indices, same shape
  int64_t rows;
  int64_t cols;
  int64_t k;
  int64_t max_iter;
  double eps;
};

// Checks every argument (raising RuntimeError naming the argument and its allowed range before
// anything is written) and allocates the outputs on the input's device.
RowProblem prepare_problem(const at::Tensor& values, int64_t k, int64_t max_iter, double eps);

std::tuple<at::Tensor, at::Tensor> rtopk_cpu(const at::Tensor& values, int64_t k, int64_t max_iter,
                                             double eps);

}  // namespace rtopk
