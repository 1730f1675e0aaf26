// The packed-pair kernel (csrc/cuda/rtopk_pair_rows.cuh) on the warp emulator: reads rows from a
// file, runs the pair_rows_kernel instance a launch takes (pair_rows_instance) over a grid of
// one-warp blocks (the kernel's PairPlan as the launch computes it), writes the outputs (poisoned
// first: unwritten slots show). Driven by tests/test_pair_emu.py.
//   pair_emu DTYPE(f16|bf16) G E LARGEST ROWS COLS K GRID IN OUT_V OUT_I
//   pair_emu plan G E COLS K   (prints the launch's PairPlan: level inv_n z step gate)
//   (G, E: 2 128, 4 64, 4 128, 8 64 or 8 96; LARGEST 0 the k smallest, 1 the k largest, 2 the k
//   largest in rank order)
#include <string>

#include "warp_emu.h"

// (after the emulator: its definitions stand in for the CUDA ones)
#include "../../csrc/cuda/rtopk_pair_rows.cuh"

namespace {

template <typename T, int G, int E>
void run(int largest, int64_t rows, int cols, int k, unsigned grid, char** files) {
  using namespace rtopk::cuda_detail;
  const PairPlan plan = pair_plan(cols, k, G, E);
  emu::run_topk<T>(
      files, rows, cols, k, grid, kPairBlockWarps * 32, [&](const T* in, T* ov, int64_t* oi) {
        pair_rows_instance<T, G, E>(largest != 0, largest == 2, k)(in, ov, oi, rows, cols, k, plan);
      });
}

template <typename T>
bool run_shape(int g, int e, int largest, int64_t rows, int cols, int k, unsigned grid,
               char** files) {
  if (g == 2 && e == 128)
    run<T, 2, 128>(largest, rows, cols, k, grid, files);
  else if (g == 4 && e == 64)
    run<T, 4, 64>(largest, rows, cols, k, grid, files);
  else if (g == 4 && e == 128)
    run<T, 4, 128>(largest, rows, cols, k, grid, files);
  else if (g == 8 && e == 64)
    run<T, 8, 64>(largest, rows, cols, k, grid, files);
  else if (g == 8 && e == 96)
    run<T, 8, 96>(largest, rows, cols, k, grid, files);
  else
    return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // pair_emu plan G E COLS K: the launch's PairPlan (tests/test_pair_emu.py::test_pair_plan).
  if (argc == 6 && std::string(argv[1]) == "plan") {
    const int g = std::atoi(argv[2]), e = std::atoi(argv[3]);
    const auto p = rtopk::cuda_detail::pair_plan(std::atoll(argv[4]), std::atoll(argv[5]), g, e);
    std::printf("%d %.9g %.9g %.9g %.9g\n", p.level, p.inv_n, p.z, p.step, p.gate);
    return 0;
  }
  if (argc != 12) {
    std::fprintf(stderr, "usage: %s DTYPE G E LARGEST ROWS COLS K GRID IN OUT_V OUT_I\n", argv[0]);
    return 2;
  }
  const std::string dtype = argv[1];
  const int g = std::atoi(argv[2]), e = std::atoi(argv[3]);
  const int largest = std::atoi(argv[4]);
  const int64_t rows = std::atoll(argv[5]);
  const int cols = std::atoi(argv[6]), k = std::atoi(argv[7]);
  const unsigned grid = unsigned(std::atoi(argv[8]));
  char** files = argv + 9;
  bool ok = false;
  if (dtype == "f16") ok = run_shape<__half>(g, e, largest, rows, cols, k, grid, files);
  if (dtype == "bf16") ok = run_shape<__nv_bfloat16>(g, e, largest, rows, cols, k, grid, files);
  if (!ok) {
    std::fprintf(stderr, "no such instance: %s G=%d E=%d\n", dtype.c_str(), g, e);
    return 2;
  }
  std::printf("fallback_rows %ld\n", g_emu_fallback_rows);
  return 0;
}
