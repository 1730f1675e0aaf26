// The warp emulator's own checks (tests/test_emu_selfcheck.py): one small kernel a case.  "ok"
// runs collectives with full and partial masks, whose results each lane checks against what the
// GPU gives, with many values live across the fiber switches (callee-saved registers, the lane's
// stack); every other case breaks a rule of the warp collectives, and the emulator must abort.
//   emu_selfcheck CASE(ok|early_exit|mixed_ops|shfl_outside|stuck)
#include <string>

#include "warp_emu.h"

namespace {

int g_errors = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "lane %d: %s\n", emu::lane(), what);
    ++g_errors;
  }
}

// A recursion that keeps values on the lane's stack and in registers across collectives.
__attribute__((noinline)) unsigned deep(unsigned depth, unsigned v) {
  if (depth == 0) return __reduce_add_sync(0xFFFFFFFFu, v);
  volatile unsigned local[8];
  for (int i = 0; i < 8; ++i) local[i] = v * 31u + unsigned(i) + depth;
  const unsigned below = deep(depth - 1, v + 1);
  for (int i = 0; i < 8; ++i) expect(local[i] == v * 31u + unsigned(i) + depth, "stack kept");
  return below;
}

void ok_case() {
  const int l = emu::lane();
  // Many values live across the switches.
  unsigned a0 = l * 3u + 1, a1 = l * 5u + 2, a2 = l * 7u + 3, a3 = l * 11u + 4, a4 = l * 13u + 5;
  unsigned a5 = l * 17u + 6, a6 = l * 19u + 7, a7 = l * 23u + 8;
  const double d = l * 0.5 + 0.25;
  expect(__shfl_sync(0xFFFFFFFFu, l, (l + 1) & 31) == ((l + 1) & 31), "shfl");
  expect(__shfl_xor_sync(0xFFFFFFFFu, l * 2, 1) == (l ^ 1) * 2, "shfl_xor");
  expect(__shfl_up_sync(0xFFFFFFFFu, l, 1) == (l >= 1 ? l - 1 : l), "shfl_up");
  expect(__shfl_down_sync(0xFFFFFFFFu, l, 2, 8) == ((l & 7) + 2 < 8 ? l + 2 : l),
         "shfl_down width");
  expect(__ballot_sync(0xFFFFFFFFu, l % 3 == 0) == 0x49249249u, "ballot");
  expect(__reduce_add_sync(0xFFFFFFFFu, unsigned(l)) == 496u, "reduce_add");
  expect(__reduce_min_sync(0xFFFFFFFFu, 100u - l) == 69u, "reduce_min");
  expect(__reduce_max_sync(0xFFFFFFFFu, unsigned(l) * 2u) == 62u, "reduce_max");
  // Partial masks: each group of eight lanes completes its collectives on its own, groups out of
  // step with one another (odd groups an extra sync first).
  const unsigned group = 0xFFu << (l & ~7);
  if ((l >> 3) & 1) __syncwarp(group);
  expect(__reduce_add_sync(group, 1u) == 8u, "group reduce");
  expect(__shfl_sync(group, l, 0, 8) == (l & ~7), "group shfl");
  expect(__ballot_sync(group, l & 1) == (0xAAu << (l & ~7)), "group ballot");
  expect(deep(20, unsigned(l)) == 496u + 32u * 20u, "deep stack");
  expect(a0 == l * 3u + 1 && a1 == l * 5u + 2 && a2 == l * 7u + 3 && a3 == l * 11u + 4,
         "regs a0-3");
  expect(a4 == l * 13u + 5 && a5 == l * 17u + 6 && a6 == l * 19u + 7 && a7 == l * 23u + 8,
         "regs a4-7");
  expect(d == l * 0.5 + 0.25, "double reg");
  a0 += __shfl_sync(0xFFFFFFFFu, a7, 31 - l);
  expect(a0 == l * 3u + 1 + (31 - l) * 23u + 8, "shfl of a live value");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s ok|early_exit|mixed_ops|shfl_outside|stuck\n", argv[0]);
    return 2;
  }
  const std::string c = argv[1];
  if (c == "ok") {
    emu_launch(3, 64, ok_case);  // (warps and blocks one after the other, the fibers reused)
    if (g_errors) return 1;
    std::printf("ok\n");
    return 0;
  }
  if (c == "early_exit") {  // lane 5 returns while the others wait at a shuffle
    emu_launch(1, 32, [] {
      if (emu::lane() == 5) return;
      (void)__shfl_sync(0xFFFFFFFFu, 1, 0);
    });
  } else if (c == "mixed_ops") {  // one mask, half the lanes at a ballot, half at a shuffle
    emu_launch(1, 32, [] {
      if (emu::lane() < 16)
        (void)__ballot_sync(0xFFFFFFFFu, 1);
      else
        (void)__shfl_sync(0xFFFFFFFFu, 1, 0);
    });
  } else if (c == "shfl_outside") {  // lanes 0..15 read lane 20, outside their mask
    emu_launch(1, 32, [] {
      if (emu::lane() < 16) (void)__shfl_sync(0xFFFFu, 1, 20);
    });
  } else if (c == "stuck") {  // lanes 3, 4, 5 wait on three masks, each holding a lane of another
    emu_launch(1, 32, [] {
      const int l = emu::lane();
      if (l == 3) __syncwarp(0x18u);
      if (l == 4) __syncwarp(0x30u);
      if (l == 5) __syncwarp(0x28u);
    });
  } else {
    std::fprintf(stderr, "unknown case %s\n", c.c_str());
    return 2;
  }
  std::printf("not caught\n");
  return 0;
}
