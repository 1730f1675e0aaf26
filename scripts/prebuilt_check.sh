#!/usr/bin/env bash
# One device call: take a prebuilt binary (scripts/prebuild.sh; the call carries "prebuilt") instead of building,
# check one CUDA result against torch.topk, then run pytest ARGS (default: the four-lane kernel's fp32 tests).
# Usage: PREBUILT=prebuilt/a scripts/prebuilt_check.sh [pytest args...]; logs under $OUT.
set -uo pipefail
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
# shellcheck source=scripts/build_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_env.sh"
t0=$(date +%s)
rtopk_build "$OUT/build.log" "${PREBUILT:-prebuilt/a}" || exit 1
echo "taken in $(($(date +%s) - t0)) s"
python3 - <<'PY' || exit 1
import torch

import rtopk  # noqa: F401  (registers the op)

x = torch.randn(4096, 256, device="cuda")
v, i = torch.ops.rtopk.rtopk(x, 16, -1, 0.0)
ok = torch.equal(v.sort(1, descending=True).values, torch.topk(x, 16).values) and torch.equal(x.gather(1, i), v)
print("CUDA result matches torch.topk:", ok)
raise SystemExit(0 if ok else 1)
PY
[ $# -gt 0 ] || set -- tests/test_lane_rows.py -k "$RTOPK_CUDA_K and float32"
timeout "${PYTEST_S:-300}" python3 -m pytest -q "$@" >"$OUT/pytest.log" 2>&1
echo "pytest rc=$?: $(tail -n 1 "$OUT/pytest.log")"
echo "done in $(($(date +%s) - t0)) s"
