// The lane kernel (csrc/cuda/rtopk_lane_rows.cuh) on the warp emulator: reads rows from a file,
// runs lane_rows_kernel<T, G, largest, sorted, early> over a grid of blocks, writes the outputs
// (poisoned first: unwritten slots show).  Driven by tests/test_lane_emu.py.  MAX_ITER > 0: the
// max_iter instance (index order only), else exact.
//   lane_emu DTYPE(f32|f16|bf16) G(4|8|16) LARGEST(0|1) SORTED(0|1) MAX_ITER ROWS COLS K GRID IN
//            OUT_V OUT_I
#include <string>

#include "warp_emu.h"

// (after the emulator: its definitions stand in for the CUDA ones)
#include "../../csrc/cuda/rtopk_lane_rows.cuh"

namespace {

template <typename T, int G, bool kLargest, bool kSorted, bool kEarly = false>
void run(int64_t rows, int cols, int k, int64_t max_iter, unsigned grid, char** files) {
  emu::run_topk<T>(files, rows, cols, k, grid, rtopk::cuda_detail::kLaneBlockWarps * 32,
                   [&](const T* in, T* ov, int64_t* oi) {
                     rtopk::cuda_detail::lane_rows_kernel<T, G, kLargest, kSorted, kEarly>(
                         in, ov, oi, rows, cols, k, max_iter);
                   });
}

template <typename T, int G>
void run_dir(bool largest, bool sorted, int64_t max_iter, int64_t rows, int cols, int k,
             unsigned grid, char** files) {
  if (max_iter > 0) {
    if (largest) run<T, G, true, false, true>(rows, cols, k, max_iter, grid, files);
    if (!largest) run<T, G, false, false, true>(rows, cols, k, max_iter, grid, files);
    return;
  }
  if (largest && sorted) run<T, G, true, true>(rows, cols, k, -1, grid, files);
  if (largest && !sorted) run<T, G, true, false>(rows, cols, k, -1, grid, files);
  if (!largest && sorted) run<T, G, false, true>(rows, cols, k, -1, grid, files);
  if (!largest && !sorted) run<T, G, false, false>(rows, cols, k, -1, grid, files);
}

template <typename T>
void run_g(int g, bool largest, bool sorted, int64_t max_iter, int64_t rows, int cols, int k,
           unsigned grid, char** files) {
  if (g == 4) run_dir<T, 4>(largest, sorted, max_iter, rows, cols, k, grid, files);
  if (g == 8) run_dir<T, 8>(largest, sorted, max_iter, rows, cols, k, grid, files);
  if (g == 16) run_dir<T, 16>(largest, sorted, max_iter, rows, cols, k, grid, files);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 13) {
    std::fprintf(stderr,
                 "usage: %s DTYPE G LARGEST SORTED MAX_ITER ROWS COLS K GRID IN OUT_V OUT_I\n",
                 argv[0]);
    return 2;
  }
  const std::string dtype = argv[1];
  const int g = std::atoi(argv[2]);
  const bool largest = std::atoi(argv[3]) != 0, sorted = std::atoi(argv[4]) != 0;
  const int64_t max_iter = std::atoll(argv[5]);
  if (max_iter > 0 && sorted) {
    std::fprintf(stderr, "MAX_ITER > 0: index order only\n");
    return 2;
  }
  const int64_t rows = std::atoll(argv[6]);
  const int cols = std::atoi(argv[7]), k = std::atoi(argv[8]);
  const unsigned grid = unsigned(std::atoi(argv[9]));
  char** files = argv + 10;
  if (dtype == "f32") run_g<float>(g, largest, sorted, max_iter, rows, cols, k, grid, files);
  if (dtype == "f16") run_g<__half>(g, largest, sorted, max_iter, rows, cols, k, grid, files);
  if (dtype == "bf16")
    run_g<__nv_bfloat16>(g, largest, sorted, max_iter, rows, cols, k, grid, files);
  std::printf("fallback_rows %ld\n", g_emu_fallback_rows);
  std::printf("tail_warps %ld\n", g_emu_tail_warps);
  std::printf("offset_warps %ld\n", g_emu_offset_warps);
  return 0;
}
