#!/usr/bin/env bash
# (Device) the pair kernel's phases timed in place (benchmarks/pair_phases.cu; notes v70 item 12): builds the harness
# against a copy of csrc with benchmarks/pending/v70_pair_phases.patch (A), and for each PATCH given a second copy
# with that patch on top (B, C, ...), then runs each at the shapes in CELLS ("ROWS:K[:POW[:COLS]] ...", POW 5
# for x^5 rows, COLS 768 (default), 512 or 256; default "262144:64 262144:16 1048576:64").  ~10 s a build
# (+10 s for each of 512 / 256), the builds side by side; no torch needed.  Logs under $OUT: phases_<name>.txt.
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
  # (OpenMP for the rows' generation where the host compiler links it; else one thread.)
  local omp
  for omp in "-Xcompiler -fopenmp -lgomp" ""; do
    # shellcheck disable=SC2086  # (the flags, word-split)
    "$NV" -arch=sm_90a -O3 -std=c++17 --expt-relaxed-constexpr $omp -DRTOPK_PAIR_PHASES=16 $SHAPES \
      -I "$d/csrc" -o "/tmp/pp_$1" "$ROOT/benchmarks/pair_phases.cu" >"$OUT/build_$1.log" 2>&1 && return 0
  done
  return 1
}
CELLS=${CELLS:-262144:64 262144:16 1048576:64}
SHAPES=""  # (rows of 512 / 256 built only where a cell asks for them)
for c in $CELLS; do
  case "$c" in *:*:*:512) SHAPES="$SHAPES -DPP_COLS_512" ;; *:*:*:256) SHAPES="$SHAPES -DPP_COLS_256" ;; esac
done
SHAPES=$(tr ' ' '\n' <<<"$SHAPES" | sort -u | tr '\n' ' ')
letters=abcdefghij  # (a: the base; then the patches' builds, in order)
pids=()
build a &
pids+=($!)
i=1
for p in "$@"; do
  build "${letters:i:1}" "$p" &
  pids+=($!)
  i=$((i + 1))
done
names=()
i=0
for p in "" "$@"; do
  n=${letters:i:1}
  if wait "${pids[i]}"; then
    names+=("$n")
    [ -n "$p" ] && echo "$n: $p"
  else
    echo "build $n (${p:-base}) failed"
    tail "$OUT/build_$n.log"
    [ "$n" = a ] && exit 1
  fi
  i=$((i + 1))
done
for c in $CELLS; do
  for n in "${names[@]}"; do
    echo "== $n $c"
    IFS=: read -r rows k pw cols <<<"$c"
    "/tmp/pp_$n" "$rows" "$k" "${pw:-1}" "${cols:-768}" | tee -a "$OUT/phases_$n.txt"
  done
done
