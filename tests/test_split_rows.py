"""Few long rows in exact mode (fewer than 4 rows a SM, 16/32-bit rows of 16385+ elements whose length is a multiple
of 16 bytes): the CUDA backend cuts each row into segments, takes every segment's top k with the streaming kernel
and then the rows' top k among those candidates (csrc/cuda/rtopk_launch.h, split_rows).  The answer must be the
row's own, ties and their index order included.  The CPU test checks that argument with the CPU backend alone (the
same two steps on segments, against the whole rows); the CUDA tests check the launches against the CPU bit for bit,
rows of every kind, both directions, sorted and not, k up to the streaming kernel's 512, and shapes on either side
of the split's conditions.

Early stopping (max_iter 1..16) on such rows (any dtype, any length or alignment, any k) is split too: the
segments' passes gather counts, and one warp a row replays the search on them (split_early_rows); the answer must
be the CPU backend's (the same search on the whole row) bit for bit."""

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


def check_early(x, ks, iters, eps=0.0, sorted_modes=(False,), xc=None):
    xc = x.cuda() if xc is None else xc
    for k in ks:
        for max_iter in iters:
            for largest in (True, False):
                for sorted_ in sorted_modes:
                    ctx = (f"{tuple(x.shape)} {x.dtype} k={k} max_iter={max_iter} eps={eps} largest={largest} "
                           f"sorted={sorted_}")
                    try:
                        same(rtopk.topk(x, k, largest=largest, sorted=sorted_, max_iter=max_iter, eps=eps),
                             rtopk.topk(xc, k, largest=largest, sorted=sorted_, max_iter=max_iter, eps=eps))
                    except AssertionError as err:
                        raise AssertionError(f"{ctx}: {err}") from None


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str)
@pytest.mark.parametrize("M", [16385, 20001, 65536, 128256])
def test_split_early_match_host(M, dtype):
    """Every kind of row; max_iter on both sides of each round's 4 steps and past the split's 16 (the block
    kernel); k from 1 to past a segment's length."""
    x = mixed_rows(M, dtype, seed=M + 7, rows=len(KINDS))
    check_early(x, [1, 50, 3000], [1, 3, 4, 5, 8, 16, 17])
    check_early(x, [64], [4], sorted_modes=(True,))


@cuda
def test_split_early_reference():
    """Against the plain-torch reference of Algorithm 2, not only the CPU backend."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(3, 40000, generator=gen)
    xc = x.cuda()
    for max_iter in (1, 2, 4, 7, 12):
        for k in (1, 33, 999):
            rv, ri = rtopk.rtopk_early_stop_ref(x, k, max_iter)
            gv, gi = rtopk.rtopk(xc, k, max_iter=max_iter)
            assert torch.equal(gi.cpu(), ri), f"max_iter={max_iter} k={k}"
            assert torch.equal(gv.cpu(), rv), f"max_iter={max_iter} k={k}"


@cuda
@pytest.mark.parametrize("eps", [1e-4, 0.05, 1e30])
def test_split_early_eps(eps):
    """eps with max_iter: the search may stop before its first step (1e30: the count at lo, asked for alone)."""
    x = mixed_rows(30000, torch.float32, seed=11, rows=len(KINDS))
    check_early(x, [1, 77], [2, 4, 9, 16], eps=eps)


@cuda
@pytest.mark.parametrize("rows", [1, 2, 65, 66, 263, 264, 527])
def test_split_early_counts(rows):
    """From one row to past the counts the split takes (H200 / H100: rows x rounds^2 < 264, a round for each 4
    steps), randn and ties; k near the row's length (fills across every segment)."""
    gen = torch.Generator().manual_seed(rows)
    x = torch.randn(rows, 24577, generator=gen)
    x[::2] = torch.randint(0, 40, (x[::2].shape[0], 24577), generator=gen).float()
    check_early(x, [1, 300, 24570], [2, 8])


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_split_early_unaligned_and_long(dtype):
    """An input that starts 1 element into its storage (every segment starts mid-pack), and rows of 2^20."""
    x = mixed_rows(20000, dtype, seed=4, rows=len(KINDS))
    buf = torch.empty(x.numel() + 1, dtype=dtype, device="cuda")
    xc = buf[1:].view(x.shape)
    xc.copy_(x)
    check_early(x, [5, 600], [3, 6], xc=xc)
    check_early(mixed_rows(1 << 20, dtype, seed=21, rows=3), [64, 100000], [4, 10])
