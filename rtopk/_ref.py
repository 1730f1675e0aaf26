"""Plain-torch reference of rtopk's exact mode (slow, obviously correct; used by the tests)."""

from typing import Tuple

import torch
from torch import Tensor


def int_view(x: Tensor) -> Tensor:
    """A floating tensor as integers of its width (contiguous): gathers and comparisons that keep NaN payloads
    and -0.0 (gathering bf16 directly can rewrite NaN payloads)."""
    return x.contiguous().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])


def rtopk_ref(x: Tensor, k: int) -> Tuple[Tensor, Tensor]:
    """Exact top-k along the last dimension with rtopk's tie rule.

    Every element ranked above the k-th largest, plus the lowest-indexed elements equal to it;
    NaN ranks above +inf and all NaNs are equal; -0.0 equals +0.0. Output in ascending index order.
    """
    if x.dim() == 0:
        if k == 1:
            return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
        return x.new_empty((0,)), torch.empty((0,), dtype=torch.int64, device=x.device)
    v = x.double()  # exact for every supported dtype
    v = torch.where(v == 0, torch.zeros_like(v), v)  # -0.0 == +0.0
    is_nan = torch.isnan(v)
    v = torch.where(is_nan, torch.full_like(v, float("inf")), v)
    # Stable sorts keep index order among equals: first by value, then NaNs to the front.
    order = torch.sort(v, dim=-1, descending=True, stable=True).indices
    nan_first = torch.sort(is_nan.gather(-1, order).to(torch.int8), dim=-1, descending=True, stable=True)
    order = order.gather(-1, nan_first.indices)
    indices = torch.sort(order[..., :k], dim=-1).values
    return int_view(x).gather(-1, indices).view(x.dtype), indices


def rtopk_early_stop_ref(x: Tensor, k: int, max_iter: int) -> Tuple[Tensor, Tensor]:
    """Algorithm 2 of the RTop-K paper in plain torch, for rows of finite values.

    ``max_iter`` arithmetic midpoints of [min, max] (fp32 for 16/32-bit inputs, fp64 for fp64):
    when fewer than k elements are >= the midpoint it becomes the upper bound, else the lower
    bound. Then the first k elements (by index) that are >= the lower bound.
    """
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    v = x.to(compute)
    lo = v.amin(-1, keepdim=True)
    hi = v.amax(-1, keepdim=True)
    for _ in range(max_iter):
        t = lo * 0.5 + hi * 0.5
        fewer = (v >= t).sum(-1, keepdim=True) < k
        hi = torch.where(fewer, t, hi)
        lo = torch.where(fewer, lo, t)
    keep = (v >= lo) & ((v >= lo).cumsum(-1) <= k)
    indices = keep.nonzero()[:, -1].reshape(*x.shape[:-1], k)
    return x.gather(-1, indices), indices


def topk_ref(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Tuple[Tensor, Tensor]:
    """Plain-torch reference of ``rtopk.topk`` in exact mode (slow, obviously correct).

    Rank: NaN above every number (so first when ``largest``, last otherwise), -0.0 equal to +0.0,
    equal values lowest index first. ``sorted`` gives rank order, otherwise ascending index order.
    """
    if x.dim() == 0:
        return x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)
    xm = x.movedim(dim, -1)
    v = xm.double()
    v = torch.where(v == 0, torch.zeros_like(v), v)
    is_nan = torch.isnan(v)
    v = torch.where(is_nan, torch.zeros_like(v), v if largest else -v)
    # Stable sorts keep index order among equals: by directed value, then NaN to its end.
    order = torch.sort(v, dim=-1, descending=True, stable=True).indices
    nan_rank = torch.sort(is_nan.gather(-1, order).to(torch.int8), dim=-1, descending=largest, stable=True)
    order = order.gather(-1, nan_rank.indices)[..., :k]
    if not sorted:
        order = torch.sort(order, dim=-1).values
    values = int_view(xm).gather(-1, order).view(x.dtype)
    return values.movedim(-1, dim).contiguous(), order.movedim(-1, dim).contiguous()
