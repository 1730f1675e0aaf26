#!/usr/bin/env bash
# Here (no GPU): several of scripts/prebuild.sh's folders in one archive, prebuilt/pack.tar.xz, for one device
# call's carry (["prebuilt/pack.tar.xz"]).  Each binary alone is ~43 MB of xz, so a call carried one and built
# the other there (~170-260 s of device time); two builds of nearby sources share most of their bytes, and one
# xz stream whose dictionary spans all of them stores the second for a few MB (a and a patched b: ~48 MB).
# The device scripts unpack it when they source scripts/build_env.sh (prebuilt/NAME/_C.abi3.so, stamp,
# build.log), and PREBUILT_A=prebuilt/a PREBUILT_B=prebuilt/b (or PREBUILT=...) take the binaries as before.
# Usage: scripts/prebuild_pack.sh NAME=DIR ...   (e.g. a=prebuilt/a b=prebuilt/b)
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
cd "$ROOT"
[ $# -ge 1 ] || { echo "usage: $0 NAME=DIR ..."; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arg in "$@"; do
  name=${arg%%=*} dir=${arg#*=}
  if [ ! -f "$dir/_C.abi3.so.xz" ] || [ ! -f "$dir/stamp" ]; then echo "$dir: no prebuilt binary"; exit 1; fi
  mkdir -p "$tmp/$name"
  xz -dc "$dir/_C.abi3.so.xz" >"$tmp/$name/_C.abi3.so"
  cp "$dir/stamp" "$dir/build.log" "$tmp/$name/"
done
# (The dictionary covers the whole tar; decompressing needs that much memory, compressing ~11x it.)
mb=$(($(du -sm "$tmp" | cut -f1) + 16))
(cd "$tmp" && tar -cf - -- *) | xz -T1 --lzma2=preset=6,dict="${mb}MiB" >prebuilt/pack.tar.xz.new
mv prebuilt/pack.tar.xz.new prebuilt/pack.tar.xz
echo "prebuilt/pack.tar.xz: $(du -h prebuilt/pack.tar.xz | cut -f1) ($*)"
for arg in "$@"; do echo "  ${arg%%=*}: $(cat "$tmp/${arg%%=*}/stamp")"; done
