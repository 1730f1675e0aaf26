"""Rows of 2049..16384 elements (16/32-bit), which the CUDA backend gives to a block of warps holding
the row in registers: exact mode against the plain-torch reference, every mode against the CPU bit for
bit, over row lengths around each group size, k below and above the staging limit (128), largest and
smallest, and rows of ties, NaN and +-inf placed so that the k-th element falls on them.  Skipped
without CUDA."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, bits, make_rows

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

LENGTHS = [2049, 3000, 4096, 4097, 6001, 8192, 8193, 12345, 16384]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
DISTS = ["randn", "ties", "equal", "inf", "nan", "all_nan", "neg_inf_heavy", "signed_zeros", "near_max",
         "denormal", "few_ulps", "ascending", "heavy_tail", "outliers"]


def ks(M):
    return sorted({1, 7, 64, 128, 129, 500, M // 2, M - 1, M})


def same(cpu, gpu):
    (cv, ci), (gv, gi) = cpu, gpu
    assert torch.equal(gi.cpu(), ci), "CUDA indices differ from CPU"
    assert torch.equal(bits(gv.cpu()), bits(cv)), "CUDA values differ from CPU"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("M", LENGTHS)
def test_exact_matches_reference_and_cpu(M, dtype):
    gen = torch.Generator().manual_seed(M)
    x = make_rows("randn", (6, M), dtype, "cpu", gen)
    xc = x.cuda()
    for k in ks(M):
        ref = rtopk.rtopk_ref(x, k)
        same(ref, rtopk.rtopk(xc, k))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dist", DISTS)
@pytest.mark.parametrize("M", [3000, 8192, 12345])
def test_special_rows_match_reference(M, dist, largest):
    gen = torch.Generator().manual_seed(7 * M + len(dist))
    x = make_rows(dist, (4, M), torch.float32, "cpu", gen)
    xc = x.cuda()
    for k in ks(M):
        ref = rtopk.topk_ref(x, k, largest=largest, sorted=False)
        got = rtopk.topk(xc, k, largest=largest, sorted=False)
        same(ref, got)
        ref_s = rtopk.topk_ref(x, k, largest=largest, sorted=True)
        same(ref_s, rtopk.topk(xc, k, largest=largest, sorted=True))


@pytest.mark.parametrize("mode", [dict(max_iter=1), dict(max_iter=4), dict(max_iter=30), dict(eps=1e-3), dict(eps=0.3)])
@pytest.mark.parametrize("dist", ["randn", "ties", "inf", "nan", "neg_inf_heavy"])
@pytest.mark.parametrize("M", [4097, 8192])
def test_early_stop_and_eps_match_cpu(M, dist, mode):
    gen = torch.Generator().manual_seed(M + 31 * len(dist))
    x = make_rows(dist, (5, M), torch.float32, "cpu", gen)
    xc = x.cuda()
    for k in ks(M):
        same(rtopk.rtopk(x, k, **mode), rtopk.rtopk(xc, k, **mode))


@pytest.mark.parametrize("M", [4096, 8192])
def test_many_rows_and_k_at_tie(M):
    """More rows than resident blocks (each block walks rows), and the k-th value on a tie."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(-3, 4, (3000, M), generator=gen).float()
    xc = x.cuda()
    for k in (1, 100, 128, 300):
        same(rtopk.rtopk_ref(x, k), rtopk.rtopk(xc, k))
