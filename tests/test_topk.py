"""rtopk.topk, the drop-in torch.topk: the same cases through both, compared."""

import warnings

import pytest
import torch

import rtopk
from conftest import DEVICES, DTYPES, HAS_CUDA, bits, check_invariants, make_rows

TOPK_KINDS = ["randn", "ties", "signed_zeros", "inf", "nan", "all_nan", "equal", "near_max", "few_ulps"]
CASES = [  # (shape, dim, k): dims of every position, rows below / above a warp's 2048 and 32 multiples
    ((37,), 0, 5),
    ((6, 33), -1, 33),
    ((6, 33), 0, 4),
    ((4, 300), 1, 129),
    ((3, 5, 70), 1, 2),
    ((3, 70, 5), -2, 17),
    ((2, 2100), -1, 100),
    ((2, 2100), -1, 300),
    ((9, 1000), -1, 128),
    ((9, 1000), -1, 64),
]


def assert_same_as_torch(x, k, dim, largest, sorted, got, ctx):
    """Our result equals the reference exactly; sorted values equal torch.topk's."""
    values, indices = got
    ref_v, ref_i = rtopk.topk_ref(x, k, dim, largest, sorted)
    assert values.dtype == x.dtype and indices.dtype == torch.int64, ctx
    assert values.shape == ref_v.shape and indices.shape == ref_i.shape, ctx
    assert values.is_contiguous() and indices.is_contiguous(), ctx
    assert torch.equal(indices, ref_i), f"indices differ from reference: {ctx}"
    assert torch.equal(bits(values), bits(ref_v)), f"values differ from reference: {ctx}"
    if x.dim() and k:
        # Indices point at the values.
        d = dim % x.dim()
        assert torch.equal(bits(x).gather(d, indices), bits(values)), ctx
    # torch.topk's CPU result: on CUDA it misorders NaNs of either sign in its sorted output.
    theirs = torch.topk(x.cpu(), k, dim, largest, sorted)
    values = values.cpu()
    if sorted:
        torch.testing.assert_close(values, theirs.values, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{ctx}: {m}")
    elif k:
        ours = values.double().nan_to_num(nan=float("inf")).sort(dim).values
        ref = theirs.values.double().nan_to_num(nan=float("inf")).sort(dim).values
        assert torch.equal(ours, ref), ctx


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("sorted", [True, False])
def test_topk_matches_torch(device, dtype, largest, sorted):
    gen = torch.Generator().manual_seed(7 + DTYPES.index(dtype))
    for shape, dim, k in CASES:
        for kind in TOPK_KINDS:
            x = make_rows(kind, shape, dtype, device, gen)
            ctx = f"kind={kind} shape={shape} dim={dim} k={k} largest={largest} sorted={sorted} {dtype}"
            got = rtopk.topk(x, k, dim, largest, sorted)
            assert isinstance(got, torch.return_types.topk)
            assert_same_as_torch(x, k, dim, largest, sorted, got, ctx)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("k", [1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 96, 127, 128, 129])
def test_topk_sorted_every_k(device, k):
    """Every size of the in-kernel sort (16, 32, 64, 128) and past it: the counting sort of the whole
    row (rows up to 256: randn, heavy tails, signed zeros), the counting sort of the selection (777),
    their fallbacks for crowded buckets (ties, outliers, few ulps apart), NaN."""
    gen = torch.Generator().manual_seed(k)
    for kind in ["randn", "ties", "nan", "few_ulps", "outliers", "heavy_tail", "signed_zeros"]:
        for M in [k, 200, 256, 777]:
            if M < k:
                continue
            x = make_rows(kind, (40, M), torch.float32, device, gen)
            for largest in (True, False):
                got = rtopk.topk(x, k, largest=largest)
                assert_same_as_torch(x, k, -1, largest, True, got, f"kind={kind} M={M} k={k} largest={largest}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_topk_sorted_tied_top(device, dtype):
    """Rank order where all k taken values are equal (rows of two values, the one taken in 3 of 4 places), so
    the order is the index order alone, with randn rows between them in the same launch; k on both sides of
    each in-kernel sort size and of the rows' tied counts."""
    gen = torch.Generator().manual_seed(31 + DTYPES.index(dtype))
    for M in [200, 256, 300, 777, 1000, 2100]:
        for largest in (True, False):
            pair = torch.randn(48, 2, generator=gen, dtype=torch.float64).sort(dim=1).values
            taken, other = (pair[:, 1:], pair[:, :1]) if largest else (pair[:, :1], pair[:, 1:])
            u = torch.rand(48, M, generator=gen, dtype=torch.float64)
            x = torch.where(u < 0.75, taken, other)
            x[1::3] = torch.randn(16, M, generator=gen, dtype=torch.float64)
            x = x.to(dtype).to(device)
            for k in [2, 16, 17, 64, 100, 128]:
                got = rtopk.topk(x, k, largest=largest)
                assert_same_as_torch(x, k, -1, largest, True, got, f"M={M} k={k} largest={largest} {dtype}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_topk_sorted_long_rows_and_large_k(device, dtype):
    """Rank order where the top-k kernels leave index order and a separate device sort ranks it (k of
    129..1024 at any row length, rows above 2048 elements at any k), and past it (k > 1024, float64: the
    host sort).  Exact mode against the reference; max_iter mode against its own unsorted output ranked."""
    gen = torch.Generator().manual_seed(21 + DTYPES.index(dtype))
    cases = [(300, 129), (600, 256), (700, 257), (1000, 512), (1500, 700), (1100, 1024), (1300, 1025),
             (2100, 2), (2500, 33), (5000, 128), (4100, 300), (9000, 1000)]
    for kind in ["randn", "ties", "nan", "signed_zeros", "inf", "few_ulps", "all_nan"]:
        for M, k in cases:
            x = make_rows(kind, (5, M), dtype, device, gen)
            for largest in (True, False):
                ctx = f"kind={kind} M={M} k={k} largest={largest} {dtype}"
                got = rtopk.topk(x, k, largest=largest)
                assert_same_as_torch(x, k, -1, largest, True, got, ctx)
                if kind in ("randn", "ties", "nan"):
                    vs, i_s = rtopk.topk(x, k, largest=largest, max_iter=2)
                    vu, iu = rtopk.topk(x, k, largest=largest, sorted=False, max_iter=2)
                    rv, rp = rtopk.topk_ref(vu, k, -1, largest, True)  # ties: position = index order
                    assert torch.equal(bits(vs), bits(rv)), f"max_iter=2 {ctx}"
                    assert torch.equal(i_s, iu.gather(-1, rp)), f"max_iter=2 {ctx}"


@pytest.mark.parametrize("device", DEVICES)
def test_topk_strides(device):
    gen = torch.Generator().manual_seed(11)
    base = make_rows("randn", (12, 40, 30), torch.float32, device, gen)
    views = [base.transpose(0, 2), base[:, ::3, 1::2], base.permute(1, 2, 0), base[::2].transpose(1, 2)]
    for x in views:
        for dim in range(-x.dim(), x.dim()):
            k = min(5, x.shape[dim])
            for largest in (True, False):
                for sorted in (True, False):
                    got = rtopk.topk(x, k, dim, largest, sorted)
                    assert_same_as_torch(x, k, dim, largest, sorted, got, f"stride={x.stride()} dim={dim}")


@pytest.mark.parametrize("device", DEVICES)
def test_topk_empty_zero_dim_and_k0(device):
    for shape, dim, k in [((0, 5), -1, 2), ((4, 0), -1, 0), ((4, 0), 0, 3), ((3, 0, 5), 2, 5), ((4, 6), -1, 0),
                          ((4, 6), 0, 0)]:
        x = torch.randn(shape, device=device)
        got = rtopk.topk(x, k, dim)
        ref = torch.topk(x, k, dim)
        assert got.values.shape == ref.values.shape and got.indices.shape == ref.indices.shape, shape
        assert got.indices.dtype == torch.int64
    s = torch.tensor(-2.5, device=device)
    for k in (0, 1):
        for dim in (0, -1):
            got, ref = rtopk.topk(s, k, dim), torch.topk(s, k, dim)
            assert got.values.shape == () == ref.values.shape and got.indices.shape == ()
            # (torch.topk on CUDA leaves its k=0 outputs of a 0-dim input unwritten.)
            assert float(got.values) == -2.5 and int(got.indices) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_topk_out(device):
    x = torch.randn(7, 50, device=device)
    ov = torch.empty(0, device=device)
    oi = torch.empty(0, dtype=torch.int64, device=device)
    r = rtopk.topk(x, 6, out=(ov, oi))
    assert r.values is ov and r.indices is oi
    e = torch.topk(x, 6)
    assert torch.equal(ov, e.values) and torch.equal(oi, e.indices)
    # A non-empty out of the wrong shape is resized with torch's warning.
    ov2 = torch.empty(3, 3, device=device)
    oi2 = torch.empty(3, 3, dtype=torch.int64, device=device)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        rtopk.topk(x, 4, dim=0, largest=False, out=(ov2, oi2))
    assert any("resized" in str(m.message) for m in w)
    e = torch.topk(x, 4, dim=0, largest=False)
    assert torch.equal(ov2, e.values) and torch.equal(oi2, e.indices)
    with pytest.raises(RuntimeError, match="out values must have dtype"):
        rtopk.topk(x, 2, out=(torch.empty(0, dtype=torch.float64, device=device), oi))
    with pytest.raises(RuntimeError, match="out indices must have dtype"):
        rtopk.topk(x, 2, out=(ov, torch.empty(0, dtype=torch.int32, device=device)))
    with pytest.raises(TypeError, match="out must be a tuple"):
        rtopk.topk(x, 2, out=ov)
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        with pytest.raises(RuntimeError, match="out values must be on device"):
            rtopk.topk(x, 2, out=(torch.empty(0, device=other), oi))


@pytest.mark.parametrize("device", DEVICES)
def test_topk_errors_match_torch_kinds(device):
    x = torch.randn(3, 8, device=device)
    s = torch.tensor(1.0, device=device)
    cases = [
        (lambda f: f(x, 9), RuntimeError, "k must be in [0, 8]"),
        (lambda f: f(x, -1), RuntimeError, "k must be in [0, 8]"),
        (lambda f: f(x, 4, dim=0), RuntimeError, "k must be in [0, 3]"),
        (lambda f: f(x, 2, dim=2), IndexError, "Dimension out of range"),
        (lambda f: f(x, 2, dim=-3), IndexError, "Dimension out of range"),
        (lambda f: f(s, 2), RuntimeError, "k must be 0 or 1"),
        (lambda f: f(s, 1, dim=1), IndexError, "Dimension out of range"),
        (lambda f: f(x.to(torch.complex64), 2), TypeError, "must be float32, float16, bfloat16 or float64"),
    ]
    for fn, kind, msg in cases:
        # torch.topk raised RuntimeError for complex inputs before TypeError (torch 2.11 on CPU).
        with pytest.raises((kind, RuntimeError) if kind is TypeError else kind):
            fn(torch.topk)
        with pytest.raises(kind) as info:
            fn(rtopk.topk)
        assert msg in str(info.value), str(info.value)
    for bad in (x.int(), x.bool(), x.long()):
        with pytest.raises(NotImplementedError, match="must be float32"):
            rtopk.topk(bad, 2)
    with pytest.raises(RuntimeError, match="max_iter must be -1"):
        rtopk.topk(x, 2, max_iter=0)
    with pytest.raises(RuntimeError, match="eps must be >= 0"):
        rtopk.topk(x, 2, eps=-0.5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("max_iter,eps", [(1, 0.0), (4, 0.0), (-1, 1e-3), (3, 1e-2)])
def test_topk_approximate_modes(device, dtype, max_iter, eps):
    """Approximate modes through topk: k distinct in-range indices, values gathered, sorted when asked."""
    gen = torch.Generator().manual_seed(max_iter + 100)
    for kind in ["randn", "inf", "nan", "ties"]:
        for M, k in [(100, 10), (777, 128), (3000, 40), (40, 40)]:  # (k = M: every element)
            x = make_rows(kind, (8, M), dtype, device, gen)
            for largest in (True, False):
                for sorted in (True, False):
                    v, i = rtopk.topk(x.t(), k, 0, largest, sorted, max_iter=max_iter, eps=eps)
                    v, i = v.t(), i.t()
                    ctx = f"{kind} M={M} k={k} largest={largest} sorted={sorted}"
                    assert torch.equal(bits(x).gather(-1, i), bits(v)), ctx
                    assert bool((i.sort(-1).values.diff(dim=-1) > 0).all()), ctx
                    if sorted:
                        key = v.double().nan_to_num(nan=float("inf"))
                        key = key if largest else -key
                        key = key.nan_to_num(nan=float("-inf"), neginf=float("-inf"))
                        assert bool((key[..., 1:] <= key[..., :-1]).all()), ctx  # (diff: inf - inf)
                    else:
                        assert bool((i.diff(dim=-1) > 0).all()), ctx
                    # The same mode through rtopk on the negated input (NaN-free rows) for smallest.
                    if largest and not sorted:
                        rv, ri = rtopk.rtopk(x, k, max_iter=None if max_iter < 0 else max_iter, eps=eps)
                        assert torch.equal(ri, i), ctx


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_topk_cpu_cuda_bit_identical(dtype):
    gen = torch.Generator().manual_seed(5)
    for kind in ["randn", "ties", "nan", "inf", "signed_zeros", "denormal"]:
        for M, k in [(33, 7), (256, 128), (1000, 500), (2500, 64), (50, 50)]:
            x = make_rows(kind, (30, M), dtype, "cpu", gen)
            for largest in (True, False):
                for sorted in (True, False):
                    for max_iter, eps in [(None, 0.0), (3, 0.0), (None, 1e-2)]:
                        c = rtopk.topk(x, k, -1, largest, sorted, max_iter=max_iter, eps=eps)
                        g = rtopk.topk(x.cuda(), k, -1, largest, sorted, max_iter=max_iter, eps=eps)
                        ctx = f"{kind} M={M} k={k} largest={largest} sorted={sorted} {max_iter} {eps} {dtype}"
                        assert torch.equal(c.indices, g.indices.cpu()), ctx
                        assert torch.equal(bits(c.values), bits(g.values.cpu())), ctx


# --- integration: opcheck, autograd, compile, CUDA graphs, export -----------------------------


def topk_opcheck_samples(device):
    gen = torch.Generator().manual_seed(4)
    out = []
    for dtype in DTYPES:
        for shape, k, dim, largest, sorted, max_iter, eps in [
            ((4, 33), 5, -1, True, True, -1, 0.0),
            ((5, 3, 20), 3, 1, False, True, -1, 0.0),
            ((40, 6), 6, 0, True, False, 3, 0.0),
            ((3, 2100), 200, -1, False, True, -1, 1e-3),
            ((7,), 0, 0, True, True, -1, 0.0),
        ]:
            x = make_rows("randn", shape, dtype, device, gen)
            out.append((x, k, dim, largest, sorted, max_iter, eps))
    x = torch.randn(8, 50, dtype=torch.float64, device=device, requires_grad=True)
    out.append((x, 6, -1, True, True, -1, 0.0))
    out.append((x.detach().t().requires_grad_(), 3, 0, False, True, 2, 0.0))
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_topk_opcheck(device):
    for args in topk_opcheck_samples(device):
        torch.library.opcheck(torch.ops.rtopk.topk.default, args)


@pytest.mark.parametrize("device", DEVICES)
def test_topk_gradients_equal_torch(device):
    for dim, largest, sorted in [(-1, True, True), (0, False, True), (1, True, False)]:
        x = torch.randn(9, 31, 4, device=device, dtype=torch.float64)  # no ties
        x1 = x.clone().requires_grad_()
        x2 = x.clone().requires_grad_()
        v1 = rtopk.topk(x1, 3, dim, largest, sorted).values
        v2 = torch.topk(x2, 3, dim, largest, sorted).values
        g = torch.randn_like(v1)
        if not sorted:  # same set, maybe another order: align the upstream gradient by index
            i1 = rtopk.topk(x, 3, dim, largest, sorted).indices
            i2 = torch.topk(x, 3, dim, largest, sorted).indices
            g2 = torch.zeros_like(x).scatter(dim, i1, g).gather(dim, i2)
        else:
            g2 = g
        v1.backward(g)
        v2.backward(g2)
        assert torch.equal(x1.grad, x2.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_topk_gradcheck_and_gradgradcheck(device):
    x = torch.randn(5, 23, dtype=torch.float64, device=device, requires_grad=True)
    for fn in [lambda t: rtopk.topk(t, 4).values, lambda t: rtopk.topk(t, 3, 0, largest=False).values,
               lambda t: rtopk.topk(t, 6, sorted=False, max_iter=3).values, lambda t: rtopk.rtopk(t, 5)[0]]:
        assert torch.autograd.gradcheck(fn, (x,))
        assert torch.autograd.gradgradcheck(fn, (x,))
    s = torch.tensor(0.5, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: rtopk.topk(t, 1).values, (s,))


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each compile test starts from empty dynamo caches (they share functions, and a recompile limit)."""
    torch._dynamo.reset()
    yield


def _both_ops(t, k: int):
    a = rtopk.topk(t, k, dim=0, largest=False)
    b = rtopk.rtopk(t, k)
    return a.values * 2, a.indices, b[0] + 1, b[1]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dynamic", [False, True])
def test_topk_compile_fullgraph(device, dynamic):
    compiled = torch.compile(_both_ops, fullgraph=True, dynamic=dynamic)
    for shape in [(24, 70), (20, 33), (30, 45)]:
        x = torch.randn(*shape, device=device)
        for got, want in zip(compiled(x, 4), _both_ops(x, 4)):
            assert torch.equal(got, want), shape


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
def test_topk_compile_reduce_overhead():
    compiled = torch.compile(_both_ops, fullgraph=True, mode="reduce-overhead")
    for _ in range(4):  # warm-up runs, then graph replays
        x = torch.randn(64, 300, device="cuda")
        got = [t.clone() for t in compiled(x, 8)]
        for g, w in zip(got, _both_ops(x, 8)):
            assert torch.equal(g, w)


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
def test_topk_cuda_graph_capture_replay():
    static_x = torch.randn(128, 700, device="cuda")
    for _ in range(2):  # warm up on a side stream, as CUDA graphs require
        rtopk.topk(static_x, 16)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out_a = rtopk.topk(static_x, 16, largest=False)
        out_b = rtopk.rtopk(static_x, 40)
    for seed in range(3):
        new = torch.randn(128, 700, device="cuda", generator=torch.Generator("cuda").manual_seed(seed))
        static_x.copy_(new)
        graph.replay()
        want_a, want_b = rtopk.topk(new, 16, largest=False), rtopk.rtopk(new, 40)
        assert torch.equal(out_a.values, want_a.values) and torch.equal(out_a.indices, want_a.indices)
        assert torch.equal(out_b[0], want_b[0]) and torch.equal(out_b[1], want_b[1])


class _Router(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(32, 16)

    def forward(self, h):
        logits = self.proj(h)
        top = rtopk.topk(logits, 4, dim=-1)
        sparse = rtopk.rtopk(logits, 2)
        return top.values.softmax(-1), top.indices, sparse[1]


@pytest.mark.parametrize("device", DEVICES)
def test_topk_export(device):
    model = _Router().to(device)
    h = torch.randn(10, 32, device=device)
    batch = torch.export.Dim("batch")
    ep = torch.export.export(model, (h,), dynamic_shapes=({0: batch},))
    h2 = torch.randn(23, 32, device=device)
    for got, want in zip(ep.module()(h2), model(h2)):
        assert torch.equal(got, want)


# --- replace_torch_topk -------------------------------------------------------------------------


def test_replace_torch_topk_context_and_restore():
    original, original_method = torch.topk, torch.Tensor.topk
    x = torch.randn(6, 40)
    with rtopk.replace_torch_topk():
        assert torch.topk is not original
        r = torch.topk(x, 5, largest=False)
        assert torch.equal(r.values, original(x, 5, largest=False).values)
        assert torch.equal(x.topk(3, 0).indices, original(x, 3, 0).indices)
        assert torch.equal(torch.topk(torch.arange(10), 3).values, torch.tensor([9, 8, 7]))  # ints: torch's
    assert torch.topk is original and torch.Tensor.topk == original_method
    with pytest.raises(ZeroDivisionError):
        with rtopk.replace_torch_topk():
            1 / 0
    assert torch.topk is original and torch.Tensor.topk == original_method


def test_replace_torch_topk_decorator_and_options():
    x = torch.randn(4, 300)

    @rtopk.replace_torch_topk(max_iter=2)
    def route(t):
        return torch.topk(t, 32, sorted=False).indices

    got = route(x)
    assert torch.equal(got, rtopk.rtopk(x, 32, max_iter=2)[1])
    assert torch.topk(x, 2).indices.shape == (4, 2)  # restored


def test_replace_torch_topk_model_runs_unchanged():
    class MaxK(torch.nn.Module):
        def forward(self, h):
            v, i = h.topk(8, dim=-1)
            return torch.zeros_like(h).scatter(-1, i, v)

    model, h = MaxK(), torch.randn(16, 64)
    want = model(h)
    with rtopk.replace_torch_topk():
        got = model(h)
    assert torch.equal(got, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("M", [1100, 1600, 2048])
def test_topk_nan_payloads_with_direct_writes(device, dtype, M):
    """k > 128 with 16-bit rows of 1025..2048 elements: the warp kernel writes its outputs directly
    and restores each NaN's own bits (sign and payload) from the input afterwards."""
    gen = torch.Generator().manual_seed(M)
    x = torch.randn(5, M, generator=gen).to(dtype)
    exp = 0x7C00 if dtype == torch.float16 else 0x7F80
    payload = torch.randint(1, 0x3FF if dtype == torch.float16 else 0x7F, (5, M), generator=gen)
    sign = torch.randint(0, 2, (5, M), generator=gen) * -0x8000
    nan_bits = (exp | payload | sign).to(torch.int16)
    u = torch.rand(5, M, generator=gen)
    x = torch.where(u < 0.2, nan_bits.view(dtype), x)
    xd = x.to(device)
    for k in (129, 300, M // 2, M):
        for largest in (True, False):
            ctx = f"M={M} k={k} largest={largest} {dtype} {device}"
            got = rtopk.topk(xd, k, largest=largest, sorted=False)
            check_invariants(x, k, got[0].cpu(), got[1].cpu(), ctx)
            assert_same_as_torch(xd, k, -1, largest, False, got, ctx)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("M", [800, 1024, 1500, 2048])
def test_topk_staged_k_up_to_512(device, dtype, M):
    """Rows of 769..2048 elements with k around 128 and 512: the warp kernel stages up to 512 outputs
    (coalesced stores) and writes more directly; every mode against the reference / the CPU."""
    gen = torch.Generator().manual_seed(11 * M)
    for kind in ("randn", "ties", "nan", "inf"):
        x = make_rows(kind, (6, M), dtype, "cpu", gen)
        xd = x.to(device)
        for k in (128, 129, 200, 511, 512, 513):
            for largest in (True, False):
                ctx = f"kind={kind} M={M} k={k} largest={largest} {dtype} {device}"
                got = rtopk.topk(xd, k, largest=largest, sorted=False)
                check_invariants(x, k, got[0].cpu(), got[1].cpu(), ctx)
                assert_same_as_torch(xd, k, -1, largest, False, got, ctx)
            for mode in (dict(max_iter=4), dict(eps=1e-2)):
                a, b = rtopk.rtopk(x, k, **mode), rtopk.rtopk(xd, k, **mode)
                assert torch.equal(a[1], b[1].cpu()), f"{mode} {kind} M={M} k={k}"
                assert torch.equal(bits(a[0]), bits(b[0].cpu())), f"{mode} {kind} M={M} k={k}"
