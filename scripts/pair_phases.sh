#!/usr/bin/env bash
# (Device) the pair kernel's phases timed in place (benchmarks/pair_phases.cu; notes v70 item 12): builds the harness
# against a copy of csrc with benchmarks/pending/v70_pair_phases.patch (A), and for each PATCH given a second copy
# with that patch on top (B, C, ...), then runs each at the shapes in CELLS ("ROWS:K[:POW] ...", POW 5 for x^5
# rows; default "262144:64 262144:16 1048576:64").  ~10 s a build, no torch needed.  Logs under $OUT:
# phases_<name>.txt.
# Usage: scripts/pair_phases.sh [PATCH ...]
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
ROOT=$PWD
NV=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
build() {  # build NAME [PATCH]
  local d
  d=$(mktemp -d)
  cp -r "$ROOT/csrc" "$d/csrc"
  mkdir -p "$d/tests" && cp -r "$ROOT/tests/emu" "$d/tests/emu"  # (patches may touch the emulator too,
  cp "$ROOT/tests/test_pair_emu.py" "$d/tests/"                   # and its tests)
  (cd "$d" && patch -s -p1 <"$ROOT/benchmarks/pending/v70_pair_phases.patch") || return 1
  if [ -n "${2:-}" ]; then (cd "$d" && patch -s -p1 <"$ROOT/$2") || return 1; fi
  "$NV" -arch=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr -DRTOPK_PAIR_PHASES=16 -I "$d/csrc" \
    -o "/tmp/pp_$1" "$ROOT/benchmarks/pair_phases.cu" >"$OUT/build_$1.log" 2>&1
}
names=(a)
build a || { echo "build a failed"; tail "$OUT/build_a.log"; exit 1; }
letters=bcdefghij  # (the patches' builds, in order)
i=0
for p in "$@"; do
  n=${letters:i:1}
  i=$((i + 1))
  build "$n" "$p" || { echo "build $n ($p) failed"; tail "$OUT/build_$n.log"; continue; }
  names+=("$n")
  echo "$n: $p"
done
for c in ${CELLS:-262144:64 262144:16 1048576:64}; do
  for n in "${names[@]}"; do
    echo "== $n $c"
    IFS=: read -r rows k pw <<<"$c"
    "/tmp/pp_$n" "$rows" "$k" "${pw:-1}" | tee -a "$OUT/phases_$n.txt"
  done
done
