#!/usr/bin/env bash
# One GPU call for a group-kernel change: build, the group tests, the slow-rows bound at M=8192, the
# wide grid (fp32, bf16), the whole suite and the sanitizers.  Logs under $OUT/logs.
set -uo pipefail
L=$OUT/logs; mkdir -p "$L"
SKIP_TESTS=1 BENCH_GRIDS=wide BENCH_DTYPES="float32 bfloat16" OUT=$L bash scripts/gpu_check.sh > "$L/check.txt" 2>&1
grep -E "build:|ptxas lines|geometric|^\| 65536 \| (4096|8192)" "$L/check.txt"
timeout 120 python3 -m pytest tests/test_group_rows.py -q -x -rfE > "$L/group_tests.log" 2>&1
echo "group tests rc=$?"; tail -4 "$L/group_tests.log"
timeout 100 python3 -m pytest tests/test_slow_rows.py -q -s -k "8192" > "$L/slow.log" 2>&1; echo "slow rc=$?"; grep -E "randn|passed|failed" "$L/slow.log" | tail -4
if [ "${FULL:-1}" = 1 ]; then
  timeout 300 python3 -m pytest tests -q -rfE > "$L/pytest.log" 2>&1; echo "pytest rc=$?"
  grep -E "^(FAILED|ERROR)" "$L/pytest.log" | head -10; tail -1 "$L/pytest.log"
  OUT=$L timeout 200 bash scripts/sanitize.sh
fi
