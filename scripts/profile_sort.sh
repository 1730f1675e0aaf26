#!/usr/bin/env bash
# ncu on the value kernel, unsorted vs sorted output, at N=2^18 fp32 (needs a built extension).
# Writes $OUT/ncu_M_k_{unsorted,sorted}.txt and prints the headline metrics.
# SHAPES: "M k" pairs, default "256 128;256 16;768 64".
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
IFS=";" read -ra shapes <<<"${SHAPES:-256 128;256 16;768 64}"
for mk in "${shapes[@]}"; do
  # shellcheck disable=SC2086  # (word splitting wanted: "M k")
  set -- $mk
  for mode in unsorted sorted; do
    f="$OUT/ncu_${1}_${2}_${mode}.txt"
    metrics=smsp__inst_executed_pipe_lsu.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum
    timeout 120 ncu --kernel-name regex:warp_values --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
      --section InstructionStats --section LaunchStats \
      --metrics "$metrics" \
      python3 scripts/profile_one.py "$1" "$2" - "$mode" >"$f" 2>&1
    pat="Duration|Executed Instructions |Issue Slots Busy|Achieved Occupancy|Registers Per Thread|Stall MIO"
    pat+="|smsp__inst_executed.sum|smsp__inst_executed_pipe_lsu.sum|l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
    pat+="|Warp Cycles Per Issued"
    echo "== M=$1 k=$2 $mode: $(grep -E "^ +($pat)" "$f" | sed -E 's/ +/ /g' | tr '\n' ';')"
  done
done
