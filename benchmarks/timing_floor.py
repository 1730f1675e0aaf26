"""What the benchmark's timing method charges small calls (notes v22): the time do_bench (L2 flushed, as
`python -m rtopk.bench` measures) gives an empty kernel and device copies of a few sizes, next to rtopk's exact
and max_iter=2 calls at one row shape over a range of row counts, with the memory floor of each.

    python benchmarks/timing_floor.py [--M 256] [--k 16]
"""

import argparse

import torch

import rtopk
from rtopk.bench import CudaTimer, copy_bandwidth, floor_bytes


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--M", type=int, default=256)
    p.add_argument("--k", type=int, default=16)
    args = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("timing_floor.py needs a CUDA device")
    timer = CudaTimer()
    bw = copy_bandwidth("cuda", timer)
    print(f"# {torch.cuda.get_device_name()}; timing: {timer.method}; copy bandwidth {bw / 1e12:.3f} TB/s")
    one = torch.zeros(1, device="cuda")
    print(f"empty kernel (1-element add_): {1e3 * timer(lambda: one.add_(1)):.2f} us")
    for mb in (1, 16, 64):
        src = torch.empty(mb << 20, dtype=torch.int8, device="cuda")
        dst = torch.empty_like(src)
        print(f"copy of {mb} MB: {1e3 * timer(lambda: dst.copy_(src)):.2f} us")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    M, k = args.M, args.k
    print("| N | exact us | max_iter=2 us | floor us | exact us per 1000 rows |")
    print("|---|---|---|---|---|")
    for N in (sms, 8 * sms, 2**12, 2**13, 2**14, 2**15, 2**16, 2**17):
        x = torch.randn(N, M, device="cuda")
        exact = timer(lambda: rtopk.rtopk(x, k))
        it2 = timer(lambda: rtopk.rtopk(x, k, 2))
        floor = floor_bytes(N, M, k, x.element_size()) / bw * 1e6
        print(f"| {N} | {1e3 * exact:.2f} | {1e3 * it2:.2f} | {floor:.2f} | {1e6 * exact / N:.3f} |")


if __name__ == "__main__":
    main()
