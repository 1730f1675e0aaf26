#!/usr/bin/env bash
# One device call for a switch of the kernels (a constexpr flipped by sed in csrc/cuda/*.cuh, e.g. kLaneSixteen):
# build in place with it, time each adversarial row kind against randn rows (scripts/slow_rows.py), run the tests.
# The edit is made in the device's copy of the tree only.  Logs under $OUT.
#   SED     the sed expression (required), e.g.
#           's/constexpr bool kLaneSixteen = false/constexpr bool kLaneSixteen = true/'
#   SLOW    scripts/slow_rows.py cells (default "131072x768:16,64;524288x768:64")
#   TESTS   pytest arguments (default "tests/test_lane_rows.py tests/test_slow_rows.py")
# (Notes v45: the eight-lane kernel measured so before it was dispatched.)
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
: "${SED:?set SED to the sed expression that flips the switch}"
nvidia-smi --query-gpu=name --format=csv,noheader
export PYTHONPATH=$PWD
sed -i "$SED" csrc/cuda/*.cuh
git diff --stat 2>/dev/null | tail -1
# shellcheck source=scripts/build_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_env.sh"
t0=$(date +%s)
python3 setup.py build_ext --inplace >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "built: $(($(date +%s) - t0)) s"
grep -E "[1-9][0-9]* bytes spill" "$OUT/build.log" | sort | uniq -c | head -5
timeout 200 python3 scripts/slow_rows.py "${SLOW:-131072x768:16,64;524288x768:64}" float32,bfloat16 |
  tee "$OUT/slow_rows.txt"
echo "slow rows: $(($(date +%s) - t0)) s"
# shellcheck disable=SC2086  # (word splitting wanted: several test files)
timeout 300 python3 -m pytest -q ${TESTS:-tests/test_lane_rows.py tests/test_slow_rows.py} >"$OUT/pytest.log" 2>&1
echo "pytest rc=$?: $(tail -1 "$OUT/pytest.log")"
grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head
