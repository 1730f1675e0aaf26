#!/usr/bin/env bash
# One GPU call for a kernel change: build, a quick correctness pass (TESTS, default tests/test_topk.py
# tests/test_rtopk.py), then the benchmark grids GRIDS x DTYPES (defaults: paper wide x float32).
# Logs under $OUT/logs; prints the build line, test summary and each grid's summary lines.
set -uo pipefail
L=$OUT/logs; mkdir -p "$L"
SKIP_TESTS=1 BENCH_GRIDS="none" OUT=$L bash scripts/gpu_check.sh > "$L/check.txt" 2>&1
grep -E "build:|ptxas lines" "$L/check.txt"
timeout 300 python3 -m pytest ${TESTS:-tests/test_topk.py tests/test_rtopk.py} -q -x -rfE > "$L/tests.log" 2>&1
echo "tests rc=$?"; tail -1 "$L/tests.log"; grep -E "^(FAILED|ERROR)" "$L/tests.log" | head -5
for dt in ${DTYPES:-float32}; do
  for g in ${GRIDS:-paper wide}; do
    timeout 300 python3 -m rtopk.bench --grid "$g" --dtype "$dt" --json "$L/bench_${g}_${dt}.json" 2>/dev/null > "$L/bench_${g}_${dt}.md"
    echo "== $g $dt"; grep -E "^#" "$L/bench_${g}_${dt}.md" | grep -v "timing\|device"
  done
done
