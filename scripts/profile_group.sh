#!/usr/bin/env bash
# ncu of one kernel at one shape (default: the group kernel, M=4096, k=8, exact, unsorted): speed of light,
# warp states, scheduler, occupancy, and source counters (stalls per line).  Writes $OUT/group_M_k.txt.
# Environment: KERNEL (name regex, default group_values; warp_values for the warp kernel), IT (max_iter,
# default - = exact), MODE (unsorted or sorted); the file is then $OUT/KERNEL_M_k[_itN][_sorted].txt.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
M=${1:-4096} K=${2:-8} KERNEL=${KERNEL:-group_values} IT=${IT:--} MODE=${MODE:-unsorted}
rep="$OUT/${KERNEL%_values}_${M}_${K}$([ "$IT" = - ] || echo "_it$IT")$([ "$MODE" = unsorted ] || echo _sorted)"
timeout 240 ncu --kernel-name "regex:$KERNEL" --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
  --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section SourceCounters --import-source yes -f -o "$rep" \
  python3 scripts/profile_one.py "$M" "$K" "$IT" "$MODE" >/dev/null 2>&1
ncu -i "$rep.ncu-rep" --page details >"$rep.txt" 2>&1
ncu -i "$rep.ncu-rep" --page source --csv --print-source cuda,sass 2>/dev/null | gzip -c >"$rep.src.csv.gz"
rm -f "$rep.ncu-rep"
pat="Duration|Memory Throughput|DRAM Throughput|Issue Slots|Issued Warp|Eligible|Active Warps|Achieved Occ"
pat+="|Theoretical Occ|Stall|No Eligible|Registers|Executed Ipc"
grep -E "$pat" "$rep.txt" | head -40
