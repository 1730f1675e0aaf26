"""Few long rows in exact mode (fewer than 4 rows a SM, 16/32-bit rows of 16385+ elements whose length is a multiple
of 16 bytes): the CUDA backend cuts each row into segments, takes every segment's top k with the streaming kernel
and then the rows' top k among those candidates (csrc/cuda/rtopk_launch.h, split_rows).  The answer must be the
row's own, ties and their index order included.  The CPU test checks that argument with the CPU backend alone (the
same two steps on segments, against the whole rows); the CUDA tests check the launches against the CPU bit for bit,
rows of every kind, both directions, sorted and not, k up to the streaming kernel's 512, and shapes on either side
of the split's conditions."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA
from test_group_rows import same
from test_stream_rows import KINDS, mixed_rows


def split_topk(x, k, seg, largest):
    """The split's two steps on the CPU backend: segments of seg elements (the last one to the row's end), their
    top k in index order with the row's indices, then the top k of each row's candidates, mapped back."""
    cols = x.shape[1]
    segs = cols // seg
    vals, idxs = [], []
    for s in range(segs):
        first = s * seg
        last = cols if s == segs - 1 else first + seg
        v, i = rtopk.topk(x[:, first:last].contiguous(), k, largest=largest, sorted=False)
        vals.append(v)
        idxs.append(i + first)
    cand_v, cand_i = torch.cat(vals, dim=1), torch.cat(idxs, dim=1)
    v, pos = rtopk.topk(cand_v, k, largest=largest, sorted=False)
    return v, cand_i.gather(1, pos)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_split_argument_on_cpu(dtype):
    """Every kind of row (ties at the k-th value, NaN, +-inf, signed zeros, crowds), segments shorter than k's
    share of the row and k past a segment's distinct values: the two steps give the whole row's answer."""
    x = mixed_rows(3000, dtype, seed=3, rows=2 * len(KINDS))
    for k in (1, 7, 64, 200):
        for largest in (True, False):
            got = split_topk(x, k, seg=700, largest=largest)
            same(rtopk.topk(x, k, largest=largest, sorted=False), got)


cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")


def check(x, ks, sorted_modes=(False, True)):
    xc = x.cuda()
    for k in ks:
        for largest in (True, False):
            for sorted_ in sorted_modes:
                ctx = f"{tuple(x.shape)} {x.dtype} k={k} largest={largest} sorted={sorted_}"
                try:
                    same(rtopk.topk(x, k, largest=largest, sorted=sorted_),
                         rtopk.topk(xc, k, largest=largest, sorted=sorted_))
                except AssertionError as err:
                    raise AssertionError(f"{ctx}: {err}") from None
        ctx = f"{tuple(x.shape)} {x.dtype} k={k} rtopk"
        try:
            same(rtopk.rtopk(x, k), rtopk.rtopk(xc, k))
        except AssertionError as err:
            raise AssertionError(f"{ctx}: {err}") from None


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("M", [16392, 20000, 65536, 128256])
def test_split_rows_match_host(M, dtype):
    x = mixed_rows(M, dtype, seed=M, rows=len(KINDS))
    check(x, [1, 50, 64, 65, 512])


@cuda
def test_split_rows_long_and_wide_k():
    """2^20 elements a row: k = 64 cuts 4096-element segments (256 a row), k = 512 longer ones (the candidates
    stay within 16384 a row)."""
    x = mixed_rows(1 << 20, torch.float32, seed=20, rows=4)
    check(x, [64, 512], sorted_modes=(False,))


@cuda
@pytest.mark.parametrize("rows", [1, 2, 131, 527])
def test_split_rows_counts(rows):
    """From one row to one less than the streaming kernel's 4 a SM (H200: 528), of randn and heavy ties."""
    gen = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 24576, generator=gen)
    x[::2] = torch.randint(0, 40, (x[::2].shape[0], 24576), generator=gen).float()
    check(x, [1, 33, 300], sorted_modes=(False,))


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_not_split_rows_match_host(dtype):
    """Shapes the split leaves to the block kernel: a length that is not a multiple of 16 bytes, an input that
    does not start 16-byte aligned, k past 512."""
    check(mixed_rows(20001, dtype, seed=1, rows=len(KINDS)), [50])
    x = mixed_rows(20000, dtype, seed=2, rows=len(KINDS))
    buf = torch.empty(x.numel() + 1, dtype=dtype, device="cuda")
    xc = buf[1:].view(x.shape)
    xc.copy_(x)
    same(rtopk.topk(x, 50, sorted=False), rtopk.topk(xc, 50, sorted=False))
    check(mixed_rows(20000, dtype, seed=3, rows=4), [513], sorted_modes=(False,))
