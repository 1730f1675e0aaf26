"""Run one rtopk call per shape (for ncu): python scripts/profile_one.py M k [max_iter]."""
import sys

import torch

import rtopk

M, k = int(sys.argv[1]), int(sys.argv[2])
max_iter = int(sys.argv[3]) if len(sys.argv) > 3 else None
x = torch.randn(2**18, M, device="cuda")
for _ in range(2):
    rtopk.rtopk(x, k, max_iter=max_iter)
torch.cuda.synchronize()
