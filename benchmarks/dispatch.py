"""Where should the lane kernels take a launch?  One process, one build: each cell is timed with the lane kernels
taken wherever their row shapes allow (torch.ops.rtopk._set_debug_lane_rows(1)) and never (2), rounds alternating,
and the measured dispatch (0) beside them; every forced result is first checked against the other mode's, bit for bit
(both give the one answer of rtopk_algo.h).  The table says, per cell, lane / other and which one the dispatch takes,
so the thresholds in lane_rows_apply (csrc/cuda/rtopk_lane_rows.cuh) can be set from one device call.

    python benchmarks/dispatch.py --cells "16384x512:16,32;65536x768:16,32" --modes exact,it4 --dtype float32
"""

import argparse
import os
import statistics
import sys

import torch

from ab import parse_cells  # (benchmarks/ab.py: the same cell syntax)

MODES = {"exact": (None, False), "it4": (4, False), "sorted": (None, True)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cells", required=True, help="'NxM:k1,k2;NxM:k'")
    p.add_argument("--modes", default="exact,it4", help="comma-separated: " + ", ".join(MODES))
    p.add_argument("--dtype", default="float32")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    # (This tree's package, built in place, ahead of an installed one.)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import rtopk
    from rtopk._ref import int_view

    if not torch.cuda.is_available():
        sys.exit("dispatch.py times CUDA kernels: no CUDA device")
    from rtopk.bench import CudaTimer

    time_it = CudaTimer()
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    set_mode = torch.ops.rtopk._set_debug_lane_rows
    print(f"# {torch.cuda.get_device_name()}, {args.dtype}, {args.rounds} rounds; ms are medians over rounds")
    print("| cell | lane ms | other ms | lane/other | dispatch ms | dispatch takes |")
    print("|---|---|---|---|---|---|")
    wrong = 0
    try:
        for n, m, k in parse_cells(args.cells):
            x = torch.randn(n, m, device="cuda", dtype=dtype, generator=gen)
            for mode in args.modes.split(","):
                max_iter, sorted_ = MODES[mode]
                fn = lambda: rtopk.topk(x, k, sorted=sorted_, max_iter=max_iter)
                cell = f"{n}x{m}:{k}:{mode}"
                outs = []
                for lane_mode in (1, 2):
                    set_mode(lane_mode)
                    outs.append(fn())
                (va, ia), (vb, ib) = outs
                if not (torch.equal(int_view(va), int_view(vb)) and torch.equal(ia, ib)):
                    wrong += 1
                    print(f"| {cell} | WRONG: the two paths differ | | | | |")
                    continue
                times = {0: [], 1: [], 2: []}
                for _ in range(args.rounds):
                    for lane_mode in (1, 2, 0):
                        set_mode(lane_mode)
                        times[lane_mode].append(time_it(fn))
                t = {mo: statistics.median(v) for mo, v in times.items()}
                takes = "lane" if abs(t[0] - t[1]) <= abs(t[0] - t[2]) else "other"
                print(f"| {cell} | {t[1]:.4f} | {t[2]:.4f} | {t[1] / t[2]:.3f} | {t[0]:.4f} | {takes} |")
    finally:
        set_mode(0)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
