#!/usr/bin/env bash
# One device call for a dispatch question inside one build (notes v68): build this tree (PREBUILT: a folder
# scripts/prebuild.sh wrote for it, else built here), the pair kernels' ptxas lines, TESTS, then
# benchmarks/pair_modes.py over CELLS for each DIST group, then compute-sanitizer's memcheck and racecheck over
# tests/test_sanitizer_subset.py -k "$SAN_K".  Logs under $OUT.
# Environment: TESTS (pytest arguments, word-split; TT seconds, 200), DTYPE (float32), MODES (2,1,3),
#   CELLS (pair_modes.py's), DISTS (";"-separated groups, each pair_modes.py's --dist; default randn),
#   ACELLS / ADISTS a second cell set for other distributions, SAN_K (empty: no sanitizer).
set -uo pipefail
L=${OUT:-$PWD/out}; mkdir -p "$L"; export PYTHONPATH=$PWD
t0=$(date +%s)
# shellcheck source=scripts/build_env.sh
. scripts/build_env.sh
rtopk_call_build "$L"
if [ -n "${TESTS:-}" ]; then
  eval "timeout ${TT:-200} python3 -m pytest $TESTS -q -rfE" >"$L/tests.log" 2>&1
  echo "tests rc=$? at $(($(date +%s) - t0)) s: $(tail -1 "$L/tests.log")"
  grep -E "^(FAILED|ERROR)" "$L/tests.log" | head -5
fi
run_modes() {  # cells dists name
  timeout 240 python3 benchmarks/pair_modes.py --dtype "${DTYPE:-float32}" --modes "${MODES:-2,1,3}" \
    --cells "$1" --dist "$2" --rounds 3 >"$L/modes_$3.md" 2>"$L/modes_$3.err"
  echo "pair_modes $3 rc=$? at $(($(date +%s) - t0)) s"; cat "$L/modes_$3.md"; tail -3 "$L/modes_$3.err"
}
[ -n "${CELLS:-}" ] && run_modes "$CELLS" "${DISTS:-randn}" main
[ -n "${ACELLS:-}" ] && run_modes "$ACELLS" "${ADISTS:-few_ulps}" adv
if [ -n "${SAN_K:-}" ]; then rtopk_sanitize_subset "$L/sanitizer_" 90 "$SAN_K"; fi
