"""Exact-mode time of each adversarial row kind over randn rows of the same shape, as tests/test_slow_rows.py measures
it (same seed, median of three do_bench medians, output poisoning off), for any shapes and dtypes:

    python scripts/slow_rows.py "65536x512:64;262144x256:64" float32,bfloat16

Prints one line a (shape, dtype): randn's time, then each kind's ratio, slowest first."""
import sys

import torch

import rtopk
from rtopk import bench


def main():
    cells = []
    for part in filter(None, sys.argv[1].split(";")):
        shape, ks = part.split(":")
        n, m = (int(s) for s in shape.split("x"))
        cells += [(n, m, int(k)) for k in ks.split(",")]
    dtypes = [getattr(torch, d) for d in (sys.argv[2] if len(sys.argv) > 2 else "float32").split(",")]
    timer = bench.CudaTimer()
    torch.ops.rtopk._set_debug_poison(False)
    for n, m, k in cells:
        for dtype in dtypes:
            gen = torch.Generator(device="cuda").manual_seed(20261121)
            times = {}
            for dist in ("randn",) + bench.ADVERSARIAL:
                x = bench.make_input(dist, n, m, dtype, "cuda", gen)
                if not bench.exact_matches_torch(x, k):
                    print(f"WRONG: {dist} rows ({n}x{m}, k={k}, {dtype})")
                times[dist] = sorted(timer(lambda: rtopk.rtopk(x, k)) for _ in range(3))[1]
                del x
            ratios = sorted(((d, t / times["randn"]) for d, t in times.items() if d != "randn"), key=lambda p: -p[1])
            report = ", ".join(f"{d} {r:.2f}x" for d, r in ratios)
            print(f"{n}x{m} k={k} {str(dtype)[6:]}: randn {times['randn']:.4f} ms; {report}", flush=True)


if __name__ == "__main__":
    main()
