"""A torch model of the packed-pair kernel's search (csrc/cuda/rtopk_pair_rows.cuh, bf16 rows): counting passes a row
and the slowest row's in each warp (what a warp pays), for the kernel's bisection (value midpoints for 12 steps, then
key midpoints, from the group-maximum bracket) and two interpolating variants (notes v65): `lin`, the threshold where
the count, linear between the bracket's ends, would be k + 1/2; `ilog`, the same on log(count + 1/2); both with
Illinois weights and the fraction kept in [1/32, 31/32].

    python benchmarks/pair_search_model.py [randn|randn5|neg_inf_heavy] [lean]

With `lean`: passes a warp for the old search (key phase with value midpoints, before notes v66), for the value phase
then the key phase (notes v65 item 9) and for the same with a first probe at 0 from a -inf low end (item 10; the
kernel's search since notes v66 item 1).

With `guided`: passes a warp for that search and for the same with its first two probes from the row's moments (notes
v71: mean + z sd, then `step` sd toward the k-th value when the first count is within 4 sqrt(n p (1 - p)) of k), the
moments of all the row or of its odd elements (the high halves, as the kernel's second form).
"""

import math
import sys

import torch

torch.manual_seed(0)

def bits_of(x):  # bf16 tensor -> its bits (int32)
    return x.view(torch.int16).to(torch.int32) & 0xFFFF
def key_of(b):
    return torch.where(b & 0x8000 != 0, b ^ 0xFFFF, b ^ 0x8000)
def bits_from_key(k):
    return torch.where(k & 0x8000 != 0, k ^ 0x8000, k ^ 0xFFFF)
def f_of_bits(b):
    return (b.to(torch.int32) << 16).view(torch.float32)
def bf16_round(f):
    return bits_of(f.to(torch.bfloat16))

def level(M, k, G, E):
    for V in (8, 4, 2, 1):
        if 8 * V > E: continue
        groups = sum(((min(max(M - l * E, 0), E)) // 8 + V - 1) // V for l in range(G))
        if groups >= k: return V
    return 0

def start(x, k, G, E):
    R, M = x.shape
    mx = x.max(1).values
    V = level(M, k, G, E)
    if V == 0:
        mn = x.min(1).values
    else:
        pad = G * E - M  # padding as NaN here: a group of padding only is skipped, as the kernel skips it
        xp = torch.cat([x, torch.full((R, pad), float('nan'))], 1) if pad else x
        xl = xp.view(R, G, E)
        ng = -(-E // (8 * V))
        if ng * 8 * V > E:
            xl = torch.cat([xl, torch.full((R, G, ng * 8 * V - E), float('nan'))], 2)
        xg = xl.view(R, G, ng, 8 * V)
        pad_only = torch.isnan(xg).all(-1).view(R, -1)
        gm = torch.where(torch.isnan(xg), torch.tensor(-float('inf')), xg).max(-1).values.view(R, -1)
        gm = torch.where(pad_only, torch.full_like(gm, float('inf')), gm)
        mn = gm.min(1).values
    return mn, mx

def run(x, k, G, E, variant, vsteps=12):
    R, M = x.shape
    xb = x.to(torch.bfloat16).float()
    mn, mx = start(xb, k, G, E)
    lo = key_of(bits_of(mn.to(torch.bfloat16)))
    hi = key_of(bits_of(mx.to(torch.bfloat16))) + 1
    lo_f = mn.clone(); hi_f = f_of_bits(bits_from_key(hi))
    c_lo = torch.full((R,), -1.0)  # unknown
    c_hi = torch.zeros(R)
    side = torch.zeros(R, dtype=torch.int32)  # Illinois: last side moved
    wlo = torch.ones(R); whi = torch.ones(R)
    done = torch.zeros(R, dtype=torch.bool)
    passes = torch.zeros(R, dtype=torch.int32)
    for step in range(64):
        done |= (hi - lo) <= 1
        if done.all(): break
        t = bits_from_key((lo + hi) >> 1)
        if variant == 'bisect':
            if step < vsteps:
                vt = bf16_round(lo_f * 0.5 + hi_f * 0.5)
                vf = f_of_bits(vt)
                inside = (vf > lo_f) & (vf < hi_f)
                t = torch.where(inside, vt, t)
        else:
            # interpolation of log(count + 0.5) (or count) between the ends, target k + 0.5
            known = c_lo >= 0
            if variant == 'ilog':
                a = torch.log(c_lo.clamp(min=0) + 0.5); b = torch.log(c_hi + 0.5); tg = math.log(k + 0.5)
            else:
                a = c_lo; b = c_hi; tg = k + 0.5
            fr = ((a - tg) * wlo) / ((a - tg) * wlo + (tg - b) * whi)
            fr = fr.clamp(1 / 32, 31 / 32)
            fr = torch.where(known, fr, torch.full_like(fr, 0.5))
            vt = bf16_round(lo_f + (hi_f - lo_f) * fr)
            vf = f_of_bits(vt)
            inside = (vf > lo_f) & (vf < hi_f) & torch.isfinite(hi_f)
            t = torch.where(inside, vt, t)
        tf = f_of_bits(t)
        c = (xb >= tf[:, None]).sum(1).float()
        act = ~done
        passes += act.int()
        hit = act & (c == k)
        up = act & (c > k)
        dn = act & (c < k)
        done |= hit
        tk = key_of(t)
        # Illinois weights: the end not moved twice in a row is halved
        whi = torch.where(up & (side == 1), whi * 0.5, torch.where(up, torch.ones_like(whi), whi))
        wlo = torch.where(dn & (side == 2), wlo * 0.5, torch.where(dn, torch.ones_like(wlo), wlo))
        wlo = torch.where(up, torch.ones_like(wlo), wlo); whi = torch.where(dn, torch.ones_like(whi), whi)
        side = torch.where(up, 1, torch.where(dn, 2, side))
        lo = torch.where(up, tk, lo); lo_f = torch.where(up, tf, lo_f); c_lo = torch.where(up, c, c_lo)
        hi = torch.where(dn, tk, hi); hi_f = torch.where(dn, tf, hi_f); c_hi = torch.where(dn, c, c_hi)
    return passes

def guided_probes(xb, k, half):
    """The kernel's PairPlan probes (csrc/cuda/rtopk_pair_rows.cuh, pair_plan): est = mean + z sd of the row (or of
    its odd elements), the second probe's step in sd, the gate in counts."""
    N = xb.shape[1]
    p = k / N
    z = math.sqrt(2) * torch.erfinv(torch.tensor(1 - 2 * p, dtype=torch.float64)).item()
    phi = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    xs = xb[:, 1::2] if half else xb
    mu, sd = xs.mean(1), xs.std(1)
    spread = p * (1 - p) / phi ** 2 + ((1 + z * z / 2) if half else 0.0)
    return mu + z * sd, 1.5 * math.sqrt(spread / N) * sd, 4 * math.sqrt(N * p * (1 - p))


def run_lean(x, k, G, E, probe0, vsteps=12, guide=None):
    """The value phase then the key phase (notes v65 items 8-9), warp by warp: passes a warp (its rows: 32 / G)."""
    R, M = x.shape
    rw = 32 // G
    xb = x.to(torch.bfloat16).float()
    mn, mx = start(xb, k, G, E)
    lo_f = mn.clone()
    hi_f = f_of_bits(bits_from_key(key_of(bits_of(mx.to(torch.bfloat16))) + 1))
    c_hi = torch.zeros(R)
    done = torch.zeros(R, dtype=torch.bool)
    vph = torch.ones(R, dtype=torch.bool)
    wpass = torch.zeros(R // rw, dtype=torch.int32)
    wlive = torch.ones(R // rw, dtype=torch.bool)  # warps still in the value phase
    wstep = torch.zeros(R // rw, dtype=torch.int32)
    for step in range(64):
        mid = lo_f * 0.5 + hi_f * 0.5
        if probe0:
            mid = torch.where((lo_f == -float('inf')) & (hi_f > 0), torch.zeros_like(mid), mid)
        if guide is not None and step < 2:  # (inside the bracket only, as the kernel has it)
            est, dstep, gate = guide
            g = est if step == 0 else torch.where(c1 >= k, est + dstep, est - dstep)
            if step == 1:
                g = torch.where((c1 - k).abs() <= gate, g, torch.full_like(g, float('nan')))
            mid = torch.where((g > lo_f) & (g < hi_f), g, mid)
        vt = bf16_round(mid)
        vf = f_of_bits(vt)
        vph = vph & (step < vsteps) & (vf > lo_f) & (vf < hi_f)
        wl = wlive & vph.view(-1, rw).any(1)
        wlive = wl
        if not wl.any(): break
        act = vph & wl.repeat_interleave(rw)
        wpass += wl.int(); wstep += wl.int()
        c = (xb >= vf[:, None]).sum(1).float()
        if step == 0:
            c1 = c
        hit = act & (c == k); up = act & (c > k); dn = act & (c < k)
        done |= hit; vph &= ~hit
        lo_f = torch.where(up, vf, lo_f)
        hi_f = torch.where(dn, vf, hi_f); c_hi = torch.where(dn, c, c_hi)
    lo = key_of(bits_of(lo_f.to(torch.bfloat16))); hi = key_of(bits_of(hi_f.to(torch.bfloat16)))
    stepr = wstep.repeat_interleave(rw)
    for it in range(64):
        done |= (hi - lo) <= 1
        wact = (~done).view(-1, rw).any(1)
        if not wact.any(): break
        t = bits_from_key((lo + hi) >> 1)
        vt = bf16_round(lo_f * 0.5 + hi_f * 0.5)
        vf = f_of_bits(vt)
        use = (stepr < vsteps) & (vf > lo_f) & (vf < hi_f)
        t = torch.where(use, vt, t)
        tf = f_of_bits(t)
        c = (xb >= tf[:, None]).sum(1).float()
        act = ~done
        wpass += wact.int(); stepr = stepr + 1
        hit = act & (c == k); up = act & (c > k); dn = act & (c < k)
        done |= hit
        tk = key_of(t)
        lo = torch.where(up, tk, lo); lo_f = torch.where(up, tf, lo_f)
        hi = torch.where(dn, tk, hi); hi_f = torch.where(dn, tf, hi_f); c_hi = torch.where(dn, c, c_hi)
    return wpass


def shape(M, k):
    if M <= 256: return (2, 128) if k <= 32 else (4, 64)
    if M <= 512: return (4, 128) if k <= 64 else (8, 64)
    return (8, 96)

dist = sys.argv[1] if len(sys.argv) > 1 else 'randn'
lean = len(sys.argv) > 2 and sys.argv[2] == 'lean'
guided = len(sys.argv) > 2 and sys.argv[2] == 'guided'
R = 4096


def rows(M):
    x = torch.randn(R, M)
    if dist == 'randn5':
        x = x.double().pow(5).float()
    elif dist == 'neg_inf_heavy':  # as rtopk.bench.make_input's: 90% -inf
        x = torch.where(torch.rand(R, M) < 0.9, torch.tensor(-float('inf')), x)
    return x


if guided:
    print(f"# {dist}: passes a warp, the kernel's search / with the guided probes, moments of the row / of its odd "
          "elements")
elif lean:
    print(f"# {dist}: passes a warp, the kernel's search / the value phase then the key phase / the same with a first "
          "probe at 0 from a -inf low end")
else:
    print(f"# {dist}: mean passes a row / mean of the warp's max")
for M in (256, 512, 768):
    x = rows(M)
    for k in (16, 32, 64, 96, 128):
        G, E = shape(M, k)
        rw = 32 // G
        if guided:
            xb = x.to(torch.bfloat16).float()
            pp = run_lean(x, k, G, E, True).float().mean()
            pf = run_lean(x, k, G, E, True, guide=guided_probes(xb, k, False)).float().mean()
            ph = run_lean(x, k, G, E, True, guide=guided_probes(xb, k, True)).float().mean()
            print(M, k, f"G={G}", f"bisection {pp:.2f} | guided {pf:.2f} | guided, half the row {ph:.2f}")
            continue
        if lean:
            pc = run(x, k, G, E, 'bisect').view(-1, rw).max(1).values.float().mean()
            pl = run_lean(x, k, G, E, False).float().mean()
            pp = run_lean(x, k, G, E, True).float().mean()
            print(M, k, f"G={G}", f"classic {pc:.2f} | lean {pl:.2f} | lean+probe0 {pp:.2f}")
            continue
        out = []
        for v in ('bisect', 'lin', 'ilog'):
            p = run(x, k, G, E, v)
            wm = p.view(-1, rw).max(1).values.float().mean()
            out.append(f"{v} {p.float().mean():.2f}/{wm:.2f}")
        print(M, k, f"G={G}", " | ".join(out))
