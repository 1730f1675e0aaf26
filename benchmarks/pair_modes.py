"""The packed-pair kernels of 16-bit rows against the paths they replace, one process, one build: each cell is
timed with torch.ops.rtopk._set_debug_pair_rows(2) (never: the lane / warp kernels), 1 (the pair kernels wherever
shapes allow) and 3 (as 1, more lanes a row), rounds alternating; each forced result is first checked against mode
2's bit for bit.  --modes picks other modes (the first is the base).  Exact mode, index order (rtopk.rtopk), or
with --sorted rank order (rtopk.topk sorted=True).  Prints, per cell, the three times, the ratios to mode 2 and
the fraction of the memory floor (input read once, values and int64 indices written once, over the copy bandwidth
measured here).

    python benchmarks/pair_modes.py --cells "262144x256:16,128;262144x512:64" --dtype bfloat16
"""

import argparse
import os
import statistics
import sys

import torch

from ab import parse_cells


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", required=True, help="'NxM:k1,k2;NxM:k'")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--dist", default="randn", help="rtopk.bench.make_input's distributions, comma-separated")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sorted", action="store_true", help="rank-ordered output (rtopk.topk sorted=True)")
    p.add_argument("--modes", default="2,1,3", help="the hook's modes, the first the base the others are checked "
                   "and timed against (default 2,1,3)")
    args = p.parse_args(argv)
    modes = [int(m) for m in args.modes.split(",")]
    base, others = modes[0], modes[1:]
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import rtopk
    from rtopk._ref import int_view
    from rtopk.bench import CudaTimer, copy_bandwidth, floor_bytes, make_input

    if not torch.cuda.is_available():
        sys.exit("pair_modes.py times CUDA kernels: no CUDA device")
    time_it = CudaTimer()
    bw = copy_bandwidth(torch.device("cuda"), time_it)
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    set_mode = torch.ops.rtopk._set_debug_pair_rows
    order = ", sorted" if args.sorted else ""
    print(f"# {torch.cuda.get_device_name()}, {args.dtype}{order}, copy {bw / 1e12:.3f} TB/s, {args.rounds} rounds "
          "(medians)")
    print("| cell | dist | " + " | ".join(f"mode {m} ms" for m in modes) + " | "
          + " | ".join(f"{m}/{base}" for m in others) + " | " + " | ".join(f"floor {m}" for m in modes) + " |")
    print("|---|---|" + "---|" * (3 * len(modes) - 1))
    wrong = 0
    try:
        for dist in args.dist.split(","):
            for n, m, k in parse_cells(args.cells):
                x = make_input(dist, n, m, dtype, "cuda", gen)
                if args.sorted:
                    fn = lambda: rtopk.topk(x, k, sorted=True)
                else:
                    fn = lambda: rtopk.rtopk(x, k)
                outs = {}
                for mode in modes:
                    set_mode(mode)
                    outs[mode] = fn()
                bad = [mo for mo in others if not (torch.equal(int_view(outs[mo][0]), int_view(outs[base][0]))
                                                   and torch.equal(outs[mo][1], outs[base][1]))]
                if bad:
                    wrong += 1
                    print(f"| {n}x{m}:{k} | {dist} | WRONG: modes {bad} differ from mode {base} |")
                    continue
                times = {mo: [] for mo in modes}
                for _ in range(args.rounds):
                    for mode in modes:
                        set_mode(mode)
                        times[mode].append(time_it(fn))
                t = {mo: statistics.median(v) for mo, v in times.items()}
                fl = floor_bytes(n, m, k, x.element_size()) / bw * 1e3
                print(f"| {n}x{m}:{k} | {dist} | " + " | ".join(f"{t[mo]:.4f}" for mo in modes) + " | "
                      + " | ".join(f"{t[mo] / t[base]:.3f}" for mo in others) + " | "
                      + " | ".join(f"{fl / t[mo]:.3f}" for mo in modes) + " |", flush=True)
    finally:
        set_mode(0)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
