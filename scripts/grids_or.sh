#!/usr/bin/env bash
# One device call that takes an H200 when one is lent: the lent card is mostly an H100 (notes v50, v51), and an
# H200 seen once is gone again after the call (the idle release).  scripts/card_grids.sh runs the results grids
# when the card is an H200 (taking PREBUILT, default prebuilt/a when the call carries it) and exits 3 on any other
# card; then, and only then, this runs the command given, e.g.
#   scripts/grids_or.sh bash scripts/ab_call.sh
# Environment: GRIDS_OWED=0 skips the grids (then the command runs on any card); GD, GT, SLOW as card_grids.sh
# (defaults here: the paper grids in three dtypes and the fp32 adversarial grid, 110 s each, no slow rows).
set -uo pipefail
if [ "${GRIDS_OWED:-1}" = 1 ]; then
  pre=${PREBUILT-}
  [ -z "$pre" ] && [ -f prebuilt/a/stamp ] && pre=prebuilt/a
  PREBUILT=$pre GD=${GD:-paper:float32 paper:bfloat16 paper:float16 adversarial:float32} SLOW=${SLOW-} \
    GT=${GT:-110} bash "$(dirname "$0")/card_grids.sh"
  rc=$?
  [ "$rc" = 3 ] || exit "$rc"
fi
[ $# -gt 0 ] || { echo "no command given"; exit 3; }
"$@"
