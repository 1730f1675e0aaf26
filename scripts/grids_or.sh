#!/usr/bin/env bash
# One device call that takes an H200 when one is lent: the lent card is mostly an H100 (notes v50, v51), and an
# H200 seen once is gone again after the call (the idle release).  On an H200 this runs the results grids
# (scripts/card_grids.sh, taking PREBUILT, default prebuilt/a when the call carries it) and nothing else; on any
# other card it runs the command given, e.g.
#   scripts/grids_or.sh bash scripts/ab_call.sh
# Environment: GRIDS_OWED=0 skips the grids (then the command runs on any card); GD, GT, SLOW as card_grids.sh
# (defaults here: the paper grids in three dtypes and the fp32 adversarial grid, 110 s each, no slow rows).
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
if [[ "$name" == *H200* && "${GRIDS_OWED:-1}" == 1 ]]; then
  pre=${PREBUILT-}
  [ -z "$pre" ] && [ -f prebuilt/a/stamp ] && pre=prebuilt/a
  PREBUILT=$pre GD=${GD:-paper:float32 paper:bfloat16 paper:float16 adversarial:float32} SLOW=${SLOW-} \
    GT=${GT:-110} bash "$(dirname "$0")/card_grids.sh"
  exit
fi
[ $# -gt 0 ] || { echo "not an H200 and no command: nothing to do"; exit 3; }
"$@"
