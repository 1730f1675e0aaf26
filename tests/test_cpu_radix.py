"""The CPU backend's exact mode on rows of 1024+ elements finds the k-th key by a radix select (csrc/rtopk_cpu.cpp,
radix_exact_plan) instead of the shared bisection's counts; its answer must be the plain-torch reference's bit for
bit: rows of every kind (ties at the k-th value, NaN, +-inf, signed zeros, crowds, denormals), every dtype, both
directions, k from 1 to the whole row, and rows just below the length where it starts (the bisection's)."""

import pytest
import torch

import rtopk
from test_group_rows import same
from test_stream_rows import KINDS, mixed_rows


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str)
@pytest.mark.parametrize("M", [1023, 1024, 4099, 20000])
def test_cpu_radix_matches_reference(M, dtype):
    x = mixed_rows(M, dtype, seed=M, rows=2 * len(KINDS))
    for k in (1, 2, 37, 512, M - 1, M):
        for largest in (True, False):
            try:
                same(rtopk.topk_ref(x, k, largest=largest, sorted=False),
                     rtopk.topk(x, k, largest=largest, sorted=False))
            except AssertionError as err:
                raise AssertionError(f"M={M} {dtype} k={k} largest={largest}: {err}") from None
    same(rtopk.topk_ref(x, 40, sorted=True), rtopk.topk(x, 40, sorted=True))
    same(rtopk.topk_ref(x, 40, sorted=False), rtopk.rtopk(x, 40))


def test_cpu_radix_tied_bins():
    """Keys that share their top 11, 22 or all 32 bits (the levels' digits) across the k-th value: a level's bin then
    holds every candidate, and the ties at T are taken lowest index first."""
    gen = torch.Generator().manual_seed(9)
    base = torch.tensor(1.5).view(torch.int32)
    for spread in (1, 1 << 10, 1 << 21):
        bits = base + torch.randint(0, spread, (6, 5000), generator=gen, dtype=torch.int32)
        x = bits.view(torch.float32)
        for k in (1, 100, 2500, 4999):
            same(rtopk.topk_ref(x, k, sorted=False), rtopk.topk(x, k, sorted=False))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_cpu_k1_matches_reference(dtype):
    """Exact mode at k = 1 takes the largest key's first index directly (every row kind: the maximum tied, NaN,
    +-inf, signed zeros, all NaN), rows of 1..3000 elements, both directions, sorted or not."""
    for M in (1, 2, 7, 33, 256, 3000):
        x = mixed_rows(M, dtype, seed=M, rows=2 * len(KINDS))
        for largest in (True, False):
            for sorted_ in (False, True):
                try:
                    same(rtopk.topk_ref(x, 1, largest=largest, sorted=sorted_),
                         rtopk.topk(x, 1, largest=largest, sorted=sorted_))
                except AssertionError as err:
                    raise AssertionError(f"M={M} {dtype} largest={largest}: {err}") from None
        same(rtopk.topk_ref(x, 1, sorted=False), rtopk.rtopk(x, 1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_cpu_sampled_threshold_fallback(dtype):
    """Exact mode at small k on rows of 1024+ first keeps the keys at or above a threshold taken from a sample of
    every (M / 1024)-th key; rows whose sampled keys are the largest make that threshold keep fewer than k keys, and
    those rows take the full path; rows with the k-th value tied past the threshold's copies keep too many."""
    gen = torch.Generator().manual_seed(12)
    M = 4096
    x = torch.randn(8, M, generator=gen).to(dtype)
    sampled = torch.arange(1024) * M // 1024
    x[:4, sampled] = (100 + torch.arange(1024, dtype=torch.float32)).to(dtype)  # the sample's top: only 1024 keys
    x[4:6, sampled] = -100.0  # the sample's threshold below every other key
    x[6:] = torch.randint(0, 3, (2, M), generator=gen).to(dtype)  # three values: L tied with a third of the row
    for k in (2, 40, 64, 300):
        for largest in (True, False):
            for sorted_ in (False, True):
                same(rtopk.topk_ref(x, k, largest=largest, sorted=sorted_),
                     rtopk.topk(x, k, largest=largest, sorted=sorted_))
