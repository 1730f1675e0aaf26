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

// Exact mode on 16/32-bit rows too few for the streaming kernel's one warp a row (fewer than 4 a
// SM) and longer than the group kernel's (16384): each row is cut into `segs` segments of `seg`
// elements (the last one to the row's end), the streaming kernel selects every segment's top k
// (candidates, in index order), then the rows' top k is taken from their segs * k candidates.
// The same answer, ties included: a row's top k lies among its segments' top k (a segment's
// first elements tied at the row's k-th key, in index order, are the row's first ones within it),
// and the candidates keep index order, so the second selection breaks ties as the row would.
// One warp a row left 64 rows of 128256 at 2.3x torch.topk's time (notes v55).
struct RowSplit {
  int seg;
  int segs;  // 0: does not apply
};
constexpr int64_t kSplitMinCols = 16385;   // past the group kernel
constexpr int64_t kSplitMaxK = 512;        // the streaming kernel's (kStreamMaxK)
constexpr int64_t kSplitSeg = 4096;        // a segment at least (rows the streaming kernel takes)
constexpr int64_t kSplitMaxCands = 16384;  // a row's candidates at most: the group kernel's rows
// (aligned: the input starts 16-byte aligned; rows that do not, or whose length is not a multiple
// of 16 bytes, are not cut: the segments are read in 16-byte loads only.)
inline RowSplit split_rows(const RowLaunch& a, int elem_bytes, bool aligned) {
  const bool exact = a.max_iter < 0 && !(static_cast<float>(a.eps) > 0.f);
  const int64_t sms = a.num_sms > 1 ? a.num_sms : 1;
  if (elem_bytes > 4 || !aligned || (a.cols * elem_bytes) % 16 != 0 || !exact || a.k > kSplitMaxK ||
      a.rows >= 4 * sms || a.cols < kSplitMinCols || a.cols > (int64_t(1) << 30))
    return RowSplit{0, 0};
  // The shortest segment (a multiple of 8 elements: 16-byte aligned starts) that keeps the
  // candidates within kSplitMaxCands; at least 4 segments, each at least 4 k long.
  int64_t seg = (a.cols * a.k + kSplitMaxCands - 1) / kSplitMaxCands;
  seg = seg < kSplitSeg ? kSplitSeg : seg;
  seg = seg < 4 * a.k ? 4 * a.k : seg;
  seg = (seg + 7) / 8 * 8;
  const int64_t segs = a.cols / seg;
  if (segs < 4 || segs * a.k > kSplitMaxCands) return RowSplit{0, 0};
  return RowSplit{static_cast<int>(seg), static_cast<int>(segs)};
}

// The first step of a split (split_rows): every segment's top k into rows x (segs * k)
// candidates, in index order, their indices the row's.  One kernel on `stream`.
template <typename scalar_t>
void launch_split_segments(const scalar_t* in, scalar_t* cand_values, int64_t* cand_indices,
                           const RowLaunch& a, RowSplit s, cudaStream_t stream);

// Puts rows x k outputs that are in index order into rank order, in place (one kernel on
// `stream`).  Returns false, launching nothing, where it does not apply (float64, k > 1024).
template <typename scalar_t>
bool launch_sort_rows(scalar_t* values, int64_t* indices, int64_t rows, int64_t k, bool largest,
                      int num_sms, cudaStream_t stream);

}  // namespace rtopk
