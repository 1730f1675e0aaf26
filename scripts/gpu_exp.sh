#!/usr/bin/env bash
# One GPU call for a kernel experiment: build (with the ptxas report), a focused test pass, benchmark
# grids, and with FULL=1 the whole suite and the sanitizers.  Logs under $OUT/logs; prints summaries.
# Environment (pytest arguments in TESTS are word-split by the shell, quotes included):
#   TESTS   default "tests/test_topk.py tests/test_rtopk.py"; empty: none
#   GRIDS   default "paper wide"; DTYPES default "float32"; FULL default 0
# Examples: TESTS="tests/test_group_rows.py" GRIDS=wide DTYPES="float32 bfloat16" FULL=1 (group kernel);
#           TESTS="tests/test_topk.py -k 'sorted or long_rows'" GRIDS=wide FULL=1 (sorted output);
#           TESTS="tests/test_slow_rows.py -s -k 8192" GRIDS= (slow-row bound only);
#           TESTS="tests/test_stream_rows.py" GRIDS="wide long" DTYPES="float32 bfloat16" (streaming kernel).
set -uo pipefail
L=$OUT/logs; mkdir -p "$L"
SKIP_TESTS=1 BENCH_GRIDS="" OUT=$L bash scripts/gpu_check.sh > "$L/check.txt" 2>&1
grep -E "build:|ptxas lines|[1-9][0-9]* bytes spill" "$L/check.txt"
TESTS=${TESTS-tests/test_topk.py tests/test_rtopk.py}
if [ -n "$TESTS" ]; then
  eval "timeout 300 python3 -m pytest $TESTS -q -x -rfE" > "$L/tests.log" 2>&1
  echo "tests rc=$?"; tail -1 "$L/tests.log"; grep -E "^(FAILED|ERROR)" "$L/tests.log" | head -5
fi
for dt in ${DTYPES:-float32}; do
  for g in ${GRIDS-paper wide}; do
    timeout 300 python3 -m rtopk.bench --grid "$g" --dtype "$dt" --json "$L/bench_${g}_${dt}.json" \
      2>/dev/null > "$L/bench_${g}_${dt}.md"
    echo "== $g $dt"; grep -E "^#" "$L/bench_${g}_${dt}.md" | grep -v "timing\|device"
  done
done
if [ "${FULL:-0}" = 1 ]; then
  timeout 300 python3 -m pytest tests -q -rfE > "$L/pytest.log" 2>&1; echo "pytest rc=$?"
  grep -E "^(FAILED|ERROR)" "$L/pytest.log" | head -10; tail -1 "$L/pytest.log"
  OUT=$L timeout 250 bash scripts/sanitize.sh
fi
