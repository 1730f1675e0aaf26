// The short-row kernels (csrc/cuda/rtopk_small_rows.cuh) on the warp emulator: reads rows from a
// file, runs rank_rows_kernel<T, G, exact> or round_rows_kernel<T, VPT> over a grid of blocks,
// writes the outputs (poisoned first).  Driven by tests/test_lane_emu.py.
//   small_emu DTYPE(f32|f16|bf16) KERNEL(rank|plan|round) P(G or VPT) LARGEST SORTED ROWS COLS K
//             MAX_ITER EPS GRID IN OUT_V OUT_I
#include <string>

#include "warp_emu.h"

// (after the emulator: its definitions stand in for the CUDA ones)
#include "../../csrc/cuda/rtopk_small_rows.cuh"

namespace {

using rtopk::cuda_detail::kSmallBlockThreads;

struct Args {
  bool largest, sorted;
  int64_t rows;
  int cols, k;
  int64_t max_iter;
  float eps;
  unsigned grid;
  char** files;
};

template <typename T, typename Body>
void run(const Args& a, Body body) {
  emu::run_topk<T>(a.files, a.rows, a.cols, a.k, a.grid, kSmallBlockThreads, body);
}

template <typename T, int G, bool kExact>
void rank(const Args& a) {
  using Compute = typename rtopk::cuda_detail::Elem<T>::Compute;
  run<T>(a, [&](const T* in, T* ov, int64_t* oi) {
    rtopk::cuda_detail::rank_rows_kernel<T, G, kExact>(in, ov, oi, a.rows, a.cols, a.k, a.max_iter,
                                                       Compute(a.eps), a.largest, a.sorted);
  });
}

template <typename T, int VPT>
void round(const Args& a) {
  run<T>(a, [&](const T* in, T* ov, int64_t* oi) {
    rtopk::cuda_detail::round_rows_kernel<T, VPT>(in, ov, oi, a.rows, a.cols, a.k, a.largest,
                                                  a.sorted);
  });
}

template <typename T, bool kExact>
void rank_g(int g, const Args& a) {
  if (g == 2) rank<T, 2, kExact>(a);
  if (g == 4) rank<T, 4, kExact>(a);
  if (g == 8) rank<T, 8, kExact>(a);
  if (g == 16) rank<T, 16, kExact>(a);
  if (g == 32) rank<T, 32, kExact>(a);
}

template <typename T>
void dispatch(const std::string& kernel, int p, const Args& a) {
  if (kernel == "rank") rank_g<T, true>(p, a);
  if (kernel == "plan") rank_g<T, false>(p, a);
  if (kernel == "round") {
    if (p == 1) round<T, 1>(a);
    if (p == 2) round<T, 2>(a);
    if (p == 3) round<T, 3>(a);
    if (p == 4) round<T, 4>(a);
    if (p == 6) round<T, 6>(a);
    if (p == 8) round<T, 8>(a);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 15) {
    std::fprintf(stderr,
                 "usage: %s DTYPE KERNEL P LARGEST SORTED ROWS COLS K MAX_ITER EPS GRID IN OUT_V "
                 "OUT_I\n",
                 argv[0]);
    return 2;
  }
  const std::string dtype = argv[1], kernel = argv[2];
  const int p = std::atoi(argv[3]);
  Args a{std::atoi(argv[4]) != 0,
         std::atoi(argv[5]) != 0,
         std::atoll(argv[6]),
         std::atoi(argv[7]),
         std::atoi(argv[8]),
         std::atoll(argv[9]),
         float(std::atof(argv[10])),
         unsigned(std::atoi(argv[11])),
         argv + 12};
  if (dtype == "f32") dispatch<float>(kernel, p, a);
  if (dtype == "f16") dispatch<__half>(kernel, p, a);
  if (dtype == "bf16") dispatch<__nv_bfloat16>(kernel, p, a);
  return 0;
}
