"""Benchmark rtopk against torch.topk in one process: ``python -m rtopk.bench``.

Times are medians over many runs with the L2 cache flushed between runs (triton's do_bench when
triton is importable, else CUDA events around each run after a cache-clearing write), on fresh
random inputs. The exact result is checked against torch.topk before it is timed; a wrong answer
is reported as WRONG, never timed. The memory floor of a problem is
(N*M*elem + N*k*(elem + 8)) bytes over the device-to-device copy bandwidth measured in the same run.
``exact_sorted`` times ``rtopk.topk(x, k, sorted=True)`` (rank-ordered output) and ``sorted_cost`` is
its extra time over the unsorted exact call.
"""

import argparse
import contextlib
import csv
import json
import math
import statistics
import sys
import time

import torch

import rtopk

def _grid(ns, ms, ks, dist="randn"):
    return [(N, M, k, dist) for N in ns for M in ms for k in ks if k <= M]


# Row kinds that stress the search (besides randn); the adversarial grid and tests/test_slow_rows.py.
ADVERSARIAL = ("all_equal", "two_values", "ties", "inf_mixed", "heavy_tail", "nan_mixed", "all_nan", "neg_inf_heavy",
               "denormal", "few_ulps", "near_max", "ascending")

GRIDS = {
    "quick": _grid([2**16], [256, 768], [16, 128]) + _grid([2**14], [4096], [64]),
    "issue2": _grid([2**18], [256, 512, 768], [16, 64, 128]),
    "paper": _grid([2**14, 2**16, 2**18, 2**20], [256, 512, 768], [16, 32, 64, 96, 128]),
    "moe": _grid([2**14, 2**16, 2**18], [8, 16, 64, 128, 256], [1, 2, 4, 8]),
    "wide": _grid([2**16], [1024, 2048, 4096, 8192], [8, 128, 512]),
    "long": _grid([2**13], [16384, 32768, 65536], [8, 128, 512]),
    # Samplers: a batch of logits over a vocabulary (32000 Llama 2, 50304 GPT-NeoX, 128256 Llama 3, 151936 Qwen 2),
    # few rows, top-k before sampling.
    "vocab": _grid([1, 16, 64, 256], [32000, 50304, 128256, 151936], [1, 50]),
    # Row distributions that stress the search, each next to randn rows of the same shape; rows of 256 also at
    # 2^20 rows, where randn rows are cheapest per row (the four-lane kernel's walk) and the ratios largest.
    "adversarial": [
        (N, M, 64, d)
        for N, M in ((2**16, 256), (2**16, 512), (2**16, 768), (2**20, 256))
        for d in ("randn",) + ADVERSARIAL
    ],
}
GRIDS["all"] = sorted({p for g in GRIDS.values() for p in g}, key=lambda p: (p[3] != "randn", p))
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
EARLY_STOP = (2, 4, 8)


def make_input(dist, N, M, dtype, device, gen):
    """Fresh random rows of one distribution (never constant zeros)."""
    x = torch.randn(N, M, generator=gen, device=device, dtype=torch.float32)
    if dist == "all_equal":
        x = torch.full_like(x, 0.75)
    elif dist == "two_values":
        x = torch.where(x > 0, 1.5, -0.5)
    elif dist == "ties":  # heavy ties everywhere, so also at the k-th value
        x = torch.round(x * 2)
    elif dist == "inf_mixed":
        u = torch.rand(N, M, generator=gen, device=device)
        x = torch.where(u < 0.02, float("inf"), torch.where(u > 0.98, float("-inf"), x))
    elif dist == "heavy_tail":
        x = x**5
    elif dist == "nan_mixed":  # NaN of both signs and +-inf sprinkled in
        u = torch.rand(N, M, generator=gen, device=device)
        nan = torch.where(u < 0.05, float("nan"), -float("nan"))
        x = torch.where(u < 0.1, nan, torch.where(u > 0.97, float("inf") * torch.sign(x), x))
    elif dist == "all_nan":
        x = torch.full_like(x, float("nan"))
    elif dist == "neg_inf_heavy":  # most of the row -inf, the k-th value among them
        u = torch.rand(N, M, generator=gen, device=device)
        x = torch.where(u < 0.9, float("-inf"), x)
    elif dist == "denormal":
        x = x * torch.finfo(dtype).smallest_normal / 4
    elif dist == "few_ulps":  # five distinct values one ulp apart
        eps = torch.finfo(dtype).eps
        x = 1.0 + eps * torch.randint(0, 5, (N, M), generator=gen, device=device).to(torch.float32)
    elif dist == "near_max":
        x = torch.finfo(dtype).max * torch.tanh(x).abs() * torch.sign(x)
    elif dist == "ascending":  # every row sorted, so the top k sit together at the end
        x = x.sort(dim=-1).values
    elif dist != "randn":
        raise ValueError(f"unknown row distribution {dist!r}")
    return x.to(dtype)


def progress(i, n, label):
    width = 30
    done = width * i // n
    print(f"\r[{'#' * done}{'.' * (width - done)}] {i}/{n} {label:<32}", end="", file=sys.stderr, flush=True)
    if i == n:
        print(file=sys.stderr)


def _cpu_timer(fn, reps=5):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


class CudaTimer:
    def __init__(self):
        try:
            from triton.testing import do_bench

            self._do_bench = do_bench
        except Exception:  # triton missing or unusable
            self._do_bench = None
        self._flush = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
        self.method = "triton.testing.do_bench (median, L2 flushed)" if self._do_bench else "CUDA events (median, L2 flushed)"

    def __call__(self, fn):
        if self._do_bench is not None:
            return float(self._do_bench(fn, warmup=25, rep=100, return_mode="median"))
        for _ in range(5):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(50)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(50)]
        for s, e in zip(starts, ends):
            self._flush.zero_()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def copy_bandwidth(device, timer):
    """Bytes read plus written per second by a large device-to-device copy."""
    n = (1 << 30) if device == "cuda" else (1 << 26)
    src = torch.empty(n, dtype=torch.int8, device=device).random_(-128, 127)
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    return 2 * n / (ms * 1e-3)


def _ranked(values):
    """Each row's values as float64 in descending order, NaN as +inf (so first)."""
    values = values.double()
    return torch.where(torch.isnan(values), float("inf"), values).sort(dim=-1, descending=True).values


def exact_matches_torch(x, k):
    return torch.equal(_ranked(rtopk.rtopk(x, k)[0]), _ranked(torch.topk(x, k, dim=-1).values))


def stressed_row_times(N, M, k, dtype, timer, seed=20261121, timing=contextlib.nullcontext):
    """Exact-mode time of randn rows and of each ADVERSARIAL kind, fresh N x M rows from one seeded generator (CUDA):
    ({kind: ms}, [kinds whose result differed from torch.topk, not timed]).  Each time is the median of three timer
    calls (each a median itself), so that a stray outlier stays out; `timing` wraps the timing only, not the check
    (tests/test_slow_rows.py: outputs poisoned in the check, not in the timed calls; scripts/slow_rows.py)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    times, wrong = {}, []
    for dist in ("randn",) + ADVERSARIAL:
        x = make_input(dist, N, M, dtype, "cuda", gen)
        if exact_matches_torch(x, k):
            with timing():
                times[dist] = sorted(timer(lambda: rtopk.rtopk(x, k)) for _ in range(3))[1]
        else:
            wrong.append(dist)
        del x
    return times, wrong


def sorted_matches_torch(x, k):
    """rtopk.topk(sorted=True)'s values in torch.topk's rank order.  The reference is torch.topk's selection ranked
    here, NaN first: its own sorted output on CUDA misorders NaN (pytorch/pytorch#117617; the bench's NaN-mixed rows
    then read WRONG whatever rtopk returned)."""
    ours = rtopk.topk(x, k, sorted=True).values.double()
    theirs = torch.topk(x, k, dim=-1, sorted=False).values
    nan = torch.isnan(ours).to(torch.int8)
    if not torch.equal(nan.sum(dim=-1), torch.isnan(theirs).sum(dim=-1)):
        return False
    nan_first = torch.equal(nan, nan.sort(dim=-1, descending=True).values)
    return nan_first and torch.equal(torch.where(nan.bool(), float("inf"), ours), _ranked(theirs))


COLUMNS = ["N", "M", "k", "dist", "torch_sorted", "torch_unsorted", "exact", "exact_sorted"] + [f"it{i}" for i in EARLY_STOP]
COLUMNS += ["speedup_exact", "speedup_it4", "sorted_cost", "floor_ms", "floor_frac_exact", "floor_frac_it4", "GBps_exact"]


def _cell(row, c):
    v = row.get(c)
    if c == "exact" and row.get("wrong"):
        return "WRONG"
    if c == "exact_sorted" and row.get("wrong_sorted"):
        return "WRONG"
    if c == "sorted_cost" and isinstance(v, float):
        return f"{100 * v:+.1f}%"
    if isinstance(v, float):
        return f"{v:.4f}" if c.endswith("ms") or c.startswith(("torch", "exact", "it")) else f"{v:.2f}"
    return str(v)


def geomean(vals):
    vals = [v for v in vals if v == v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")


def floor_bytes(N, M, k, elem):
    """The memory floor's bytes: N x M inputs of `elem` bytes read once, N x k values and int64 indices written once."""
    return N * M * elem + N * k * (elem + 8)


def adversarial_ratios(rows):
    """(row, its exact time over that of the randn row of the same N, M, k) for each other row that has one."""
    base = {(r["N"], r["M"], r["k"]): r["exact"] for r in rows if r["dist"] == "randn"}
    return [(r, r["exact"] / base[(r["N"], r["M"], r["k"])]) for r in rows
            if r["dist"] != "randn" and (r["N"], r["M"], r["k"]) in base]


def run(grid, dtype, device, out=None):
    out = out or sys.stdout
    timer = CudaTimer() if device == "cuda" else _cpu_timer
    method = timer.method if device == "cuda" else "perf_counter (median)"
    bw = copy_bandwidth(device, timer)
    elem = torch.tensor([], dtype=dtype).element_size()
    gen = torch.Generator(device=device).manual_seed(0)
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    print(f"# device: {name}; torch {torch.__version__}; dtype {dtype}; copy bandwidth {bw / 1e12:.3f} TB/s", file=out)
    print(f"# timing: {method}", file=out)
    print("| " + " | ".join(COLUMNS) + " |", file=out)
    print("|" + "---|" * len(COLUMNS), file=out)
    rows = []
    for i, (N, M, k, dist) in enumerate(grid):
        progress(i, len(grid), f"N={N} M={M} k={k} {dist}")
        x = make_input(dist, N, M, dtype, device, gen)
        row = {"N": N, "M": M, "k": k, "dist": dist}
        row["torch_sorted"] = timer(lambda: torch.topk(x, k, dim=-1, sorted=True))
        row["torch_unsorted"] = timer(lambda: torch.topk(x, k, dim=-1, sorted=False))
        if exact_matches_torch(x, k):
            row["exact"] = timer(lambda: rtopk.rtopk(x, k))
        else:
            row["exact"] = float("nan")
            row["wrong"] = True
        # rtopk.topk(sorted=True): the same exact selection, then each row's k outputs in rank order.
        if sorted_matches_torch(x, k):
            row["exact_sorted"] = timer(lambda: rtopk.topk(x, k, sorted=True))
        else:
            row["exact_sorted"] = float("nan")
            row["wrong_sorted"] = True
        row["sorted_cost"] = row["exact_sorted"] / row["exact"] - 1.0
        for it in EARLY_STOP:
            row[f"it{it}"] = timer(lambda: rtopk.rtopk(x, k, max_iter=it))
        nbytes = floor_bytes(N, M, k, elem)
        row["floor_ms"] = nbytes / bw * 1e3
        row["speedup_exact"] = row["torch_sorted"] / row["exact"]
        row["speedup_it4"] = row["torch_sorted"] / row["it4"]
        row["floor_frac_exact"] = row["floor_ms"] / row["exact"]
        row["floor_frac_it4"] = row["floor_ms"] / row["it4"]
        row["GBps_exact"] = nbytes / (row["exact"] * 1e-3) / 1e9
        rows.append(row)
        print("| " + " | ".join(_cell(row, c) for c in COLUMNS) + " |", file=out, flush=True)
        del x
    progress(len(grid), len(grid), "done")
    randn = [r for r in rows if r["dist"] == "randn"]
    summary = {c: geomean([r[c] for r in randn]) for c in ("speedup_exact", "speedup_it4", "floor_frac_exact", "floor_frac_it4")}
    print(
        "# geometric means over randn rows: speed-up over torch.topk(sorted) exact {speedup_exact:.2f}x, max_iter=4 "
        "{speedup_it4:.2f}x; fraction of memory floor exact {floor_frac_exact:.3f}, max_iter=4 {floor_frac_it4:.3f}".format(
            **summary
        ),
        file=out,
    )
    # k <= 128: the in-kernel sort (the drop-in issue's line: at most +25% in every cell); past it the separate
    # device sort (or torch ops for float64 / k > 1024).
    for label, key, wanted in (("k <= 128", "sorted_cost", lambda k: k <= 128),
                               ("k > 128", "sorted_cost_large_k", lambda k: k > 128)):
        costs = [r["sorted_cost"] for r in randn if wanted(r["k"]) and r["sorted_cost"] == r["sorted_cost"]]
        if costs:
            summary[key + "_geomean"] = geomean([1 + c for c in costs]) - 1
            summary[key + "_max"] = max(costs)
            summary[key + "_within_25"] = sum(c <= 0.25 for c in costs)
            summary[key + "_cells"] = len(costs)
            print(
                f"# sorted output (rtopk.topk sorted=True vs unsorted exact), randn rows with {label}: "
                f"geometric mean {100 * summary[key + '_geomean']:+.1f}%, worst {100 * summary[key + '_max']:+.1f}%, "
                f"{summary[key + '_within_25']} of {len(costs)} cells within +25%",
                file=out,
            )
    slow = adversarial_ratios(rows)
    for r, ratio in slow:
        print(f"# exact on {r['dist']} rows (N={r['N']}, M={r['M']}, k={r['k']}): {ratio:.2f}x the time of randn rows", file=out)
    if slow:
        summary["worst_adversarial_ratio"] = max(ratio for _, ratio in slow)
    return {"device": name, "torch": torch.__version__, "dtype": str(dtype), "copy_bandwidth": bw, "timing": method,
            "rows": rows, "summary": summary}


def plot(result, path):
    """Speed-up over torch.topk(sorted) per (N, M), one panel each, in the spirit of the paper's Figure 4."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # optional dependency
        raise SystemExit(f"--plot needs matplotlib ({exc}); pip install matplotlib") from exc
    rows = [r for r in result["rows"] if r["dist"] == "randn"]
    panels = sorted({(r["N"], r["M"]) for r in rows})
    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    series = [("exact", "exact")] + [(f"it{i}", f"max_iter={i}") for i in EARLY_STOP]
    for ax, (N, M) in zip(axes.flat, panels):
        sub = sorted((r for r in rows if r["N"] == N and r["M"] == M), key=lambda r: r["k"])
        ks = [r["k"] for r in sub]
        width = 0.8 / len(series)
        for j, (key, label) in enumerate(series):
            sp = [r["torch_sorted"] / r[key] for r in sub]
            ax.bar([i + j * width for i in range(len(ks))], sp, width, label=label)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(ks))], [str(k) for k in ks])
        ax.set_title(f"N=2^{int(math.log2(N))}, M={M}: exact {geomean([r['speedup_exact'] for r in sub]):.1f}x")
        ax.set_xlabel("k")
        ax.set_ylabel("speed-up over torch.topk")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"rtopk vs torch.topk(sorted=True), {result['dtype']}, {result['device']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    p = argparse.ArgumentParser(prog="rtopk-bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", default="quick", choices=sorted(GRIDS), help="problem grid (default: quick)")
    p.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the results as JSON")
    p.add_argument("--csv", default=None, metavar="FILE", help="also write the table as CSV")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="speed-up chart per (N, M) (needs matplotlib)")
    args = p.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    grid = GRIDS[args.grid]
    if device == "cpu":
        grid = [(max(1, N // 64), M, k, d) for N, M, k, d in grid]  # keep CPU runs short
    result = run(grid, DTYPES[args.dtype], device)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS + ["wrong"], extrasaction="ignore")
            w.writeheader()
            w.writerows(result["rows"])
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
