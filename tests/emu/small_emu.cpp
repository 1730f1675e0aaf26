// The short-row kernels (csrc/cuda/rtopk_small_rows.cuh) on the warp emulator: reads rows from a
// file, runs rank_rows_kernel<T, G>, round_rows_kernel<T, VPT>, thread_rows_kernel<T, N>,
// thread_tile_rows_kernel<T, N> or net_rows_kernel<T, K, MV> (rank order where a.sorted) over a
// grid of blocks, writes the outputs (poisoned first).  Driven by tests/test_small_emu.py.
//   small_emu DTYPE(f32|f16|bf16) KERNEL(rank|round|thread|tile|net) P(G, VPT, N or MV) LARGEST
//   SORTED
//             ROWS COLS K MAX_ITER EPS GRID IN OUT_V OUT_I
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

template <typename T, int G>
void rank(const Args& a) {
  run<T>(a, [&](const T* in, T* ov, int64_t* oi) {
    rtopk::cuda_detail::rank_rows_kernel<T, G>(in, ov, oi, a.rows, a.cols, a.k, a.largest,
                                               a.sorted);
  });
}

template <typename T, int VPT>
void round(const Args& a) {
  run<T>(a, [&](const T* in, T* ov, int64_t* oi) {
    rtopk::cuda_detail::round_rows_kernel<T, VPT>(in, ov, oi, a.rows, a.cols, a.k, a.largest,
                                                  a.sorted);
  });
}

template <typename T, int N>
void thread(const Args& a) {
  using Compute = typename rtopk::cuda_detail::Elem<T>::Compute;
  // (The emulator's buffers are 16-byte aligned: rows of whole 16-byte words take the packs.)
  const bool packs = (a.cols * int64_t(sizeof(T))) % 16 == 0;
  run<T>(a, [&](const T* in, T* ov, int64_t* oi) {
    if (a.sorted)
      rtopk::cuda_detail::thread_rows_kernel<T, N, true>(
          in, ov, oi, a.rows, a.cols, a.k, a.max_iter, Compute(a.eps), a.largest, packs);
    else
      rtopk::cuda_detail::thread_rows_kernel<T, N, false>(
          in, ov, oi, a.rows, a.cols, a.k, a.max_iter, Compute(a.eps), a.largest, packs);
  });
}

template <typename T, int N>
void tile(const Args& a) {
  using Compute = typename rtopk::cuda_detail::Elem<T>::Compute;
  emu::run_topk<T>(a.files, a.rows, a.cols, a.k, a.grid, 32, [&](const T* in, T* ov, int64_t* oi) {
    if (a.sorted)
      rtopk::cuda_detail::thread_tile_rows_kernel<T, N, true>(
          in, ov, oi, a.rows, a.cols, a.k, a.max_iter, Compute(a.eps), a.largest);
    else
      rtopk::cuda_detail::thread_tile_rows_kernel<T, N, false>(
          in, ov, oi, a.rows, a.cols, a.k, a.max_iter, Compute(a.eps), a.largest);
  });
}

template <typename T, int K, int MV>
void net(const Args& a) {
  emu::run_topk<T>(a.files, a.rows, a.cols, a.k, a.grid, 32, [&](const T* in, T* ov, int64_t* oi) {
    rtopk::cuda_detail::net_rows_kernel<T, K, MV>(in, ov, oi, a.rows, a.cols, a.k, a.largest,
                                                  a.sorted);
  });
}

template <typename T, int MV>
void net_k(const Args& a) {
  if (a.k <= 1) return net<T, 1, MV>(a);
  if (a.k <= 2) return net<T, 2, MV>(a);
  if (a.k <= 4) return net<T, 4, MV>(a);
  net<T, 8, MV>(a);
}

template <typename T>
void rank_g(int g, const Args& a) {
  if (g == 2) rank<T, 2>(a);
  if (g == 4) rank<T, 4>(a);
  if (g == 8) rank<T, 8>(a);
  if (g == 16) rank<T, 16>(a);
  if (g == 32) rank<T, 32>(a);
}

template <typename T>
void dispatch(const std::string& kernel, int p, const Args& a) {
  if (kernel == "rank") rank_g<T>(p, a);
  if (kernel == "thread") {
    if (p == 8) thread<T, 8>(a);
    if (p == 16) thread<T, 16>(a);
    if (p == 32) thread<T, 32>(a);
    if (p == 64) thread<T, 64>(a);
  }
  if (kernel == "tile") {  // rows of whole 16-byte words
    if (p == 8) tile<T, 8>(a);
    if (p == 16) tile<T, 16>(a);
    if (p == 32) tile<T, 32>(a);
    if (p == 64) tile<T, 64>(a);
  }
  if (kernel == "net") {  // P: the row's 16-byte words at most; K from k
    if (p == 8) net_k<T, 8>(a);
    if (p == 16) net_k<T, 16>(a);
    if (p == 32) net_k<T, 32>(a);
    if (p == 64 && sizeof(T) == 4) net_k<T, 64>(a);
  }
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
