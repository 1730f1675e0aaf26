"""Typed Python API, fake kernel and autograd for ``torch.ops.rtopk.rtopk``."""

from typing import Optional, Tuple

import torch
from torch import Tensor

from ._ref import rtopk_early_stop_ref, rtopk_ref

__all__ = ["rtopk", "rtopk_ref", "rtopk_early_stop_ref"]


def rtopk(x: Tensor, k: int, max_iter: Optional[int] = None, eps: float = 0.0) -> Tuple[Tensor, Tensor]:
    """Top-k of every row along the last dimension of ``x``.

    Returns ``(values, indices)`` of shape ``x.shape[:-1] + (k,)``: values in ``x``'s dtype,
    indices int64, both in ascending index order within each row.

    * ``max_iter=None`` and ``eps=0``: exact. Every element ranked above the k-th largest, plus
      the lowest-indexed elements equal to it. NaN ranks above +inf; -0.0 equals +0.0.
    * ``eps > 0``: Algorithm 1 of the RTop-K paper; the bisection also stops once the bracket is
      no wider than ``eps * |max|`` of the row; the elements at or above the threshold are taken
      and the rest filled from the bracket in index order.
    * ``max_iter >= 1``: Algorithm 2 (early stopping): at most ``max_iter`` arithmetic midpoints of
      [min, max], then the first k elements (by index) at or above the final lower bound.
    """
    return torch.ops.rtopk.rtopk.default(x, k, -1 if max_iter is None else max_iter, eps)


@torch.library.register_fake("rtopk::rtopk")
def _rtopk_fake(values: Tensor, k: int, max_iter: int = -1, eps: float = 0.0):
    torch._check(
        values.dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64),
        lambda: f"rtopk: values must be float32, float16, bfloat16 or float64, got {values.dtype}",
    )
    torch._check(
        max_iter == -1 or max_iter >= 1,
        lambda: f"rtopk: max_iter must be -1 (no early stopping) or an integer >= 1, got {max_iter}",
    )
    torch._check(eps >= 0.0, lambda: f"rtopk: eps must be >= 0 (0 means exact), got {eps}")
    if values.dim() == 0:
        torch._check(k == 0 or k == 1, lambda: f"rtopk: k must be 0 or 1 for a 0-dim tensor, got k={k}")
        shape = () if k == 1 else (0,)
    else:
        cols = values.shape[-1]
        torch._check(
            0 <= k and k <= cols,
            lambda: f"rtopk: k must be in [0, {cols}] (the size of the last dimension), got k={k}",
        )
        shape = tuple(values.shape[:-1]) + (k,)
    return values.new_empty(shape), values.new_empty(shape, dtype=torch.int64)


def _setup_context(ctx, inputs, output):
    values = inputs[0]
    ctx.save_for_backward(output[1])
    ctx.input_shape = values.shape
    ctx.mark_non_differentiable(output[1])


def _backward(ctx, grad_values, grad_indices):
    (indices,) = ctx.saved_tensors
    # The gradient flows to the selected positions only; nothing flows through the indices.
    if len(ctx.input_shape) == 0:
        grad_in = grad_values.reshape(-1).sum() if grad_values.numel() else grad_values.new_zeros(())
        return grad_in.reshape(()), None, None, None
    grad_in = grad_values.new_zeros(ctx.input_shape).scatter(-1, indices, grad_values)
    return grad_in, None, None, None


torch.library.register_autograd("rtopk::rtopk", _backward, setup_context=_setup_context)
