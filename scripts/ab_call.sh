#!/usr/bin/env bash
# One device call for a kernel change measured against its base (notes v30): build A (this tree)
# and B (a copy of it with the patch applied) in place, test A while B builds, test B, then
# benchmarks/ab.py in alternating processes.  Logs under $OUT.
# Environment (and PATCH, MAX_JOBS, PREBUILT_A / PREBUILT_B: scripts/ab_tree.sh):
#   CELLS     benchmarks/ab.py cells (default "262144x256:16,128;262144x768:16,128")
#   MODES     (default exact,it4); DTYPES (default float32); SMALLEST=1 adds a k-smallest run;
#   DISTS     row values (benchmarks/ab.py --dists, default randn)
#   TESTS     pytest args for A (default tests/test_rtopk.py); TESTS_B for B (default tests/test_rtopk.py);
#             PYTEST_K, their -k expression (default RTOPK_CUDA_K, scripts/build_env.sh: the CUDA tests)
#   PATCH_C   a second change (scripts/ab_tree.sh): C built beside B (MAX_JOBS=8 each), tested with TESTS_B
#             and measured against A the same way (ab_c_*.md)
#   SANITIZE_B=1  memcheck and racecheck over the sanitizer subset (SAN_DT, default float32) with B;
#             SAN_K narrows it (-k)
set -uo pipefail
# shellcheck source=scripts/ab_tree.sh
. "$(dirname "$0")/ab_tree.sh"
t0=$(date +%s)
rtopk_build "$OUT/build_a.log" "${PREBUILT_A:-}" || { tail -40 "$OUT/build_a.log"; exit 1; }
echo "A built: $(($(date +%s) - t0)) s"
if [ -n "$C" ]; then
  export MAX_JOBS=8  # (two builds side by side)
  (build_c; echo "C build rc=$? at $(($(date +%s) - t0)) s") &
  cpid=$!
fi
(build_b; echo "B build rc=$? at $(($(date +%s) - t0)) s") &
bpid=$!
# shellcheck disable=SC2086
timeout 300 python3 -m pytest ${TESTS:-tests/test_rtopk.py} -q -k "${PYTEST_K:-$RTOPK_CUDA_K}" >"$OUT/pytest_a.log" 2>&1
echo "tests A rc=$?: $(tail -1 "$OUT/pytest_a.log")"
wait $bpid
[ -n "$C" ] && wait "$cpid"
trees=(b)
[ -n "$C" ] && trees+=(c)
tree_dir() { if [ "$1" = c ]; then echo "$C"; else echo "$B"; fi; }
for t in "${trees[@]}"; do
  d=$(tree_dir "$t")
  # shellcheck disable=SC2086  # (word splitting wanted: several test files)
  (cd "$d" && timeout 300 python3 -m pytest ${TESTS_B:-tests/test_rtopk.py} -q -k "${PYTEST_K:-$RTOPK_CUDA_K}" \
     >"$OUT/pytest_$t.log" 2>&1
   echo "tests ${t^^} rc=$?: $(tail -1 "$OUT/pytest_$t.log")"; grep -E "^(FAILED|ERROR)" "$OUT/pytest_$t.log" | head)
done
for f in a "${trees[@]}"; do grep -E "ptxas info|spill" "$OUT/build_$f.log" | sed 's/^ *//' >"$OUT/ptxas_$f.txt"; done
# (The k largest, then with SMALLEST=1 the k smallest.)
orders=(largest)
[ "${SMALLEST:-0}" = 1 ] && orders+=(smallest)
for t in "${trees[@]}"; do
  d=$(tree_dir "$t") prefix=ab
  [ "$t" = c ] && prefix=ab_c
  for dt in ${DTYPES:-float32}; do
    for o in "${orders[@]}"; do
      flag=() suffix=
      [ "$o" = smallest ] && flag=(--smallest) suffix=_smallest
      echo "A against ${t^^}, $dt $o:"
      python3 benchmarks/ab.py --a "$ROOT" --b "$d" --rounds 3 --modes "${MODES:-exact,it4}" --dtype "$dt" \
        --dists "${DISTS:-randn}" "${flag[@]}" --cells "${CELLS:-262144x256:16,128;262144x768:16,128}" |
        tee "$OUT/${prefix}_${dt}${suffix}.md"
    done
  done
done
if [ "${SANITIZE_B:-0}" = 1 ]; then
  (cd "$B" && rtopk_sanitize_subset "$OUT/san_" 120 "${SAN_DT:-float32}${SAN_K:+ and ($SAN_K)}" B)
fi
# (Into a file outside $OUT first: tar exits 1 when the folder it reads changes under it.)
tar czf "${TMPDIR:-/tmp}/logs.$$.tgz" -C "$OUT" . && mv "${TMPDIR:-/tmp}/logs.$$.tgz" "$OUT/logs.tgz"
