# shellcheck shell=bash
# Sourced by the device scripts (gpu_check.sh, ab_tree.sh, card_grids.sh, switch_slow.sh, pair_call.sh, ...)
# before they build in the current directory: the build environment and no stale build, and the calls' shared
# steps (rtopk_build, rtopk_call_build, rtopk_sanitize_subset).  Environment: TORCH_CUDA_ARCH_LIST
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
# (a folder scripts/prebuild.sh wrote, carried to the device, or one unpacked from a pack, below) its binary,
# after checking that it was built for this torch from these sources.
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
  if [ -f "$pre/_C.abi3.so" ]; then  # (unpacked from a pack: uncompressed)
    cp "$pre/_C.abi3.so" rtopk/_C.abi3.so
  else
    python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], 'wb'))" \
      "$pre/_C.abi3.so.xz" rtopk/_C.abi3.so
  fi && cp "$pre/build.log" "$log"
}
# A pack (scripts/prebuild_pack.sh: several prebuilt folders in one xz stream whose dictionary spans them all, so
# that A's, B's and more binaries fit one call's 64 MiB carry together) is unpacked into prebuilt/ when the
# scripts are sourced, once a pack (its checksum, not its time: a carried file may keep this machine's).
if [ -f prebuilt/pack.tar.xz ]; then
  rtopk_pack_sum=$(cksum <prebuilt/pack.tar.xz)
  if [ "$(cat prebuilt/.unpacked 2>/dev/null)" != "$rtopk_pack_sum" ]; then
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')" \
      prebuilt/pack.tar.xz prebuilt && echo "$rtopk_pack_sum" >prebuilt/.unpacked && echo "unpacked: $(ls prebuilt)"
  fi
fi
# rtopk_call_build DIR: a device call's build step (PREBUILT, else built here) into DIR/build.log, then its seconds
# since the caller's t0 (its start, date +%s) and the pair kernels' ptxas lines; a failed build ends the caller.
# shellcheck disable=SC2154
rtopk_call_build() {
  rtopk_build "$1/build.log" "${PREBUILT:-}" || { tail -20 "$1/build.log"; exit 1; }
  echo "built: $(($(date +%s) - t0)) s"
  grep -A2 "pair_rows_kernel" "$1/build.log" | grep -E "registers|spill" | sed 's/^ *//' | sort | uniq -c
}
# rtopk_sanitize_subset LOG_PREFIX SECONDS K [LABEL]: compute-sanitizer's memcheck and racecheck over
# tests/test_sanitizer_subset.py -k K (each tool at most SECONDS, its log LOG_PREFIX<tool>.log), a line a tool
# with its exit status, the seconds since the caller's t0 and the tests' and the tool's summaries.
# shellcheck disable=SC2154
rtopk_sanitize_subset() {
  local pre=$1 secs=$2 k=$3 label=${4:+ $4} tool
  for tool in memcheck racecheck; do
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "$secs" compute-sanitizer --tool $tool --error-exitcode 9 \
      --print-limit 20 python3 -m pytest tests/test_sanitizer_subset.py -q -p no:cacheprovider -k "$k" \
      >"$pre$tool.log" 2>&1
    echo "$tool$label rc=$? at $(($(date +%s) - t0)) s: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" \
      "$pre$tool.log" | tr '\n' ' ')"
  done
}
