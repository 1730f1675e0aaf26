"""The short-row kernels (csrc/cuda/rtopk_small_rows.cuh: rank_rows_kernel, G lanes a row and 32 / G rows a warp, in
exact mode; round_rows_kernel, a few rows a warp at small k; thread_rows_kernel, a row a thread with the plan of
max_iter / eps) on the CPU through the warp emulator (tests/emu), with rows of every kind side by side in a warp (so
that rows of different kinds share a warp's votes and shuffles), both directions and orders, fp32/fp16/bf16.  Exact
mode against the plain-torch reference bit for bit, the other modes against the CPU backend (CUDA must equal it).  The rank kernel's lane groups
vote and shuffle with partial masks: the emulator completes each group's collective on its own and aborts on a lane
outside its mask, a group at different collectives, or a stuck warp.  Runs where test_lane_emu.py runs."""

import subprocess

import pytest
import torch

import rtopk
from conftest import MIXED_KINDS, bits, make_rows
from test_lane_emu import DTYPES, INTS, build_emulator, pytestmark  # noqa: F401  (the same skips)


@pytest.fixture(scope="module")
def small_emulator():
    return build_emulator("small_emu")


def emu_small(exe, tmp, kernel, p, x, k, largest, sort, max_iter=-1, eps=0.0, grid=2):
    rows, cols = x.shape
    paths = [str(tmp / n) for n in ("in.bin", "ov.bin", "oi.bin")]
    x.contiguous().view(INTS[x.dtype]).numpy().tofile(paths[0])
    args = [DTYPES[x.dtype], kernel, p, int(largest), int(sort), rows, cols, k, max_iter, eps, grid]
    run = subprocess.run([exe] + [str(a) for a in args] + paths, capture_output=True, text=True)
    assert run.returncode == 0, f"emulator failed: {run.stderr}"
    ov = torch.from_file(paths[1], size=rows * k, dtype=INTS[x.dtype]).view(x.dtype).reshape(rows, k)
    oi = torch.from_file(paths[2], size=rows * k, dtype=torch.int64).reshape(rows, k)
    return ov, oi


def mixed_rows(M, dtype, gen, rows=45):
    """Rows of every kind, then randn rows, shuffled: 45 rows (no multiple of any kernel's rows a warp)."""
    x = torch.cat([make_rows(kind, (1, M), dtype, "cpu", gen) for kind in MIXED_KINDS])
    x = torch.cat([x, make_rows("randn", (max(rows - x.shape[0], 0), M), dtype, "cpu", gen)])[:rows]
    return x[torch.randperm(x.shape[0], generator=gen)].contiguous()


def check(ov, oi, rv, ri, ctx):
    bad = (oi != ri).any(-1).nonzero().flatten().tolist()
    assert not bad, f"indices differ in rows {bad[:8]}: {ctx}"
    assert torch.equal(bits(ov), bits(rv)), f"values differ: {ctx}"


def exact_both_ways(exe, tmp, kernel, p, x, k):
    """Exact mode, largest and smallest, index and rank order, against the reference."""
    for largest in (True, False):
        for sort in (False, True):
            ctx = f"{kernel} P={p} M={x.shape[1]} k={k} largest={largest} sorted={sort} dtype={x.dtype}"
            ov, oi = emu_small(exe, tmp, kernel, p, x, k, largest, sort)
            rv, ri = rtopk.topk_ref(x, k, -1, largest, sort)
            check(ov, oi, rv, ri, ctx)


RANK_COLS = [2, 3, 5, 8, 13, 16, 17, 31, 32]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("M", RANK_COLS)
def test_rank_rows_emulated(small_emulator, tmp_path, dtype, M):
    gen = torch.Generator().manual_seed(M + 50 * list(DTYPES).index(dtype))
    x = mixed_rows(M, dtype, gen)
    G = 1 << (M - 1).bit_length()
    for k in sorted({1, 2, max(M // 2, 1), M} - {0}):
        exact_both_ways(small_emulator, tmp_path, "rank", G, x, k)


ROUND = [(1, 17), (1, 32), (2, 33), (2, 64), (3, 95), (4, 128), (6, 150), (8, 193), (8, 256)]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("vpt,M", ROUND, ids=[f"VPT{v}_M{m}" for v, m in ROUND])
def test_round_rows_emulated(small_emulator, tmp_path, dtype, vpt, M):
    gen = torch.Generator().manual_seed(900 + M + 50 * list(DTYPES).index(dtype))
    x = mixed_rows(M, dtype, gen)
    for k in (1, 2, 4, 8) if vpt <= 3 else (1, 3, 4):
        exact_both_ways(small_emulator, tmp_path, "round", vpt, x, k)


THREAD = [(8, 2), (8, 5), (8, 8), (16, 9), (16, 16), (32, 17), (32, 31), (32, 32), (64, 33), (64, 47), (64, 64)]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("N,M", THREAD, ids=[f"N{n}_M{m}" for n, m in THREAD])
def test_thread_rows_emulated(small_emulator, tmp_path, dtype, N, M):
    """A thread a row (thread_rows_kernel, make_plan on the thread's own keys): max_iter, eps and exact mode (the
    plan's exact path, behind kThreadRowsExact on the GPU) against the CPU backend, both directions, index and rank
    order; rows of whole 16-byte words take the vector loads."""
    gen = torch.Generator().manual_seed(1300 + M + 50 * list(DTYPES).index(dtype))
    x = mixed_rows(M, dtype, gen)
    for k in sorted({1, max(M // 2, 1), M - 1} - {0}):
        for max_iter, eps in ((1, 0.0), (4, 0.0), (9, 0.0), (-1, 1e-3), (-1, 0.0)):
            for largest in (True, False):
                for sort in (False, True):
                    ctx = f"thread N={N} M={M} k={k} max_iter={max_iter} eps={eps} largest={largest} sorted={sort}"
                    ov, oi = emu_small(small_emulator, tmp_path, "thread", N, x, k, largest, sort, max_iter, eps)
                    cv, ci = rtopk.topk(x, k, largest=largest, sorted=sort,
                                        max_iter=None if max_iter < 0 else max_iter, eps=eps)
                    check(ov, oi, cv, ci, f"{ctx} dtype={dtype}")


TILE = [(8, 8), (16, 16), (32, 24), (64, 40), (64, 64)]


@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
@pytest.mark.parametrize("N,M", TILE, ids=[f"N{n}_M{m}" for n, m in TILE])
def test_thread_tile_rows_emulated(small_emulator, tmp_path, dtype, N, M):
    """The thread kernel's rows of whole 16-byte words through a shared tile (thread_tile_rows_kernel): max_iter, eps
    and exact mode against the CPU backend, both directions and orders; 45 rows (a warp's 32 and 13)."""
    if M * dtype.itemsize % 16:
        pytest.skip("rows of whole 16-byte words only")
    gen = torch.Generator().manual_seed(1500 + M + 50 * list(DTYPES).index(dtype))
    x = mixed_rows(M, dtype, gen)
    for k in sorted({1, M // 2, M - 1}):
        for max_iter, eps in ((4, 0.0), (-1, 1e-3), (-1, 0.0)):
            for largest, sort in ((True, False), (False, True)):
                ctx = f"tile N={N} M={M} k={k} max_iter={max_iter} eps={eps} largest={largest} sorted={sort}"
                ov, oi = emu_small(small_emulator, tmp_path, "tile", N, x, k, largest, sort, max_iter, eps)
                cv, ci = rtopk.topk(x, k, largest=largest, sorted=sort,
                                    max_iter=None if max_iter < 0 else max_iter, eps=eps)
                check(ov, oi, cv, ci, f"{ctx} dtype={dtype}")


# Rows of whole 16-byte words from 33 elements up, past each tile size and chunk boundary (32-bit: 4 per word).
NET_COLS = {4: [36, 64, 100, 128, 132, 256], 2: [40, 64, 72, 128, 200, 256]}
NET = [(dtype, M) for dtype in DTYPES for M in NET_COLS[dtype.itemsize]]


@pytest.mark.parametrize("dtype,M", NET, ids=[f"{d}-M{m}" for d, m in NET])
def test_net_rows_emulated(small_emulator, tmp_path, dtype, M):
    """A thread a row with a sorting network over its keys (net_rows_kernel, exact mode, k <= 8): every K (1, 2, 4,
    8) at k = K and below it, both directions and orders, against the reference bit for bit; 45 rows (a warp's 32 and
    a partial tile of 13)."""
    gen = torch.Generator().manual_seed(1700 + M + 50 * list(DTYPES).index(dtype))
    x = mixed_rows(M, dtype, gen)
    MV = max(8, 1 << (M * dtype.itemsize // 16 - 1).bit_length())
    for k in (1, 2, 3, 4, 5, 8):
        exact_both_ways(small_emulator, tmp_path, "net", MV, x, k)
