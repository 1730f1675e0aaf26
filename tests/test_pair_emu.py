"""The packed-pair kernel (csrc/cuda/rtopk_pair_rows.cuh) on the CPU through the warp emulator (tests/emu/pair_emu.cpp):
every shape (two lanes a row and 128 elements a lane, four and 64 or 128, eight and 64 or 96), float16 and bfloat16,
largest and smallest, against the plain-torch reference bit for bit.  Each run holds one row of every kind side by side
(NaN, +-inf, ties, equal rows, signed zeros, heavy tails, ...) and randn rows to fill, so that rows of different kinds
share a warp, a last warp with fewer rows than it holds, and a grid smaller than the warps (blocks loop); k across the
bracket's every low end (group maxima of 8 words down to 1, the row minimum) and the ties' quota.  Rows leave the
kernel for its fallback only when the k-th value is a -inf tied with NaN (the k smallest); rows with more NaN / +inf
than k take the first k of them in the kernel.  Runs
where g++ and the CUDA headers are found and no GPU is (RTOPK_EMU=1: also with one)."""

import subprocess

import pytest
import torch

import rtopk
from conftest import EMU_BUILDS, EMU_TOOLS, EMU_WANTED, MIXED_KINDS, TAIL_KINDS, bits, make_rows

pytestmark = [
    pytest.mark.skipif(not EMU_TOOLS, reason="needs g++ and the CUDA headers"),
    pytest.mark.skipif(not EMU_WANTED, reason="a GPU is present (RTOPK_EMU=1 runs the emulator anyway)"),
]

DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16"}
# (lanes a row, elements a lane, row lengths): full rows, padding, lanes with no element at all (each length
# at least the shape's kMinCols: the fallback row body needs the row's own slot level).
SHAPES = [(2, 128, (256, 200)), (4, 64, (256, 232)), (4, 128, (512, 392, 400)), (8, 64, (512, 480)),
          (8, 96, (768, 520, 744))]
CASES = [(g, e, m) for g, e, ms in SHAPES for m in ms]


@pytest.fixture(scope="module")
def emulator():
    return EMU_BUILDS.get("pair_emu")


def emu_run(exe, tmp, x, k, g, e, largest, grid):
    rows, cols = x.shape
    paths = [str(tmp / n) for n in ("in.bin", "ov.bin", "oi.bin")]
    x.contiguous().view(torch.int16).numpy().tofile(paths[0])
    args = [DTYPES[x.dtype], g, e, int(largest), rows, cols, k, grid]
    run = subprocess.run([exe] + [str(a) for a in args] + paths, capture_output=True, text=True)
    assert run.returncode == 0, f"emulator failed: {run.stderr}"
    ov = torch.from_file(paths[1], size=rows * k, dtype=torch.int16).view(x.dtype).reshape(rows, k)
    oi = torch.from_file(paths[2], size=rows * k, dtype=torch.int64).reshape(rows, k)
    name, _, value = run.stdout.strip().partition(" ")
    assert name == "fallback_rows", run.stdout
    return ov, oi, int(value)


def rows_side_by_side(dtype, g, M, seed):
    """One row of every kind and randn rows to fill, shuffled: 3 warps of 32 / g rows and a last warp of one row (at
    least the kinds and 3 randn rows)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.cat([make_rows(kind, (1, M), dtype, "cpu", gen) for kind in MIXED_KINDS + TAIL_KINDS])
    rows = 3 * (32 // g) + 1
    x = torch.cat([x, make_rows("randn", (max(rows - x.shape[0], 3), M), dtype, "cpu", gen)])
    return x[torch.randperm(x.shape[0], generator=gen)].contiguous()


@pytest.mark.parametrize("g,e,M", CASES, ids=[f"G{g}_E{e}_M{m}" for g, e, m in CASES])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
def test_pair_kernel_emulated(emulator, tmp_path, dtype, g, e, M):
    x = rows_side_by_side(dtype, g, M, M * 11 + g + e + list(DTYPES).index(dtype))
    nan_rows = int(torch.isnan(x).any(-1).sum())
    for k in (1, 3, 9, 17, 33, 64, 97, 100, 128):  # (from kPairCopyMinK at E <= 96: the row copy)
        for largest in (True, False):
            ctx = f"G={g} E={e} M={M} k={k} largest={largest} dtype={dtype}"
            ov, oi, fallback = emu_run(emulator, tmp_path, x, k, g, e, largest, grid=2)
            rv, ri = rtopk.topk_ref(x, k, -1, largest, False)
            bad = (oi != ri).any(-1).nonzero().flatten().tolist()
            assert not bad, f"indices differ from reference in rows {bad[:8]}: {ctx}"
            assert torch.equal(bits(ov), bits(rv)), f"values differ from reference: {ctx}"
            # Only a k-th value of -inf tied with NaN (the k smallest) leaves the kernel.
            assert fallback <= (0 if largest else nan_rows), f"{fallback} rows fell back: {ctx}"


@pytest.mark.parametrize("g,e,M", CASES, ids=[f"G{g}_E{e}_M{m}" for g, e, m in CASES])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
def test_pair_kernel_rank_order_emulated(emulator, tmp_path, dtype, g, e, M):
    """The kernel's rank order (the k largest, k <= pair_sort_k(G): 32, 64, 128 at G = 2, 4, 8): every row kind side
    by side as above, bit for bit against the reference's sorted answer (values descending, NaN first, equal values
    and -0 / +0 by index)."""
    x = rows_side_by_side(dtype, g, M, M * 13 + g + e + list(DTYPES).index(dtype))
    for k in (2, 3, 9, 16, 17, 24, 25, 31, 32) + (() if g == 2 else (33, 47, 64)) + ((65, 100, 128) if g == 8 else ()):
        ctx = f"G={g} E={e} M={M} k={k} dtype={dtype}"
        ov, oi, fallback = emu_run(emulator, tmp_path, x, k, g, e, 2, grid=2)
        rv, ri = rtopk.topk_ref(x, k, -1, True, True)
        bad = (oi != ri).any(-1).nonzero().flatten().tolist()
        assert not bad, f"indices differ from the reference in rows {bad[:8]}: {ctx}"
        assert torch.equal(bits(ov), bits(rv)), f"values differ from the reference: {ctx}"
        assert fallback == 0, ctx


@pytest.mark.parametrize("g,e,M", [(2, 128, 256), (4, 64, 232), (8, 96, 768)], ids=["G2_E128", "G4_E64", "G8_E96"])
@pytest.mark.parametrize("k", [16, 17, 40, 97, 128])
def test_pair_kernel_fallback_rows(emulator, tmp_path, g, e, M, k):
    """Rows left to the fallback (the k smallest: a +inf k-th value tied with NaN) beside randn rows in one warp, at
    even and odd k (both unsorted flushes, which flush such a row's zeroed staging before the fallback rewrites it):
    every output against the reference, the fallback counted."""
    gen = torch.Generator().manual_seed(M + g + k)
    x = torch.randn(3 * (32 // g) + 1, M, generator=gen).to(torch.bfloat16)
    odd = torch.arange(0, x.shape[0], 3)
    x[odd] = float("inf")
    x[odd, : k // 2] = torch.randn(len(odd), k // 2, generator=gen).to(torch.bfloat16)
    x[odd, M - 1] = float("nan")
    ov, oi, fallback = emu_run(emulator, tmp_path, x, k, g, e, False, grid=2)
    rv, ri = rtopk.topk_ref(x, k, -1, False, False)
    bad = (oi != ri).any(-1).nonzero().flatten().tolist()
    assert not bad, f"indices differ from the reference in rows {bad[:8]}"
    assert torch.equal(bits(ov), bits(rv))
    assert fallback == len(odd)


@pytest.mark.parametrize("g,e,cols,k", [(8, 96, 768, 16), (8, 96, 768, 32), (8, 96, 768, 64), (8, 96, 744, 128),
                                        (4, 64, 256, 32), (4, 64, 256, 64), (4, 64, 232, 96), (8, 64, 512, 64),
                                        (8, 64, 512, 96), (8, 64, 480, 128), (4, 128, 512, 64), (2, 128, 256, 32),
                                        (8, 96, 768, 768)])
def test_pair_plan(emulator, g, e, cols, k):
    """The launch's guided probes (PairPlan, notes v71): z the normal quantile of 1 - k / cols, the second probe's
    step and the gate as pair_plan's comments give them, computed here in float64; z NaN (no probes) where the H200
    measured no gain (E = 128, G = 8 and E = 96 below k = 32, G = 4 and E = 64 below 64, G = 8 and E = 64 below 96)
    and at k = cols."""
    run = subprocess.run([emulator, "plan", str(g), str(e), str(cols), str(k)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    level, inv_n, z, step, gate = (float(t) for t in run.stdout.split())
    assert inv_n == pytest.approx(2 / cols, rel=1e-6)
    k_min = {(8, 96): 32, (4, 64): 64, (8, 64): 96}.get((g, e))
    if k_min is None or k < k_min or k >= cols:
        assert z != z, f"z = {z}: no probes expected"
        return
    q = torch.tensor(k / cols, dtype=torch.float64)
    zt = torch.special.ndtri(1 - q).item()
    phi = torch.exp(-0.5 * torch.tensor(zt, dtype=torch.float64) ** 2).item() / (2 * torch.pi) ** 0.5
    v = (q * (1 - q)).item()
    assert z == pytest.approx(zt, abs=1e-5)
    assert step == pytest.approx(1.5 * (v / phi**2 + 1 + zt * zt / 2) ** 0.5 / cols**0.5, rel=1e-5)
    assert gate == pytest.approx(4 * (v * cols) ** 0.5, rel=1e-5)
