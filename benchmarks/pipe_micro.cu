// Throughput of the packed-pair count's instruction mixes on the card (notes v70 item 5): each
// thread runs kIters passes over 16 words (registers) against a threshold, in one of the forms
// below, many warps an SM; printed: warp instructions of the pass's kind a cycle an SM (from the
// SASS count the mode says) and ns a pass. Build and run on the device: nvcc -arch=sm_90a -O3 -o
// /tmp/pipe_micro benchmarks/pipe_micro.cu && /tmp/pipe_micro
#include <cuda_bf16.h>

#include <cstdint>
#include <cstdio>

constexpr int kIters = 4096;

__device__ __forceinline__ uint32_t ge_mask(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("set.ge.u32.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t ge_one(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("set.ge.bf16x2.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t hadd(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("add.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
__device__ __forceinline__ uint32_t hfma(uint32_t a, uint32_t b) {
  uint32_t d;
  asm volatile("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0x3F803F80u), "r"(b));
  return d;
}

__device__ __forceinline__ uint32_t mad(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm volatile("mad.lo.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// mode 0: masks summed by integer adds (two a word-pair: acc += m1 + m2), the kernel's count at
// 3ede404 mode 1: 1.0s summed by add.rn.bf16x2; mode 2: by fma.rn.bf16x2; mode 3: compares only
// (masks OR-ed) mode 4: half the words as mode 0, half as mode 1; mode 5: masks summed by
// multiply-adds (mad.lo.u32 by an opaque 1: the fma pipe), one a mask; mode 6: half the masks as
// mode 0, half as mode 5
template <int MODE>
__global__ void pass_kernel(const uint32_t* in, uint32_t* out, uint32_t t0, uint32_t one) {
  uint32_t u[16];
  for (int i = 0; i < 16; ++i) u[i] = in[(threadIdx.x + 32 * i) & 1023];
  uint32_t acc[4] = {0u, 0u, 0u, 0u};
  uint32_t t2 = t0;
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int i = 0; i < 16; i += 2) {
      if (MODE == 0) {
        acc[(i / 2) & 3] += ge_mask(u[i], t2) + ge_mask(u[i + 1], t2);
      } else if (MODE == 1) {
        acc[(i / 2) & 3] = hadd(acc[(i / 2) & 3], ge_one(u[i], t2));
        acc[(i / 2 + 2) & 3] = hadd(acc[(i / 2 + 2) & 3], ge_one(u[i + 1], t2));
      } else if (MODE == 2) {
        acc[(i / 2) & 3] = hfma(ge_one(u[i], t2), acc[(i / 2) & 3]);
        acc[(i / 2 + 2) & 3] = hfma(ge_one(u[i + 1], t2), acc[(i / 2 + 2) & 3]);
      } else if (MODE == 3) {
        acc[(i / 2) & 3] |= ge_mask(u[i], t2) | ge_mask(u[i + 1], t2);
      } else if (MODE == 5) {
        acc[(i / 2) & 3] = mad(ge_mask(u[i], t2), one, acc[(i / 2) & 3]);
        acc[(i / 2 + 2) & 3] = mad(ge_mask(u[i + 1], t2), one, acc[(i / 2 + 2) & 3]);
      } else if (MODE == 6) {
        if ((i / 2) & 1)
          acc[(i / 2) & 3] =
              mad(ge_mask(u[i + 1], t2), one, mad(ge_mask(u[i], t2), one, acc[(i / 2) & 3]));
        else
          acc[(i / 2) & 3] += ge_mask(u[i], t2) + ge_mask(u[i + 1], t2);
      } else {
        if (i < 8)
          acc[(i / 2) & 3] += ge_mask(u[i], t2) + ge_mask(u[i + 1], t2);
        else {
          acc[(i / 2) & 3] = hadd(acc[(i / 2) & 3], ge_one(u[i], t2));
          acc[(i / 2 + 2) & 3] = hadd(acc[(i / 2 + 2) & 3], ge_one(u[i + 1], t2));
        }
      }
    }
    t2 ^= acc[it & 3] & 0x00010001u;  // (a dependence between passes, as the search has)
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
}

template <int MODE>
float run(const uint32_t* in, uint32_t* out, int blocks) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  pass_kernel<MODE><<<blocks, 256>>>(in, out, 0x3F803F80u, 1u);
  cudaEventRecord(a);
  pass_kernel<MODE><<<blocks, 256>>>(in, out, 0x3F803F80u, 1u);
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms;
  cudaEventElapsedTime(&ms, a, b);
  return ms;
}

int main() {
  uint32_t *in, *out;
  cudaMalloc(&in, 1024 * 4);
  cudaMalloc(&out, 132 * 64 * 256 * 4);
  uint32_t h[1024];
  for (int i = 0; i < 1024; ++i) h[i] = 0x3F003F00u + (i * 2654435761u & 0x00FF00FFu);
  cudaMemcpy(in, h, sizeof(h), cudaMemcpyHostToDevice);
  int clk;
  cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  const char* names[] = {"masks + IADD3 (3ede404)", "1.0s + add.rn.bf16x2", "1.0s + fma.rn.bf16x2",
                         "compares only",           "half and half",        "masks + IMAD",
                         "masks + IADD3 / IMAD"};
  for (int warps_sm : {8, 16, 20, 32}) {
    const int blocks = 132 * warps_sm / 8;
    float ms[7] = {run<0>(in, out, blocks), run<1>(in, out, blocks), run<2>(in, out, blocks),
                   run<3>(in, out, blocks), run<4>(in, out, blocks), run<5>(in, out, blocks),
                   run<6>(in, out, blocks)};
    for (int m = 0; m < 7; ++m) {
      // word-compares a cycle an SM (16 a pass a thread; warps x 32 threads)
      const double cmp = double(blocks) * 256 * kIters * 16 / 132.0;
      const double cycles = ms[m] * 1e-3 * clk * 1e3;
      printf("warps/SM %2d  %-26s %8.3f ms  %6.1f lane-compares/cycle/SM\n", warps_sm, names[m],
             ms[m], cmp / cycles);
    }
  }
  cudaError_t e = cudaGetLastError();
  printf("%s\n", cudaGetErrorString(e));
  return 0;
}
