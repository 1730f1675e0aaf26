# shellcheck shell=bash
# Sourced by the device scripts (gpu_check.sh, ab_tree.sh, card_grids.sh, switch_slow.sh) before they build
# in the current directory: the build environment and no stale build.  Environment: TORCH_CUDA_ARCH_LIST
# (default 9.0), MAX_JOBS (default 16).  ptxas's resource report goes into the build log (RTOPK_PTXAS_VERBOSE).
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16}
export RTOPK_PTXAS_VERBOSE=1 PYTHONUNBUFFERED=1
# The CUDA tests' -k expression for the device scripts: drops the "cpu" device parameter (ids ending "-cpu]"), which
# CI runs without a GPU, and keeps the CUDA tests named after the CPU (test_pair_rows_match_cpu, ...), which
# `-k "not cpu"` dropped (notes v65 item 4).
# shellcheck disable=SC2034  # (read by the scripts that source this one)
RTOPK_CUDA_K="not cpu]"
# The lent machine's default g++ (/opt/gcc wrapper) links libstdc++ statically into the extension,
# and then no C++ exception thrown by it (every TORCH_CHECK) can be caught by torch: segfault.
# The system compiler links libstdc++ dynamically, like torch itself.
if [ -x /usr/bin/g++ ]; then export CC=/usr/bin/gcc CXX=/usr/bin/g++; fi
# A warm device keeps the last call's build outputs, and the copied sources may be older than them
# (a patched build then passes for this tree's: notes v46 item 3): always build from scratch.
rm -rf build rtopk/_C*.so
# shellcheck source=scripts/src_hash.sh
. "$(dirname "${BASH_SOURCE[0]}")/src_hash.sh"
# rtopk_build LOG [PREBUILT]: the extension in place (rtopk/_C.abi3.so), built here into LOG, or with PREBUILT
# (a folder scripts/prebuild.sh wrote, carried to the device) its binary, after checking that it was built for
# this torch from these sources.
rtopk_build() {
  local log=$1 pre=${2:-}
  if [ -z "$pre" ]; then
    python3 setup.py build_ext --inplace >"$log" 2>&1
    return
  fi
  local want have
  want=$(cat "$pre/stamp" 2>/dev/null)
  have="$(python3 -c 'import torch; print(torch.__version__)') $(rtopk_src_hash)"
  if [ "$want" != "$have" ]; then
    echo "prebuilt $pre is for '$want', this tree is '$have': not taken" | tee "$log"
    return 1
  fi
  python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" \
    "$pre/_C.abi3.so.xz" rtopk/_C.abi3.so && cp "$pre/build.log" "$log"
}
