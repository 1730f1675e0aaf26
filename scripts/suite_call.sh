#!/usr/bin/env bash
# One device call for the CUDA test suite, or part of it: the extension (PREBUILT: a folder scripts/prebuild.sh wrote
# for this tree, carried by the call; else built here, ~200 s), then pytest over the given paths (default tests) with
# the CUDA filter below, verbose (a call cut short by its limit still shows the last test that ran), the 15 slowest
# listed.  Logs under $OUT (suite.log, build.log).  Usage: scripts/suite_call.sh [PATH ...]
# Environment: PREBUILT; ST, pytest's seconds (default 540: the whole suite takes ~600-700 s on an H200, so split it
# over two calls by path); SUITE_K, the -k expression.
# The filter: build_env.sh's RTOPK_CUDA_K (the "cpu" device parameter out; `-k "not cpu"` also dropped 109 CUDA tests
# named after the CPU at 5e7b5cf), less the CPU-only files and test_split_argument_on_cpu, which CI runs anyway.
set -uo pipefail
L=${OUT:-$PWD/out}
mkdir -p "$L"
export PYTHONPATH=$PWD
t0=$(date +%s)
# shellcheck source=scripts/build_env.sh
. scripts/build_env.sh
rtopk_build "$L/build.log" "${PREBUILT:-}" || {
  tail -20 "$L/build.log"
  exit 1
}
echo "built: $(($(date +%s) - t0)) s"
[ $# -gt 0 ] || set -- tests
timeout "${ST:-540}" python3 -m pytest "$@" --ignore tests/test_cpu_radix.py --ignore tests/test_cpu_short_rows.py \
  -k "${SUITE_K:-$RTOPK_CUDA_K and not split_argument_on_cpu}" -v -rfE --durations=15 -p no:cacheprovider \
  -o console_output_style=classic >"$L/suite.log" 2>&1
echo "pytest rc=$? at $(($(date +%s) - t0)) s: $(tail -1 "$L/suite.log")"
grep -E "^(FAILED|ERROR)" "$L/suite.log" | head -20
grep -E " (PASSED|FAILED|SKIPPED|ERROR)" "$L/suite.log" | tail -1 | cut -c1-160
