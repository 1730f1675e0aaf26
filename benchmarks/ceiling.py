"""What fraction of the memory floor the benchmark's timing method lets any kernel reach on the paper grid.

`python -m rtopk.bench` scores a call as floor / time, the floor being the call's bytes (the input read once,
values and int64 indices written once) over a 1 GB copy's bandwidth, and the time that of triton's do_bench,
which flushes the L2 between runs by zeroing a 256 MB buffer.  This script times, per paper-grid cell:
  - `stream`: a triton kernel that moves exactly the floor's bytes (reads every row whole, writes k values and k
    int64 indices a row) and does nothing else -- what a top-k kernel at the bandwidth limit would score;
  - rtopk's exact and max_iter=4 calls;
each with do_bench (the bench's method) and with CUDA events around single calls whose L2 flush reads a 256 MB
buffer instead of zeroing it (a zeroed buffer leaves up to the L2's size of dirty lines, written back to DRAM
during the timed call).  The geometric means show how far the method's overheads, not the kernels, cap the
grid's score.

    python benchmarks/ceiling.py [--dtype float32] [--grid paper|small]
"""

import argparse
import statistics

import torch
import triton
import triton.language as tl

import rtopk
from rtopk.bench import GRIDS, CudaTimer, copy_bandwidth, floor_bytes, geomean


@triton.jit
def _stream_rows(x_ptr, v_ptr, i_ptr, N, M, k, ROWS: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_K: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    live = rows < N
    cols = tl.arange(0, BLOCK_M)
    x = tl.load(x_ptr + rows[:, None] * M + cols[None, :], mask=live[:, None] & (cols[None, :] < M),
                other=0.0).to(tl.float32)
    # The whole row feeds the stored values, so no load can be dropped.
    bump = tl.where(tl.max(x, axis=1) > 3.0e38, 1.0, 0.0)
    kc = tl.arange(0, BLOCK_K)
    out = live[:, None] & (kc[None, :] < k)
    first = tl.load(x_ptr + rows[:, None] * M + kc[None, :], mask=out, other=0.0).to(tl.float32)
    tl.store(v_ptr + rows[:, None] * k + kc[None, :], (first + bump[:, None]).to(v_ptr.dtype.element_ty), mask=out)
    tl.store(i_ptr + rows[:, None] * k + kc[None, :], (kc[None, :] + 0 * rows[:, None]).to(tl.int64), mask=out)


def stream(x, k, values, indices):
    """Many rows a program (one a program was bound by the block launch rate at M = 256)."""
    N, M = x.shape
    block_m = triton.next_power_of_2(M)
    rows = max(1, 8192 // block_m)
    _stream_rows[(triton.cdiv(N, rows),)](x, values, indices, N, M, k, ROWS=rows, BLOCK_M=block_m,
                                          BLOCK_K=triton.next_power_of_2(k), num_warps=8)


class ReadFlushTimer:
    """Median of CUDA events around single calls, the L2 flushed by reading 256 MB (clean lines)."""

    def __init__(self, reps=100):
        self.buf = torch.randn(64 * 2**20, device="cuda")
        self.reps = reps

    def __call__(self, fn):
        for _ in range(5):
            fn()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(self.reps)]
        for s, e in ev:
            self.buf.amax()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in ev)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    p.add_argument("--grid", default="paper", choices=["paper", "small"])
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    # db: the bench's own timer (do_bench, since triton imports here); rf: the reading flush.
    timers = {"db": CudaTimer(), "rf": ReadFlushTimer()}
    bw = {name: copy_bandwidth("cuda", t) for name, t in timers.items()}
    one = torch.zeros(1, device="cuda")
    src = torch.empty(16 << 20, dtype=torch.int8, device="cuda")
    dst = torch.empty_like(src)
    print(f"# {torch.cuda.get_device_name()}; torch {torch.__version__}; triton {triton.__version__}; {args.dtype}")
    print("# db: triton do_bench (zero_ flush, the bench's method); rf: CUDA events, flush by reading 256 MB")
    for name, t in timers.items():
        print(f"# {name}: copy bandwidth {bw[name] / 1e12:.3f} TB/s; 1-element add_ {1e3 * t(lambda: one.add_(1)):.2f} us;"
              f" 16 MB copy {1e3 * t(lambda: dst.copy_(src)):.2f} us")
    cells = [(N, M, k) for N, M, k, _ in GRIDS["paper"]] if args.grid == "paper" else [
        (2**14, 256, 16), (2**18, 256, 16), (2**18, 768, 128)]
    cols = ["N", "M", "k", "floor_us"] + [f"{w}_{n}" for w in ("stream", "exact", "it4") for n in timers]
    print("| " + " | ".join(cols) + " | stream_frac_db | exact_frac_db | it4_frac_db | stream_frac_rf | exact_frac_rf |"
          " it4_frac_rf |")
    print("|" + "---|" * (len(cols) + 6))
    fracs = {f"{w}_{n}": [] for w in ("stream", "exact", "it4") for n in timers}
    for N, M, k in cells:
        x = torch.randn(N, M, device="cuda").to(dtype)
        v = torch.empty(N, k, dtype=dtype, device="cuda")
        i = torch.empty(N, k, dtype=torch.int64, device="cuda")
        stream(x, k, v, i)
        assert torch.equal(v, x[:, :k]) and torch.equal(i[0], torch.arange(k, device="cuda"))
        work = {"stream": lambda: stream(x, k, v, i), "exact": lambda: rtopk.rtopk(x, k),
                "it4": lambda: rtopk.rtopk(x, k, 4)}
        row = {"N": N, "M": M, "k": k}
        nbytes = floor_bytes(N, M, k, x.element_size())
        row["floor_us"] = nbytes / bw["db"] * 1e6
        out = []
        for w, fn in work.items():
            for n, t in timers.items():
                ms = t(fn)
                row[f"{w}_{n}"] = 1e3 * ms
                fracs[f"{w}_{n}"].append(nbytes / bw[n] / (ms * 1e-3))
        for n in timers:
            for w in work:
                out.append(f"{fracs[f'{w}_{n}'][-1]:.3f}")
        print("| " + " | ".join(f"{row[c]:.2f}" if isinstance(row[c], float) else str(row[c]) for c in cols)
              + " | " + " | ".join(out) + " |", flush=True)
    print("# geometric means of the floor fraction: "
          + ", ".join(f"{key} {geomean(val):.3f}" for key, val in fracs.items()))
    for n in timers:
        print(f"# {n}: exact / stream {geomean(fracs[f'exact_{n}']) / geomean(fracs[f'stream_{n}']):.3f},"
              f" it4 / stream {geomean(fracs[f'it4_{n}']) / geomean(fracs[f'stream_{n}']):.3f}")


if __name__ == "__main__":
    main()
