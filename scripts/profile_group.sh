#!/usr/bin/env bash
# ncu of the group kernel at one shape (default M=4096, k=8, exact, unsorted): speed of light, warp states,
# scheduler, occupancy, and source counters (stalls per line).  Writes $OUT/group_M_k.txt.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
M=${1:-4096} K=${2:-8}
rep="$OUT/group_${M}_${K}"
timeout 240 ncu --kernel-name regex:group_values --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
  --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section SourceCounters --import-source yes -f -o "$rep" \
  python3 scripts/profile_one.py "$M" "$K" - unsorted >/dev/null 2>&1
ncu -i "$rep.ncu-rep" --page details >"$rep.txt" 2>&1
ncu -i "$rep.ncu-rep" --page source --csv --print-source cuda,sass 2>/dev/null | gzip -c >"$rep.src.csv.gz"
rm -f "$rep.ncu-rep"
grep -E "Duration|Memory Throughput|DRAM Throughput|Issue Slots|Issued Warp|Eligible|Active Warps|Achieved Occ|Theoretical Occ|Stall|No Eligible|Registers|Executed Ipc" "$rep.txt" | head -40
