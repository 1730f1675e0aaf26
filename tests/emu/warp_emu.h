// A warp emulator for the CPU: runs CUDA kernels one warp at a time, its 32 lanes as fibers
// (started by ucontext, switched by __builtin_setjmp / __builtin_longjmp: swapcontext saves the
// signal mask by a system call, half of the emulator's time) that switch at each warp collective
// (shuffles, ballots, reductions, __syncwarp, with full or partial masks); warps of a block run one
// after the other (no __syncthreads).  For testing kernel logic where no GPU is at hand
// (tests/test_lane_emu.py); it says nothing about speed, and nvcc's FMA contraction and approximate
// intrinsics (__fdividef) are not reproduced, so intermediate floats may differ from the GPU's
// while exact results must not.
//
// What it checks beyond the results: a lane that ends while others of its mask wait at a
// collective, lanes of one mask at different kinds of collective (not told apart: two of one kind
// at different places, as the compiler may copy one call into two branches), a shuffle from
// outside the mask (all undefined on the GPU, where they hang or mix values): each aborts with
// the lanes' call sites.
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
#include <memory>
#include <type_traits>
#include <vector>

#define RTOPK_WARP_EMU 1
#define __launch_bounds__(...)
#undef __shared__
#define __shared__ static  // one block runs at a time
#define __noinline__ __attribute__((noinline))
#define __builtin_assume(x) ((void)0)

namespace emu {

// A lane waits at a collective of `mask` lanes; the scheduler completes it once every lane of the
// mask waits at the same kind of collective with the same mask.
enum class Op { kSync, kShfl, kBallot, kMin, kMax, kAdd };
enum class St { kRun, kWait, kDone };

struct Post {
  Op op;
  unsigned mask;
  uint64_t val;
  int src;  // shuffles: the lane read (-1: its own value)
  void* site;
};

constexpr size_t kLaneStack = size_t(1) << 20;

struct WarpState {
  void* sched_jb[5];  // __builtin_setjmp's buffers (five words): the scheduler's, each lane's
  void* jb[32][5];
  bool started[32];
  ucontext_t ctx[32];  // each lane's start
  // Each lane's stack, left uninitialised: a process touches only the pages its lanes use (zeroed,
  // the 32 MB were 8000 page faults, most of a short run's time).
  std::unique_ptr<char[]> stack[32];
  St st[32];
  Post post[32];
  uint64_t result[32];
  int cur = 0;
  unsigned block = 0, warp = 0, block_dim = 64, grid_dim = 1;
  std::function<void()> body;
};
inline WarpState* g_warp = nullptr;
inline uintptr_t g_shared_hi = 0;  // the upper address bits of the kernel's shared array

[[noreturn]] inline void fail(const char* what, int lane) {
  WarpState& w = *g_warp;
  std::fprintf(stderr, "warp emulator: %s (block %u warp %u lane %d)\n", what, w.block, w.warp,
               lane);
  std::fprintf(stderr, "lanes (state, op, mask, call site: addr2line -f -C -e <binary>):\n");
  for (int m = 0; m < 32; ++m)
    std::fprintf(stderr, "  %2d: %d %d %08x %p\n", m, int(w.st[m]), int(w.post[m].op),
                 w.post[m].mask, w.post[m].site);
  std::abort();
}

// (__builtin_longjmp must not be called from the function of its __builtin_setjmp.)
[[noreturn]] __attribute__((noinline)) inline void jump(void** buf) { __builtin_longjmp(buf, 1); }

// The calling lane waits: back to the scheduler, on until it resumes this lane.
__attribute__((noinline)) inline void yield_lane() {
  if (__builtin_setjmp(g_warp->jb[g_warp->cur]) == 0) jump(g_warp->sched_jb);
}

// The scheduler runs lane l until it waits or ends.
__attribute__((noinline)) inline void resume_lane(int l) {
  g_warp->cur = l;
  if (__builtin_setjmp(g_warp->sched_jb) == 0) {
    if (!g_warp->started[l]) {
      g_warp->started[l] = true;
      setcontext(&g_warp->ctx[l]);
    }
    jump(g_warp->jb[l]);
  }
}

inline uint64_t collective(Op op, unsigned mask, uint64_t val, int src, void* site) {
  WarpState& w = *g_warp;
  if (!((mask >> w.cur) & 1u)) fail("a collective whose mask leaves out the calling lane", w.cur);
  w.post[w.cur] = Post{op, mask, val, src, site};
  w.st[w.cur] = St::kWait;
  yield_lane();
  return w.result[w.cur];
}

inline void trampoline() {
  g_warp->body();
  g_warp->st[g_warp->cur] = St::kDone;
  jump(g_warp->sched_jb);
}

inline void complete(unsigned mask) {
  WarpState& w = *g_warp;
  const int first = __builtin_ctz(mask);
  const Op op = w.post[first].op;
  uint64_t acc = op == Op::kMin ? ~uint64_t(0) : 0;
  for (int m = 0; m < 32; ++m) {
    if (!((mask >> m) & 1u)) continue;
    const uint64_t v = w.post[m].val;
    if (op == Op::kBallot) acc |= uint64_t(v != 0) << m;
    if (op == Op::kMin) acc = std::min(acc, v);
    if (op == Op::kMax) acc = std::max(acc, v);
    if (op == Op::kAdd) acc = (acc + v) & 0xFFFFFFFFu;
  }
  for (int m = 0; m < 32; ++m) {
    if (!((mask >> m) & 1u)) continue;
    if (op == Op::kShfl) {
      const int s = w.post[m].src;
      if (s >= 0 && !((mask >> s) & 1u)) fail("a shuffle reads a lane outside its mask", m);
      w.result[m] = w.post[s < 0 ? m : s].val;
    } else {
      w.result[m] = acc;
    }
    w.st[m] = St::kRun;
  }
}

// Runs body as the 32 lanes of one warp: each lane runs until it waits at a collective or ends;
// then every collective whose lanes all wait is completed; a warp where none can be is stuck.
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
    if (!w.stack[l]) w.stack[l].reset(new char[kLaneStack]);
    w.st[l] = St::kRun;
    w.started[l] = false;
    w.post[l] = Post{Op::kSync, 0u, 0u, -1, nullptr};
    getcontext(&w.ctx[l]);
    w.ctx[l].uc_stack.ss_sp = w.stack[l].get();
    w.ctx[l].uc_stack.ss_size = kLaneStack;
    w.ctx[l].uc_link = nullptr;
    makecontext(&w.ctx[l], trampoline, 0);
  }
  for (;;) {
    for (int l = 0; l < 32; ++l) {
      if (w.st[l] != St::kRun) continue;
      resume_lane(l);
    }
    bool all_done = true, progress = false;
    for (int l = 0; l < 32; ++l) {
      if (w.st[l] != St::kWait) {
        all_done = all_done && w.st[l] == St::kDone;
        continue;
      }
      all_done = false;
      const unsigned mask = w.post[l].mask;
      bool ready = true;
      for (int m = 0; m < 32 && ready; ++m) {
        if (!((mask >> m) & 1u)) continue;
        if (w.st[m] == St::kDone) fail("a lane ended while others wait at a warp collective", m);
        // (A lane of the mask at a collective of another mask may join once that one completes.)
        if (w.st[m] == St::kWait && w.post[m].mask == mask && w.post[m].op != w.post[l].op)
          fail("lanes of one mask at different warp collectives", m);
        ready = w.st[m] == St::kWait && w.post[m].mask == mask;
      }
      if (ready) {
        complete(mask);
        progress = true;
      }
    }
    if (all_done) break;
    if (!progress) fail("no warp collective can complete", 0);
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

template <typename T>
__attribute__((noinline)) T shuffle(unsigned mask, T v, int src, void* site) {
  return from_bits<T>(collective(Op::kShfl, mask, to_bits(v), src, site));
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
  emu::collective(emu::Op::kSync, mask, 0, -1, __builtin_return_address(0));
}
template <typename T>
__attribute__((noinline)) T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  const int l = emu::lane();
  return emu::shuffle(mask, v, (l & ~(width - 1)) + (src & (width - 1)),
                      __builtin_return_address(0));
}
template <typename T>
__attribute__((noinline)) T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  const int l = emu::lane();
  return emu::shuffle(mask, v, (l & (width - 1)) >= int(d) ? l - int(d) : -1,
                      __builtin_return_address(0));
}
template <typename T>
__attribute__((noinline)) T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  const int l = emu::lane();
  return emu::shuffle(mask, v, (l & (width - 1)) + int(d) < width ? l + int(d) : -1,
                      __builtin_return_address(0));
}
template <typename T>
__attribute__((noinline)) T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32) {
  const int l = emu::lane(), s = l ^ m;
  return emu::shuffle(mask, v, (s & ~(width - 1)) == (l & ~(width - 1)) ? s : -1,
                      __builtin_return_address(0));
}
__attribute__((noinline)) inline unsigned __ballot_sync(unsigned mask, int pred) {
  return unsigned(
      emu::collective(emu::Op::kBallot, mask, pred != 0, -1, __builtin_return_address(0)));
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }
__attribute__((noinline)) inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
  return unsigned(emu::collective(emu::Op::kMin, mask, v, -1, __builtin_return_address(0)));
}
__attribute__((noinline)) inline unsigned __reduce_max_sync(unsigned mask, unsigned v) {
  return unsigned(emu::collective(emu::Op::kMax, mask, v, -1, __builtin_return_address(0)));
}
__attribute__((noinline)) inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
  return unsigned(emu::collective(emu::Op::kAdd, mask, v, -1, __builtin_return_address(0)));
}

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
// Rows a kernel leaves to its fallback (the lane kernel notes each): a test can tell the fast path
// from the slow one, which give the same answer.
inline long g_emu_fallback_rows = 0;
inline void rtopk_emu_note_fallback() { ++g_emu_fallback_rows; }
// Warps the lane kernel maps by their values' keys (rows with heavy tails, lane_tail_map).
inline long g_emu_tail_warps = 0;
inline void rtopk_emu_note_tail() { ++g_emu_tail_warps; }
// Finite warps the lane kernel maps by lane_map (two instructions an element), not by its one-FFMA
// map: a row's offset from 0 passes 2^22 / 253 of its span.
inline long g_emu_offset_warps = 0;
inline void rtopk_emu_note_offset() { ++g_emu_offset_warps; }
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old + v;
  return old;
}
inline unsigned atomicOr(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old | v;
  return old;
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const uint64_t v = (uint64_t(hi) << 32) | lo;
  return unsigned((v << (shift & 31)) >> 32);
}
// (Selector nibbles' low three bits, as __byte_perm: bytes 0..3 of x, 4..7 of y.)
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = (uint64_t(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= unsigned((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xFFu) << (8 * i);
  return r;
}
// (Each 16-bit half: 0xFFFF where x's >= y's, unsigned.)
inline unsigned __vcmpgeu2(unsigned x, unsigned y) {
  return ((x & 0xFFFFu) >= (y & 0xFFFFu) ? 0xFFFFu : 0u) |
         ((x >> 16) >= (y >> 16) ? 0xFFFF0000u : 0u);
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

namespace emu {
// The drivers' raw files.
template <typename T>
std::vector<T> read_file(const char* path, size_t n) {
  std::vector<T> v(n);
  FILE* f = std::fopen(path, "rb");
  if (!f || std::fread(v.data(), sizeof(T), n, f) != n) {
    std::fprintf(stderr, "cannot read %zu elements from %s\n", n, path);
    std::exit(2);
  }
  std::fclose(f);
  return v;
}
template <typename T>
void write_file(const char* path, const std::vector<T>& v) {
  FILE* f = std::fopen(path, "wb");
  if (!f || std::fwrite(v.data(), sizeof(T), v.size(), f) != v.size()) {
    std::fprintf(stderr, "cannot write %s\n", path);
    std::exit(2);
  }
  std::fclose(f);
}
}  // namespace emu

// Runs a kernel's body over a grid of blocks of block_dim threads, warp by warp.
template <typename F>
inline void emu_launch(unsigned grid, unsigned block_dim, F body) {
  for (unsigned b = 0; b < grid; ++b)
    for (unsigned w = 0; w < block_dim / 32; ++w) emu::run_warp(b, w, block_dim, grid, body);
}

namespace emu {
// A top-k kernel on the drivers' files: rows x cols of T read from files[0], body(in, ov, oi)
// launched over the grid, the rows x k outputs (poisoned first: unwritten slots show) written to
// files[1] and files[2].
template <typename T, typename Body>
void run_topk(char** files, int64_t rows, int cols, int k, unsigned grid, unsigned block_dim,
              Body body) {
  const std::vector<T> in = read_file<T>(files[0], size_t(rows) * cols);
  std::vector<T> ov(size_t(rows) * k);
  std::memset(ov.data(), 0xFF, ov.size() * sizeof(T));  // NaN in every 16/32-bit type
  std::vector<int64_t> oi(size_t(rows) * k, -1);
  emu_launch(grid, block_dim, [&] { body(in.data(), ov.data(), oi.data()); });
  write_file(files[1], ov);
  write_file(files[2], oi);
}
}  // namespace emu
