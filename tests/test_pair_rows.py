"""The packed-pair kernels (csrc/cuda/rtopk_pair_rows.cuh): exact top-k of float16 / bfloat16 rows of 193..256,
385..512 and 513..768 elements in whole 16-byte words, in index order (or, for the k largest at k <= 128, 32 / 64 at
two / four lanes a row, in rank order), searched on two values a 32-bit word.  Against the CPU backend bit for bit,
with the kernels taken wherever the shapes allow (pair mode 1, ahead of the small-row kernels too), with more lanes a
row (mode 3) and never (mode 2), every kind of row mixed in one launch, both directions, k from 1 to 128 (the bracket's
low end from each group width and from the row minimum; the ties' quota on both sides of a lane's share).  The
kernel tests are skipped without CUDA."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, MIXED_KINDS, TAIL_KINDS, bits
from test_lane_rows import lane_rows

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

DTYPES = [torch.float16, torch.bfloat16]
# Whole 16-byte words: 256 / 512 / 768 the shapes' full rows; 200, 392, 520, 600, 744 padding (520 / 600: lanes
# with no element at all); 232 / 480 the last lane partly real.
LENGTHS = [200, 232, 256, 392, 480, 512, 520, 600, 744, 768]
KINDS = MIXED_KINDS + TAIL_KINDS + ["coarse"]
KS = [1, 2, 7, 16, 33, 64, 100, 128]


@pytest.fixture
def pair_mode():
    """torch.ops.rtopk._set_debug_pair_rows for one test, back to the measured dispatch (0) after it."""
    yield torch.ops.rtopk._set_debug_pair_rows
    torch.ops.rtopk._set_debug_pair_rows(0)


def rows_of_kinds(M, dtype, gen, per_kind=7):
    x = torch.cat([lane_rows(kind, (per_kind, M), dtype, gen) for kind in KINDS])
    return x[torch.randperm(x.shape[0], generator=gen)]


def modes_match_cpu(x, xc, k, pair_mode, ctx, **kw):
    """rtopk.topk(x, k, **kw) with the pair kernels taken wherever the shapes allow (mode 1), with more lanes a row (3)
    and never (2), each bit for bit against the CPU backend's answer on xc."""
    ref = rtopk.topk(xc, k, **kw)
    for mode in (1, 3, 2):
        pair_mode(mode)
        got = rtopk.topk(x, k, **kw)
        assert torch.equal(got[1].cpu(), ref[1]), f"mode={mode} {ctx}"
        assert torch.equal(bits(got[0].cpu()), bits(ref[0])), f"mode={mode} {ctx}"


@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("M", LENGTHS)
def test_pair_rows_match_cpu(dtype, M, pair_mode):
    gen = torch.Generator().manual_seed(1000 * M + DTYPES.index(dtype))
    x = rows_of_kinds(M, dtype, gen)
    xc = x.cpu()
    for k in KS:
        for largest in (True, False):
            ctx = f"M={M} k={k} largest={largest} dtype={dtype}"
            modes_match_cpu(x, xc, k, pair_mode, ctx, largest=largest, sorted=False)


@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("M", LENGTHS)
def test_pair_rows_rank_order_match_cpu(dtype, M, pair_mode):
    """Rank order in the kernels (the k largest; counted up to k = 16 / 24 / 32 at two / four / eight lanes a row,
    past it a bitonic network up to k = 32 / 64 / 128; larger k leave the kernels): every kind of row mixed, against
    the CPU's sorted answer."""
    gen = torch.Generator().manual_seed(3000 * M + DTYPES.index(dtype))
    x = rows_of_kinds(M, dtype, gen)
    xc = x.cpu()
    for k in (2, 7, 16, 17, 24, 25, 32, 33, 64, 100, 128):
        modes_match_cpu(x, xc, k, pair_mode, f"M={M} k={k} dtype={dtype}", largest=True, sorted=True)


@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_pair_rows_many_rows(dtype, pair_mode):
    """A launch of many rows (warps walk several blocks; the row count not a multiple of a warp's rows), randn and
    coarse rows (ties at the k-th value), through the measured dispatch and forced."""
    gen = torch.Generator().manual_seed(7 + DTYPES.index(dtype))
    for M, k in ((256, 16), (512, 128), (768, 64)):
        n = 2**16 + 5
        x = torch.randn(n, M, generator=gen).to(dtype)
        x[::3] = (torch.round(x[::3].double() * 8) / 8).to(dtype)
        x = x.cuda()
        ref = rtopk.topk(x.cpu(), k, sorted=False)
        ref_sorted = rtopk.topk(x.cpu(), k, sorted=True)
        for mode in (0, 1, 3):
            pair_mode(mode)
            got = rtopk.rtopk(x, k)
            ctx = f"mode={mode} M={M} k={k} dtype={dtype}"
            assert torch.equal(got[1].cpu(), ref[1]), ctx
            assert torch.equal(bits(got[0].cpu()), bits(ref[0])), ctx
            got = rtopk.topk(x, k, sorted=True)
            assert torch.equal(got[1].cpu(), ref_sorted[1]), ctx + " sorted"
            assert torch.equal(bits(got[0].cpu()), bits(ref_sorted[0])), ctx + " sorted"


def test_pair_rows_mode_checked():
    """The tuning hook names its modes (any backend: it only sets the CUDA dispatch's mode)."""
    with pytest.raises(RuntimeError, match="mode must be 0"):
        torch.ops.rtopk._set_debug_pair_rows(4)
