# shellcheck shell=bash
# Sourced by the device scripts (gpu_check.sh, ab_tree.sh, card_grids.sh, switch_slow.sh) before they build
# in the current directory: the build environment and no stale build.  Environment: TORCH_CUDA_ARCH_LIST
# (default 9.0), MAX_JOBS (default 16).  ptxas's resource report goes into the build log (RTOPK_PTXAS_VERBOSE).
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16} RTOPK_PTXAS_VERBOSE=1 PYTHONUNBUFFERED=1
# The lent machine's default g++ (/opt/gcc wrapper) links libstdc++ statically into the extension,
# and then no C++ exception thrown by it (every TORCH_CHECK) can be caught by torch: segfault.
# The system compiler links libstdc++ dynamically, like torch itself.
if [ -x /usr/bin/g++ ]; then export CC=/usr/bin/gcc CXX=/usr/bin/g++; fi
# A warm device keeps the last call's build outputs, and the copied sources may be older than them
# (a patched build then passes for this tree's: notes v46 item 3): always build from scratch.
rm -rf build rtopk/_C*.so
