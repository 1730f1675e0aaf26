// Early stopping on few long rows (split_early_rows, rtopk_launch.h): a block a segment of a row
// for the passes over memory, one warp a row for the search, which is make_plan itself replayed on
// the counts the passes gathered.
#pragma once

#include "rtopk_kernels.cuh"

namespace rtopk {
namespace cuda_detail {

constexpr int kSplitMaxRounds = int((kSplitEarlyMaxIter + kAheadDepth - 1) / kAheadDepth);

template <typename Key>
struct SplitEarlyParts {
  Key* seg_lo;
  Key* seg_hi;
  Key* thresholds;
  int* nthr;
  unsigned* counts;
  int* status;
  Key* above;
  Key* floor;
  int64_t* info;
  int64_t rows, cols, seg;
  int segs;

  __host__ SplitEarlyParts(void* work, const SplitEarlyLayout& l, const RowLaunch& a, SplitEarly s)
      : seg_lo(at<Key>(work, l.seg_lo)),
        seg_hi(at<Key>(work, l.seg_hi)),
        thresholds(at<Key>(work, l.thresholds)),
        nthr(at<int>(work, l.nthr)),
        counts(at<unsigned>(work, l.counts)),
        status(at<int>(work, l.status)),
        above(at<Key>(work, l.above)),
        floor(at<Key>(work, l.floor)),
        info(at<int64_t>(work, l.info)),
        rows(a.rows),
        cols(a.cols),
        seg(s.seg),
        segs(s.segs) {}
  template <typename T>
  __host__ static T* at(void* work, size_t offset) {
    return reinterpret_cast<T*>(static_cast<char*>(work) + offset);
  }
  __device__ int64_t seg_first(int s) const { return int64_t(s) * seg; }
  __device__ int64_t seg_len(int s) const {
    const int64_t first = seg_first(s);
    return cols - first < seg ? cols - first : seg;
  }
};

// The segment's finite key range (kMax and 0 when it holds no finite value).
template <typename scalar_t>
__global__ void __launch_bounds__(kRowBlockThreads)
    split_range_kernel(const scalar_t* __restrict__ in, SplitEarlyParts<KeyFor<scalar_t>> w,
                       bool largest) {
  using Key = KeyFor<scalar_t>;
  constexpr int kWarps = kRowBlockThreads / 32;
  __shared__ Key s_lo[kWarps], s_hi[kWarps];
  const int s = blockIdx.x;
  const int64_t r = blockIdx.y;
  Key mn = KeyTraits<ComputeOf<Key>>::kMax, mx = 0;
  RowPacks<scalar_t>(in + r * w.cols + w.seg_first(s), w.seg_len(s))
      .template for_each_key<kAheadLoads>(largest, [&](Key key) {
        const bool use = key_is_finite(key);
        mn = (use && key < mn) ? key : mn;
        mx = (use && key > mx) ? key : mx;
      });
  block_min_max<kWarps>(mn, mx, s_lo, s_hi);
  if (threadIdx.x == 0) {
    w.seg_lo[r * w.segs + s] = mn;
    w.seg_hi[r * w.segs + s] = mx;
  }
}

// The round's thresholds (up to kAheadKeys; the unused ones repeat the first) counted over the
// segment: how many of its keys are >= each.
template <typename scalar_t>
__global__ void __launch_bounds__(kRowBlockThreads, 2)
    split_count_kernel(const scalar_t* __restrict__ in, SplitEarlyParts<KeyFor<scalar_t>> w,
                       bool largest, int round) {
  using Key = KeyFor<scalar_t>;
  constexpr int kWarps = kRowBlockThreads / 32;
  __shared__ unsigned s_c[kWarps][kAheadKeys];
  const int s = blockIdx.x;
  const int64_t r = blockIdx.y;
  const int64_t rr = int64_t(round) * w.rows + r;
  if (w.nthr[rr] == 0) return;  // (uniform: the row was planned in an earlier round)
  Key th[kAheadKeys];
  unsigned c[kAheadKeys];
#pragma unroll
  for (int j = 0; j < kAheadKeys; ++j) {
    th[j] = w.thresholds[rr * kAheadKeys + j];
    c[j] = 0;
  }
  RowPacks<scalar_t>(in + r * w.cols + w.seg_first(s), w.seg_len(s))
      .template for_each_key<kAheadLoads>(largest, [&](Key key) {
#pragma unroll
        for (int j = 0; j < kAheadKeys; ++j) c[j] = add_ge(c[j], key, th[j]);
      });
#pragma unroll
  for (int j = 0; j < kAheadKeys; ++j) {
    const unsigned t = warp_sum(c[j]);
    if ((threadIdx.x & 31) == 0) s_c[threadIdx.x / 32][j] = t;
  }
  __syncthreads();
  if (threadIdx.x < kAheadKeys) {
    unsigned t = 0;
    for (int i = 0; i < kWarps; ++i) t += s_c[i][threadIdx.x];
    w.counts[(rr * w.segs + s) * kAheadKeys + threadIdx.x] = t;
  }
}

// make_plan's Row over the counts of the rounds so far.  A count it does not hold ends the replay
// (returned as k, which stops the bisection at once) and becomes the next round's request: the
// look-ahead tree the search named last if the count is one of it, else that one key.
template <typename Key>
struct TableRow {
  static constexpr bool kLooksAhead = true;
  using Compute = ComputeOf<Key>;
  Key lo, hi;
  bool finite;
  const Key* keys;
  const int64_t* counts;
  int n;
  int64_t k;
  Key pending[kAheadKeys];
  int npending;
  bool missing;
  Key request[kAheadKeys];
  int nrequest;

  // (Only make_plan's Algorithm 2 runs here, which asks for the finite range alone.)
  __device__ bool key_range(Key& l, Key& h, bool) const {
    l = lo;
    h = hi;
    return finite;
  }
  __device__ void look_ahead_values(Compute l, Compute h, int64_t steps) {
    npending = value_thresholds_ahead<Compute>(l, h, steps, pending);
  }
  __device__ void look_ahead_keys(Key t, int b) { npending = key_thresholds_ahead(t, b, pending); }
  __device__ int64_t count_ge(Key t) {
    if (missing) return k;
    const int at = find(t);
    if (at >= 0) return counts[at];
    missing = true;
    bool named = false;
    for (int i = 0; i < npending; ++i) named |= pending[i] == t;
    nrequest = named ? npending : 1;
    for (int i = 0; i < nrequest; ++i) request[i] = named ? pending[i] : t;
    return k;
  }
  // Where key t's count is in the table (kNotCounted: not there).
  static constexpr int kNotCounted = -1;
  __device__ int find(Key t) const {
    for (int i = 0; i < n; ++i)
      if (keys[i] == t) return i;
    return kNotCounted;
  }
};

// split_plan_kernel's markers for the counts a segment's share reads (else a table slot).
constexpr int kNoneAbove = -2;  // above == kMax: no key is a take
constexpr int kNoneBelow = -3;  // floor == 0: every key is at least the floor
constexpr int kNextRound = -4;  // the row is not planned yet
static_assert(kNoneAbove < 0 && kNoneBelow < 0 && kNextRound < 0, "not table slots");

// One warp a row: the table of the rounds before `round`, the replay, then either the next
// round's thresholds or the plan and every segment's share of the outputs.  `last`: the round
// after the last count pass (the replay is complete there: split_early_rows' argument).
template <typename scalar_t>
__global__ void __launch_bounds__(32)
    split_plan_kernel(SplitEarlyParts<KeyFor<scalar_t>> w, int64_t k, int64_t max_iter,
                      typename Elem<scalar_t>::Compute eps, int round, bool last) {
  using Key = KeyFor<scalar_t>;
  using Compute = typename Elem<scalar_t>::Compute;
  __shared__ Key s_keys[kSplitMaxRounds * kAheadKeys];
  __shared__ int64_t s_counts[kSplitMaxRounds * kAheadKeys];
  __shared__ Plan<Key> s_plan;
  __shared__ int s_at[2];
  const int64_t r = blockIdx.x;
  const int lane = threadIdx.x;
  if (round > 0 && w.status[r]) {  // (uniform)
    if (lane == 0 && !last) w.nthr[int64_t(round) * w.rows + r] = 0;
    return;
  }
  Key mn = KeyTraits<Compute>::kMax, mx = 0;
  for (int s = lane; s < w.segs; s += 32) {
    const Key a = w.seg_lo[r * w.segs + s], b = w.seg_hi[r * w.segs + s];
    mn = a < mn ? a : mn;
    mx = b > mx ? b : mx;
  }
  mn = warp_min(mn);
  mx = warp_max(mx);
  // Lane j and j + 16 sum slot j over the odd and even segments.
  for (int q = 0; q < round; ++q) {
    const int64_t rr = int64_t(q) * w.rows + r;
    int64_t c = 0;
    for (int s = lane >> 4; s < w.segs; s += 2)
      c += w.counts[(rr * w.segs + s) * kAheadKeys + (lane & 15)];
    c += __shfl_xor_sync(kFullMask, c, 16);
    if (lane < kAheadKeys) {
      s_counts[q * kAheadKeys + lane] = c;
      s_keys[q * kAheadKeys + lane] = w.thresholds[rr * kAheadKeys + lane];
    }
  }
  __syncwarp();
  if (lane == 0) {
    TableRow<Key> row;
    row.lo = mn;
    row.hi = mx;
    row.finite = mn <= mx;
    row.keys = s_keys;
    row.counts = s_counts;
    row.n = round * kAheadKeys;
    row.k = k;
    row.npending = 0;
    row.missing = false;
    row.nrequest = 0;
    const Plan<Key> plan = make_plan<Compute>(row, k, max_iter, eps);
    const bool planned = !row.missing || last;
    w.status[r] = planned;
    if (!last) {
      const int64_t rr = int64_t(round) * w.rows + r;
      w.nthr[rr] = planned ? 0 : row.nrequest;
      for (int j = 0; j < kAheadKeys && !planned; ++j)
        w.thresholds[rr * kAheadKeys + j] = row.request[j < row.nrequest ? j : 0];
    }
    s_plan = plan;
    // The counts a segment's share needs: of keys > above and of keys >= floor (make_plan's
    // Algorithm 2 plans: above is kMax or lo's key - 1, floor lo's key or 0, all counted).
    s_at[0] = plan.above == KeyTraits<Compute>::kMax ? kNoneAbove : row.find(Key(plan.above + 1));
    s_at[1] = plan.floor == 0 ? kNoneBelow : row.find(plan.floor);
    if (!planned) s_at[0] = kNextRound;
  }
  __syncwarp();
  if (s_at[0] == kNextRound) return;
  const Plan<Key> plan = s_plan;
  const int at_t = s_at[0], at_f = s_at[1];
  // A plan key without a count cannot come (the rounds cover max_iter's steps); were it to, no
  // segment writes anything, and the unwritten outputs show in the tests' poisoned tensors.
  const bool uncounted = at_t == TableRow<Key>::kNotCounted || at_f == TableRow<Key>::kNotCounted;
  if (lane == 0) {
    w.above[r] = plan.above;
    w.floor[r] = plan.floor;
  }
  // Each segment's takes (keys > above) and fills (floor <= key <= above), scanned in index order.
  int64_t takes_before = 0, fills_before = 0;
  for (int base = 0; base < w.segs; base += 32) {
    const int s = base + lane;
    int64_t t = 0, f = 0;
    if (s < w.segs) {
      const auto count_at = [&](int at) -> int64_t {
        const int q = at / kAheadKeys, j = at % kAheadKeys;
        return w.counts[((int64_t(q) * w.rows + r) * w.segs + s) * kAheadKeys + j];
      };
      // (A marker reads nothing: kNoneAbove counts no take, kNoneBelow the whole segment.)
      t = at_t >= 0 ? count_at(at_t) : 0;
      f = (at_f >= 0 ? count_at(at_f) : w.seg_len(s)) - t;
    }
    const int64_t ti = warp_inclusive_sum(t), fi = warp_inclusive_sum(f);
    if (s < w.segs) {
      const int64_t tb = takes_before + ti - t, fb = fills_before + fi - f;
      const int64_t quota = plan.quota - fb > 0 ? plan.quota - fb : 0;
      int64_t* info = w.info + (r * w.segs + s) * 3;
      info[0] = tb + (fb < plan.quota ? fb : plan.quota);     // the segment's first output
      info[1] = quota;                                        // its fills' quota
      info[2] = uncounted ? 0 : t + (f < quota ? f : quota);  // its outputs
    }
    takes_before += __shfl_sync(kFullMask, ti, 31);
    fills_before += __shfl_sync(kFullMask, fi, 31);
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kRowBlockThreads)
    split_emit_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out_values,
                      int64_t* __restrict__ out_indices, SplitEarlyParts<KeyFor<scalar_t>> w,
                      int64_t k, bool largest) {
  using Key = KeyFor<scalar_t>;
  __shared__ unsigned s_sums[2][kRowBlockThreads / 32];
  const int s = blockIdx.x;
  const int64_t r = blockIdx.y;
  const int64_t* info = w.info + (r * w.segs + s) * 3;
  const int64_t outputs = info[2];
  if (outputs == 0) return;  // (uniform: a segment past the k outputs reads nothing)
  const Plan<Key> plan{w.above[r], w.floor[r], info[1]};
  const int64_t first = w.seg_first(s);
  block_emit_streamed(in + r * w.cols + first, w.seg_len(s), largest, plan, outputs,
                      out_values + r * k + info[0], out_indices + r * k + info[0], s_sums, first);
}

}  // namespace cuda_detail

template <typename scalar_t>
void launch_split_early(const scalar_t* in, scalar_t* out_values, int64_t* out_indices,
                        const RowLaunch& a, SplitEarly s, void* work, cudaStream_t stream) {
  using namespace cuda_detail;
  using Key = KeyFor<scalar_t>;
  using Compute = typename Elem<scalar_t>::Compute;
  const SplitEarlyParts<Key> w(work, split_early_layout(a, s, int(sizeof(Key))), a, s);
  const dim3 segs(unsigned(s.segs), unsigned(a.rows));
  const Compute eps = static_cast<Compute>(a.eps);
  split_range_kernel<scalar_t><<<segs, kRowBlockThreads, 0, stream>>>(in, w, a.largest);
  for (int round = 0; round < s.rounds; ++round) {
    split_plan_kernel<scalar_t>
        <<<unsigned(a.rows), 32, 0, stream>>>(w, a.k, a.max_iter, eps, round, false);
    split_count_kernel<scalar_t><<<segs, kRowBlockThreads, 0, stream>>>(in, w, a.largest, round);
  }
  split_plan_kernel<scalar_t>
      <<<unsigned(a.rows), 32, 0, stream>>>(w, a.k, a.max_iter, eps, s.rounds, true);
  split_emit_kernel<scalar_t>
      <<<segs, kRowBlockThreads, 0, stream>>>(in, out_values, out_indices, w, a.k, a.largest);
}

}  // namespace rtopk
