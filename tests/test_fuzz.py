"""Seeded randomized differential testing of rtopk.rtopk and rtopk.topk.

Every case draws a rank, shape (row lengths from 1 to 300,000, primes and 2^n +- 1 included), dtype,
k, mode and row distribution (one for all rows, or "mixed": each row its own, so that rows of different
kinds share a warp). Exact mode must equal the plain-torch reference; every mode must keep its
invariants; on a GPU the CUDA result must equal the CPU result bit for bit. A failure prints a
reproducer. RTOPK_FUZZ_CASES sets the number of cases (default 2,000 on the CPU, 20,000 with CUDA),
RTOPK_FUZZ_SEED the seed.
"""

import os
import random

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, bits, check_invariants, make_rows

SEED = int(os.environ.get("RTOPK_FUZZ_SEED", "20261120"))
CASES = int(os.environ.get("RTOPK_FUZZ_CASES", "20000" if HAS_CUDA else "2000"))
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
DISTS = ["randn", "uniform", "ties", "equal", "inf", "nan", "all_nan", "neg_inf_heavy", "signed_zeros", "near_max",
         "denormal", "few_ulps", "ascending", "descending", "heavy_tail", "outliers", "mixed", "mixed"]
SPECIAL_M = [1, 2, 3, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 513, 1023, 1025, 2047, 2048,
             2049, 4095, 4097, 8191, 8192, 8193, 11264, 11265, 16385, 65537, 131071, 300000]
PRIMES = [5, 7, 97, 101, 509, 1021, 2039, 4093, 7919, 10007]
MAX_ELEMENTS = 400_000  # per case, so that the CPU reference stays cheap


def draw_case(rng):
    r = rng.random()
    if r < 0.25:
        M = rng.choice(SPECIAL_M)
    elif r < 0.35:
        M = rng.choice(PRIMES)
    else:
        M = int(round(2 ** rng.uniform(0, 12)))  # log-uniform 1..4096, the common sizes
    rows = max(1, min(rng.choice([1, 2, 3, 7, 16, 64, 257, 1000]), MAX_ELEMENTS // M))
    rank = rng.choice([1, 2, 3]) if rows > 1 else 1
    if rank == 1:
        shape = (M,)
        rows = 1
    elif rank == 2:
        shape = (rows, M)
    else:
        shape = (2, (rows + 1) // 2, M)
    dtype = rng.choice(DTYPES)
    k = rng.choice([0, 1, M, rng.randint(0, M), rng.randint(0, min(M, 128))])
    mode = rng.choice(["exact", "exact", "eps", "max_iter"])
    max_iter, eps = None, 0.0
    if mode == "eps":
        eps = rng.choice([1e-30, 1e-7, 1e-4, 1e-2, 0.3])
    elif mode == "max_iter":
        max_iter = rng.randint(1, 30)
    case = dict(shape=shape, dtype=dtype, k=k, max_iter=max_iter, eps=eps, dist=rng.choice(DISTS), api="rtopk")
    if rng.random() < 0.5:  # the drop-in API: any dim, largest or smallest, sorted or not
        dim = rng.randrange(-rank, rank)
        case.update(api="topk", dim=dim, largest=rng.random() < 0.5, sorted=rng.random() < 0.5,
                    k=min(k, shape[dim]))
    return case


def check_topk_invariants(x, k, dim, largest, sorted, values, indices):
    """k distinct in-range indices per row, values gathered from them, rank order when sorted."""
    d = dim % x.dim()
    assert values.dtype == x.dtype and indices.dtype == torch.int64
    shape = list(x.shape)
    shape[d] = k
    assert list(values.shape) == shape and list(indices.shape) == shape
    if k == 0 or x.numel() == 0:
        return
    assert torch.equal(bits(x).gather(d, indices), bits(values)), "values != input[indices]"
    iv = indices.movedim(d, -1)
    assert int(iv.min()) >= 0 and int(iv.max()) < x.shape[d], "index out of range"
    if k > 1:
        assert bool((iv.sort(-1).values.diff(dim=-1) > 0).all()), "repeated indices"
        if sorted:
            key = values.movedim(d, -1).double()
            nan = torch.isnan(key)
            key = torch.where(nan, float("inf") if largest else float("-inf"), key if largest else -key)
            ok = key.diff(dim=-1) <= 0
            # Two infinities (or NaN next to +-inf) give NaN differences: equal ranks, fine.
            assert bool((ok | torch.isnan(key.diff(dim=-1))).all()), "not in rank order"
        else:
            assert bool((iv.diff(dim=-1) > 0).all()), "unsorted output not in index order"


def run_topk_case(case, gen):
    x = make_rows(case["dist"], case["shape"], case["dtype"], "cpu", gen)
    k, max_iter, eps = case["k"], case["max_iter"], case["eps"]
    args = (x, k, case["dim"], case["largest"], case["sorted"])
    values, indices = rtopk.topk(*args, max_iter=max_iter, eps=eps)
    check_topk_invariants(*args, values, indices)
    if max_iter is None and eps == 0.0:
        ref_v, ref_i = rtopk.topk_ref(*args)
        assert torch.equal(indices, ref_i), "indices differ from the exact reference"
        assert torch.equal(bits(values), bits(ref_v)), "values differ from the exact reference"
    if HAS_CUDA:
        gv, gi = rtopk.topk(x.cuda(), *args[1:], max_iter=max_iter, eps=eps)
        assert torch.equal(gi.cpu(), indices), "CUDA indices differ from CPU"
        assert torch.equal(bits(gv.cpu()), bits(values)), "CUDA values differ from CPU"


def run_case(case, gen):
    if case["api"] == "topk":
        return run_topk_case(case, gen)
    x = make_rows(case["dist"], case["shape"], case["dtype"], "cpu", gen)
    k, max_iter, eps = case["k"], case["max_iter"], case["eps"]
    values, indices = rtopk.rtopk(x, k, max_iter=max_iter, eps=eps)
    check_invariants(x, k, values, indices)
    if max_iter is None and eps == 0.0:
        ref_v, ref_i = rtopk.rtopk_ref(x, k)
        assert torch.equal(indices, ref_i), "indices differ from the exact reference"
        assert torch.equal(bits(values), bits(ref_v)), "values differ from the exact reference"
    if HAS_CUDA:
        gv, gi = rtopk.rtopk(x.cuda(), k, max_iter=max_iter, eps=eps)
        assert torch.equal(gi.cpu(), indices), "CUDA indices differ from CPU"
        assert torch.equal(bits(gv.cpu()), bits(values)), "CUDA values differ from CPU"


BATCHES = 20


@pytest.mark.parametrize("batch", range(BATCHES))
def test_fuzz(batch):
    rng = random.Random(SEED * 1000 + batch)
    gen = torch.Generator().manual_seed(SEED + batch)
    for i in range(CASES // BATCHES):
        case = draw_case(rng)
        try:
            run_case(case, gen)
        except AssertionError as err:
            raise AssertionError(
                f"fuzz failure (seed={SEED}, batch={batch}, case={i}): shape={case['shape']} dtype={case['dtype']} "
                f"k={case['k']} max_iter={case['max_iter']} eps={case['eps']} dist={case['dist']} api={case['api']} "
                f"dim={case.get('dim')} largest={case.get('largest')} sorted={case.get('sorted')}: {err}"
            ) from None
