// Host entry points of the CUDA kernels: raw pointers and sizes only, no torch types.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace rtopk {

struct RowLaunch {
  int64_t rows;  // >= 1
  int64_t cols;
  int64_t k;  // in [1, cols]
  int64_t max_iter;
  double eps;
  bool largest;  // false: the k smallest, NaN ranked last
  bool sorted;   // rank order wanted
  int num_sms;
  int lane_mode;  // 0: the measured dispatch; 1: lane kernels wherever shapes allow; 2: none
};

// Rows of at most this many elements come out in rank order at no extra cost (the rank kernel of
// rtopk_small_rows.cuh), k == cols included.
constexpr int64_t kRankOrderFreeCols = 32;

// Row-wise top-k of a contiguous rows x cols matrix into rows x k outputs.  Launches one kernel
// on `stream` (the caller checks the launch).  Returns true when the outputs come out in rank
// order (a.sorted and the kernel sorts), false when they are in index order.
template <typename scalar_t>
bool launch_rtopk(const scalar_t* in, scalar_t* out_values, int64_t* out_indices,
                  const RowLaunch& a, cudaStream_t stream);

// Puts rows x k outputs that are in index order into rank order, in place (one kernel on
// `stream`).  Returns false, launching nothing, where it does not apply (float64, k > 1024).
template <typename scalar_t>
bool launch_sort_rows(scalar_t* values, int64_t* indices, int64_t rows, int64_t k, bool largest,
                      int num_sms, cudaStream_t stream);

}  // namespace rtopk
