"""Rows of 193..256 elements in exact mode, which the CUDA backend gives to its lane kernel (four lanes a row,
eight rows a warp; rows it does not finish -- NaN, +-inf, equal elements, crowded buckets -- go to the warp kernel's
row body in the same launch), and rows of 449..512 and 721..768, where the kernel's eight-lane shape takes
launches (kLaneEight: 480..512 in whole 16-byte vectors from 2^14 rows) and its sixteen-lane shape takes them
(kLaneSixteen: 721..768 from 2^16 rows at k > 24, 2^18 at every k): against the plain-torch reference bit for bit, in
index order (largest by rtopk.rtopk, smallest by rtopk.topk) and in rank order (rtopk.topk sorted, both directions),
row lengths that change the padding or the load path, row counts not a multiple of the rows a warp, k on both sides
of 64 (above it the four-lane kernel takes only launches of 2^14+ rows, 2^17+ with max_iter), and warps whose rows mix the fast path and
the fallback.
The emulator (test_lane_emu.py) runs every shape of the kernel, dispatched or not.  Skipped without CUDA."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, TAIL_KINDS, bits, check_matches_ref, make_rows
from test_mid_rows import misaligned

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# 256: the vector path; 252 / 200: whole vectors, padding; 193 / 197 / 255: vectors across rows and chunks.
LENGTHS = [193, 197, 200, 252, 255, 256]
# Eight lanes a row: 480 / 488 / 496 (whole vectors, padding), 500 (fp32 only: 16-bit rows of 500 are not whole
# 16-byte vectors), 512; 449 / 470 / 511 the warp kernel (the eight-lane kernel is not dispatched there).
LENGTHS += [449, 470, 480, 488, 496, 500, 511, 512]
# Sixteen lanes a row (k > 24; below, the warp kernel): 744 (whole vectors, padding), 768.
LENGTHS += [744, 768]
KINDS = ["randn", "coarse", "ties", "equal", "signed_zeros", "inf", "nan", "all_nan", "neg_inf_heavy", "near_max",
         "denormal", "few_ulps", "heavy_tail", "outliers", "ascending"]
MANY = 2**17 + 3  # k > 64 takes the four-lane kernel from 2^14 rows on, with max_iter from 2^17
EIGHT_ROWS = 2**15  # the eight-lane kernel takes launches from 2^14 rows on
# The sixteen-lane kernel takes exact launches from 2^16 rows at k > 24 (2^18 at every k), max_iter ones (16-bit
# rows) from 2^17.
WIDE_ROWS = 2**17
# Row offsets from 0 (c + randn rows): the finite map takes one FFMA an element where every row of a warp has |top|
# under 2^22 / 253 (~16600) of its span, lane_map otherwise (notes v45); offsets on both sides of that bound (5e4 and
# 2e5 over randn's 4.5..7 span a row of 256).  Also test_lane_emu.py's.
OFFSETS = [0.25, -7.0, 3e3, 5e4, -5e4, 2e5, -2e6]


@pytest.fixture(autouse=True)
def no_pair_kernels():
    """The packed-pair kernels (test_pair_rows.py) take 16-bit exact index-ordered launches ahead of the lane kernels;
    these tests are the lane kernels'."""
    torch.ops.rtopk._set_debug_pair_rows(2)
    yield
    torch.ops.rtopk._set_debug_pair_rows(0)


def dispatched(x):
    """x, its rows repeated up to EIGHT_ROWS or more when they are long enough for the eight-lane kernel (each
    repeat is checked like the first: the launch's warps hold them in other places); rows of 721..768 up to
    WIDE_ROWS, where the sixteen-lane kernel takes them."""
    n, m = x.shape
    if 720 < m <= 768:
        return x.repeat(-(-WIDE_ROWS // n), 1)
    return x if m <= 256 or m > 512 else x.repeat(-(-EIGHT_ROWS // n), 1)


def lane_rows(kind, shape, dtype, gen):
    """make_rows, plus "coarse": randn rounded to 1/16, so that the k-th value's bucket holds a few ties."""
    if kind == "coarse":
        x = torch.round(torch.randn(shape, generator=gen, dtype=torch.float64) * 16) / 16
        return x.to(dtype).cuda()
    return make_rows(kind, shape, dtype, "cpu", gen).cuda()


CROWDED_KINDS = ["nested", "nested_ties", "deep", "nested_tiny"]  # crowded_rows' kinds


def crowded_rows(kind, shape, dtype, gen, device="cuda"):
    """Rows whose k-th value lies in a crowded bucket again after the first bucket level: a few outliers at
    +-6e4 (the first level's range) and clusters nested inside one bucket.
    nested: 100 values of 1e-3 randn and the rest at 2e-3 + 1e-7 randn (the largest k <= ~150 in the inner
    cluster: three levels); nested_ties: the same rounded so that hundreds share a few values (ties found at a
    later level); deep: clusters at 1e-2, 1e-6, 1e-10, 1e-14 and 1e-18 (more levels than the kernel runs: the
    fallback); nested_tiny: nested times 2^-100 (ranges below 2^-64 at every level: lifted by the map)."""
    n, m = shape
    r = lambda cnt: torch.randn(n, cnt, generator=gen, dtype=torch.float64)
    out = [torch.full((n, 1), 6e4, dtype=torch.float64), torch.full((n, 3), -6e4, dtype=torch.float64)]
    if kind in ("nested", "nested_tiny"):
        out += [1e-3 * r(100), 2e-3 + 1e-7 * r(m - 104)]
    elif kind == "nested_ties":
        out += [torch.round(r(100) * 2) * 5e-4, 2e-3 + torch.round(r(m - 104)) * 1e-7]
    else:  # deep
        out += [1e-2 * r(40), r(10).abs() * 1e-6, r(10).abs() * 1e-10, r(10).abs() * 1e-14,
                r(m - 74).abs() * 1e-18]
    x = torch.cat(out, dim=1) * (2.0**-100 if kind == "nested_tiny" else 1.0)
    perm = torch.argsort(torch.rand(n, m, generator=gen), dim=1)
    return torch.gather(x, 1, perm).to(dtype).to(device)


def check_topk(x, k, largest, sort, ctx):
    """rtopk.topk against the reference bit for bit (rank order up to the kernel's sorted k, else the warp
    kernel's)."""
    v, i = rtopk.topk(x, k, largest=largest, sorted=sort)
    rv, ri = rtopk.topk_ref(x, k, -1, largest, sort)
    assert torch.equal(i, ri), f"indices differ from reference: {ctx} largest={largest} sorted={sort}"
    assert torch.equal(bits(v), bits(rv)), f"values differ from reference: {ctx} largest={largest} sorted={sort}"


def check_sorted(x, k, ctx):
    for largest in (True, False):
        check_topk(x, k, largest, True, ctx)


def check_all(x, k, ctx):
    """Index order largest (rtopk.rtopk, with its invariants) and smallest, rank order both ways."""
    check_matches_ref(x, k, ctx)
    check_topk(x, k, False, False, ctx)
    check_sorted(x, k, ctx)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("M", LENGTHS)
def test_lane_rows_match_reference(dtype, M):
    gen = torch.Generator().manual_seed(1000 + M + 7 * DTYPES.index(dtype))
    for kind in KINDS:
        # 1003 rows: the last warp's block holds 3 rows.
        x = dispatched(lane_rows(kind, (1003, M), dtype, gen))
        for k in (5, 16, 31, 33, 64):
            ctx = f"M={M} kind={kind} k={k} dtype={dtype}"
            check_all(x, k, ctx)
    check_matches_ref(misaligned(x), 16, f"misaligned M={M}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_lane_rows_large_k_many_rows(dtype):
    """k of 65..128 (the kernel's upper range) on 2^17 + 3 rows."""
    gen = torch.Generator().manual_seed(77)
    for M in (256, 201, 512):
        x = lane_rows("randn", (MANY, M), dtype, gen)
        # Some rows crowded (heavy tail), some with NaN / inf: the fallback inside the same warps.
        x[::3] = x[::3] ** 5
        x[5::11, 17] = float("nan")
        x[7::13, 100] = float("-inf")
        x[1::7] = crowded_rows("nested", x[1::7].shape, dtype, gen)
        x[2::29] = crowded_rows("deep", x[2::29].shape, dtype, gen)
        for k in (65, 96, 127, 128):
            ctx = f"M={M} k={k} dtype={dtype}"
            check_all(x, k, ctx)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lane_rows_heavy_tails(dtype):
    """Rows with heavy tails around 0 (their warps mapped by the values' keys), alone, and one in every other row
    of randn (their warps mapped so too), k up to 128 (2^17 + 3 rows)."""
    gen = torch.Generator().manual_seed(41 + DTYPES.index(dtype))
    for M in (256, 203, 512):
        for kind in TAIL_KINDS:
            x = dispatched(lane_rows(kind, (1003, M), dtype, gen))
            for k in (1, 5, 16, 33, 64):
                check_all(x, k, f"M={M} kind={kind} k={k} dtype={dtype}")
    parts = [lane_rows(kind, (MANY // len(TAIL_KINDS) + 1, 256), dtype, gen) for kind in TAIL_KINDS]
    tails = torch.cat(parts)[:MANY]
    x = torch.where(torch.arange(MANY, device="cuda")[:, None] % 2 == 0, tails,
                    lane_rows("randn", (MANY, 256), dtype, gen))
    for k in (16, 64, 96, 128):
        check_all(x, k, f"mixed M=256 k={k} dtype={dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lane_rows_mixed_warps(dtype):
    """Each warp's eight rows of different kinds: fast rows and fallback rows share a warp and its staging.
    near_max / denormal rows beside NaN / inf rows: a finite range that leaves float range (or a subnormal one)
    in a warp that maps its rows for non-finite values (each such row rescaled by the map, not taken as equal)."""
    gen = torch.Generator().manual_seed(5)
    kinds = ["randn", "nan", "coarse", "equal", "heavy_tail", "ties", "inf", "randn", "few_ulps", "near_max",
             "denormal"]
    for M in (256, 230, 512, 480):
        parts = [lane_rows(kind, (1, M), dtype, gen) for _ in range(60) for kind in kinds]
        x = dispatched(torch.cat(parts))  # 660 rows, kinds cycling through each block of eight
        for k in (1, 8, 32, 64):
            ctx = f"M={M} k={k} dtype={dtype}"
            check_all(x, k, ctx)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kind", CROWDED_KINDS)
def test_lane_rows_crowded_levels(dtype, kind):
    """The k-th value in a bucket that is crowded at the first level and again inside it: the later bucket
    levels of the four-lane path (or its fallback) against the reference, largest and smallest."""
    gen = torch.Generator().manual_seed(31 + DTYPES.index(dtype))
    for M in (256, 203, 512, 488, 768):
        x = dispatched(crowded_rows(kind, (1003, M), dtype, gen))
        for k in (3, 20, 40, 64):
            ctx = f"M={M} kind={kind} k={k} dtype={dtype}"
            check_all(x, k, ctx)


def nonfinite_rows(shape, dtype, gen):
    """randn rows with NaN (both signs, varied payloads), +inf and -inf at rates that differ by row: from a
    few of each (their buckets ranked by index) to a third of the row (crowded buckets of equal keys)."""
    n, m = shape
    x = torch.randn(n, m, generator=gen, dtype=torch.float64).to(dtype)
    rate = torch.tensor([0.01, 0.05, 0.3], dtype=torch.float64)[torch.randint(0, 3, (n, 3), generator=gen)]
    u = torch.rand(n, m, generator=gen, dtype=torch.float64)
    ibits = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}[dtype]
    exp = {torch.float32: 0x7F800000, torch.float16: 0x7C00, torch.bfloat16: 0x7F80}[dtype]
    mant = {torch.float32: 0x7FFFFF, torch.float16: 0x3FF, torch.bfloat16: 0x7F}[dtype]
    payload = torch.randint(1, mant + 1, (n, m), generator=gen)
    sign = torch.randint(0, 2, (n, m), generator=gen) * (-(exp | mant) - 1)  # the sign bit, as a signed int
    nan = (exp | payload | sign).to(ibits).view(dtype)
    x = torch.where(u < rate[:, :1], nan, x)
    x = torch.where((u >= rate[:, :1]) & (u < rate[:, :1] + rate[:, 1:2]), torch.full_like(x, float("inf")), x)
    x = torch.where(u > 1 - rate[:, 2:], torch.full_like(x, float("-inf")), x)
    return x.cuda()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lane_rows_nonfinite(dtype):
    """NaN and +-inf inside the four-lane path (their own buckets): NaN ranks first for the largest and last
    for the smallest, equal keys by index, and a NaN's payload comes back as given (values compared bit for
    bit)."""
    gen = torch.Generator().manual_seed(23 + DTYPES.index(dtype))
    for M in (256, 230, 512, 496, 744):
        x = dispatched(nonfinite_rows((1003, M), dtype, gen))
        for k in (1, 3, 20, 64):
            ctx = f"M={M} k={k} dtype={dtype}"
            check_all(x, k, ctx)


def test_lane_rows_offsets():
    """fp32 rows offset from 0 (c + randn): warps whose rows all lie within 2^22 / 253 of their span from 0 take the
    one-FFMA map, the others lane_map (notes v45); offsets on both sides of that bound, alone and mixed in warps."""
    gen = torch.Generator().manual_seed(97)
    for M in (256, 231, 512):
        parts = [c + torch.randn(1003, M, generator=gen, dtype=torch.float64) for c in OFFSETS]
        for name, x in (("runs", torch.cat(parts)), ("mixed", torch.stack(parts, 1).reshape(-1, M))):
            x = dispatched(x.float().cuda())
            for k in (1, 16, 64):
                check_all(x, k, f"{name} M={M} k={k}")


def test_lane_rows_ties_at_the_kth_value_are_taken_by_index():
    """A value repeated around the k-th rank, spread over the four lanes: the lowest indices are taken."""
    gen = torch.Generator().manual_seed(11)
    for M in (256, 199, 488):
        x = torch.randn(4096, M, generator=gen, dtype=torch.float64)
        x = torch.where(torch.rand(4096, M, generator=gen) < 0.1, torch.full_like(x, 0.25), x)
        for k in (10, 40, 64):
            for dtype in DTYPES:
                xc = dispatched(x.to(dtype).cuda())
                check_all(xc, k, f"M={M} k={k} dtype={dtype}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lane_rows_sorted_ties(dtype):
    """Rank order when the taken elements tie: the row's largest (odd rows) or smallest (even rows) value repeated
    2..40 times (tied elements ranked by index; k = 3 and 16 in the four-lane kernel, larger k in the warp kernel),
    beside coarse rows of a few distinct values."""
    gen = torch.Generator().manual_seed(41 + DTYPES.index(dtype))
    for M in (256, 210, 512):
        x = torch.randn(1003, M, generator=gen, dtype=torch.float64)
        reps = torch.tensor([2, 15, 16, 17, 40])[torch.arange(1003) % 5]
        for r in range(1003):
            cols = torch.randperm(M, generator=gen)[: int(reps[r])]
            x[r, cols] = 4.5 if r % 2 else -4.5  # the largest (odd rows) or the smallest (even rows)
        x[::7] = torch.round(x[::7] * 4) / 4
        xc = dispatched(x.to(dtype).cuda())
        for k in (3, 16, 17, 20, 32, 64):
            check_sorted(xc, k, f"M={M} k={k} dtype={dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_lane_rows_sorted_eight_lanes(dtype):
    """Rank order in the eight-lane kernel (k <= 32): randn, coarse and tied rows, NaN and
    -inf mixed in (the fallback in the same warps), both directions; k = 33 takes the warp kernel."""
    gen = torch.Generator().manual_seed(61 + DTYPES.index(dtype))
    for M in (512, 488):
        kinds = ["randn", "coarse", "ties", "nan", "heavy_tail", "neg_inf_heavy", "randn"]
        x = torch.cat([lane_rows(kind, (149, M), dtype, gen) for kind in kinds])  # 1043 rows, kinds in runs
        x = x.repeat(-(-(EIGHT_ROWS + 3) // x.shape[0]), 1)[: EIGHT_ROWS + 3]
        for k in (5, 16, 17, 24, 31, 32, 33):
            check_sorted(x, k, f"M={M} k={k} dtype={dtype}")


def check_max_iter(x, xc, k, max_iter, ctx):
    """rtopk.rtopk (k largest) and rtopk.topk(largest=False, sorted=False) at max_iter on the device rows x against
    the CPU backend on their copy xc, values and indices bit for bit."""
    for largest in (True, False):
        if largest:
            got, ref = rtopk.rtopk(x, k, max_iter=max_iter), rtopk.rtopk(xc, k, max_iter=max_iter)
        else:
            got = rtopk.topk(x, k, largest=False, sorted=False, max_iter=max_iter)
            ref = rtopk.topk(xc, k, largest=False, sorted=False, max_iter=max_iter)
        where = f"{'largest' if largest else 'smallest'} {ctx}"
        assert torch.equal(got[1].cpu(), ref[1]), where
        assert torch.equal(bits(got[0].cpu()), bits(ref[0])), where


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lane_rows_max_iter(dtype):
    """max_iter at 193..256 elements (the four-lane kernel's max_iter instance, index order: rtopk.rtopk for the k
    largest, rtopk.topk(sorted=False) for the k smallest; rows with NaN or +-inf in the same warps go to the
    fallback's make_plan): against the CPU backend bit for bit, from one step to far past the bracket's last move,
    k above 64 from 2^17 rows; rank order (rtopk.topk sorted) takes the warp kernel and is checked too."""
    gen = torch.Generator().manual_seed(71 + DTYPES.index(dtype))
    kinds = ["randn", "coarse", "ties", "equal", "signed_zeros", "nan", "inf", "near_max", "denormal", "few_ulps",
             "heavy_tail", "ascending"]
    for M in (256, 230, 193):
        x = torch.cat([lane_rows(kind, (37, M), dtype, gen) for kind in kinds])  # kinds in runs, across warps
        x = x[torch.randperm(x.shape[0], generator=gen)]
        xc = x.cpu()
        for k, many in ((1, False), (16, False), (64, False), (100, True)):
            xk = x.repeat(-(-MANY // x.shape[0]), 1)[:MANY] if many else x
            xkc = xk.cpu()
            for max_iter in (1, 4, 13, 10**12) if not many else (4, 10**12):
                ctx = f"M={M} k={k} rows={xk.shape[0]} max_iter={max_iter} dtype={dtype}"
                check_max_iter(xk, xkc, k, max_iter, ctx)
            if not many:
                got = rtopk.topk(x, k, sorted=True, max_iter=4)
                ref = rtopk.topk(xc, k, sorted=True, max_iter=4)
                assert torch.equal(got[1].cpu(), ref[1]), f"rank order M={M} k={k} dtype={dtype}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lane_rows_max_iter_wide(dtype):
    """max_iter with eight lanes a row (480..512 elements from EIGHT_ROWS rows) and sixteen (721..768 from WIDE_ROWS
    rows, 16-bit rows; fp32 ones take the warp kernel, checked the same way): every kind in runs across
    warps, both directions, against the CPU backend bit for bit, from one step to far past the bracket's last move;
    rows with NaN or +-inf go to the fallback's make_plan."""
    gen = torch.Generator().manual_seed(83 + DTYPES.index(dtype))
    kinds = ["randn", "coarse", "ties", "equal", "signed_zeros", "nan", "inf", "near_max", "denormal", "few_ulps",
             "heavy_tail", "ascending"]
    for M, ks in ((512, (16, 64, 128)), (488, (40,)), (768, (40, 128)), (744, (25,))):
        x = torch.cat([lane_rows(kind, (37, M), dtype, gen) for kind in kinds])
        x = dispatched(x[torch.randperm(x.shape[0], generator=gen)])
        xc = x.cpu()
        for k in ks:
            for max_iter in (1, 4, 10**12):
                ctx = f"M={M} k={k} rows={x.shape[0]} max_iter={max_iter} dtype={dtype}"
                check_max_iter(x, xc, k, max_iter, ctx)


@pytest.fixture
def lane_mode():
    """torch.ops.rtopk._set_debug_lane_rows for one test, back to the measured dispatch (0) after it."""
    yield torch.ops.rtopk._set_debug_lane_rows
    torch.ops.rtopk._set_debug_lane_rows(0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_lane_rows_forced_dispatch(dtype, lane_mode):
    """The tuning hook (benchmarks/dispatch.py): with the lane kernels taken wherever their row shapes allow (mode 1),
    also at row counts and k the dispatch leaves to the warp kernel (few rows, k <= 24 with sixteen lanes, k > 64
    with four, rank order of fp32 rows), and with them never taken (mode 2), every kind of row, both directions,
    exact, rank order and max_iter, against the CPU backend bit for bit."""
    gen = torch.Generator().manual_seed(97 + DTYPES.index(dtype))
    kinds = ["randn", "coarse", "ties", "nan", "inf", "few_ulps", "heavy_tail", "ascending"]
    cases = [(256, 100, False, None), (230, 12, True, None), (512, 16, False, None), (488, 24, True, None),
             (512, 40, False, 4), (768, 16, False, None), (744, 24, False, None), (768, 20, False, 4)]
    for M, k, sort, max_iter in cases:
        x = torch.cat([lane_rows(kind, (11, M), dtype, gen) for kind in kinds])
        x = x[torch.randperm(x.shape[0], generator=gen)]
        xc = x.cpu()
        for largest in (True, False):
            ref = rtopk.topk(xc, k, largest=largest, sorted=sort, max_iter=max_iter)
            for mode in (1, 2):
                lane_mode(mode)
                got = rtopk.topk(x, k, largest=largest, sorted=sort, max_iter=max_iter)
                ctx = f"mode={mode} M={M} k={k} sorted={sort} max_iter={max_iter} largest={largest} dtype={dtype}"
                assert torch.equal(got[1].cpu(), ref[1]), ctx
                assert torch.equal(bits(got[0].cpu()), bits(ref[0])), ctx
