#!/usr/bin/env bash
# ncu source counters of one kernel for one shape: per CUDA source line, the warp instructions
# executed and the stall samples (needs the -lineinfo build).
# Usage: scripts/profile_source.sh M k [unsorted|sorted] [max_iter]; writes
# $OUT/src_KERNEL_M_k_mode[_itN].txt (exact mode without max_iter; KERNEL without "_values").
# Environment: KERNEL, the kernel name regex (default warp_values; stream_values, group_values), as in
# profile_group.sh; ROWS and DIST (profile_one.py), the rows of the input (default 2^18) and their values.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
M=$1 K=$2 MODE=${3:-sorted} IT=${4:--} KERNEL=${KERNEL:-warp_values}
rep="$OUT/src_${KERNEL%_values}_${M}_${K}_${MODE}$([ "$IT" = - ] || echo "_it$IT")${DIST:+_$DIST}"
timeout 200 ncu --kernel-name "regex:$KERNEL" --launch-skip 1 --launch-count 1 \
  --section SourceCounters --import-source yes -f -o "$rep" \
  python3 scripts/profile_one.py "$M" "$K" "$IT" "$MODE" >/dev/null 2>&1
ncu -i "$rep.ncu-rep" --page source --csv --print-source cuda,sass >"$rep.csv" 2>&1
python3 - "$rep.csv" >"$rep.txt" <<'PY'
import collections, csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
# With cuda,sass each SASS row carries its CUDA line number and text; sum the metrics by line.
head = None
ins, st, text, fname = collections.Counter(), collections.Counter(), {}, None
seen, ui, us = set(), 0.0, 0.0  # instruction addresses counted once: the kernel's totals
for r in rows:
    if len(r) == 2 and r[0] in ("File Name", "File Path"):
        fname = r[1].split("/")[-1]
        continue
    if head is None and any("Instructions Executed" in c for c in r):
        head = r
        print("columns:", r)
        ci = [i for i, c in enumerate(r) if c.startswith("Instructions Executed")][0]
        cs = [i for i, c in enumerate(r) if c.startswith("Warp Stall Sampling (All")]
        cs = cs[0] if cs else None
        continue
    if head is None or len(r) < len(head):
        continue
    try:
        n = float(r[ci].replace(",", "") or 0)
        s = float(r[cs].replace(",", "") or 0) if cs is not None else 0.0
    except ValueError:
        continue
    if not r[0].strip():  # a SASS row, listed under each line of its inline stack: counted once
        if r[2].startswith("0x") and r[2] not in seen:
            seen.add(r[2])
            ui += n
            us += s
        continue
    key = (fname, r[0])
    ins[key] += n
    st[key] += s
    text.setdefault(key, r[1][:80])
ti, ts = sum(ins.values()), sum(st.values())
# A line's figures include the instructions inlined from it (a helper's line and its callers' both count them).
print(f"total instructions {ui:.0f}  stall samples {us:.0f}  (summed over lines, inlining counted twice: {ti:.0f})")
for key in sorted(ins, key=lambda x: (x[0] or "", int(x[1]) if x[1].isdigit() else 0)):
    if ins[key] > 0.002 * ti or st[key] > 0.005 * ts:
        print(f"{key[0]}:{key[1]:>5} {ins[key]:>12.0f} {st[key]:>8.0f}  {text[key]}")
PY
head -c 3000 "$rep.csv" >"$rep.head"; gzip -c "$rep.csv" >"$rep.csv.gz"; rm -f "$rep.csv" "$rep.ncu-rep"
head -3 "$rep.txt"
