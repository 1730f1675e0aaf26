"""Markdown sections for benchmarks/results/*.md from the JSON files `python -m rtopk.bench --json` writes.

    python benchmarks/results_md.py bench_paper_float32.json bench_paper_bfloat16.json ... > sections.md

Each file becomes a section: its device line, the summary the bench printed (from the JSON's summary), the exact
floor fraction by N and by M where the grid has several, the adversarial ratios, and the table itself.  The header
and the target summary above the sections are written by hand."""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rtopk.bench import COLUMNS, _cell, adversarial_ratios, geomean  # noqa: E402

GRID_NAMES = {"paper": "the paper grid", "moe": "mixture-of-experts sizes", "wide": "wide rows",
              "long": "long rows", "vocab": "vocabulary rows (samplers)", "adversarial": "adversarial rows", "issue2": "N = 2^18", "quick": "the quick grid"}


def by(rows, key):
    """The exact floor fraction's geometric mean for each value of key (randn rows), as 'a / b / c'."""
    vals = sorted({r[key] for r in rows})
    if len(vals) < 2:
        return None
    fr = [geomean([r["floor_frac_exact"] for r in rows if r[key] == v]) for v in vals]
    return " / ".join(f"{f:.3f}" for f in fr) + f" ({key} = " + ", ".join(str(v) for v in vals) + ")"


def section(path):
    d = json.load(open(path))
    # (bench_<grid>_<dtype>.json as the bench's callers name them, <card>-<grid>_<dtype>.json beside the tables)
    name = os.path.basename(path)
    name = name[len("bench_"):] if name.startswith("bench_") else name.split("-", 1)[-1]
    grid = name.split("_")[0]
    dtype = d["dtype"].replace("torch.", "")
    s = d["summary"]
    rows = d["rows"]
    randn = [r for r in rows if r["dist"] == "randn"]
    out = [f"## {dtype}, {GRID_NAMES.get(grid, grid)}", ""]
    out.append(f"{d['device']}; torch {d['torch']}; copy bandwidth {d['copy_bandwidth'] / 1e12:.3f} TB/s; "
               f"timing: {d['timing']}.")
    out.append("")
    out.append(f"- geometric means over randn rows: speed-up over torch.topk(sorted) exact {s['speedup_exact']:.2f}x, "
               f"max_iter=4 {s['speedup_it4']:.2f}x; fraction of the floor exact {s['floor_frac_exact']:.3f}, "
               f"max_iter=4 {s['floor_frac_it4']:.3f}")
    for key in ("N", "M"):
        b = by(randn, key)
        if b:
            out.append(f"- exact floor fraction by {key}: {b}")
    for label, key in (("k <= 128", "sorted_cost"), ("k > 128", "sorted_cost_large_k")):
        if key + "_cells" in s:
            out.append(f"- sorted output over unsorted exact, {label}: geometric mean {100 * s[key + '_geomean']:+.1f}%, "
                       f"worst {100 * s[key + '_max']:+.1f}%, {s[key + '_within_25']} of {s[key + '_cells']} cells "
                       "within +25%")
    slow = adversarial_ratios(rows)
    if slow:
        several_n = len({r["N"] for r, _ in slow}) > 1
        for N, M in sorted({(r["N"], r["M"]) for r, _ in slow}, key=lambda nm: (nm[1], nm[0])):
            ratios = sorted(((x, r["dist"]) for r, x in slow if (r["N"], r["M"]) == (N, M)), reverse=True)
            shape = f"N = {N}, M = {M}" if several_n else f"M = {M}"
            out.append(f"- exact time over randn rows', {shape}: " + ", ".join(f"{dist} {x:.2f}x" for x, dist in ratios))
    out += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(_cell(r, c) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", help="bench_<grid>_<dtype>.json (or H200-<grid>_<dtype>.json) files, in order")
    args = p.parse_args(argv)
    print("\n".join(section(f) for f in args.files), end="")


if __name__ == "__main__":
    main()
