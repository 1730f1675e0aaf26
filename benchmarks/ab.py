"""A/B of two builds of rtopk on one device: each build is timed in its own processes, the two
alternating (A, B, A, B, ...), and the per-cell median of B / A is reported.  Cross-run
differences of a few percent are the grids' noise on the lent machines (notes v22); alternating
processes in one call is how a kernel change is measured against its base.

Both trees must hold an in-place build (`python setup.py build_ext --inplace`).

    python benchmarks/ab.py --a /path/to/base --b /path/to/change --rounds 3 \
        --cells "262144x256:16,128;262144x768:16,64" --modes exact,it4 --dtype float32 \
        --dists randn,randn5
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

MODES = {"exact": (-1, 0.0, False), "sorted": (-1, 0.0, True), "it2": (2, 0.0, False),
         "it4": (4, 0.0, False), "it8": (8, 0.0, False), "it4_sorted": (4, 0.0, True), "eps": (-1, 1e-3, False),
         "torch": None}  # torch: torch.topk (sorted)


# Row values (--dists): randn, the heavy tails of the adversarial rows drawn from randn
# rows, or any other row kind of rtopk.bench.make_input by its name (all_equal, inf_mixed, ...).
DISTS = {"randn": lambda x: x, "randn3": lambda x: x.pow(3),
         "randn5": lambda x: x.double().pow(5).to(x.dtype)}


def parse_cells(text):
    """'NxM:k1,k2;NxM:k' -> [(N, M, k), ...]"""
    cells = []
    for part in filter(None, text.split(";")):
        shape, ks = part.split(":")
        n, m = (int(s) for s in shape.split("x"))
        cells += [(n, m, int(k)) for k in ks.split(",")]
    return cells


def child(args):
    sys.path.insert(0, os.path.abspath(args.child))
    import torch
    import triton.testing
    import rtopk
    import rtopk.bench

    assert os.path.abspath(rtopk.__file__).startswith(os.path.abspath(args.child)), rtopk.__file__
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    out = {}
    for (n, m, k), dist in ((c, d) for c in parse_cells(args.cells) for d in args.dists.split(",")):
        if dist in DISTS:
            x = DISTS[dist](torch.randn(n, m, device="cuda", dtype=dtype, generator=gen))
        else:
            x = rtopk.bench.make_input(dist, n, m, dtype, "cuda", gen)
        for mode in args.modes.split(","):
            max_iter, eps, sorted_ = MODES[mode] or (None, None, None)
            if mode == "torch":  # the same in both builds: a reference for the cell's scale
                fn = lambda: torch.topk(x, k, largest=not args.smallest)
            elif args.smallest:  # the k smallest, through the drop-in API
                fn = lambda: rtopk.topk(x, k, largest=False, sorted=sorted_, max_iter=max_iter, eps=eps)
            elif sorted_:
                fn = lambda: rtopk.topk(x, k, sorted=True, max_iter=None if max_iter < 0 else max_iter, eps=eps)
            else:
                fn = lambda: torch.ops.rtopk.rtopk(x, k, max_iter, eps)
            cell = f"{n}x{m}:{k}:{mode}" + ("" if dist == "randn" else f":{dist}")
            out[cell] = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    json.dump(out, sys.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", help="base tree")
    p.add_argument("--b", help="changed tree")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--cells", required=True, help="'NxM:k1,k2;NxM:k'")
    p.add_argument("--modes", default="exact,it4")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dists", default="randn", help="row values, comma-separated: " + ", ".join(DISTS)
                   + " or a row kind of rtopk.bench.make_input")
    p.add_argument("--smallest", action="store_true", help="time the k smallest (rtopk.topk largest=False)")
    args = p.parse_args()
    if args.child:
        return child(args)
    times = {"a": [], "b": []}
    for _ in range(args.rounds):
        for side in ("a", "b"):
            cmd = [sys.executable, __file__, "--child", getattr(args, side), "--cells", args.cells,
                   "--modes", args.modes, "--dtype", args.dtype, "--dists", args.dists]
            cmd += ["--smallest"] * args.smallest
            times[side].append(json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                         text=True).stdout))
    ratios = []
    print(f"# {args.dtype}{' k smallest' if args.smallest else ''}, {args.rounds} rounds; ms are medians over rounds; b/a the median of per-round ratios")
    print("| cell | a ms | b ms | b/a |")
    print("|---|---|---|---|")
    for cell in times["a"][0]:
        a = [t[cell] for t in times["a"]]
        b = [t[cell] for t in times["b"]]
        r = statistics.median(y / x for x, y in zip(a, b))
        ratios.append(r)
        print(f"| {cell} | {statistics.median(a):.4f} | {statistics.median(b):.4f} | {r:.3f} |")
    print(f"# geometric mean b/a over {len(ratios)} cells: {statistics.geometric_mean(ratios):.3f}")


if __name__ == "__main__":
    main()
