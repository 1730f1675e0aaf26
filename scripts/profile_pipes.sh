#!/usr/bin/env bash
# (Device) ncu pipe metrics of one kernel at a few shapes: per pipe the warp instructions executed and the cycles
# active as a share of peak, beside smsp__issue_active (notes v70 item 4: the pair kernel's ALU pipe 86% busy; items 6-12 on what that means).
# The metric names are taken from `ncu --query-metrics` on the card (an unknown name fails the whole run).
# Usage: scripts/profile_pipes.sh ["M k" ...] (default "768 64" "256 16"); environment: PREBUILT (a folder
# scripts/prebuild.sh wrote for this tree, default prebuilt/a), KERNEL (regex, default pair_rows), DTYPE (bfloat16),
# ROWS (262144).  Logs under $OUT: pipes_M_k.txt.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
# shellcheck source=scripts/build_env.sh
. scripts/build_env.sh
rtopk_build "$OUT/build.log" "${PREBUILT:-prebuilt/a}" || exit 1
export PYTHONPATH=$PWD
ncu --query-metrics --chip gh100 >"$OUT/query.txt" 2>&1
L=$( (grep -oE "^smsp__inst_executed_pipe_[a-z0-9_]+" "$OUT/query.txt" | sort -u | sed 's/$/.sum/'
      grep -oE "^sm__pipe_[a-z0-9_]+_cycles_active" "$OUT/query.txt" | sort -u |
        sed 's/$/.avg.pct_of_peak_sustained_active/') | tr '\n' ',')
L+="smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active"
[ $# -gt 0 ] || set -- "768 64" "256 16"
for s in "$@"; do
  read -r m k <<<"$s"
  DTYPE=${DTYPE:-bfloat16} ROWS=${ROWS:-262144} timeout 150 ncu --kernel-name "regex:${KERNEL:-pair_rows}" \
    --launch-skip 1 --launch-count 1 --metrics "$L" python3 scripts/profile_one.py "$m" "$k" - unsorted \
    >"$OUT/pipes_${m}_${k}.txt" 2>&1
  echo "$m x $k rc=$?"
  grep -E "pipe_[a-z0-9_]+|issue_active|inst_executed.sum" "$OUT/pipes_${m}_${k}.txt" | awk '$NF != "0" && $NF != "0.00"'
done
