#!/usr/bin/env bash
# One GPU call for the rank-order (sort) kernel: build, the sorted-output tests, the wide grid (fp32, bf16),
# then (FULL=1) the whole suite and the sanitizers.  Logs under $OUT/logs.
set -uo pipefail
L=$OUT/logs; mkdir -p "$L"
SKIP_TESTS=1 BENCH_GRIDS="${GRIDS:-wide}" BENCH_DTYPES="${DTYPES:-float32 bfloat16}" OUT=$L bash scripts/gpu_check.sh > "$L/check.txt" 2>&1
grep -E "build:|ptxas lines|geometric|sorted output|^\| 65536 \| (1024|2048|4096|8192)" "$L/check.txt" | cut -c1-40,100-140
grep -A2 "sort_rows_kernel" "$L/ptxas.txt" | grep -E "registers|spill" | head -30 > "$L/sort_ptxas.txt"
timeout 200 python3 -m pytest tests/test_topk.py -q -x -rfE -k "sorted or long_rows" > "$L/sort_tests.log" 2>&1
echo "sort tests rc=$?"; tail -4 "$L/sort_tests.log"
if [ "${FULL:-1}" = 1 ]; then
  timeout 300 python3 -m pytest tests -q -rfE > "$L/pytest.log" 2>&1; echo "pytest rc=$?"
  grep -E "^(FAILED|ERROR)" "$L/pytest.log" | head -10; tail -1 "$L/pytest.log"
  OUT=$L timeout 250 bash scripts/sanitize.sh
fi
