#!/usr/bin/env bash
# ncu of one kernel change against its base (notes v31 item 2): build A (this tree) and B (a copy
# with the patch applied) side by side, then the SpeedOfLight / scheduler / warp-state / occupancy
# sections and the warp instructions executed, for each shape, with each build.  Logs under $OUT.
# Environment (and PATCH: scripts/ab_tree.sh): SHAPES, "M k" pairs separated by ";"
# (default "256 16;256 128"); MODE unsorted | sorted (default unsorted); KERNEL regex (default
# warp_values); ROWS (profile_one.py, default 2^18).
set -uo pipefail
MAX_JOBS=${MAX_JOBS:-8}  # (A and B build side by side)
# shellcheck source=scripts/ab_tree.sh
. "$(dirname "$0")/ab_tree.sh"
(build_b; echo "B build rc=$?") &
python3 setup.py build_ext --inplace >"$OUT/build_a.log" 2>&1
echo "A build rc=$?"
wait
IFS=';' read -ra shapes <<<"${SHAPES:-256 16;256 128}"
for v in a b; do
  d=$ROOT
  [ $v = b ] && d=$B
  for shape in "${shapes[@]}"; do
    read -r M K <<<"$shape"
    rep="$OUT/ncu_${v}_${M}_${K}.txt"
    (cd "$d" && PYTHONPATH=$d timeout 120 ncu --kernel-name "regex:${KERNEL:-warp_values}" \
      --launch-skip 1 --launch-count 1 --section SpeedOfLight --section SchedulerStats \
      --section WarpStateStats --section Occupancy --section LaunchStats \
      --metrics smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum \
      python3 scripts/profile_one.py "$M" "$K" - "${MODE:-unsorted}" >"$rep" 2>&1)
    echo "== $v M=$M k=$K"
    pat="Duration|smsp__inst_executed.sum|Issued Warp Per Scheduler|No Eligible|Achieved Occupancy|Registers Per"
    pat+="|Warp Cycles Per Issued|DRAM Throughput|Compute \\(SM\\)|Eligible Warps"
    grep -E "$pat" "$rep" | sed 's/  */ /g'
  done
done
# (The device tool returns at most 8 files: all of them in one tarball, alone when there are more.)
# (Into a file outside $OUT first: tar exits 1 when the folder it reads changes under it.)
tar czf "${TMPDIR:-/tmp}/logs.$$.tgz" -C "$OUT" . && mv "${TMPDIR:-/tmp}/logs.$$.tgz" "$OUT/logs.tgz" &&
  [ "$(find "$OUT" -type f | wc -l)" -gt 8 ] && find "$OUT" -type f ! -name logs.tgz -delete
