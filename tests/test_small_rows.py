"""Rows of up to 256 elements in exact mode, which the CUDA backend gives to its short-row kernels (rows of
up to 32 elements: a row per 2..32 lanes, each element ranked by shuffles; 33..256 elements at small k:
a sorting network a thread a row where rows are whole 16-byte words, else k rounds of a warp maximum): against the plain-torch reference bit for bit, in index order (rtopk.rtopk)
and rank order (rtopk.topk), largest and smallest, every row length around the kernels' lane groups and
slot levels, k on both sides of the round kernel's limits, row counts past one grid's stride and not a
multiple of the rows a warp takes, row starts off a 16-byte boundary, and rows of ties, NaN and +-inf.  The other
modes (max_iter, eps) on rows of up to 64 elements (32 for fp64) take a thread a row (thread_rows_kernel, make_plan
on the thread's registers): against the CPU backend bit for bit.  Skipped without CUDA."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, bits, check_matches_ref, make_rows
from test_mid_rows import misaligned

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
RANK_LENGTHS = [2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32]  # the rank kernel's lane groups 2..32 and edges
ROUND_LENGTHS = [33, 40, 64, 65, 96, 97, 128, 129, 192, 193, 255, 256, 257]  # slot levels 2..8, and past
KINDS = ["randn", "ties", "equal", "signed_zeros", "inf", "nan", "all_nan", "neg_inf_heavy", "near_max",
         "denormal", "few_ulps", "heavy_tail", "ascending"]
TOPK_KINDS = ["randn", "ties", "signed_zeros", "nan", "all_nan", "few_ulps"]


def ks(M):
    return sorted(k for k in {1, 2, 3, 5, 8, 9, 16, 17, 32, 33, M - 1, M} if 1 <= k <= M)


def check_topk(x, k, ctx):
    """rtopk.topk in both orders and directions against topk_ref, bit for bit."""
    for largest in (True, False):
        for sorted_ in (True, False):
            v, i = rtopk.topk(x, k, largest=largest, sorted=sorted_)
            rv, ri = rtopk.topk_ref(x, k, -1, largest, sorted_)
            c = f"{ctx} largest={largest} sorted={sorted_}"
            assert torch.equal(i, ri), f"indices differ from reference: {c}"
            assert torch.equal(bits(v), bits(rv)), f"values differ from reference: {c}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lengths", [RANK_LENGTHS, ROUND_LENGTHS], ids=["rank", "round"])
def test_small_rows_match_reference(dtype, lengths):
    gen = torch.Generator().manual_seed(101 + DTYPES.index(dtype))
    for M in lengths:
        for kind in KINDS:
            # 37 rows: neither a multiple of the rows a warp takes (up to 64) nor of a block's.
            x = make_rows(kind, (37, M), dtype, "cpu", gen).cuda()
            for k in ks(M):
                ctx = f"M={M} kind={kind} k={k} dtype={dtype}"
                check_matches_ref(x, k, ctx)
                if kind in TOPK_KINDS:
                    check_topk(x, k, ctx)
            check_matches_ref(misaligned(x), ks(M)[len(ks(M)) // 2], f"misaligned M={M} kind={kind}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_small_rows_past_one_grid_stride(dtype):
    """More rows than one launch covers at once (each warp then walks on by the grid's stride)."""
    gen = torch.Generator().manual_seed(7)
    for M, N in [(2, 600_001), (8, 150_001), (32, 40_001), (64, 20_001), (256, 20_001)]:
        x = make_rows("randn", (N, M), dtype, "cpu", gen).cuda()
        for k in sorted({1, min(M - 1, 8)}):
            ctx = f"N={N} M={M} k={k} dtype={dtype}"
            check_matches_ref(x, k, ctx)
            v, i = rtopk.topk(x, k)
            rv, ri = rtopk.topk_ref(x, k)
            assert torch.equal(i, ri) and torch.equal(bits(v), bits(rv)), ctx


def test_small_rows_ties_at_the_kth_value_are_taken_by_index():
    """The k-th value repeated across lanes and slots: the lowest indices are taken, in both orders."""
    gen = torch.Generator().manual_seed(3)
    for M in (5, 16, 32, 33, 100, 256):
        x = torch.randn(64, M, generator=gen, dtype=torch.float64)
        x = torch.where(torch.rand(64, M, generator=gen) < 0.4, torch.full_like(x, 0.5), x)
        x[:, -1] = 0.5  # a tie at the end of every row
        for k in sorted(k for k in {1, 2, 4, 8, M // 2, M - 1} if 1 <= k <= M):
            for dtype in (torch.float32, torch.float16):
                xc = x.to(dtype).cuda()
                ctx = f"M={M} k={k} dtype={dtype}"
                check_matches_ref(xc, k, ctx)
                check_topk(xc, k, ctx)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_small_rows_every_mode_matches_cpu(dtype):
    """Algorithm 2 (max_iter) and the eps search on rows of up to 64 elements run a thread a row on the CPU's plan
    (33.. from 65536 rows); at k == M rows of up to 32 take the rank kernel's exact instance (every mode selects the
    whole row); the rest keep the value kernels.  Bit for bit with the CPU, both directions and both orders, rows
    whose plans stop at different iterations in one warp."""
    gen = torch.Generator().manual_seed(17 + DTYPES.index(dtype))
    modes = [(2, 0.0), (4, 0.0), (30, 0.0), (None, 1e-2), (3, 1e-3)]
    for M in RANK_LENGTHS + [33, 100, 256]:
        for kind in ["randn", "ties", "inf", "nan", "all_nan", "neg_inf_heavy", "equal"]:
            x = make_rows(kind, (37, M), dtype, "cpu", gen)
            xc = x.cuda()
            for k in sorted({1, 3, M // 2, M - 1, M} & set(range(1, M + 1))):
                for max_iter, eps in modes:
                    for largest, sorted_ in ((True, True), (False, False), (True, False)):
                        c = rtopk.topk(x, k, largest=largest, sorted=sorted_, max_iter=max_iter, eps=eps)
                        g = rtopk.topk(xc, k, largest=largest, sorted=sorted_, max_iter=max_iter, eps=eps)
                        ctx = f"M={M} {kind} k={k} max_iter={max_iter} eps={eps} largest={largest} sorted={sorted_}"
                        assert torch.equal(g.indices.cpu(), c.indices), ctx
                        assert torch.equal(bits(g.values.cpu()), bits(c.values)), ctx


THREAD_LENGTHS = [3, 8, 9, 12, 16, 17, 24, 31, 32, 33, 40, 48, 63, 64, 65]  # N = 8 / 16 / 32 / 64, and past


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_thread_rows_every_mode_matches_cpu(dtype):
    """max_iter and eps a thread a row, at every row length around its register rows (8 / 16 / 32 / 64 keys; fp64
    up to 32; rows of 33.. in launches of 65536 rows), rows in whole 16-byte words (vector loads; through a shared
    tile from 65536 rows, as the rows of 33.. here) and not, the same rows starting off a 16-byte boundary (element
    loads), row counts past one grid stride; against the CPU backend bit for bit."""
    gen = torch.Generator().manual_seed(71 + DTYPES.index(dtype))
    modes = [(1, 0.0), (4, 0.0), (13, 0.0), (None, 1e-3), (2, 0.3)]
    for M in THREAD_LENGTHS:
        x = torch.cat([make_rows(kind, (9, M), dtype, "cpu", gen) for kind in KINDS])
        x = x[torch.randperm(x.shape[0], generator=gen)]
        # (Rows of more than 32 take the kernel from kThreadRowsWideMinRows rows, rows of 9.. in whole 16-byte words
        # its shared tile from kThreadTileMinRows: x repeated on the GPU; rows of 9..32 both ways.)
        big = -(-65536 // x.shape[0])
        for reps, xc in [(r, t) for r in ((1, big) if 8 < M <= 32 else (big if M > 32 else 1,))
                         for t in (x.cuda().repeat(r, 1), misaligned(x.cuda().repeat(r, 1)))]:
            for k in sorted({1, 2, 5, M // 2, M - 1} & set(range(1, M))):
                for max_iter, eps in modes:
                    for largest, sorted_ in ((True, True), (False, True), (True, False), (False, False)):
                        c = rtopk.topk(x, k, largest=largest, sorted=sorted_, max_iter=max_iter, eps=eps)
                        g = rtopk.topk(xc, k, largest=largest, sorted=sorted_, max_iter=max_iter, eps=eps)
                        ctx = (f"M={M} k={k} max_iter={max_iter} eps={eps} largest={largest} sorted={sorted_} "
                               f"aligned={xc.data_ptr() % 16 == 0} rows={xc.shape[0]}")
                        assert torch.equal(g.indices.cpu(), c.indices.repeat(reps, 1)), ctx
                        assert torch.equal(bits(g.values.cpu()), bits(c.values.repeat(reps, 1))), ctx
    # Past one grid stride (every thread then walks on by the grid's rows).
    x = make_rows("randn", (300_001, 48), dtype, "cpu", gen)
    c = rtopk.rtopk(x, 5, max_iter=3)
    g = rtopk.rtopk(x.cuda(), 5, max_iter=3)
    assert torch.equal(g[1].cpu(), c[1]) and torch.equal(bits(g[0].cpu()), bits(c[0]))
