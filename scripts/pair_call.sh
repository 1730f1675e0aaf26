#!/usr/bin/env bash
# One device call for the packed-pair kernels (notes v64): the extension (PREBUILT: a folder scripts/prebuild.sh
# wrote for this tree, carried by the call; else built here), their tests and the 16-bit cases that reach them, the
# results grids GD (scripts/card_grids.sh: JSON named as benchmarks/results/ holds them), then compute-sanitizer's
# memcheck and racecheck over tests/test_sanitizer_subset.py::test_pair_rows.  Logs under $OUT.
# Environment: TESTS (pytest arguments, word-split), TT seconds for them (150), GD (default "paper:bfloat16
# paper:float16"), GT seconds a grid (165).
set -uo pipefail
L=${OUT:-$PWD/out}; mkdir -p "$L"; export PYTHONPATH=$PWD
t0=$(date +%s)
# shellcheck source=scripts/build_env.sh
. scripts/build_env.sh
rtopk_call_build "$L"
TESTS=${TESTS-"tests/test_pair_rows.py tests/test_sanitizer_subset.py -k '$RTOPK_CUDA_K'"}
if [ -n "$TESTS" ]; then
  eval "timeout ${TT:-150} python3 -m pytest $TESTS -q -rfE" >"$L/tests.log" 2>&1
  echo "tests rc=$? at $(($(date +%s) - t0)) s"; tail -1 "$L/tests.log"; grep -E "^(FAILED|ERROR)" "$L/tests.log" | head -5
fi
if [ -n "${GD-paper:bfloat16 paper:float16}" ]; then
  OUT=$L GD="${GD-paper:bfloat16 paper:float16}" GT=${GT:-165} SLOW="" PREBUILT=${PREBUILT:-} bash scripts/card_grids.sh \
    2>&1 | grep -v "^card\|^built"
fi
rtopk_sanitize_subset "$L/sanitizer_" 60 "pair_rows and bfloat16"
