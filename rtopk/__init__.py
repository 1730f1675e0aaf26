"""rtopk: row-wise top-k selection (the RTop-K algorithm) as a PyTorch operator.

``import rtopk`` loads the compiled library, which registers ``torch.ops.rtopk.rtopk`` with its
CPU and (when built with CUDA) CUDA kernels; this package adds the typed Python API, the fake
(meta) kernel for ``torch.compile`` and the autograd formula.
"""

import torch  # noqa: F401  (the library links against torch's)

from . import _C  # noqa: F401  (registers the operator)
from .ops import rtopk, rtopk_early_stop_ref, rtopk_ref

__all__ = ["rtopk", "rtopk_ref", "rtopk_early_stop_ref"]
__version__ = "0.1.0"
