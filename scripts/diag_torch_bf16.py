"""Does torch.topk on CUDA rank a sign-bit NaN in bfloat16 like other NaNs?"""
import torch

x = torch.tensor([1.0, float("nan"), -float("nan"), 2.0, 0.5] * 7, dtype=torch.bfloat16)
for dev in ("cpu", "cuda"):
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        v = torch.topk(x.to(dt).to(dev), 4).values.float().cpu().tolist()
        print(dev, dt, v)
        v = torch.topk(x.to(dt).to(dev), 16).values.float().cpu().tolist()
        print("  k=16:", v)
