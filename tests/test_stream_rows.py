"""Long 16/32-bit rows in exact mode with k <= 512 and enough rows to fill the device (>= 4 rows a SM),
which the CUDA backend streams one warp a row, keeping a list of the elements that may still rank in
the top k and cutting it when full (csrc/cuda/rtopk_stream_values.cuh).  Rows of many kinds interleaved
in one call (ascending rows cut the list over and over; ties, NaN, +-inf, signed zeros and crowds fall on
the k-th value), 16-byte aligned rows and rows that are not (one element a load), against the plain-torch
reference bit for bit.  Skipped without CUDA."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, check_invariants, make_rows
from test_group_rows import same

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

ROWS = 700  # above 4 rows a SM on the H200 (132 SMs), so that the streaming kernel takes the call
KINDS = ["randn", "ascending", "descending", "ties", "equal", "signed_zeros", "inf", "nan", "all_nan",
         "neg_inf_heavy", "few_ulps", "heavy_tail", "outliers", "denormal", "near_max", "uniform"]


def mixed_rows(M, dtype, seed, rows=ROWS):
    """rows x M, row r of kind KINDS[r % len(KINDS)], plus a tie or a crowd at a random place."""
    gen = torch.Generator().manual_seed(seed)
    per = (rows + len(KINDS) - 1) // len(KINDS)
    parts = [make_rows(kind, (per, M), dtype, "cpu", gen) for kind in KINDS]
    x = torch.stack(parts, dim=1).reshape(per * len(KINDS), M)[:rows].clone()
    # Every 5th row: 40 copies of one value spread over the row (a tie around the k-th value).
    for r in range(0, rows, 5):
        pos = torch.randperm(M, generator=gen)[:40]
        x[r, pos] = x[r, int(pos[0])].clone()
    return x


KS = [1, 8, 16, 64, 65, 128, 500, 512]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("M", [2049, 2052, 3000, 4096, 6001, 8192, 16385])
def test_stream_matches_reference(M, dtype):
    x = mixed_rows(M, dtype, seed=M)
    xc = x.cuda()
    for k in KS:
        for largest in (True, False):
            ctx = f"M={M} k={k} largest={largest} {dtype}"
            ref = rtopk.topk_ref(x, k, largest=largest, sorted=False)
            got = rtopk.topk(xc, k, largest=largest, sorted=False)
            check_invariants(x, k, got[0].cpu(), got[1].cpu(), ctx)
            same(ref, got)
    for k in (8, 500):
        ref = rtopk.topk_ref(x, k, largest=True, sorted=True)
        same(ref, rtopk.topk(xc, k, largest=True, sorted=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_stream_long_rows(dtype):
    """Rows past the group kernel's 16384 elements (before: one block a row)."""
    x = mixed_rows(40000, dtype, seed=3, rows=560)
    xc = x.cuda()
    for k in (8, 129, 512):
        for largest in (True, False):
            same(rtopk.topk_ref(x, k, largest=largest, sorted=False),
                 rtopk.topk(xc, k, largest=largest, sorted=False))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_stream_unaligned_rows(dtype):
    """A contiguous input that starts 1 element past a 16-byte boundary: one element a load (M = 5000,
    so that k = 512 streams too: at 3073..4096 elements it goes to the group kernel)."""
    M = 5000
    x = mixed_rows(M, dtype, seed=11)
    base = torch.empty(ROWS * M + 1, dtype=dtype, device="cuda")
    xc = base[1:].view(ROWS, M)
    xc.copy_(x)
    assert xc.data_ptr() % 16 != 0
    for k in (8, 128, 512):
        same(rtopk.topk_ref(x, k, sorted=False), rtopk.topk(xc, k, sorted=False))


def test_stream_limits_fall_back():
    """k = 513 (past the streaming kernel's limit) and max_iter / eps (not streamed) go to the group kernel
    and still match the CPU."""
    x = mixed_rows(4096, torch.float32, seed=5)
    xc = x.cuda()
    same(rtopk.topk_ref(x, 513, sorted=False), rtopk.topk(xc, 513, sorted=False))
    for mode in (dict(max_iter=4), dict(eps=1e-3)):
        same(rtopk.rtopk(x, 64, **mode), rtopk.rtopk(xc, 64, **mode))


def test_stream_randn_many_rows():
    """Many more rows than resident warps (each warp walks rows), randn, both directions."""
    gen = torch.Generator().manual_seed(17)
    x = torch.randn(6000, 3000, generator=gen)
    xc = x.cuda()
    for k in (16, 256):
        for largest in (True, False):
            same(rtopk.topk_ref(x, k, largest=largest, sorted=False),
                 rtopk.topk(xc, k, largest=largest, sorted=False))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_stream_staircase_rows(dtype):
    """Rows of runs of equal values, rising (streamed from the end, where an element tied with the
    list's least key comes earlier by index and must enter) or falling (streamed from the start),
    with k cutting inside a run; whole rows equal but for one end."""
    M = 5000
    steps = (torch.arange(M) // 37).float()
    rows = [steps, -steps, steps.flip(0), (steps % 7) * 1000 + steps]
    end_up = torch.zeros(M)
    end_up[-1] = 1.0
    rows += [end_up, -end_up, end_up.flip(0)]
    x = torch.stack([rows[r % len(rows)] for r in range(ROWS)]).to(dtype)
    xc = x.cuda()
    for k in (1, 20, 37, 40, 100, 128, 300, 512):
        for largest in (True, False):
            same(rtopk.topk_ref(x, k, largest=largest, sorted=False),
                 rtopk.topk(xc, k, largest=largest, sorted=False))
