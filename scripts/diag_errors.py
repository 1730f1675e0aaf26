"""Diagnose exception propagation from the extension (run each case in a subprocess)."""
import subprocess
import sys

CASES = {
    "cpu_k_neg_autograd": "rtopk.rtopk(torch.randn(3, 8), -1)",
    "cpu_k_neg_nograd": "torch.ops.rtopk.rtopk.default(torch.randn(3, 8), -1, -1, 0.0)",
    "cpu_max_iter0": "rtopk.rtopk(torch.randn(3, 8), 2, max_iter=0)",
    "cuda_k_neg": "rtopk.rtopk(torch.randn(3, 8, device='cuda'), -1)",
    "topk_builtin_bad": "torch.topk(torch.randn(3, 8), 9)",
}
for name, expr in CASES.items():
    code = f"import torch, rtopk\ntry:\n    {expr}\n    print('no error')\nexcept Exception as e:\n    print(type(e).__name__, str(e)[:200])\n"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print(f"{name}: rc={p.returncode} out={p.stdout.strip()!r} err={p.stderr.strip()[-300:]!r}")
