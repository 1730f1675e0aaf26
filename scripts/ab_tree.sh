# shellcheck shell=bash
# Sourced by scripts/ab_call.sh and scripts/ab_profile.sh: the build environment, and B, a copy of
# this tree (ROOT, built in place as A) with the patch applied.  Environment: PATCH (default
# ab/b.patch: `git diff csrc > ab/b.patch`, in an untracked, not ignored folder so that the device
# tool carries it), or SED_B (sed expressions applied to B's csrc/cuda/*.cuh instead of a patch:
# a switch flipped, e.g. SED_B='s/kLaneEight = false/kLaneEight = true/'), MAX_JOBS (default 16).
# PREBUILT_A / PREBUILT_B / PREBUILT_C: folders scripts/prebuild.sh wrote here (prebuilt/a, prebuilt/b; the call carries
# "prebuilt"): the trees take those binaries instead of building (~170 s each), if their stamps match them.
# build_b builds B in place, logs to $OUT/build_b.log.  PATCH_C: a second change, C (another copy of this
# tree with that patch), built beside B by build_c (logs to $OUT/build_c.log) and measured against A alike.
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
# shellcheck disable=SC2034  # (read by the scripts that source this one)
ROOT=$PWD
SED_B=${SED_B:-}
PATCH=$(realpath -m "${PATCH:-ab/b.patch}")
PREBUILT_A=${PREBUILT_A:+$(realpath -m "$PREBUILT_A")}
PREBUILT_B=${PREBUILT_B:+$(realpath -m "$PREBUILT_B")}
# shellcheck source=scripts/build_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_env.sh"
# (scripts: profile_one.py for ab_profile.sh)
new_tree() {  # a copy of this tree without its build, in a new folder (printed)
  local d
  d=$(mktemp -d)
  cp -r csrc rtopk tests scripts setup.py pyproject.toml "$d" && rm -f "$d"/rtopk/_C*.so && echo "$d"
}
B=$(new_tree)
PATCH_C=${PATCH_C:+$(realpath -m "$PATCH_C")}
C=
if [ -n "$PATCH_C" ]; then C=$(new_tree); fi
build_b() {
  if [ -n "$SED_B" ]; then
    (cd "$B" && sed -i "$SED_B" csrc/cuda/*.cuh && rtopk_build "$OUT/build_b.log" "$PREBUILT_B")
  else
    (cd "$B" && patch -p1 <"$PATCH" && rtopk_build "$OUT/build_b.log" "$PREBUILT_B")
  fi
}
PREBUILT_C=${PREBUILT_C:+$(realpath -m "$PREBUILT_C")}
build_c() {
  (cd "$C" && patch -p1 <"$PATCH_C" && rtopk_build "$OUT/build_c.log" "$PREBUILT_C")
}
