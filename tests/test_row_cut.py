"""The whole-row bucket cut of the unsorted warp kernel (rows of 193..256 elements, 16/32-bit, exact
mode): rows built so that the bucket holding the k-th element has 1, 32 (the largest directly ranked)
or 33 (the crowded fallback) elements, ties inside that bucket (ranked by index), signed zeros, and
ranges whose bucket scale is not finite.  Compared with the plain-torch reference, bit for bit."""

import pytest
import torch

import rtopk
from conftest import DEVICES, check_matches_ref

M_CUT = [193, 200, 255, 256]


def crowded_rows(n_crowd, M, gen, tie=False):
    """Rows whose maximum and minimum are far apart and n_crowd elements sit within one bucket
    (1/1024 of the range) around 0.5; the rest spread over the range.  With tie, the crowd is a
    handful of distinct values (repeats in one bucket)."""
    rows = []
    for _ in range(6):
        x = torch.rand(M, generator=gen, dtype=torch.float64) * 2 - 1  # in [-1, 1)
        x = torch.where((x - 0.5).abs() < 0.01, x + 0.05, x)  # keep the crowd's bucket clear
        pos = torch.randperm(M, generator=gen)
        crowd = 0.5 + torch.rand(n_crowd, generator=gen, dtype=torch.float64) * 2e-4
        if tie:
            crowd = 0.5 + torch.randint(0, 3, (n_crowd,), generator=gen).double() * 1e-5
        x[pos[:n_crowd]] = crowd
        x[pos[n_crowd]] = 4.0  # maximum and minimum: the range [-1.5, 4]
        x[pos[n_crowd + 1]] = -1.5
        rows.append(x)
    return torch.stack(rows)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("M", M_CUT)
@pytest.mark.parametrize("n_crowd", [1, 2, 31, 32, 33, 60])
def test_row_cut_crowded_bucket(device, dtype, M, n_crowd):
    gen = torch.Generator().manual_seed(7 * M + n_crowd)
    for tie in (False, True):
        x = crowded_rows(n_crowd, M, gen, tie).to(dtype)
        above = int((x[0].double() > 0.6).sum())  # ranked above the crowd
        for k in sorted({1, above + 1, above + n_crowd // 2 + 1, above + n_crowd, M // 2, M}):
            for sign in (1, -1):  # the k smallest of -x: the same rows, directed the other way
                xs = x * sign
                ctx = f"M={M} n_crowd={n_crowd} tie={tie} k={k} sign={sign} dtype={dtype} device={device}"
                check_matches_ref(xs.to(device), k, ctx)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("M", M_CUT)
def test_row_cut_scales_and_signed_zeros(device, dtype, M):
    gen = torch.Generator().manual_seed(M)
    fi = torch.finfo(dtype)
    base = torch.randn(8, M, generator=gen, dtype=torch.float64)
    cases = {
        "overflowing_range": base.sign() * fi.max * 0.9,  # max - min overflows: no finite scale
        "tiny_range": 1.0 + base.sign() * fi.eps,  # two values one ulp apart
        "denormal_range": base * fi.smallest_normal / 8,  # scale overflows
        "signed_zeros": torch.where(base.abs() < 0.8, 0.0 * base.sign(), base.round()),
        "randn": base,
    }
    for name, x in cases.items():
        x = x.to(dtype)
        for k in (1, 17, 64, M // 2, M - 1, M):
            check_matches_ref(x.to(device), k, f"{name} M={M} k={k} dtype={dtype} device={device}")
