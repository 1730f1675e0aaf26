"""Typed Python API, fake kernels and autograd for ``torch.ops.rtopk.rtopk`` and ``torch.ops.rtopk.topk``."""

import contextlib
import functools
import warnings
from typing import Optional, Sequence, Tuple

import torch
from torch import Tensor

from ._ref import rtopk_early_stop_ref, rtopk_ref, topk_ref

__all__ = ["rtopk", "topk", "replace_torch_topk", "rtopk_ref", "rtopk_early_stop_ref", "topk_ref"]

SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


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


def topk(
    input: Tensor,
    k: int,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,
    *,
    max_iter: Optional[int] = None,
    eps: float = 0.0,
    out: Optional[Sequence[Tensor]] = None,
):
    """Drop-in ``torch.topk``: the k largest (or smallest) elements of ``input`` along ``dim``.

    Returns ``torch.return_types.topk(values, indices)`` exactly as ``torch.topk`` does: any ``dim``
    and strides, 0-dim and empty inputs, int64 indices, ``sorted=True`` gives rank order
    (descending for ``largest``, ascending otherwise), ``sorted=False`` gives ascending index
    order. NaN ranks above every number (first when largest, last when smallest); equal values
    are taken, and listed, lowest index first; -0.0 equals +0.0.

    ``max_iter`` / ``eps`` select rtopk's approximate modes (see :func:`rtopk`), applied to the
    values when ``largest`` and to their negations otherwise. ``out=(values, indices)`` is
    checked and resized like ``torch.topk``'s.
    """
    values, indices = torch.ops.rtopk.topk.default(
        input, k, dim, largest, sorted, -1 if max_iter is None else max_iter, eps
    )
    if out is not None:
        return _write_out(out, values, indices)
    return torch.return_types.topk((values, indices))


def _write_out(out, values: Tensor, indices: Tensor):
    if not (isinstance(out, (tuple, list)) and len(out) == 2 and all(isinstance(t, Tensor) for t in out)):
        raise TypeError("rtopk.topk: out must be a tuple of two tensors (values, indices)")
    for name, dst, src in (("values", out[0], values), ("indices", out[1], indices)):
        if dst.dtype != src.dtype:
            raise RuntimeError(f"rtopk.topk: out {name} must have dtype {src.dtype}, got {dst.dtype}")
        if dst.device != src.device:
            raise RuntimeError(f"rtopk.topk: out {name} must be on device {src.device}, got {dst.device}")
    for dst, src in ((out[0], values), (out[1], indices)):
        if dst.shape != src.shape:
            if dst.numel() != 0:
                warnings.warn(
                    f"rtopk.topk: an output with one or more elements was resized since it had shape "
                    f"{list(dst.shape)}, which does not match the required output shape {list(src.shape)}.",
                    UserWarning,
                    stacklevel=3,
                )
            dst.resize_(src.shape)
        dst.copy_(src)
    return torch.return_types.topk((out[0], out[1]))


# --- replace_torch_topk ----------------------------------------------------------------------


class replace_torch_topk(contextlib.ContextDecorator):
    """Within this context (or decorated function) ``torch.topk`` and ``Tensor.topk`` run rtopk.

    Inputs rtopk does not take (integer dtypes, devices without an rtopk kernel) go to the original
    ``torch.topk``. ``max_iter`` / ``eps`` are passed through to every call (default: exact).
    The originals are restored on exit, also when an exception leaves the block.
    """

    def __init__(self, max_iter: Optional[int] = None, eps: float = 0.0):
        self.max_iter = max_iter
        self.eps = eps
        self._saved = []

    def _handles(self, input) -> bool:
        return (
            isinstance(input, Tensor)
            and input.dtype in SUPPORTED_DTYPES
            and input.device.type in ("cpu", "cuda", "meta")
            and input.layout == torch.strided
        )

    def __enter__(self):
        original = torch.topk
        had_method = "topk" in torch.Tensor.__dict__
        original_method = torch.Tensor.__dict__.get("topk")

        @functools.wraps(original)
        def patched_topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
            if not self._handles(input):
                return original(input, k, dim, largest, sorted, out=out)
            return topk(input, k, dim, largest, sorted, max_iter=self.max_iter, eps=self.eps, out=out)

        def patched_method(self_tensor, k, dim=-1, largest=True, sorted=True):
            return patched_topk(self_tensor, k, dim, largest, sorted)

        self._saved.append((original, had_method, original_method))
        torch.topk = patched_topk
        torch.Tensor.topk = patched_method
        return self

    def __exit__(self, *exc):
        original, had_method, original_method = self._saved.pop()
        torch.topk = original
        if had_method:
            torch.Tensor.topk = original_method
        else:
            del torch.Tensor.topk  # back to the inherited C method
        return False


# --- fake kernels ------------------------------------------------------------------------------


def _check_mode(op: str, max_iter: int, eps: float) -> None:
    torch._check(
        max_iter == -1 or max_iter >= 1,
        lambda: f"{op}: max_iter must be -1 (no early stopping) or an integer >= 1, got {max_iter}",
    )
    torch._check(eps >= 0.0, lambda: f"{op}: eps must be >= 0 (0 means exact), got {eps}")


@torch.library.register_fake("rtopk::rtopk")
def _rtopk_fake(values: Tensor, k: int, max_iter: int = -1, eps: float = 0.0):
    torch._check(
        values.dtype in SUPPORTED_DTYPES,
        lambda: f"rtopk: values must be float32, float16, bfloat16 or float64, got {values.dtype}",
    )
    _check_mode("rtopk", max_iter, eps)
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


def _wrap_dim(dim: int, ndim: int) -> int:
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    torch._check_index(
        lo <= dim <= hi,
        lambda: f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})",
    )
    return dim % max(ndim, 1)


@torch.library.register_fake("rtopk::topk")
def _topk_fake(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True,
               max_iter: int = -1, eps: float = 0.0):
    msg = lambda: f"rtopk.topk: input must be float32, float16, bfloat16 or float64, got {self.dtype}"  # noqa: E731
    torch._check_type(not self.dtype.is_complex, msg)
    torch._check_not_implemented(self.dtype in SUPPORTED_DTYPES, msg)
    _check_mode("rtopk.topk", max_iter, eps)
    d = _wrap_dim(dim, self.dim())
    if self.dim() == 0:
        torch._check(k == 0 or k == 1, lambda: f"rtopk.topk: k must be 0 or 1 for a 0-dim input, got k={k}")
        shape = ()
    else:
        size = self.shape[d]
        torch._check(
            0 <= k and k <= size,
            lambda: f"rtopk.topk: k must be in [0, {size}] (the size of dim {d}), got k={k}",
        )
        shape = list(self.shape)
        shape[d] = k
    return self.new_empty(shape), self.new_empty(shape, dtype=torch.int64)


# --- autograd ----------------------------------------------------------------------------------
# The gradient flows to the selected positions only; nothing flows through the indices. The
# backward is made of differentiable torch ops, so double backward works too.


def _scatter_grad(grad_values: Tensor, indices: Tensor, input_shape, dim: int) -> Tensor:
    if len(input_shape) == 0:
        return grad_values.reshape(-1).sum().reshape(()) if grad_values.numel() else grad_values.new_zeros(())
    return grad_values.new_zeros(input_shape).scatter(dim, indices, grad_values)


def _rtopk_setup_context(ctx, inputs, output):
    ctx.save_for_backward(output[1])
    ctx.input_shape = inputs[0].shape
    ctx.mark_non_differentiable(output[1])


def _rtopk_backward(ctx, grad_values, grad_indices):
    (indices,) = ctx.saved_tensors
    return _scatter_grad(grad_values, indices, ctx.input_shape, -1), None, None, None


def _topk_setup_context(ctx, inputs, output):
    ctx.save_for_backward(output[1])
    ctx.input_shape = inputs[0].shape
    ctx.dim = inputs[2] % max(inputs[0].dim(), 1)
    ctx.mark_non_differentiable(output[1])


def _topk_backward(ctx, grad_values, grad_indices):
    (indices,) = ctx.saved_tensors
    grad = _scatter_grad(grad_values, indices, ctx.input_shape, ctx.dim)
    return grad, None, None, None, None, None, None


torch.library.register_autograd("rtopk::rtopk", _rtopk_backward, setup_context=_rtopk_setup_context)
torch.library.register_autograd("rtopk::topk", _topk_backward, setup_context=_topk_setup_context)
