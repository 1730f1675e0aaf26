// Torch-side glue shared by every backend: argument checks, output allocation, and the two ops
// (rtopk and topk) expressed over a backend's row solver.
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
  bool largest;      // false: the k smallest (NaN ranked last)
  bool sorted;       // wanted: outputs in rank order instead of index order
  bool sorted_done;  // set by a solver that sorted its outputs itself
};

// Test and tuning hook (torch.ops.rtopk._set_debug_lane_rows): 0, the lane kernels where they
// were measured faster (the default); 1, wherever their row shapes allow, whatever the number
// of rows or k; 2, never.  Answers are the same in every mode; only the kernel changes.
int debug_lane_mode();
// The same for the packed-pair kernels of 16-bit rows (torch.ops.rtopk._set_debug_pair_rows):
// 0 measured, 1 wherever shapes allow, 2 never, 3 as 1 with more lanes a row.
int debug_pair_mode();
// Whether the tests asked for outputs (and a backend's scratch) poisoned before the kernels run.
bool debug_poison();

// A backend: fills p.values / p.indices for p.rows >= 1 and p.k >= 1, on p.input's device.
using RowSolver = void (*)(RowProblem& p);

// torch.ops.rtopk.rtopk: top-k along the last dimension, outputs in ascending index order.
std::tuple<at::Tensor, at::Tensor> run_rtopk(const at::Tensor& values, int64_t k, int64_t max_iter,
                                             double eps, RowSolver solve);

// torch.ops.rtopk.topk: torch.topk's contract (any dim, largest, sorted) plus the search modes.
std::tuple<at::Tensor, at::Tensor> run_topk(const at::Tensor& self, int64_t k, int64_t dim,
                                            bool largest, bool sorted, int64_t max_iter, double eps,
                                            RowSolver solve);

}  // namespace rtopk
