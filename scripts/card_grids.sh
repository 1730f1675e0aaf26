#!/usr/bin/env bash
# One device call for the results files: build in place (or take PREBUILT), then `python -m rtopk.bench` grids with
# their JSON named as benchmarks/results/ holds them (<card>-<grid>_<dtype>.json, <card>: H200 or H100), then
# scripts/slow_rows.py.
# Logs and JSON under $OUT.  Exits 3 before building when the lent card is not an H200, unless ANY_CARD=1 (the
# issue's targets are the H200's; an H100's grids go to H100.md only).
# Environment: GD, grid:dtype pairs (default "paper:float32 adversarial:float32 paper:bfloat16"); GT, seconds a grid
# (default 170); SLOW, scripts/slow_rows.py cells (default "1048576x256:16,64"; empty: none); PREBUILT, a folder
# scripts/prebuild.sh wrote for this tree (the call carries it) to take instead of building (~150 s less).
# Then, here: copy the JSON into benchmarks/results/ and `python benchmarks/results_md.py FILES` for the sections.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
case "$name" in
  *H200*) card=H200 ;;
  *H100*) card=H100 ;;
  *) card=other ;;
esac
if [ "$card" != H200 ] && [ "${ANY_CARD:-0}" != 1 ]; then
  echo "not an H200: stop (ANY_CARD=1 runs anyway)"
  exit 3
fi
export PYTHONPATH=$PWD
# shellcheck source=scripts/build_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_env.sh"
t0=$(date +%s)
rtopk_build "$OUT/build.log" "${PREBUILT:-}" || { tail -30 "$OUT/build.log"; exit 1; }
echo "built${PREBUILT:+ (prebuilt $PREBUILT: $(cat "$PREBUILT/stamp"))}: $(($(date +%s) - t0)) s"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git rev-parse --short HEAD 2>/dev/null
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } >"$OUT/gpu.txt" 2>&1
for gd in ${GD:-paper:float32 adversarial:float32 paper:bfloat16}; do
  g=${gd%%:*} dt=${gd##*:}
  plot=()
  [ "$g:$dt" = paper:float32 ] && plot=(--plot "$OUT/$card-paper-float32.png")
  timeout "${GT:-170}" python3 -m rtopk.bench --grid "$g" --dtype "$dt" --json "$OUT/$card-${g}_$dt.json" \
    "${plot[@]}" 2>/dev/null >"$OUT/bench_${g}_$dt.md"
  echo "$g $dt rc=$? at $(($(date +%s) - t0)) s"
  grep -E "^# (geometric|sorted)" "$OUT/bench_${g}_$dt.md" | head -3
  grep -E "^# exact on" "$OUT/bench_${g}_$dt.md" | sort -t: -k2 -r | head -3  # (the slowest adversarial kinds)
done
SLOW=${SLOW-1048576x256:16,64}
if [ -n "$SLOW" ]; then
  timeout 150 python3 scripts/slow_rows.py "$SLOW" float32,bfloat16 | tee "$OUT/slow_rows.txt"
fi
echo "done: $(($(date +%s) - t0)) s"
