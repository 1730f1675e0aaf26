// Where a pair-kernel warp's time goes, phase by phase, in a full launch (notes v70 item 12): built
// with csrc/cuda/rtopk_pair_rows.cuh carrying benchmarks/pending/v70_pair_phases.patch (the
// RTOPK_PAIR_PHASE stamps; any kernel patch on top), it launches pair_rows_kernel<bf16, G, E, k
// largest> over ROWS x COLS randn rows (to the power POW) at k = K, then reads lane 0's clock64()
// at each phase's end for every 16th block.  COLS 768: G = 8, E = 96 (the default); 512: G = 4, E =
// 128 (built with -DPP_COLS_512); 256: G = 2, E = 128 (-DPP_COLS_256).  Printed: the launch's time
// (CUDA events, median of 5) and each phase's cycles (median and mean over the sampled blocks).
// Build and run on the device, in a copy of csrc with the patches applied (scripts/pair_phases.sh):
//   nvcc -arch=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr -Xcompiler -fopenmp -lgomp \
//     -DRTOPK_PAIR_PHASES=16 -I <csrc> \
//     -o /tmp/pp benchmarks/pair_phases.cu && /tmp/pp [ROWS] [K] [POW] [COLS]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda/rtopk_pair_rows.cuh"

// (A tree from before the launch plan, notes v71 item 2: its `level` argument; the library's
// non-template pair_plan, where it has one, is the better match.)
namespace rtopk {
namespace cuda_detail {
template <typename T>
int pair_plan(T cols, T k, int G, int E) {
  return pair_level(cols, k, G, E);
}
}  // namespace cuda_detail
}  // namespace rtopk

using rtopk::cuda_detail::kPairBlockWarps;
using rtopk::cuda_detail::kPhaseSlots;
using rtopk::cuda_detail::pair_plan;
using rtopk::cuda_detail::pair_rows_kernel;

template <int G, int E>
int run(int64_t rows, int k, int pw) {
  constexpr int cols = G * E, kRowsWarp = 32 / G;
  std::vector<__nv_bfloat16> h(size_t(rows) * cols);
  // (Box-Muller over a 64-bit LCG seeded by the row: randn rows; rows in parallel where the host
  // compiler has OpenMP, -Xcompiler -fopenmp.)
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    uint64_t s = 12345u + 0x9E3779B97F4A7C15ull * uint64_t(r);
    for (int c = 0; c < cols; ++c) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const double u1 = ((s >> 11) + 1.0) / 9007199254740993.0;
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      const double u2 = (s >> 11) / 9007199254740992.0;
      const double x = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      h[size_t(r) * cols + c] = __float2bfloat16(float(pw == 1 ? x : std::pow(x, pw)));
    }
  }
  __nv_bfloat16 *in, *ov;
  int64_t* oi;
  cudaMalloc(&in, h.size() * 2);
  cudaMalloc(&ov, size_t(rows) * k * 2);
  cudaMalloc(&oi, size_t(rows) * k * 8);
  cudaMemcpy(in, h.data(), h.size() * 2, cudaMemcpyHostToDevice);
  const int64_t warps = (rows + kRowsWarp - 1) / kRowsWarp;
  const unsigned grid = unsigned((warps + kPairBlockWarps - 1) / kPairBlockWarps);
  const auto plan = pair_plan(int64_t(cols), int64_t(k), G, E);
  // (A tree with the launch's instance choice, notes v74 item 7: the one it takes at this k.)
#ifdef RTOPK_PAIR_ROWS_INSTANCE
  const auto kernel = rtopk::cuda_detail::pair_rows_instance<__nv_bfloat16, G, E>(true, false, k);
#else
  const auto kernel = pair_rows_kernel<__nv_bfloat16, G, E, true>;
#endif
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> ms;
  for (int r = 0; r < 6; ++r) {
    cudaEventRecord(a);
    kernel<<<grid, kPairBlockWarps * 32>>>(in, ov, oi, rows, cols, k, plan);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float t;
    cudaEventElapsedTime(&t, a, b);
    if (r) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::vector<unsigned long long> st(size_t(kPhaseSlots) * 8);
  cudaMemcpyFromSymbol(st.data(), rtopk::cuda_detail::rtopk_pair_phase_buf, st.size() * 8);
  const int64_t sampled =
      std::min<int64_t>(kPhaseSlots, (warps + RTOPK_PAIR_PHASES - 1) / RTOPK_PAIR_PHASES);
  const char* names[] = {"load + row max + low end",
                         "re-pair + odd rows",
                         "search",
                         "take / ties masks",
                         "staging",
                         "flush (issue)"};
  std::printf(
      "rows %lld x %d (x^%d), k = %d, G = %d, E = %d: %.4f ms (median of 5), %lld warps sampled; "
      "%s\n",
      (long long)rows, cols, pw, k, G, E, ms[ms.size() / 2], (long long)sampled,
      cudaGetErrorString(cudaGetLastError()));
  double total = 0;
  for (int p = 0; p < 6; ++p) {
    std::vector<double> d;
    for (int64_t i = 0; i < sampled; ++i) d.push_back(double(st[i * 8 + p + 1] - st[i * 8 + p]));
    std::sort(d.begin(), d.end());
    double mean = 0;
    for (double x : d) mean += x / d.size();
    total += mean;
    std::printf("  %-26s median %8.0f  mean %8.0f  p90 %8.0f cycles\n", names[p], d[d.size() / 2],
                mean, d[d.size() * 9 / 10]);
  }
  std::printf("  %-26s mean %8.0f cycles a warp (%d rows)\n", "all", total, kRowsWarp);
  return 0;
}

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 262144;
  const int k = argc > 2 ? std::atoi(argv[2]) : 64;
  const int pw = argc > 3 ? std::atoi(argv[3]) : 1;  // (5: x^5 rows, heavy tails)
  const int cols = argc > 4 ? std::atoi(argv[4]) : 768;
  if (cols == 768) return run<8, 96>(rows, k, pw);
#ifdef PP_COLS_512
  if (cols == 512) return run<4, 128>(rows, k, pw);
#endif
#ifdef PP_COLS_256
  if (cols == 256) return run<2, 128>(rows, k, pw);
#endif
  std::printf("rows of %d: not built (768; 512 with -DPP_COLS_512; 256 with -DPP_COLS_256)\n",
              cols);
  return 1;
}
