#!/usr/bin/env bash
# One call on the GPU machine: build (with the ptxas resource report), run the tests, benchmark.
# Logs go under $OUT (./out when unset).  Usage: scripts/gpu_check.sh [pytest args...]
# Environment: BENCH_GRIDS="issue2 paper" (default issue2; set and empty: no benchmark), BENCH_DTYPES="float32"
# (default); PYTEST_S, the pytest time limit (default 420: the whole suite takes ~630 s on an H100, so pass a
# subset or a larger limit); TEST_PATHS, what pytest collects (default tests; several paths: space-separated).
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
# shellcheck source=scripts/build_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_env.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUT/gpu.txt" 2>&1
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >>"$OUT/gpu.txt" 2>&1
start=$(date +%s)
if ! python3 -m pip install --no-build-isolation --no-deps -v -e . >"$OUT/build.log" 2>&1; then
  tail -60 "$OUT/build.log"
  exit 1
fi
echo "build: $(($(date +%s) - start)) s"
grep -E "ptxas info|bytes stack frame|spill" "$OUT/build.log" | sed 's/^ *//' >"$OUT/ptxas.txt"
grep -c "spill stores" "$OUT/ptxas.txt" | xargs echo "ptxas lines:"
grep -E "[1-9][0-9]* bytes spill" "$OUT/ptxas.txt" | head -5
start=$(date +%s)
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  # shellcheck disable=SC2086  # (word splitting wanted: several paths)
  timeout "${PYTEST_S:-420}" python3 -m pytest ${TEST_PATHS:-tests} -q -rfE "$@" >"$OUT/pytest.log" 2>&1
  echo "pytest rc=$? in $(($(date +%s) - start)) s"
fi
if [ -f "$OUT/pytest.log" ]; then
  grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -20
  tail -1 "$OUT/pytest.log"
fi
for dt in ${BENCH_DTYPES:-float32}; do
  for g in ${BENCH_GRIDS-issue2}; do
    plot=()
    [ "$g" = paper ] && plot=(--plot "$OUT/speedup_${g}_${dt}.png")
    timeout 300 python3 -m rtopk.bench --grid "$g" --dtype "$dt" --json "$OUT/bench_${g}_${dt}.json" \
      "${plot[@]}" 2>/dev/null | tee "$OUT/bench_${g}_${dt}.md"
  done
done
