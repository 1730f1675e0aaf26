"""Huge inputs on the GPU: 64-bit offsets, a 2^24-element row, outputs past 2^31 elements, and the
memory one call allocates. Skipped without CUDA or when the device has too little free memory."""

import pytest
import torch

import rtopk
from conftest import HAS_CUDA, bits

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")


def need_gib(gib):
    if torch.cuda.mem_get_info()[0] < gib * 2**30:
        pytest.skip(f"needs {gib} GiB of free device memory")


def check_sample_rows(x, k, values, indices, largest=True, sorted=False):
    """Rows at the start, the end and spread between, against the plain-torch reference."""
    n = x.shape[0]
    rows = torch.unique(torch.tensor([0, 1, n // 3, n // 2, n - 2, n - 1] + list(range(0, n, max(1, n // 40)))))
    rows = rows.to(x.device)
    ref_v, ref_i = rtopk.topk_ref(x[rows].cpu(), k, -1, largest, sorted)
    assert torch.equal(indices[rows].cpu(), ref_i)
    assert torch.equal(bits(values[rows].cpu()), bits(ref_v))


def test_more_than_2_31_elements_bf16():
    need_gib(14)
    x = torch.randn(2**21, 1100, device="cuda", dtype=torch.bfloat16)
    assert x.numel() >= 2**31
    v, i = rtopk.rtopk(x, 7)
    check_sample_rows(x, 7, v, i)
    t = rtopk.topk(x, 33, largest=False)
    check_sample_rows(x, 33, t.values, t.indices, largest=False, sorted=True)


def test_more_than_2_31_elements_fp32_block_rows():
    need_gib(14)
    x = torch.randn(2**20, 2100, device="cuda")
    assert x.numel() >= 2**31
    v, i = rtopk.rtopk(x, 100)
    check_sample_rows(x, 100, v, i)


def test_one_row_of_2_24_elements():
    x = torch.randn(2**24, device="cuda")
    for k in (1, 1000, 2**20):
        v, i = rtopk.rtopk(x, k)
        ref_v, ref_i = rtopk.rtopk_ref(x, k)
        assert torch.equal(i, ref_i) and torch.equal(v, ref_v), k
    t = rtopk.topk(x, 5000, largest=False)
    r = rtopk.topk_ref(x, 5000, largest=False)
    assert torch.equal(t.indices, r[1]) and torch.equal(t.values, r[0])


def test_outputs_of_more_than_2_31_elements():
    need_gib(40)
    x = torch.randn(2**22, 520, device="cuda", dtype=torch.bfloat16)
    v, i = rtopk.rtopk(x, 513)
    assert v.numel() >= 2**31
    check_sample_rows(x, 513, v, i)
    del v, i


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
@pytest.mark.parametrize("M,k,sorted_", [(256, 16, True), (768, 128, True), (1000, 300, False), (5000, 64, False)])
def test_peak_memory_is_outputs_only(dtype, M, k, sorted_):
    """A call on contiguous rows allocates its two outputs and nothing else (no workspace)."""
    x = torch.randn(16384, M, device="cuda", dtype=dtype)
    out_bytes = 16384 * k * (x.element_size() + 8)
    # Rank order without a workspace is the in-kernel sort (16/32-bit rows up to 2048, k <= 128).
    sort = sorted_ and dtype != torch.float64
    for fn in (lambda: rtopk.rtopk(x, k), lambda: rtopk.topk(x, k, sorted=sort)):
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fn()
        torch.cuda.synchronize()
        extra = torch.cuda.max_memory_allocated() - base
        # The caching allocator rounds blocks up (a large block keeps an unsplit remainder of up to
        # 1 MiB); any workspace proportional to the input (>= 4 MiB here) would exceed this.
        assert extra <= out_bytes + 2 * 2**20, (extra, out_bytes)
        assert x.numel() * x.element_size() >= 4 * 2**20
        del out
