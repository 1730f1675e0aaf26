"""Rows of 257..768 elements (the warp kernels of 12, 16 and 24 values per lane, whose exact cut lists
every element at or above its bracket and selects from that list): every path -- the list and
candidate compactions, ties at the k-th value ranked by index, rows with NaN or +-inf, the general
plan's tie quota, k above the staging cap -- for row starts on and off a 16-byte boundary, compared
bit for bit with the plain-torch reference."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, check_matches_ref, make_rows

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

# Lengths at the 12, 16 and 24 values-a-lane levels and their edges; multiples of 4 or not.
M_MID = [257, 383, 385, 512, 513, 700, 766, 768]
KINDS = ["randn", "ties", "equal", "few_ulps", "inf", "nan", "all_nan", "heavy_tail", "ascending"]


def misaligned(x):
    """The same rows starting one element past a 16-byte boundary."""
    flat = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
    view = flat[1:].view(x.shape)
    view.copy_(x)
    assert view.is_contiguous() and view.data_ptr() % 16 != 0
    return view


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("M", M_MID)
def test_mid_rows_match_reference(dtype, M):
    gen = torch.Generator().manual_seed(31 * M + 7)
    for kind in KINDS:
        x = make_rows(kind, (40, M), dtype, "cpu", gen).cuda()
        for k in sorted({1, 33, 128, 129, M}):
            for sign in (1, -1):
                xs = x * sign if kind != "all_nan" else x
                for name, xin in (("aligned", xs), ("misaligned", misaligned(xs))):
                    ctx = f"M={M} kind={kind} k={k} sign={sign} {name} dtype={dtype}"
                    check_matches_ref(xin, k, ctx)
                    if sign == 1:
                        smallest = rtopk.topk(xin, k, largest=False, sorted=False)
                        ref = torch.topk(xin.double(), k, largest=False, sorted=True).values
                        got = smallest.values.double().sort().values
                        assert torch.equal(got.nan_to_num(7.0), ref.sort().values.nan_to_num(7.0)), ctx


def test_mid_rows_tie_quota_spread_over_the_row():
    """The k-th value repeated all over the row (30% of it): the first ties by index are taken."""
    gen = torch.Generator().manual_seed(5)
    for M in (384, 512, 768):
        x = torch.randn(64, M, generator=gen, dtype=torch.float64)
        x = torch.where(torch.rand(64, M, generator=gen) < 0.3, torch.full_like(x, 0.25), x)
        for k in (10, 60, 100, 128, 150, 300):
            for dtype in (torch.float32, torch.bfloat16):
                check_matches_ref(x.to(dtype).cuda(), k, f"M={M} k={k} dtype={dtype}")
