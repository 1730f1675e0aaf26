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
  int pair_mode;  // the packed-pair kernels: as lane_mode; 3: as 1, with more lanes a row
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

// Early stopping (max_iter >= 1, Algorithm 2) on rows too few for a block each to fill the
// device (fewer than 2 a SM, over the rounds below) and longer than the group kernel's (16384):
// each row is cut into
// `segs` segments of `seg` elements (the last one to the row's end), a block a segment.  The
// segments' finite key ranges (one pass), then rounds of: one warp a row replays make_plan on the
// counts known so far and names the thresholds it is missing (the next kAheadDepth bisection steps'
// tree, rtopk_algo.h's look-ahead), every segment counts them (one pass); then the segments emit
// their share of the plan in index order (a segment past the k outputs reads nothing).  The plan
// is make_plan's own on the whole row's counts, so the answer is the block kernel's, bit for bit.
// A miss only comes at steps 0, 4, 8, ... of the bisection (each round's tree covers the next 4)
// or, before any step, at the count of lo (eps ends the search at once): ceil(max_iter / 4) rounds.
// (One block a row took 64 rows of 128256 at max_iter = 4 to 2.7x the exact split's time, notes
// v56.)
struct SplitEarly {
  int64_t seg;
  int segs;    // 0: does not apply
  int rounds;  // count passes
};
constexpr int64_t kSplitEarlyMaxIter = 16;  // 4 rounds at most; more go to the block kernel
constexpr int64_t kSplitEarlyMinSeg = 2048;
inline SplitEarly split_early_rows(const RowLaunch& a) {
  const int64_t sms = a.num_sms > 1 ? a.num_sms : 1;
  const int64_t rounds = (a.max_iter + 3) / 4;
  // (Each round is a pass, and one block a row counts 4 steps a pass too: H100, fp32 / bf16,
  // against the block kernel, max_iter = 4 at 128 and 256 rows of 151936 0.83-0.90x its time, but
  // at 527 rows of 20000 1.11x; max_iter = 8 at 64 rows 0.75-0.81x, at 128 1.00-1.11x, notes v56.)
  if (a.max_iter < 1 || a.max_iter > kSplitEarlyMaxIter || a.rows * rounds * rounds >= 2 * sms ||
      a.cols < kSplitMinCols)
    return SplitEarly{0, 0, 0};
  // About 8 blocks an SM in all, segments of at least kSplitEarlyMinSeg.  (One wave of longer
  // segments, two blocks an SM with 4 packs a thread in flight, measured slower: 64 x 128256 at
  // max_iter = 4 0.096 against 0.086 ms, 64 x 2^20 0.54 against 0.37; notes v56.)
  const int64_t want = (8 * sms + a.rows - 1) / a.rows;  // segments a row
  int64_t seg = (a.cols + want - 1) / want;
  seg = seg < kSplitEarlyMinSeg ? kSplitEarlyMinSeg : (seg + 7) / 8 * 8;
  const int64_t segs = (a.cols + seg - 1) / seg;
  return SplitEarly{seg, static_cast<int>(segs), static_cast<int>(rounds)};
}

// The scratch of a split_early launch, in bytes from its start (16-byte aligned parts).  Every
// part is written before it is read, so it needs no clearing.
struct SplitEarlyLayout {
  size_t seg_lo, seg_hi;  // Key [rows][segs]: the segments' finite key ranges
  size_t thresholds;      // Key [rounds][rows][16]: the keys each round counts
  size_t nthr;            // int [rounds][rows]: how many (0: the row is planned)
  size_t counts;          // unsigned [rounds][rows][segs][16]
  size_t status;          // int [rows]: 1 once planned
  size_t above, floor;    // Key [rows]: the plan
  size_t info;            // int64 [rows][segs][3]: output position, quota, outputs of each segment
  size_t bytes;
};
inline SplitEarlyLayout split_early_layout(const RowLaunch& a, SplitEarly s, int key_bytes) {
  SplitEarlyLayout l{};
  size_t at = 0;
  const auto part = [&at](size_t bytes) {
    const size_t here = at;
    at += (bytes + 15) / 16 * 16;
    return here;
  };
  const size_t rows = size_t(a.rows), rs = rows * size_t(s.segs), rr = size_t(s.rounds) * rows;
  l.seg_lo = part(rs * key_bytes);
  l.seg_hi = part(rs * key_bytes);
  l.thresholds = part(rr * 16 * key_bytes);
  l.nthr = part(rr * sizeof(int));
  l.counts = part(rr * size_t(s.segs) * 16 * sizeof(unsigned));
  l.status = part(rows * sizeof(int));
  l.above = part(rows * key_bytes);
  l.floor = part(rows * key_bytes);
  l.info = part(rs * 3 * sizeof(int64_t));
  l.bytes = at;
  return l;
}

// The launches of a split_early (on `stream`; the caller checks them): rows x k outputs in index
// order.  `work` holds split_early_layout(a, s, sizeof(key)).bytes bytes.
template <typename scalar_t>
void launch_split_early(const scalar_t* in, scalar_t* out_values, int64_t* out_indices,
                        const RowLaunch& a, SplitEarly s, void* work, cudaStream_t stream);

// Puts rows x k outputs that are in index order into rank order, in place (one kernel on
// `stream`).  Returns false, launching nothing, where it does not apply (float64, k > 1024).
template <typename scalar_t>
bool launch_sort_rows(scalar_t* values, int64_t* indices, int64_t rows, int64_t k, bool largest,
                      int num_sms, cudaStream_t stream);

}  // namespace rtopk
