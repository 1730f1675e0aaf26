"""rtopk: row-wise top-k selection (the RTop-K algorithm) as a PyTorch operator.

``import rtopk`` loads the compiled library, which registers ``torch.ops.rtopk.rtopk`` and
``torch.ops.rtopk.topk`` with their CPU and (when built with CUDA) CUDA kernels; this package adds
the typed Python API (``rtopk.rtopk``, the drop-in ``rtopk.topk``, ``rtopk.replace_torch_topk``),
the fake (meta) kernels for ``torch.compile`` and the autograd formulas.
"""

import torch  # noqa: F401  (the library links against torch's)

from . import _C  # noqa: F401  (registers the operators)
from .ops import replace_torch_topk, rtopk, rtopk_early_stop_ref, rtopk_ref, topk, topk_ref

__all__ = ["rtopk", "topk", "replace_torch_topk", "rtopk_ref", "rtopk_early_stop_ref", "topk_ref"]
__version__ = "0.2.0"
