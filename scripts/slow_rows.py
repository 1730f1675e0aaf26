"""Exact-mode time of each adversarial row kind over randn rows of the same shape, as tests/test_slow_rows.py measures
it (rtopk.bench.stressed_row_times: same seed, median of three do_bench medians), for any shapes and dtypes:

    python scripts/slow_rows.py "65536x512:64;262144x256:64" float32,bfloat16

Prints one line a (shape, dtype): randn's time, then each kind's ratio, slowest first."""
import os
import sys

import torch

from rtopk import bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
from ab import parse_cells  # noqa: E402  (benchmarks/ab.py: the same "NxM:k1,k2;..." cells)


def main():
    dtypes = [getattr(torch, d) for d in (sys.argv[2] if len(sys.argv) > 2 else "float32").split(",")]
    timer = bench.CudaTimer()
    for n, m, k in parse_cells(sys.argv[1]):
        for dtype in dtypes:
            times, wrong = bench.stressed_row_times(n, m, k, dtype, timer)
            for dist in wrong:
                print(f"WRONG: {dist} rows ({n}x{m}, k={k}, {dtype})")
            ratios = sorted(((d, t / times["randn"]) for d, t in times.items() if d != "randn"), key=lambda p: -p[1])
            report = ", ".join(f"{d} {r:.2f}x" for d, r in ratios)
            print(f"{n}x{m} k={k} {str(dtype)[6:]}: randn {times['randn']:.4f} ms; {report}", flush=True)


if __name__ == "__main__":
    main()
