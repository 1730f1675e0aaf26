"""Rows of 2049..16384 elements (16/32-bit), which the CUDA backend gives to a block of warps holding
the row in registers: exact mode against the plain-torch reference, every mode against the CPU bit for
bit, over row lengths around each group size, k below and above the staging limit (128), largest and
smallest, and rows of ties, NaN and +-inf placed so that the k-th element falls on them.  Skipped
without CUDA."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, bits, check_invariants, make_rows
from test_row_cut import crowded_rows

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


# Exact mode at k >= 64 takes the whole-row bucket cut (1024 buckets of [min, max]).
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("M", [3000, 4096, 8192, 16384])
@pytest.mark.parametrize("n_crowd", [1, 32, 33, 200])
def test_bucket_cut_crowded_bucket(M, n_crowd, dtype):
    """The bucket of the k-th element holding 1, 32 (ranked directly), 33 or 200 elements (its own
    range bisected), or a few repeated values (ties ranked by index); both directions."""
    gen = torch.Generator().manual_seed(M + n_crowd)
    for tie in (False, True):
        x = crowded_rows(n_crowd, M, gen, tie).to(dtype)
        above = int((x[0].double() > 0.6).sum())  # ranked above the crowd (well over 64)
        for k in sorted({64, above + 1, above + n_crowd // 2 + 1, above + n_crowd, M // 2}):
            for sign in (1, -1):
                xs = (x * sign).cuda()
                ctx = f"M={M} n_crowd={n_crowd} tie={tie} k={k} sign={sign} dtype={dtype}"
                values, indices = rtopk.rtopk(xs, k)
                check_invariants(xs.cpu(), k, values.cpu(), indices.cpu(), ctx)
                same(rtopk.rtopk_ref(x * sign, k), (values, indices))


@pytest.mark.parametrize("M", [4096, 8192])
def test_bucket_cut_many_rows_and_scales(M):
    """More randn rows than resident blocks (the counters are reused row after row), and ranges
    whose bucket scale is not finite (overflowing, one ulp, denormal) or spans signed zeros."""
    gen = torch.Generator().manual_seed(M + 1)
    x = torch.randn(2000, M, generator=gen)
    xc = x.cuda()
    for k in (64, 65, 128, 129, 777):
        same(rtopk.rtopk_ref(x, k), rtopk.rtopk(xc, k))
        same(rtopk.topk_ref(x, k, largest=False, sorted=False), rtopk.topk(xc, k, largest=False, sorted=False))
    fi = torch.finfo(torch.float32)
    base = torch.randn(6, M, generator=gen, dtype=torch.float64)
    cases = {
        "overflowing_range": base.sign() * fi.max * 0.9,
        "tiny_range": 1.0 + base.sign() * fi.eps,
        "denormal_range": base * fi.smallest_normal / 8,
        "signed_zeros": torch.where(base.abs() < 0.8, 0.0 * base.sign(), base.round()),
    }
    for name, xs in cases.items():
        xs = xs.float()
        for k in (64, 100, M // 2, M - 1):
            same(rtopk.rtopk_ref(xs, k), rtopk.rtopk(xs.cuda(), k))


def filter_rows(kind, M, k, gen):
    """One row aimed at a branch of the group kernel's filter path (exact mode, k <= M / 16)."""
    x = torch.randn(M, generator=gen, dtype=torch.float64)
    if kind == "spikes_on_sample":  # the sampled elements (one a thread, 4 or 8 warps) are the largest
        for G in (4, 8):
            x[torch.arange(G * 32) * M // (G * 32)] = 50 + torch.rand(G * 32, generator=gen, dtype=torch.float64)
    elif kind == "one_warp":  # the top of the row inside the first warp's segment: its list overflows
        x[: M // 4] += 6.0
    elif kind == "ascending":
        x = x.sort().values
    elif kind == "two_values":
        x = torch.where(x > 0, 1.5, -0.5)
    elif kind in ("tie_at_kth", "cluster_at_kth"):  # 40 elements at the k-th value, or within 1e-6 of it
        pos = torch.randperm(M, generator=gen)
        x = x.clamp(-3, 3)
        x[pos[: k - 1]] = 10 + torch.rand(k - 1, generator=gen, dtype=torch.float64)
        crowd = torch.full((40,), 5.0, dtype=torch.float64)
        if kind == "cluster_at_kth":
            crowd += torch.rand(40, generator=gen, dtype=torch.float64) * 1e-6
        x[pos[k - 1 : k + 39]] = crowd
    elif kind == "heavy_tail":
        x = x**7
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("M", [2049, 3000, 4096, 6001, 8192])
def test_filter_path_rows(M, dtype):
    """Rows that the filter path's sample misjudges (fewer than k listed, a warp's list over its
    capacity, an expected list too large), crowds at the k-th value (one value: first by index;
    several: the whole-row path), interleaved row after row with randn rows in one call so that the
    bucket counters left by every branch are reused; k around M / 16 (the filter's limit)."""
    gen = torch.Generator().manual_seed(M)
    kinds = ["randn", "spikes_on_sample", "one_warp", "ascending", "two_values", "tie_at_kth", "cluster_at_kth",
             "heavy_tail"]
    for k in sorted({1, 8, 64, M // 16 - 1, M // 16, M // 16 + 1}):
        x = torch.stack([filter_rows(kinds[r % len(kinds)], M, k, gen) for r in range(700)]).to(dtype)
        xc = x.cuda()
        for largest in (True, False):
            ref = rtopk.topk_ref(x, k, largest=largest, sorted=False)
            got = rtopk.topk(xc, k, largest=largest, sorted=False)
            check_invariants(x, k, got[0].cpu(), got[1].cpu(), f"M={M} k={k} largest={largest} {dtype}")
            same(ref, got)
