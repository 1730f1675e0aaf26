#!/usr/bin/env bash
# compute-sanitizer's four tools over the CUDA kernel paths (tests/test_sanitizer_subset.py).
# Logs under $OUT (./out when unset); prints each tool's summary line.  Needs a built extension.
# SAN_K: a pytest -k expression that narrows every tool's run (e.g. "20000": the block kernel's rows
# past its shared cache); racecheck keeps to float32 within it.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
# Without the caching allocator every tensor is its own allocation, so memcheck sees overruns.
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
status=0
for tool in memcheck racecheck initcheck synccheck; do
  extra=()
  select=()
  # racecheck is ~50x slower: the float32 half of the paths (the kernels are dtype-generic).
  k=${SAN_K:-}
  if [ "$tool" = racecheck ]; then
    extra=(--racecheck-report all)
    k=${k:+($k) and }"(float32 or other)"
  fi
  [ -n "$k" ] && select=(-k "$k")
  timeout 300 compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 9 --print-limit 20 \
    python3 -m pytest tests/test_sanitizer_subset.py -q -p no:cacheprovider "${select[@]}" \
    >"$OUT/sanitizer_$tool.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && status=1
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/sanitizer_$tool.log" | tr '\n' ' ')
  echo "$tool (rc=$rc): $summary"
done
exit $status
