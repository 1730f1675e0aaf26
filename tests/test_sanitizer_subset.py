"""Every CUDA kernel path once, on small inputs: the module compute-sanitizer runs over.

scripts/sanitize.sh runs it under memcheck, racecheck, initcheck and synccheck (see the README).
Each case is also checked against the CPU backend, so the module is a test on its own.
"""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, bits, make_rows

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

# Row lengths per path: the value-backed warp kernel at several slot counts (1, 3, 8, 24, 64 per
# lane), the fp64 key-backed warp kernel, the group kernel (3000, 16/32-bit), the block kernel with
# the row cached in shared memory (3000, fp64; 20000 below); the streaming kernel below
# (test_stream_rows: it needs 4 rows a SM).
SHAPES = [(5, 20), (9, 70), (7, 256), (6, 768), (3, 2048), (4, 3000), (2, 20000)]


def same_as_cpu(x, k, rows=None, **kw):
    """The CUDA backend against the CPU backend, bit for bit.  rows: x's rows repeated up to that many on the GPU
    (a launch large enough for a kernel that takes only large ones), the CPU backend run on x alone."""
    c = rtopk.topk(x, k, **kw)
    grow = (lambda t: t) if rows is None else (lambda t: t.repeat(-(-rows // x.shape[0]), 1)[:rows])
    g = rtopk.topk(grow(x.cuda()), k, **kw)
    torch.cuda.synchronize()
    assert torch.equal(grow(c.indices.cuda()), g.indices), kw
    assert torch.equal(grow(bits(c.values).cuda()), bits(g.values)), kw


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_paths(dtype, shape):
    gen = torch.Generator().manual_seed(shape[1])
    M = shape[1]
    # ties: the sorted output's bitonic fallback; randn: its counting sorts (k = 16 and 100; rows up
    # to 256 sorted whole, signed zeros re-read).
    for kind in ["randn", "nan", "ties", "signed_zeros"]:
        x = make_rows(kind, shape, dtype, "cpu", gen)
        for k in sorted({min(M, 16), min(M, 100), min(M, 200)}):
            for largest in (True, False):
                for sorted_ in (True, False):
                    same_as_cpu(x, k, largest=largest, sorted=sorted_)
            same_as_cpu(x, k, max_iter=3)
            same_as_cpu(x, k, eps=1e-3, largest=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_small_rows(dtype):
    """The short-row kernels: ranks by shuffles (rows up to 32 elements, 2..32 lanes a row; exact mode), k rounds
    of a warp maximum (17..256 elements at small k, exact mode; float64 takes the warp kernel), a sorting network a
    thread a row (exact mode at k <= 8: rows of 64 and 128 in whole 16-byte words, bf16 256 at k = 4; its tile comes
    in by cp.async; bf16 256 at k = 8 the four-lane kernel), a thread a row with a plan (the other modes up to 32
    elements here; 64 from 65536 rows)."""
    gen = torch.Generator().manual_seed(13)
    for M, ks in [(3, (1, 2)), (8, (1, 5)), (20, (7,)), (24, (5,)), (32, (16,)), (64, (1, 3, 8)), (70, (4, 16)),
                  (128, (8,)), (256, (4, 8))]:
        for kind in ["randn", "nan", "ties"]:
            x = make_rows(kind, (37, M), dtype, "cpu", gen)
            for k in ks:
                for largest in (True, False):
                    for sorted_ in (True, False):
                        same_as_cpu(x, k, largest=largest, sorted=sorted_)
                same_as_cpu(x, k, max_iter=2)
                same_as_cpu(x, k, max_iter=2, sorted=False)
                same_as_cpu(x, k, eps=1e-2, largest=False)


def test_other_entry_points():
    x = torch.randn(6, 300, 5)
    same_as_cpu(x, 7, dim=1)
    c = rtopk.rtopk(x, 3)
    g = rtopk.rtopk(x.cuda(), 3)
    assert torch.equal(c[1], g[1].cpu())
    s = torch.tensor(1.5, device="cuda")
    assert int(rtopk.topk(s, 1).indices) == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_sort_rows_sizes(dtype):
    """The separate rank-order kernel at each of its sizes (P = 256 .. 1024; 32 .. 128 via the rows above)."""
    gen = torch.Generator().manual_seed(3)
    for kind in ["randn", "nan"]:
        x = make_rows(kind, (3, 1100), dtype, "cpu", gen)
        for k in (129, 300, 600, 1024):
            for largest in (True, False):
                same_as_cpu(x, k, largest=largest)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_stream_rows(dtype):
    """The streaming kernel (exact mode, >= 4 rows a SM): randn rows, ascending ones (streamed from
    their end) and NaN rows, 16-byte aligned rows (2560) and rows that are not (2561)."""
    rows = 4 * torch.cuda.get_device_properties(0).multi_processor_count + 3
    gen = torch.Generator().manual_seed(11)
    for M in (2560, 2561):
        kinds = [make_rows(kind, (rows, M), dtype, "cpu", gen) for kind in ("randn", "ascending", "nan")]
        x = torch.stack([kinds[r % 3][r] for r in range(rows)])
        for k in (16, 200):
            for largest in (True, False):
                same_as_cpu(x, k, largest=largest, sorted=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_lane_rows(dtype):
    """The lane kernel (exact, 193..256 elements four lanes a row; 480..512 eight from 2^15 rows: kLaneEight; 768
    sixteen from 2^17 rows at k > 24: kLaneSixteen): fast rows, crowded rows narrowed by its later bucket levels or
    left to its fallback, NaN rows, a last warp of 5 rows (four lanes) or of 1 (eight and sixteen: 2^15 + 1 and
    2^17 + 1 rows, the 13 repeated); index order and rank order (to k = 24 with eight lanes and 16-bit rows)."""
    from test_lane_rows import EIGHT_ROWS, WIDE_ROWS, crowded_rows

    gen = torch.Generator().manual_seed(17)
    for M in (256, 203, 512, 488, 768):
        kinds = [make_rows(kind, (13, M), dtype, "cpu", gen) for kind in ("randn", "heavy_tail", "nan")]
        kinds += [crowded_rows(kind, (13, M), dtype, gen).cpu() for kind in ("nested", "deep")]
        x = torch.stack([kinds[r % 5][r] for r in range(13)])
        rows = 13 if M <= 256 else EIGHT_ROWS + 1 if M <= 512 else WIDE_ROWS + 1
        for k in (16, 24, 40) if M <= 512 else (40,):
            for largest in (True, False):
                for sort in (False, True):
                    same_as_cpu(x, k, rows, largest=largest, sorted=sort)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_pair_rows(dtype):
    """The packed-pair kernels, forced (pair modes 1 and 3: every shape): rows of 232, 256, 480, 520 (lanes with no
    element) and 768; randn, ties (the quota), -inf (the fast path) and NaN rows (at k = 7 / 40 more NaN / +inf than k:
    their first k taken with no search) in one launch of 13 rows; k = 7 / 20 / 40 / 128, both directions, and rank
    order at every k."""
    gen = torch.Generator().manual_seed(19)
    try:
        for mode in (1, 3):
            torch.ops.rtopk._set_debug_pair_rows(mode)
            for M in (232, 256, 480, 520, 768):
                kinds = [make_rows(kind, (13, M), dtype, "cpu", gen) for kind in ("randn", "ties", "neg_inf_heavy", "nan")]
                x = torch.stack([kinds[r % 4][r] for r in range(13)])
                for k in (7, 20, 40, 128):
                    for largest in (True, False):
                        same_as_cpu(x, k, largest=largest, sorted=False)
                    # (rank order in the kernel: the k largest, counted at small k, by the network past it)
                    same_as_cpu(x, k, largest=True, sorted=True)
    finally:
        torch.ops.rtopk._set_debug_pair_rows(0)


def test_block_rows_early_float32_20000():
    """Early stopping on rows of 20000 with 4+ rows a SM: the block kernel with its rows cached in dynamic shared
    memory (fewer rows take the segments of split_early_rows, test_paths' (2, 20000))."""
    gen = torch.Generator().manual_seed(17)
    x = make_rows("randn", (2, 20000), torch.float32, "cpu", gen)
    same_as_cpu(x, 16, rows=600, max_iter=3)


def test_block_rows_exact_float32_20000():
    """Exact mode past the streaming kernel's k on cached rows: the fill's key range (rows of NaN and inf take the
    finite range's pass), the bisection over the cache and its candidates collected from 16-byte words."""
    gen = torch.Generator().manual_seed(23)
    x = torch.cat([make_rows(kind, (1, 20000), torch.float32, "cpu", gen) for kind in ("randn", "nan")])
    same_as_cpu(x, 1024, rows=600, sorted=False)


def test_block_rows_early_float32_60000():
    """Rows past any block's shared memory (240 KB of keys): the block kernel re-reading them from global memory."""
    gen = torch.Generator().manual_seed(19)
    x = make_rows("randn", (2, 60000), torch.float32, "cpu", gen)
    same_as_cpu(x, 16, rows=300, max_iter=3)
