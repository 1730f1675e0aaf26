"""A numpy model of the lane kernel's bucket levels (csrc/cuda/rtopk_lane_rows.cuh): how many crowded levels a row
needs and how long the list of members left to the final ranking is, per row distribution and k.

    python benchmarks/level_model.py [--rows 1024] [--m 256]

Level 1 counts the row in 256 linear buckets over [min, max]; a row is crowded when the k-th value's bucket holds
more than 32 members of which only some are taken; each crowded level counts those members again over their own
range, until at most 32 stay or all are needed. Columns: "lin/lin" every level linear (as built); "lin/key" crowded
levels in equal steps of the order-preserving key; "adaptive" a crowded level counted linearly and, where its cut is
still crowded, again by key (tried as lane_keyed_cut and not kept: notes v39 item 1). Each cell: crowded levels a
row / count walks a row / the longest final list among a warp's 8 rows (what the ranking's time follows), means over
the rows."""

import argparse

import numpy as np

THRESHOLD = 32  # members the final ranking takes


def key(v):
    b = v.astype(np.float32).view(np.uint32).astype(np.int64)
    return np.where(b >> 31, 0xFFFFFFFF - b, b | 0x80000000)


def buckets_linear(v):
    lo, hi = v.min(), v.max()
    scale = np.float32(255) / np.float32(hi - lo) * np.float32(1 - 2**-16)
    return np.floor(np.float32(hi - v) * scale).astype(int)


def buckets_key(v):
    kv = key(v)
    shift = max(0, int(kv.max() - kv.min()).bit_length() - 8)
    return ((kv.max() - kv) >> shift).astype(int)


def cut(u, need):
    c = np.bincount(u, minlength=256)
    cum = np.cumsum(c)
    b = int(np.searchsorted(cum, need))
    return b, int(cum[b] - c[b]), int(c[b])


def levels(x, k, later):
    """(crowded levels, count walks, final list length) of one row; later: 'lin', 'key' or 'adaptive'."""
    u = buckets_linear(x)
    b, chi, nn = cut(u, k)
    need, mem, lv, walks = k - chi, x[u == b], 0, 0
    while need < nn and nn > THRESHOLD:
        if mem.min() == mem.max():
            return lv, walks, 0
        lv += 1
        u = buckets_key(mem) if later == "key" else buckets_linear(mem)
        walks += 1
        b, chi, nn = cut(u, need)
        if later == "adaptive" and nn > THRESHOLD and need - chi < nn:
            u = buckets_key(mem)
            walks += 1
            b, chi, nn = cut(u, need)
        need, mem = need - chi, mem[u == b]
    return lv, walks, (nn if need < nn else 0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=1024)
    p.add_argument("--m", type=int, default=256)
    args = p.parse_args(argv)
    rng = np.random.default_rng(1)
    dists = {
        "randn": lambda n: rng.standard_normal(n),
        "randn^3": lambda n: rng.standard_normal(n) ** 3,
        "randn^5": lambda n: rng.standard_normal(n) ** 5,
        "outliers": lambda n: np.where(rng.random(n) < 0.02, rng.standard_normal(n) * 1e20, rng.standard_normal(n)),
    }
    print("| rows | k | lin/lin | lin/key | adaptive |")
    print("|---|---|---|---|---|")
    for name, draw in dists.items():
        for k in (16, 64, 128):
            xs = [draw(args.m).astype(np.float32).astype(np.float64) for _ in range(args.rows)]
            cells = []
            for later in ("lin", "key", "adaptive"):
                res = np.array([levels(x, k, later) for x in xs])
                warp_max = res[: len(res) // 8 * 8, 2].reshape(-1, 8).max(1).mean()
                cells.append(f"{res[:, 0].mean():.2f} / {res[:, 1].mean():.2f} / {warp_max:.1f}")
            print(f"| {name} | {k} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
