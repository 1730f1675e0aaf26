#!/usr/bin/env bash
# Here (no GPU): build the extension for the lent machines' torch (2.11.0+cu130, sm_90a) so that a device call
# can skip its ~170 s build: the device scripts take the binary with PREBUILT_A / PREBUILT_B (build_env.sh's
# rtopk_build), and a call carries the folder (run's carry: ["prebuilt"]).
# Usage: scripts/prebuild.sh [PATCH]   -> prebuilt/a (this working tree), or with PATCH prebuilt/b (the tree
# with the patch applied, as scripts/ab_tree.sh makes B there).  One binary fits a call's carry, A and B (and C)
# together through scripts/prebuild_pack.sh; with prebuilt/a alone, ab_call.sh builds B there beside A's tests.
# Each folder holds _C.abi3.so.xz, build.log (with ptxas's report), ninja_times (each file's compile seconds) and
# stamp (the torch version and rtopk_src_hash of the sources it was built from; the device refuses a binary whose
# stamp does not match its tree).
# Environment: TORCH_VENV (default /tmp/v211), a venv with that torch, made here when missing (its wheel from
# PyPI, ~530 MB; CUDA's libraries come from this machine's own torch); MAX_JOBS (default 2).
# The binary is the tree's own (its stamp is checked on the device): A/B experiments, profiling and the results
# grids (card_grids.sh / grids_or.sh with PREBUILT) take it; the whole suite (gpu_check.sh) still builds there.
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
# shellcheck source=scripts/src_hash.sh
. scripts/src_hash.sh
VENV=${TORCH_VENV:-/tmp/v211}
WANT=2.11.0+cu130
SITE=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
# (none there when this machine's python has no torch: the venv's own wheels then carry them)
NVLIBS=$(find "$SITE/nvidia" -name lib -type d 2>/dev/null | tr '\n' ':' || true)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  d=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$d" torch==2.11.0
  "$VENV/bin/pip" install -q --no-deps "$d"/torch-*.whl
  "$VENV/bin/pip" install -q "setuptools>=77" wheel ninja numpy typing_extensions filelock sympy networkx jinja2 fsspec
  rm -rf "$d"
fi
have=$(LD_LIBRARY_PATH=$NVLIBS "$VENV/bin/python" -c "import torch; print(torch.__version__)")
[ "$have" = "$WANT" ] || { echo "$VENV holds torch $have, not $WANT"; exit 1; }

build_into() {  # build_into DEST [PATCH]: a copy of the working tree (tracked and untracked, not ignored)
  local dest patch=${2:-} tree
  dest=$(realpath -m "$1")
  tree=$(mktemp -d)
  git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tree"
  if [ -n "$patch" ]; then patch -s -d "$tree" -p1 <"$patch"; fi
  rm -rf "$dest" && mkdir -p "$dest"
  # (-no-compress: the fatbins' SASS left plain, as xz compresses it better than nvcc's own compression does and
  # finds what two builds share: scripts/prebuild_pack.sh.  The kernels are the same; the driver loads either.)
  (cd "$tree" && NVCC_APPEND_FLAGS="${NVCC_APPEND_FLAGS:+$NVCC_APPEND_FLAGS }-no-compress" \
    LD_LIBRARY_PATH=$NVLIBS TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=${MAX_JOBS:-2} RTOPK_PTXAS_VERBOSE=1 \
    CC=/usr/bin/gcc CXX=/usr/bin/g++ "$VENV/bin/python" setup.py build_ext --inplace >"$dest/build.log" 2>&1) ||
    { tail -30 "$dest/build.log"; return 1; }
  # (Host debug sections stripped, the kernels' line info kept; xz: ~27 MB of ~290 with the fatbins plain, and a
  # call carries 64 MiB in all: one binary a call, or several in one scripts/prebuild_pack.sh archive.)
  # (Each file's compile seconds, for the build's balance: ninja_times.)
  find "$tree/build" -name .ninja_log -exec awk 'NR > 1 {printf "%.1f %s\n", ($2 - $1) / 1000, $4}' {} + |
    sort -rn >"$dest/ninja_times" || true
  strip --strip-debug "$tree"/rtopk/_C.abi3.so
  xz -T0 -6 -c "$tree"/rtopk/_C.abi3.so >"$dest/_C.abi3.so.xz"
  printf '%s %s\n' "$WANT" "$(cd "$tree" && rtopk_src_hash)" >"$dest/stamp"
  rm -rf "$tree"
  echo "$dest: $(du -h "$dest/_C.abi3.so.xz" | cut -f1), $(cat "$dest/stamp")"
}

if [ $# -ge 1 ]; then build_into prebuilt/b "$(realpath "$1")"; else build_into prebuilt/a; fi
