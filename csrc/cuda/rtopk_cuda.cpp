// CUDA backend glue: device guard, current stream, dtype dispatch, launch check.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <limits>

#include "../rtopk_op.h"
#include "rtopk_launch.h"

namespace rtopk {
namespace {

RowLaunch launch_args(const RowProblem& p, int num_sms) {
  return RowLaunch{p.rows,    p.cols,   p.k,     p.max_iter,        p.eps,
                   p.largest, p.sorted, num_sms, debug_lane_mode(), debug_pair_mode()};
}

// Few long rows in exact mode (split_rows): the segments' top k as candidates, then the rows' top
// k of those, whose positions map back to the row's indices.
template <typename scalar_t, typename native_t>
void solve_split(RowProblem& p, const RowLaunch& first, RowSplit split, cudaStream_t stream) {
  const int64_t cands = int64_t(split.segs) * p.k;
  at::Tensor cand_values = at::empty({p.rows, cands}, p.input.options());
  at::Tensor cand_indices = at::empty({p.rows, cands}, p.indices.options());
  if (debug_poison()) {  // (every candidate is written: unwritten ones would show)
    cand_values.fill_(std::numeric_limits<double>::quiet_NaN());
    cand_indices.fill_(-1);
  }
  launch_split_segments<native_t>(reinterpret_cast<const native_t*>(p.input.data_ptr<scalar_t>()),
                                  reinterpret_cast<native_t*>(cand_values.data_ptr<scalar_t>()),
                                  cand_indices.data_ptr<int64_t>(), first, split, stream);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  RowLaunch second = first;
  second.cols = cands;
  at::Tensor at_pos = at::empty({p.rows, p.k}, p.indices.options());
  p.sorted_done =
      launch_rtopk<native_t>(reinterpret_cast<const native_t*>(cand_values.data_ptr<scalar_t>()),
                             reinterpret_cast<native_t*>(p.values.data_ptr<scalar_t>()),
                             at_pos.data_ptr<int64_t>(), second, stream);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  at::Tensor out = p.indices.view({p.rows, p.k});
  at::gather_out(out, cand_indices, 1, at_pos);
}

// Few long rows with early stopping (split_early_rows): a block a segment, the search replayed on
// the segments' counts.  The outputs come in index order.
template <typename scalar_t, typename native_t>
void solve_split_early(RowProblem& p, const RowLaunch& args, SplitEarly split,
                       cudaStream_t stream) {
  const int key_bytes = sizeof(native_t) == 8 ? 8 : 4;
  const SplitEarlyLayout layout = split_early_layout(args, split, key_bytes);
  at::Tensor work =
      at::empty({static_cast<int64_t>(layout.bytes)}, p.input.options().dtype(at::kByte));
  if (debug_poison()) work.fill_(0xA5);  // (every part is written before it is read)
  launch_split_early<native_t>(reinterpret_cast<const native_t*>(p.input.data_ptr<scalar_t>()),
                               reinterpret_cast<native_t*>(p.values.data_ptr<scalar_t>()),
                               p.indices.data_ptr<int64_t>(), args, split, work.data_ptr(), stream);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  p.sorted_done = false;
}

template <typename scalar_t, typename native_t>
void run(RowProblem& p, int num_sms, cudaStream_t stream) {
  const RowLaunch args = launch_args(p, num_sms);
  if (p.k == p.cols && p.cols > kRankOrderFreeCols) {
    // Every element is selected (in every mode): the rows themselves in index order, at copy
    // speed instead of a search that has nothing to decide.  (Rows of up to 32 elements take the
    // rank kernel instead, in either order: one pass, where the copies are three kernels; MoE
    // M = k = 8 at 2^18 rows 0.0139 against 0.042 ms, notes v30.)
    p.values.copy_(p.input);
    p.indices.copy_(at::arange(p.cols, p.indices.options()));
    p.sorted_done = false;
  } else if (const RowSplit split =
                 split_rows(args, int(sizeof(native_t)),
                            reinterpret_cast<uintptr_t>(p.input.data_ptr()) % 16 == 0);
             split.segs > 0) {
    if constexpr (sizeof(native_t) <= 4) solve_split<scalar_t, native_t>(p, args, split, stream);
  } else if (const SplitEarly early = split_early_rows(args); early.segs > 0) {
    solve_split_early<scalar_t, native_t>(p, args, early, stream);
  } else {
    p.sorted_done =
        launch_rtopk<native_t>(reinterpret_cast<const native_t*>(p.input.data_ptr<scalar_t>()),
                               reinterpret_cast<native_t*>(p.values.data_ptr<scalar_t>()),
                               p.indices.data_ptr<int64_t>(), args, stream);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  if (p.sorted && !p.sorted_done && p.k > 1) {
    // Rank order for what the kernel left in index order, still on the device.
    p.sorted_done = launch_sort_rows<native_t>(
        reinterpret_cast<native_t*>(p.values.data_ptr<scalar_t>()), p.indices.data_ptr<int64_t>(),
        p.rows, p.k, p.largest, num_sms, stream);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

void solve_cuda(RowProblem& p) {
  const int num_sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  switch (p.input.scalar_type()) {
    case at::kFloat:
      run<float, float>(p, num_sms, stream);
      break;
    case at::kDouble:
      run<double, double>(p, num_sms, stream);
      break;
    case at::kHalf:
      run<at::Half, __half>(p, num_sms, stream);
      break;
    case at::kBFloat16:
      run<at::BFloat16, __nv_bfloat16>(p, num_sms, stream);
      break;
    default:
      TORCH_CHECK(false, "rtopk: unsupported dtype ", p.input.scalar_type());
  }
}

std::tuple<at::Tensor, at::Tensor> rtopk_cuda(const at::Tensor& values, int64_t k, int64_t max_iter,
                                              double eps) {
  TORCH_CHECK(values.is_cuda(), "rtopk: expected a CUDA tensor, got ", values.device());
  const c10::cuda::CUDAGuard guard(values.device());
  return run_rtopk(values, k, max_iter, eps, &solve_cuda);
}

std::tuple<at::Tensor, at::Tensor> topk_cuda(const at::Tensor& self, int64_t k, int64_t dim,
                                             bool largest, bool sorted, int64_t max_iter,
                                             double eps) {
  TORCH_CHECK(self.is_cuda(), "rtopk.topk: expected a CUDA tensor, got ", self.device());
  const c10::cuda::CUDAGuard guard(self.device());
  return run_topk(self, k, dim, largest, sorted, max_iter, eps, &solve_cuda);
}

}  // namespace
}  // namespace rtopk

TORCH_LIBRARY_IMPL(rtopk, CUDA, m) {
  m.impl("rtopk", &rtopk::rtopk_cuda);
  m.impl("topk", &rtopk::topk_cuda);
}
