# shellcheck shell=bash
# Sourced by scripts/ab_call.sh and scripts/ab_profile.sh: the build environment, and B, a copy of
# this tree (ROOT, built in place as A) with the patch applied.  Environment: PATCH (default
# ab/b.patch: `git diff csrc > ab/b.patch`, in an untracked, not ignored folder so that the device
# tool carries it), or SED_B (sed expressions applied to B's csrc/cuda/*.cuh instead of a patch:
# a switch flipped, e.g. SED_B='s/kLaneEight = false/kLaneEight = true/'), MAX_JOBS (default 16).
# PREBUILT_A / PREBUILT_B: folders scripts/prebuild.sh wrote here (prebuilt/a, prebuilt/b; the call carries
# "prebuilt"): A and B take those binaries instead of building (~170 s each), if their stamps match the trees.
# build_b builds B in place, logs to $OUT/build_b.log.
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
B=$(mktemp -d)
# (scripts: profile_one.py for ab_profile.sh)
cp -r csrc rtopk tests scripts setup.py pyproject.toml "$B" && rm -f "$B"/rtopk/_C*.so
build_b() {
  if [ -n "$SED_B" ]; then
    (cd "$B" && sed -i "$SED_B" csrc/cuda/*.cuh && rtopk_build "$OUT/build_b.log" "$PREBUILT_B")
  else
    (cd "$B" && patch -p1 <"$PATCH" && rtopk_build "$OUT/build_b.log" "$PREBUILT_B")
  fi
}
