"""The exact cut's first bracket from the row's group maxima (k <= 24, rows of 257..2048 elements, the
warp kernels of 12+ values per lane; notes v23): its lower end is only valid if the 64 maxima are distinct
elements of the row, so these rows aim at what could break that -- padding (a row whose length is not a
multiple of 32 repeats element 0 in the padded slots) with the row maximum at element 0, a block of 64
copies of the maximum (every group maximum equal: the bound meets the maximum), a whole group of -inf (the
min/max route), -inf elsewhere (now on the finite path), k values standing alone above the rest (the
count at the bound is exactly k), ties at the bound -- besides the usual kinds, in both directions, compared
bit for bit with the plain-torch reference.  (The sorting kernels use the bound only at 48+ values per lane;
their rank-ordered output is checked on the same rows.)"""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, KINDS, bits, check_matches_ref, make_rows

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

# One length per warp level from 12 to 64 values a lane, most not multiples of 32.
M_BOUND = [257, 300, 385, 512, 700, 768, 1000, 1537, 2048]
K_BOUND = [1, 2, 7, 16, 23, 24, 25]  # 25: just above the bound's range
EXTRA_KINDS = ["few_ulps", "ascending", "descending", "heavy_tail", "outliers"]
SHAPED = ["max_first", "max_block", "neg_inf_group", "islands", "bound_ties"]


def shaped_rows(kind, rows, M, k, dtype, gen):
    x = torch.randn(rows, M, generator=gen, dtype=torch.float64)
    if kind == "max_first":  # the padded slots repeat element 0, the row's maximum
        x[:, 0] = 50.0
    elif kind == "max_block":  # slots 0 and 1 of every lane: all 64 group maxima equal the maximum
        x[:, :64] = 9.0
    elif kind == "neg_inf_group":  # lane 3's even slots all -inf: one group maximum is -inf
        x[:, 3::64] = float("-inf")
        x[:, 40:50] = float("-inf")
    elif kind == "islands":  # k values far above the rest: the count at the bound is often exactly k
        for r in range(rows):
            pos = torch.randperm(M, generator=gen)[:k]
            x[r, pos] = 20.0 + torch.rand(k, generator=gen, dtype=torch.float64)
    elif kind == "bound_ties":  # many copies of a value near the k-th largest of a randn row
        q = torch.quantile(x, 1.0 - 16.0 / M, dim=1, keepdim=True)
        x = torch.where(torch.rand(rows, M, generator=gen) < 0.1, q, x)
    else:
        raise ValueError(kind)
    return x.to(dtype)


def check_all(x, k, ctx):
    check_matches_ref(x, k, ctx)
    for largest in (True, False):
        got = rtopk.topk(x, k, largest=largest, sorted=True)
        ref = rtopk.topk_ref(x, k, largest=largest, sorted=True)
        assert torch.equal(bits(got.values), bits(ref[0])), f"sorted values, largest={largest} {ctx}"
        assert torch.equal(got.indices, ref[1]), f"sorted indices, largest={largest} {ctx}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("M", M_BOUND)
def test_group_max_bound_kinds(dtype, M):
    gen = torch.Generator().manual_seed(977 * M + 3)
    for kind in KINDS + EXTRA_KINDS:
        x = make_rows(kind, (48, M), dtype, "cpu", gen).cuda()
        for k in K_BOUND:
            for sign in (1, -1):
                xs = x * sign if kind != "all_nan" else x
                check_all(xs, k, f"M={M} kind={kind} k={k} sign={sign} dtype={dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("M", M_BOUND)
def test_group_max_bound_shaped_rows(dtype, M):
    gen = torch.Generator().manual_seed(13 * M + 1)
    for kind in SHAPED:
        for k in K_BOUND:
            x = shaped_rows(kind, 48, M, k, dtype, gen).cuda()
            for sign in (1, -1):
                check_all(x * sign, k, f"M={M} kind={kind} k={k} sign={sign} dtype={dtype}")
