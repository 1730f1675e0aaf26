"""Long rows in the block kernel (a block a row): max_iter and eps modes at any row count, exact mode when the rows
are too few for the streaming kernel.  Rows whose keys fit a block's shared memory (the device's opt-in limit: 227 KB
on sm_90, ~57K 32-bit keys, ~29K fp64 ones) are converted once into it, a 16-byte pack at a time (rows that start
mid-pack included); longer ones are re-read from global memory on every pass, and their searches count several
thresholds a pass (the look-ahead of csrc/rtopk_algo.h: the next steps' tree of midpoints, or of key bits in exact
mode).  Every mode is checked against the CPU backend (one count a step) bit for bit: every kind of row, both
directions, max_iter from one step to past the bracket's last move, rows that stop early, ties at the threshold, rows
on both sides of the cache's limit, and launches where a block walks several rows (the look-ahead table is the
block's, reset for each row).  Skipped without CUDA."""

import subprocess
import sys

import pytest
import torch

import rtopk
from conftest import HAS_CUDA
from test_group_rows import same
from test_stream_rows import KINDS, mixed_rows

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

# (max_iter, eps): Algorithm 2 from one step to far past the bracket's last move, Algorithm 1, exact.
MODES = [(1, 0.0), (2, 0.0), (4, 0.0), (5, 0.0), (8, 0.0), (13, 0.0), (40, 0.0), (-1, 1e-4), (-1, 0.3), (-1, 0.0),
         (4, 1e-3)]


def check_modes(x, ks, modes=MODES):
    xc = x.cuda()
    for k in ks:
        for max_iter, eps in modes:
            mi = None if max_iter < 0 else max_iter
            ctx = f"{tuple(x.shape)} {x.dtype} k={k} max_iter={mi} eps={eps}"
            try:
                same(rtopk.rtopk(x, k, max_iter=mi, eps=eps), rtopk.rtopk(xc, k, max_iter=mi, eps=eps))
                for largest in (True, False):
                    same(rtopk.topk(x, k, largest=largest, sorted=False, max_iter=mi, eps=eps),
                         rtopk.topk(xc, k, largest=largest, sorted=False, max_iter=mi, eps=eps))
            except AssertionError as err:
                raise AssertionError(f"{ctx}: {err}") from None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("M", [11265, 20000, 65537])
def test_block_rows_streamed_matches_host(M, dtype):
    x = mixed_rows(M, dtype, seed=M + 7, rows=len(KINDS))
    check_modes(x, [1, 100, 2048])


@pytest.mark.parametrize("M", [5633, 20001, 30011])
def test_block_rows_streamed_fp64(M):
    x = mixed_rows(M, torch.float64, seed=M, rows=len(KINDS))
    check_modes(x, [1, 77, 1500])


def test_block_rows_streamed_ties_at_threshold():
    """Few distinct values, so that a step's count equals k (the search stops early: the table's other keys are
    never asked for) or the bracket stops moving, and exactly-k counts at each level of the tree."""
    gen = torch.Generator().manual_seed(5)
    M = 12000
    x = torch.randint(0, 16, (6, M), generator=gen).float() / 16
    # Row 0's counts at the first midpoints of [0, 15/16] (15/32, 15/64, 45/64, ...: the values from 8/16, 4/16,
    # 12/16, 2/16, 6/16 up) as k.
    counts = [int((x[0] >= v / 16).sum()) for v in (8, 4, 12, 2, 6)]
    check_modes(x, sorted(set([1, 750, 3000] + counts)))


def test_block_rows_streamed_many_rows_a_block():
    """More rows than the grid holds blocks (at most 8 an SM), rows of every kind interleaved: each block searches
    several rows in turn, and a count left in the table by the last row would answer for the next."""
    rows = 8 * torch.cuda.get_device_properties(0).multi_processor_count + 45
    for M in (11300, 60000):  # cached, streamed
        x = mixed_rows(M, torch.float32, seed=11, rows=rows)
        check_modes(x, [64], modes=[(4, 0.0), (13, 0.0), (-1, 1e-4)])


def cache_keys_limit():
    """About the most 32-bit keys a block's shared memory caches on this device (its opt-in limit)."""
    return torch.cuda.get_device_properties(0).shared_memory_per_block_optin // 4


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_block_rows_cache_limit(dtype):
    """Rows just inside the cache's limit (the whole row in dynamic shared memory, one block an SM) and just past
    it (streamed), and on both sides of the two-blocks-an-SM size where max_iter <= 4 stops caching, in the modes
    that reach the block kernel at any row count."""
    per = 2 if dtype == torch.float64 else 1  # fp64 keys take two words
    limit = cache_keys_limit() // per
    # (max_iter <= 4 caches rows only while two blocks an SM fit: about half the SM's shared memory.)
    two = torch.cuda.get_device_properties(0).shared_memory_per_multiprocessor // 8 // per
    for M in (two - 600 // per, two + 600 // per, limit - 1024 // per, limit + 17):
        x = mixed_rows(M, dtype, seed=M, rows=len(KINDS))
        check_modes(x, [1, 300], modes=[(1, 0.0), (4, 0.0), (8, 0.0), (-1, 1e-3), (-1, 0.0)])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("offset", [1, 3])
@pytest.mark.parametrize("where", ["cached", "streamed"])
def test_block_rows_streamed_unaligned_start(offset, dtype, where):
    """A contiguous input whose data starts `offset` elements into its storage: rows of a 16-byte multiple then
    start mid-pack (the streamed passes read 16-byte packs at aligned addresses, the row's ends an element at a
    time), and the emit's first and last packs hang over the row."""
    M = {"cached": 20000, "streamed": 60000}[where] // (2 if dtype == torch.float64 else 1)
    x = mixed_rows(M, dtype, seed=offset, rows=len(KINDS))
    buf = torch.empty(x.numel() + offset, dtype=dtype, device="cuda")
    xc = buf[offset:].view(x.shape)
    xc.copy_(x)
    assert xc.is_contiguous() and xc.data_ptr() % 16 != 0
    for k in (1, 100, 2048):
        for max_iter, eps in MODES:
            mi = None if max_iter < 0 else max_iter
            for largest in (True, False):
                try:
                    same(rtopk.topk(x, k, largest=largest, sorted=False, max_iter=mi, eps=eps),
                         rtopk.topk(xc, k, largest=largest, sorted=False, max_iter=mi, eps=eps))
                except AssertionError as err:
                    raise AssertionError(f"offset={offset} {dtype} k={k} max_iter={mi} eps={eps}: {err}") from None


def test_block_rows_cuda_graph():
    """The cached rows' launch (its shared-memory limit raised on a device's first call) and the streamed one,
    captured into a CUDA graph and replayed on new rows: the same outputs as eager calls."""
    static = {torch.float64: torch.randn(40, 7000, dtype=torch.float64, device="cuda"),
              torch.float32: torch.randn(40, 20000, device="cuda"),
              torch.bfloat16: torch.randn(40, 70000, device="cuda").bfloat16()}
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = {dt: rtopk.rtopk(x, 50, max_iter=4) for dt, x in static.items()}
    for seed in range(2):
        gen = torch.Generator("cuda").manual_seed(seed)
        for dt, x in static.items():
            x.copy_(torch.randn(x.shape, device="cuda", generator=gen).to(dt))
        graph.replay()
        for dt, x in static.items():
            want = rtopk.rtopk(x.clone(), 50, max_iter=4)
            assert torch.equal(outs[dt][0], want[0]) and torch.equal(outs[dt][1], want[1]), f"{dt} seed={seed}"


def test_block_rows_first_call_captured():
    """A process whose first cached launch is inside a CUDA-graph capture: the shared-memory limit is queried and
    raised there (cudaFuncGetAttributes / cudaFuncSetAttribute, no stream work), and the replay gives the eager
    call's outputs."""
    code = """
import torch, rtopk
x = torch.randn(40, 20000, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    v, i = rtopk.rtopk(x, 50, max_iter=8)
x.copy_(torch.randn(40, 20000, device="cuda"))
g.replay()
w, j = rtopk.rtopk(x.clone(), 50, max_iter=8)
assert torch.equal(v, w) and torch.equal(i, j)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
