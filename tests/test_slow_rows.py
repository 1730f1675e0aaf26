"""The slowest rows: exact mode on rows built to stress the search (ties, few distinct values, NaN,
+-inf, denormals, heavy tails, sorted rows) against randn rows of the same shape, on the GPU.

Bound: no kind of row may take more than SLOW_ROW_BOUND times the randn rows' time.  Each input is
checked against torch.topk before it is timed.  Skipped without CUDA."""

import contextlib

import pytest
import torch

from rtopk import bench
from conftest import HAS_CUDA

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

SLOW_ROW_BOUND = 2.0
# (rows, row length, k): the lane kernel with four lanes a row (256; also at 2^18 and 2^20 rows, where randn rows
# cost least per row: heavy tails took 2.1-2.2x there before their warps were mapped by keys, notes v44), the
# lane kernel with eight lanes a row (512; k = 16 at 2^18 rows too: few distinct values sent its atomics to two banks
# until the rows' counters were rotated, 2.0-2.2x, notes v45), the warp-per-row kernel (768 at 2^16 rows, k <= 24), the
# lane kernel with sixteen lanes a row (rows of 768, k > 24: 2^17 rows, kLaneSixteen, notes v46; 2^16 and 2^14 rows,
# notes v54) and the kernels of longer rows (2048, 8192).
SHAPES = [(2**16, 256, 64), (2**18, 256, 64), (2**20, 256, 64), (2**16, 512, 64), (2**18, 512, 16), (2**16, 768, 16),
          (2**14, 768, 64), (2**16, 768, 64), (2**17, 768, 64), (2**15, 2048, 128), (2**13, 8192, 128)]


@pytest.fixture(scope="module")
def timer():
    return bench.CudaTimer()


@contextlib.contextmanager
def unpoisoned():
    """The op without the tests' output poisoning (conftest): its fill kernels would add the same few microseconds
    to every call timed and pull each ratio towards 1."""
    torch.ops.rtopk._set_debug_poison(False)
    try:
        yield
    finally:
        torch.ops.rtopk._set_debug_poison(True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("N,M,k", SHAPES)
def test_slowest_rows_within_bound_of_randn(timer, N, M, k, dtype):
    times, wrong = bench.stressed_row_times(N, M, k, dtype, timer, timing=unpoisoned)
    assert not wrong, f"wrong result on {', '.join(wrong)} rows ({N}x{M}, k={k}, {dtype})"
    ratios = {d: t / times["randn"] for d, t in times.items() if d != "randn"}
    report = ", ".join(f"{d} {r:.2f}x" for d, r in sorted(ratios.items(), key=lambda kv: -kv[1]))
    print(f"\n{N}x{M} k={k} {dtype}: randn {times['randn']:.4f} ms; {report}")
    slow = {d: r for d, r in ratios.items() if r > SLOW_ROW_BOUND}
    assert not slow, f"rows slower than {SLOW_ROW_BOUND}x randn ({N}x{M}, k={k}, {dtype}): {report}"
