"""The CPU backend's exact mode on short rows at small k (rows of up to 64 elements, k <= 8, and k = 1 on any row)
takes the largest key k times instead of the shared plan (csrc/rtopk_cpu.cpp, cpu_rows' `few`): against the
plain-torch reference bit for bit, in index order (rtopk.rtopk, rtopk.topk sorted=False) and rank order, largest and
smallest, rows of ties, NaN, +-inf, signed zeros and denormals, and the lengths and k just past the path's limits."""

import pytest
import torch

import rtopk
from conftest import bits, check_matches_ref, make_rows
from test_small_rows import KINDS, check_topk

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
LENGTHS = [1, 2, 3, 5, 8, 9, 16, 31, 33, 63, 64, 65, 100]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cpu_short_rows_match_reference(dtype):
    gen = torch.Generator().manual_seed(211 + DTYPES.index(dtype))
    for M in LENGTHS:
        for kind in KINDS:
            x = make_rows(kind, (37, M), dtype, "cpu", gen)
            for k in sorted({1, 2, 3, 5, 7, 8, 9, M} & set(range(1, M + 1))):
                ctx = f"M={M} kind={kind} k={k} dtype={dtype}"
                check_matches_ref(x, k, ctx)
                check_topk(x, k, ctx)


def test_cpu_short_rows_ties_taken_by_index():
    """The k-th value repeated through the row (and at its end): the lowest indices are taken, in both orders;
    rows of one value take their first k."""
    gen = torch.Generator().manual_seed(5)
    for M in (4, 8, 17, 64):
        x = torch.randn(64, M, generator=gen, dtype=torch.float64)
        x = torch.where(torch.rand(64, M, generator=gen) < 0.5, torch.full_like(x, 0.25), x)
        x[:, -1] = 0.25
        x[:3] = -1.5  # rows of one value
        for dtype in (torch.float32, torch.bfloat16, torch.float64):
            for k in sorted({1, 2, 3, 8} & set(range(1, M + 1))):
                ctx = f"M={M} k={k} dtype={dtype}"
                check_matches_ref(x.to(dtype), k, ctx)
                check_topk(x.to(dtype), k, ctx)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cpu_whole_row_every_mode(dtype):
    """k == M: every mode selects the whole row, which comes back as itself in index order (a copy on the CPU),
    or in rank order when sorted (the reference's)."""
    gen = torch.Generator().manual_seed(31 + DTYPES.index(dtype))
    for M in (1, 5, 8, 64, 300):
        for kind in ("randn", "ties", "nan", "inf"):
            x = make_rows(kind, (9, M), dtype, "cpu", gen)
            for max_iter, eps in ((None, 0.0), (2, 0.0), (None, 1e-2)):
                v, i = rtopk.rtopk(x, M, max_iter=max_iter, eps=eps)
                ctx = f"M={M} {kind} max_iter={max_iter} eps={eps}"
                assert torch.equal(i, torch.arange(M).expand(9, M)), ctx
                assert torch.equal(bits(v), bits(x)), ctx
                for largest in (True, False):
                    s = rtopk.topk(x, M, largest=largest, sorted=True, max_iter=max_iter, eps=eps)
                    r = rtopk.topk_ref(x, M, -1, largest, True)
                    assert torch.equal(s.indices, r[1]), ctx
                    assert torch.equal(bits(s.values), bits(r[0])), ctx
