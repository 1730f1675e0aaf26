# Sourced by scripts/ab_call.sh and scripts/ab_profile.sh: the build environment, and B, a copy of
# this tree (ROOT, built in place as A) with the patch applied.  Environment: PATCH (default
# ab/b.patch: `git diff csrc > ab/b.patch`, in an untracked, not ignored folder so that the device
# tool carries it), or SED_B (sed expressions applied to B's csrc/cuda/*.cuh instead of a patch:
# a switch flipped, e.g. SED_B='s/kLaneEight = false/kLaneEight = true/'), MAX_JOBS (default 16).
# build_b builds B in place, logs to $OUT/build_b.log.
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
ROOT=$PWD
SED_B=${SED_B:-}
PATCH=$(realpath -m "${PATCH:-ab/b.patch}")
# shellcheck source=scripts/build_env.sh
. "$(dirname "${BASH_SOURCE[0]}")/build_env.sh"
B=$(mktemp -d)
# (scripts: profile_one.py for ab_profile.sh)
cp -r csrc rtopk tests scripts setup.py pyproject.toml "$B" && rm -f "$B"/rtopk/_C*.so
build_b() {
  if [ -n "$SED_B" ]; then
    (cd "$B" && sed -i "$SED_B" csrc/cuda/*.cuh && python3 setup.py build_ext --inplace >"$OUT/build_b.log" 2>&1)
  else
    (cd "$B" && patch -p1 <"$PATCH" && python3 setup.py build_ext --inplace >"$OUT/build_b.log" 2>&1)
  fi
}
