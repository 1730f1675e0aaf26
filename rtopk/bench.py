"""Benchmark rtopk against torch.topk in one process: ``python -m rtopk.bench``.

Times are medians over many runs with the L2 cache flushed between runs (triton's do_bench when
triton is importable, else CUDA events around each run after a cache-clearing write), on fresh
random inputs. The exact result is checked against torch.topk before it is timed; a wrong answer
is reported as WRONG, never timed. The memory floor of a problem is
(N*M*elem + N*k*(elem + 8)) bytes over the device-to-device copy bandwidth measured in the same run.
"""

import argparse
import csv
import json
import math
import statistics
import sys
import time

import torch

import rtopk

GRIDS = {
    "quick": [(2**16, M, k) for M in (256, 768) for k in (16, 128)] + [(2**14, 4096, 64)],
    "issue2": [(2**18, M, k) for M in (256, 512, 768) for k in (16, 64, 128)],
    "paper": [(N, M, k) for N in (2**14, 2**16, 2**18, 2**20) for M in (256, 512, 768) for k in (16, 32, 64, 96, 128)],
    "moe": [(N, M, k) for N in (2**14, 2**16, 2**18) for M in (8, 16, 64, 128, 256) for k in (1, 2, 4, 8) if k < M],
    "wide": [(2**16, M, k) for M in (1024, 2048, 4096, 8192) for k in (8, 128, 512)],
}
GRIDS["all"] = sorted({p for g in GRIDS.values() for p in g})
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
EARLY_STOP = (2, 4, 8)


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


def exact_matches_torch(x, k):
    values, _ = rtopk.rtopk(x, k)
    ours = values.float().sort(dim=-1, descending=True).values
    theirs = torch.topk(x, k, dim=-1, sorted=True).values.float()
    return torch.equal(ours, theirs)


def run(grid, dtype, device, out=sys.stdout):
    timer = CudaTimer() if device == "cuda" else _cpu_timer
    method = timer.method if device == "cuda" else "perf_counter (median)"
    bw = copy_bandwidth(device, timer)
    elem = torch.tensor([], dtype=dtype).element_size()
    gen = torch.Generator(device=device).manual_seed(0)
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU"
    print(f"# device: {name}; torch {torch.__version__}; dtype {dtype}; copy bandwidth {bw / 1e12:.3f} TB/s", file=out)
    print(f"# timing: {method}", file=out)
    cols = ["N", "M", "k", "torch_sorted", "torch_unsorted", "exact"] + [f"it{i}" for i in EARLY_STOP]
    cols += ["speedup_exact", "speedup_it4", "floor_ms", "floor_frac_exact", "floor_frac_it4", "GBps_exact"]
    print("| " + " | ".join(cols) + " |", file=out)
    print("|" + "---|" * len(cols), file=out)
    rows = []
    for i, (N, M, k) in enumerate(grid):
        print(f"[{i + 1}/{len(grid)}] N={N} M={M} k={k}", file=sys.stderr, flush=True)
        x = torch.randn(N, M, generator=gen, device=device, dtype=torch.float32).to(dtype)
        row = {"N": N, "M": M, "k": k}
        row["torch_sorted"] = timer(lambda: torch.topk(x, k, dim=-1, sorted=True))
        row["torch_unsorted"] = timer(lambda: torch.topk(x, k, dim=-1, sorted=False))
        if exact_matches_torch(x, k):
            row["exact"] = timer(lambda: rtopk.rtopk(x, k))
        else:
            row["exact"] = float("nan")
            row["wrong"] = True
        for it in EARLY_STOP:
            row[f"it{it}"] = timer(lambda: rtopk.rtopk(x, k, max_iter=it))
        floor_bytes = N * M * elem + N * k * (elem + 8)
        row["floor_ms"] = floor_bytes / bw * 1e3
        row["speedup_exact"] = row["torch_sorted"] / row["exact"]
        row["speedup_it4"] = row["torch_sorted"] / row["it4"]
        row["floor_frac_exact"] = row["floor_ms"] / row["exact"]
        row["floor_frac_it4"] = row["floor_ms"] / row["it4"]
        row["GBps_exact"] = floor_bytes / (row["exact"] * 1e-3) / 1e9
        rows.append(row)
        cells = []
        for c in cols:
            v = row[c]
            if c == "exact" and row.get("wrong"):
                cells.append("WRONG")
            elif isinstance(v, float):
                cells.append(f"{v:.4f}" if c.endswith("ms") or c.startswith(("torch", "exact", "it")) else f"{v:.2f}")
            else:
                cells.append(str(v))
        print("| " + " | ".join(cells) + " |", file=out, flush=True)
    summary = {}
    for c in ("speedup_exact", "speedup_it4", "floor_frac_exact", "floor_frac_it4"):
        vals = [r[c] for r in rows if r[c] == r[c] and r[c] > 0]
        summary[c] = math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else float("nan")
    print(
        "# geometric means: speed-up over torch.topk(sorted) exact {speedup_exact:.2f}x, max_iter=4 {speedup_it4:.2f}x; "
        "fraction of memory floor exact {floor_frac_exact:.3f}, max_iter=4 {floor_frac_it4:.3f}".format(**summary),
        file=out,
    )
    return {"device": name, "torch": torch.__version__, "dtype": str(dtype), "copy_bandwidth": bw, "timing": method,
            "rows": rows, "summary": summary}


def main(argv=None):
    p = argparse.ArgumentParser(prog="rtopk-bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", default="quick", choices=sorted(GRIDS), help="problem grid (default: quick)")
    p.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the results as JSON")
    p.add_argument("--csv", default=None, metavar="FILE", help="also write the table as CSV")
    args = p.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    grid = GRIDS[args.grid]
    if device == "cpu" and args.grid == "quick":
        grid = [(N // 64, M, k) for N, M, k in grid]  # keep the CPU run short
    result = run(grid, DTYPES[args.dtype], device)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(result["rows"][0].keys()) + ["wrong"], extrasaction="ignore")
            w.writeheader()
            w.writerows(result["rows"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
