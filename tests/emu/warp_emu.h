// A warp emulator for the CPU: runs CUDA kernels that are written warp-synchronously (every warp
// collective reached by all 32 lanes, full masks) one warp at a time, its 32 lanes as fibers
// (ucontext) that switch at each collective.  For testing kernel logic where no GPU is at hand
// (tests/test_lane_emu.py); it says nothing about speed, and nvcc's FMA contraction and
// approximate intrinsics (__fdividef) are not reproduced, so intermediate floats may differ from
// the GPU's while exact results must not.
//
// What it checks beyond the results: a lane that ends while others wait at a collective, or lanes
// that meet at different collectives (both undefined on the GPU, where they hang or mix values),
// abort with a message.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <ucontext.h>

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <vector>

#define RTOPK_WARP_EMU 1
#define __launch_bounds__(...)
#undef __shared__
#define __shared__ static  // one block runs at a time
#define __noinline__ __attribute__((noinline))
#define __builtin_assume(x) ((void)0)

namespace emu {

enum class Op { kSync, kShfl, kBallot };

struct WarpState {
  ucontext_t sched;
  ucontext_t ctx[32];
  std::vector<char> stack[32];
  bool done[32];
  Op op[32];
  void* site[32];  // the caller of each lane's collective (for the failure message)
  uint64_t xchg[32];
  int cur = 0;
  unsigned block = 0, warp = 0, block_dim = 64, grid_dim = 1;
  std::function<void()> body;
};
inline WarpState* g_warp = nullptr;
inline uintptr_t g_shared_hi = 0;  // the upper address bits of the kernel's shared array

[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "warp emulator: %s (block %u warp %u lane %d)\n", what, g_warp->block,
               g_warp->warp, g_warp->cur);
  std::abort();
}

// A lane waits at a collective: back to the scheduler until every lane has arrived.
inline void arrive(Op op, void* site = nullptr) {
  WarpState& w = *g_warp;
  w.op[w.cur] = op;
  if (site) w.site[w.cur] = site;
  swapcontext(&w.ctx[w.cur], &w.sched);
}

inline void trampoline() {
  g_warp->body();
  g_warp->done[g_warp->cur] = true;
  swapcontext(&g_warp->ctx[g_warp->cur], &g_warp->sched);
}

// Runs body as the 32 lanes of one warp; each round resumes every lane up to its next collective.
inline void run_warp(unsigned block, unsigned warp, unsigned block_dim, unsigned grid_dim,
                     std::function<void()> body) {
  static WarpState w;
  g_warp = &w;
  w.block = block;
  w.warp = warp;
  w.block_dim = block_dim;
  w.grid_dim = grid_dim;
  w.body = std::move(body);
  for (int l = 0; l < 32; ++l) {
    w.stack[l].resize(1 << 20);
    w.done[l] = false;
    getcontext(&w.ctx[l]);
    w.ctx[l].uc_stack.ss_sp = w.stack[l].data();
    w.ctx[l].uc_stack.ss_size = w.stack[l].size();
    w.ctx[l].uc_link = nullptr;
    makecontext(&w.ctx[l], trampoline, 0);
  }
  for (;;) {
    int finished = 0;
    for (int l = 0; l < 32; ++l) {
      if (w.done[l]) {
        ++finished;
        continue;
      }
      w.cur = l;
      swapcontext(&w.sched, &w.ctx[l]);
      if (w.done[l]) ++finished;
    }
    if (finished == 32) break;
    if (finished > 0) fail("a lane ended while others wait at a warp collective");
    for (int l = 1; l < 32; ++l)
      if (w.op[l] != w.op[0]) {
        std::fprintf(stderr, "lanes' collectives (0 sync, 1 shuffle, 2 ballot):");
        for (int m = 0; m < 32; ++m) std::fprintf(stderr, " %d", int(w.op[m]));
        std::fprintf(stderr, "\ncall sites (addr2line -f -C -e <binary>):");
        for (int m = 0; m < 32; ++m) std::fprintf(stderr, " %p", w.site[m]);
        std::fprintf(stderr, "\n");
        fail("lanes at different warp collectives");
      }
  }
}

inline int lane() { return g_warp->cur; }

template <typename T>
inline uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8, "a register value");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
inline T from_bits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

inline void check_mask(unsigned mask) {
  if (mask != 0xFFFFFFFFu) fail("a warp collective with a partial mask (not emulated)");
}

// Every lane posts its value, then reads the one of src(lane) (-1: its own).
template <typename T, typename Src>
inline T exchange(unsigned mask, T v, Src src) {
  check_mask(mask);
  WarpState& w = *g_warp;
  w.xchg[w.cur] = to_bits(v);
  arrive(Op::kShfl);
  const int s = src(w.cur);
  const T r = from_bits<T>(w.xchg[s < 0 ? w.cur : s]);
  arrive(Op::kShfl);  // (everyone has read before the next exchange writes)
  return r;
}

}  // namespace emu

struct EmuIdx {
  unsigned x, y, z;
};
#define threadIdx (EmuIdx{emu::g_warp->warp * 32u + unsigned(emu::lane()), 0u, 0u})
#define blockIdx (EmuIdx{emu::g_warp->block, 0u, 0u})
#define blockDim (EmuIdx{emu::g_warp->block_dim, 1u, 1u})
#define gridDim (EmuIdx{emu::g_warp->grid_dim, 1u, 1u})

__attribute__((noinline)) inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
  emu::check_mask(mask);
  emu::arrive(emu::Op::kSync, __builtin_return_address(0));
}
template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return emu::exchange(mask, v, [&](int l) { return (l & ~(width - 1)) + (src & (width - 1)); });
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return emu::exchange(mask, v,
                       [&](int l) { return (l & (width - 1)) >= int(d) ? l - int(d) : -1; });
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return emu::exchange(mask, v,
                       [&](int l) { return (l & (width - 1)) + int(d) < width ? l + int(d) : -1; });
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
  return emu::exchange(mask, v, [&](int l) {
    const int s = l ^ m;
    return (s & ~(width - 1)) == (l & ~(width - 1)) ? s : -1;
  });
}
__attribute__((noinline)) inline unsigned __ballot_sync(unsigned mask, int pred) {
  emu::check_mask(mask);
  emu::WarpState& w = *emu::g_warp;
  w.xchg[w.cur] = pred != 0;
  emu::arrive(emu::Op::kBallot, __builtin_return_address(0));
  unsigned r = 0;
  for (int l = 0; l < 32; ++l) r |= unsigned(w.xchg[l] != 0) << l;
  emu::arrive(emu::Op::kBallot);
  return r;
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == 0xFFFFFFFFu; }

// Shared memory: the kernel's array is a static; a 32-bit shared address is its low bits.
inline size_t __cvta_generic_to_shared(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  emu::g_shared_hi = a & ~uintptr_t(0xFFFFFFFFu);
  return size_t(a & 0xFFFFFFFFu);
}
inline uint32_t rtopk_emu_shared_add(uint32_t addr, uint32_t v) {
  uint32_t* p = reinterpret_cast<uint32_t*>(emu::g_shared_hi | addr);
  const uint32_t old = *p;  // (fibers: no other lane runs in between)
  *p = old + v;
  return old;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const uint64_t v = (uint64_t(hi) << 32) | lo;
  return unsigned((v << (shift & 31)) >> 32);
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  unsigned r = c;
  for (int i = 0; i < 4; ++i) r += ((a >> (8 * i)) & 0xFFu) * ((b >> (8 * i)) & 0xFFu);
  return r;
}
inline unsigned __dp2a_lo(unsigned a, unsigned b, unsigned c) {
  return c + (a & 0xFFFFu) * (b & 0xFFu) + (a >> 16) * ((b >> 8) & 0xFFu);
}
inline unsigned __float_as_uint(float f) { return emu::from_bits<unsigned>(emu::to_bits(f)); }
inline int __float_as_int(float f) { return emu::from_bits<int>(emu::to_bits(f)); }
inline float __uint_as_float(unsigned u) { return emu::from_bits<float>(emu::to_bits(u)); }
inline float __int_as_float(int i) { return emu::from_bits<float>(emu::to_bits(i)); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline long long __double_as_longlong(double d) {
  return emu::from_bits<long long>(emu::to_bits(d));
}
inline double __longlong_as_double(long long x) { return emu::from_bits<double>(emu::to_bits(x)); }
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
template <typename T>
inline T min(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
inline T max(T a, T b) {
  return a < b ? b : a;
}

// Runs a kernel's body over a grid of blocks of block_dim threads, warp by warp.
template <typename F>
inline void emu_launch(unsigned grid, unsigned block_dim, F body) {
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned w = 0; w < block_dim / 32; ++w) emu::run_warp(b, w, block_dim, grid, body);
}
