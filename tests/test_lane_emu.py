"""The lane kernel (csrc/cuda/rtopk_lane_rows.cuh) on the CPU through the warp emulator (tests/emu): its instances with
four, eight and sixteen lanes a row, index and rank order, largest and smallest, against the plain-torch reference bit for
bit, including launches the CUDA backend does not dispatch (eight lanes at 449..479 elements, sixteen lanes below 2^17
rows or k <= 24, rank order with sixteen lanes) and the small launches it never makes (a few rows a grid). Each run
holds rows of every kind side by side (so that rows of different kinds share a warp), crowded rows, and a last warp
with fewer rows than it holds; a grid smaller than the rows so that warps loop. The emulator also aborts when lanes
diverge at a warp collective. Runs where g++ and the CUDA headers are found and no GPU is (RTOPK_EMU=1: also with
one), about a minute and a half, most of it the compile (begun at collection, beside the tests before)."""

import os
import random
import subprocess

import pytest
import torch

import rtopk
from conftest import EMU_BUILDS, EMU_TOOLS, EMU_WANTED, MIXED_KINDS, TAIL_KINDS, bits, make_rows
from test_lane_rows import CROWDED_KINDS, OFFSETS, crowded_rows

pytestmark = [
    pytest.mark.skipif(not EMU_TOOLS, reason="needs g++ and the CUDA headers"),
    pytest.mark.skipif(not EMU_WANTED, reason="a GPU is present (RTOPK_EMU=1 runs the emulator anyway)"),
]

DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
INTS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}
# The rank-ordered instances' largest k by lanes a row (a row's member list holds 32 keys; dispatched up to 16 with
# four lanes a row, 32 with eight, not with sixteen: kLaneSortedMaxK).
SORTED_CAP = {4: 16, 8: 32, 16: 32}


def build_emulator(name):
    """tests/emu/<name>.cpp (a kernel on the warp emulator) compiled by g++ (conftest.EMU_BUILDS: once a session,
    begun at collection); returns the executable."""
    return EMU_BUILDS.get(name)


@pytest.fixture(scope="module")
def emulator():
    """The lane kernel as dispatched, on the warp emulator."""
    return build_emulator("lane_emu")


def emu_topk(exe, tmp, x, k, lanes, largest, sort, grid, max_iter=-1):
    ov, oi, _ = emu_notes(exe, tmp, x, k, lanes, largest, sort, grid, max_iter)
    return ov, oi


def emu_checked(exe, tmp, x, ks, lanes, label):
    """The kernel (grid 2) at each k of ks, both directions, rank order where the kernel gives it, against the
    reference bit for bit; yields each run's context and counters (emu_notes)."""
    M = x.shape[1]
    for k in ks:
        for largest in (True, False):
            for sort in (False, True) if 1 < k <= SORTED_CAP[lanes] else (False,):
                ctx = f"{label} G={lanes} M={M} k={k} largest={largest} sorted={sort}"
                ov, oi, notes = emu_notes(exe, tmp, x, k, lanes, largest, sort, grid=2)
                rv, ri = rtopk.topk_ref(x, k, -1, largest, sort)
                assert torch.equal(oi, ri), f"indices differ from reference: {ctx}"
                assert torch.equal(bits(ov), bits(rv)), f"values differ from reference: {ctx}"
                yield ctx, notes


def emu_notes(exe, tmp, x, k, lanes, largest, sort, grid, max_iter=-1):
    """The kernel's outputs and its counters: fallback_rows (rows left to the warp kernel's row body),
    tail_warps (warps mapped by their values' keys) and offset_warps (finite warps mapped by lane_map, not by the
    one-FFMA map: a row too far from 0 for its span).  max_iter > 0: the max_iter instance (index order)."""
    rows, cols = x.shape
    paths = [str(tmp / n) for n in ("in.bin", "ov.bin", "oi.bin")]
    x.contiguous().view(INTS[x.dtype]).numpy().tofile(paths[0])
    args = [DTYPES[x.dtype], lanes, int(largest), int(sort), max_iter, rows, cols, k, grid]
    run = subprocess.run([exe] + [str(a) for a in args] + paths, capture_output=True, text=True)
    assert run.returncode == 0, f"emulator failed: {run.stderr}"
    ov = torch.from_file(paths[1], size=rows * k, dtype=INTS[x.dtype]).view(x.dtype).reshape(rows, k)
    oi = torch.from_file(paths[2], size=rows * k, dtype=torch.int64).reshape(rows, k)
    notes = {}
    for line in run.stdout.splitlines():
        name, _, value = line.partition(" ")
        notes[name] = int(value)
    counts = {"fallback_rows", "tail_warps", "offset_warps"}
    assert counts <= notes.keys(), f"no counts from the emulator: {run.stdout!r}"
    return ov, oi, notes


def lane_inputs(M, dtype, gen):
    """One row of each kind, crowded rows, and randn rows to fill: 43 rows (8 lanes a row: a last warp of 3)."""
    rows = [make_rows(kind, (1, M), dtype, "cpu", gen) for kind in MIXED_KINDS]
    rows += [crowded_rows(kind, (2, M), dtype, gen, "cpu") for kind in CROWDED_KINDS]
    x = torch.cat(rows)
    x = torch.cat([x, make_rows("randn", (43 - x.shape[0], M), dtype, "cpu", gen)])
    return x[torch.randperm(x.shape[0], generator=gen)].contiguous()


CASES = [(4, M) for M in (256, 193, 230)] + [(8, M) for M in (512, 449, 470)] + [(16, M) for M in (768, 721, 740)]


@pytest.mark.parametrize("sort", [False, True], ids=["index_order", "rank_order"])
@pytest.mark.parametrize("lanes,M", CASES, ids=[f"G{g}_M{m}" for g, m in CASES])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
def test_lane_kernel_emulated(emulator, tmp_path, dtype, lanes, M, sort):
    gen = torch.Generator().manual_seed(M * 7 + lanes + 100 * sort + list(DTYPES).index(dtype))
    x = lane_inputs(M, dtype, gen)
    # (Rank order: for 2 <= k <= SORTED_CAP.)
    cap = SORTED_CAP[lanes]
    for k in (2, 5, 15, cap // 2 + 1, cap) if sort else (1, 5, 16, 33, 64, 128):
        for largest in (True, False):
            ctx = f"G={lanes} M={M} k={k} largest={largest} sorted={sort} dtype={dtype}"
            ov, oi = emu_topk(emulator, tmp_path, x, k, lanes, largest, sort, grid=2)
            rv, ri = rtopk.topk_ref(x, k, -1, largest, sort)
            bad = (oi != ri).any(-1).nonzero().flatten().tolist()
            assert not bad, f"indices differ from reference in rows {bad[:8]}: {ctx}"
            assert torch.equal(bits(ov), bits(rv)), f"values differ from reference: {ctx}"


EARLY = [(4, M) for M in (256, 193, 230)] + [(8, 512), (8, 470), (16, 768), (16, 733)]


@pytest.mark.parametrize("lanes,M", EARLY, ids=[f"G{g}_M{m}" for g, m in EARLY])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=str)
def test_lane_kernel_emulated_max_iter(emulator, tmp_path, dtype, lanes, M):
    """The max_iter instances (index order): rows of every kind side by side, against the CPU backend bit for bit,
    and its finite rows against the plain-torch Algorithm 2 too; max_iter from one step to far past the bracket's
    last move.  Only rows with NaN or +-inf go to the fallback (make_plan there)."""
    gen = torch.Generator().manual_seed(M * 5 + lanes + list(DTYPES).index(dtype))
    x = lane_inputs(M, dtype, gen)
    finite = torch.isfinite(x).all(-1)
    for k in (1, 16, 64, 128) if lanes == 4 else (16, 40, 128):
        for max_iter in (1, 4, 13, 10**12):
            for largest in (True, False):
                ctx = f"G={lanes} M={M} k={k} max_iter={max_iter} largest={largest} dtype={dtype}"
                ov, oi, notes = emu_notes(emulator, tmp_path, x, k, lanes, largest, False, 2, max_iter)
                rv, ri = rtopk.topk(x, k, -1, largest, False, max_iter=max_iter)
                bad = (oi != ri).any(-1).nonzero().flatten().tolist()
                assert not bad, f"indices differ from the CPU backend in rows {bad[:8]}: {ctx}"
                assert torch.equal(bits(ov), bits(rv)), f"values differ from the CPU backend: {ctx}"
                assert notes["fallback_rows"] == int((~finite).sum()), f"{notes}: {ctx}"
                if largest:
                    pv, pi = rtopk.rtopk_early_stop_ref(x[finite], k, min(max_iter, 3000))
                    assert torch.equal(oi[finite], pi), f"indices differ from Algorithm 2 in plain torch: {ctx}"


# Every kind (MIXED_KINDS) is finished by the kernel itself: subnormal rows and those whose range passes float's
# rescaled (lane_lift_of), crowded ones through its levels (nested: three levels, nested_tiny: rescaled at each).
FAST = [(4, 256), (4, 211), (8, 512), (8, 466), (16, 768), (16, 733)]


@pytest.mark.parametrize("lanes,M", FAST, ids=[f"G{g}_M{m}" for g, m in FAST])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_lane_kernel_emulated_fast_path(emulator, tmp_path, dtype, lanes, M):
    """No row of those kinds goes to the fallback, which gives the same answer, only slower: a fault in the fast
    path's own decisions (a map, a count) that the fallback would hide from the answers shows here."""
    gen = torch.Generator().manual_seed(M * 3 + lanes + list(DTYPES).index(dtype))
    x = torch.cat([make_rows(kind, (3, M), dtype, "cpu", gen) for kind in MIXED_KINDS] +
                  [crowded_rows(kind, (3, M), dtype, gen, "cpu") for kind in ("nested", "nested_tiny")])
    x = x[torch.randperm(x.shape[0], generator=gen)].contiguous()
    for ctx, notes in emu_checked(emulator, tmp_path, x, (1, 16, 32, 64), lanes, f"dtype={dtype}"):
        assert notes["fallback_rows"] == 0, f"{notes['fallback_rows']} rows left to the fallback: {ctx}"


FEW = [(4, 256), (4, 201), (8, 512), (8, 466), (16, 768), (16, 730)]


@pytest.mark.parametrize("lanes,M", FEW, ids=[f"G{g}_M{m}" for g, m in FEW])
def test_lane_kernel_emulated_few_rows(emulator, tmp_path, lanes, M):
    """Launches of 1, 3 and 9 rows (one partial warp, a full one and a partial one), one block."""
    gen = torch.Generator().manual_seed(M + lanes)
    for rows in (1, 3, 9):
        kinds = ("randn", "nan", "heavy_tail")
        x = torch.cat([make_rows(kind, (1, M), torch.float32, "cpu", gen) for kind in kinds] * 3)[:rows]
        for k in (2, SORTED_CAP[lanes], 64):
            for largest in (True, False):
                for sort in (False, True) if k <= SORTED_CAP[lanes] else (False,):
                    ctx = f"G={lanes} M={M} rows={rows} k={k} largest={largest} sorted={sort}"
                    ov, oi = emu_topk(emulator, tmp_path, x, k, lanes, largest, sort, grid=1)
                    rv, ri = rtopk.topk_ref(x, k, -1, largest, sort)
                    assert torch.equal(oi, ri), f"indices differ from reference: {ctx}"
                    assert torch.equal(bits(ov), bits(rv)), f"values differ from reference: {ctx}"


FUZZ_CASES = int(os.environ.get("RTOPK_EMU_FUZZ_CASES", "200"))


def test_lane_kernel_emulated_fuzz(emulator, tmp_path):
    """Seeded random launches: lanes a row, row length, dtype, row count (1..77), each row's kind (crowded rows
    too), k, direction, order and grid; RTOPK_EMU_FUZZ_CASES sets the number (200)."""
    rng = random.Random(20261125)
    gen = torch.Generator().manual_seed(20261125)
    for case in range(FUZZ_CASES):
        lanes = rng.choice([4, 8, 16])
        M = rng.randint(64 * lanes - 63, 64 * lanes) if lanes < 16 else rng.randint(721, 768)
        dtype = rng.choice(list(DTYPES))
        if lanes > 4 and dtype != torch.float32 and M % 2:
            M += -1 if M % 64 == 1 or M == 721 else 1  # (16-bit rows of odd length: not for 8 or 16 lanes)
        rows = []
        for _ in range(rng.choice([1, 2, 5, 8, 13, 40, 77])):
            if rng.random() < 0.15:
                rows.append(crowded_rows(rng.choice(CROWDED_KINDS), (1, M), dtype, gen, "cpu"))
            else:
                rows.append(make_rows(rng.choice(MIXED_KINDS + ["randn"] * 4), (1, M), dtype, "cpu", gen))
        x = torch.cat(rows).contiguous()
        largest, sort, grid = rng.random() < 0.5, rng.random() < 0.5, rng.choice([1, 2, 3])
        if sort:
            k = rng.choice([2, 3, rng.randint(2, SORTED_CAP[lanes]), SORTED_CAP[lanes]])
        else:
            k = rng.choice([1, 2, 3, rng.randint(1, 128), rng.randint(60, 128), 128])
        ctx = f"case {case}: G={lanes} M={M} dtype={dtype} rows={x.shape[0]} k={k} largest={largest} sorted={sort}"
        ov, oi = emu_topk(emulator, tmp_path, x, k, lanes, largest, sort, grid)
        rv, ri = rtopk.topk_ref(x, k, -1, largest, sort)
        assert torch.equal(oi, ri), f"indices differ from reference: {ctx}"
        assert torch.equal(bits(ov), bits(rv)), f"values differ from reference: {ctx}"


# Heavy tails: warps with such a row are mapped by their values' keys (lane_tail_map); rows of every such kind,
# alone and beside randn rows in the same warps, finish in the kernel and match the reference.
TAILS = [(4, 256), (4, 203), (8, 512), (8, 488), (16, 768), (16, 744)]


@pytest.mark.parametrize("lanes,M", TAILS, ids=[f"G{g}_M{m}" for g, m in TAILS])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_lane_kernel_emulated_tails(emulator, tmp_path, dtype, lanes, M):
    gen = torch.Generator().manual_seed(M * 5 + lanes + list(DTYPES).index(dtype))
    rows_a_warp = 32 // lanes
    tails = torch.cat([make_rows(kind, (rows_a_warp, M), dtype, "cpu", gen) for kind in TAIL_KINDS])
    randn = make_rows("randn", (rows_a_warp * len(TAIL_KINDS), M), dtype, "cpu", gen)
    mixed = torch.stack([tails, randn], 1).reshape(-1, M)  # each warp: heavy and randn rows
    for name, x, tail_warps in (("tails", tails, len(TAIL_KINDS)), ("randn", randn, 0),
                                ("mixed", mixed, 2 * len(TAIL_KINDS))):
        for ctx, notes in emu_checked(emulator, tmp_path, x, (1, 16, 64, 128), lanes, f"{name} dtype={dtype}"):
            assert notes["tail_warps"] == tail_warps, f"{notes}: {ctx}"
            assert name != "tails" or notes["fallback_rows"] == 0, f"{notes}: {ctx}"


# Rows offset from 0 (c + randn, c in OFFSETS: the first five within the one-FFMA map's bound, the last two past
# it), in warps of one side only and of both.
@pytest.mark.parametrize("lanes,M", TAILS, ids=[f"G{g}_M{m}" for g, m in TAILS])
def test_lane_kernel_emulated_offsets(emulator, tmp_path, lanes, M):
    gen = torch.Generator().manual_seed(M * 7 + lanes)
    rows_a_warp = 32 // lanes
    for dtype in (torch.float32, torch.bfloat16):
        parts = [c + torch.randn(rows_a_warp, M, generator=gen, dtype=torch.float64) for c in OFFSETS]
        # (16-bit rows never pass the bound: their span is at least an ulp of their top, 2^-8 of it; at these
        # offsets many are rows of a few values, or of one.)
        runs = (("near", torch.cat(parts[:5]), 0), ("far", torch.cat(parts[5:]), 2 * (dtype == torch.float32)),
                ("mixed", torch.stack(parts, 1).reshape(-1, M), None))  # (mixed: each warp holds several offsets)
        for name, x, offset_warps in runs:
            for ctx, notes in emu_checked(emulator, tmp_path, x.to(dtype), (1, 16, 64), lanes, f"{name} {dtype}"):
                assert notes["fallback_rows"] == 0, f"{notes}: {ctx}"
                assert offset_warps is None or notes["offset_warps"] == offset_warps, f"{notes}: {ctx}"
