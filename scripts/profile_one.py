"""Run one rtopk call per shape (for ncu): python scripts/profile_one.py M k [max_iter] [sorted].

max_iter: an integer, or "-" for exact mode; "sorted" asks for rank-ordered output (rtopk.topk).
ROWS (environment): the number of rows, default 2^18; DIST: randn (default) or any other row kind of
rtopk.bench.make_input (heavy_tail, all_nan, ...); DTYPE: float32 (default), bfloat16 or float16."""
import os
import sys

import torch

import rtopk
import rtopk.bench

M, k = int(sys.argv[1]), int(sys.argv[2])
max_iter = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "-" else None
want_sorted = len(sys.argv) > 4 and sys.argv[4] == "sorted"
x = rtopk.bench.make_input(os.environ.get("DIST", "randn"), int(os.environ.get("ROWS", 2**18)), M,
                          getattr(torch, os.environ.get("DTYPE", "float32")), "cuda", torch.Generator("cuda"))
for _ in range(2):
    rtopk.topk(x, k, sorted=want_sorted, max_iter=max_iter)
torch.cuda.synchronize()
