# shellcheck shell=bash
# Sourced by scripts/prebuild.sh and scripts/build_env.sh: rtopk_src_hash prints one hash of what the extension
# is built from (csrc/ and setup.py, in the current directory), so that a prebuilt binary is only taken by a
# tree with the same sources.
rtopk_src_hash() {
  find csrc setup.py -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.cpp' -o -name '*.py' \) \
    -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}
