// Host entry points of the CUDA kernels: raw pointers and sizes only, no torch types.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace rtopk {

// Row-wise top-k of a contiguous rows x cols matrix into rows x k outputs (k >= 1, rows >= 1).
// Launches one kernel on `stream`; the caller checks the launch.
template <typename scalar_t>
void launch_rtopk(const scalar_t* in, scalar_t* out_values, int64_t* out_indices, int64_t rows,
                  int64_t cols, int64_t k, int64_t max_iter, double eps, int num_sms,
                  cudaStream_t stream);

}  // namespace rtopk
