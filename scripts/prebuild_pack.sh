#!/usr/bin/env bash
# Here (no GPU): several of scripts/prebuild.sh's folders in one archive, prebuilt/pack.tar.xz, for one device
# call's carry (["prebuilt/pack.tar.xz"]).  A binary alone was ~43 MB of xz (nvcc's compressed fatbins), so a
# call carried one and built the other there (~170-260 s of device time).  prebuild.sh now leaves the fatbins
# uncompressed (~290 MB a binary, 27 MB of xz), and two builds of nearby sources then share most of their bytes:
# one xz stream whose dictionary spans them stores the second for a few MB.
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
# (The dictionary spans the two binaries before the one being compressed: decompressing needs that much memory,
# compressing ~11x it.)
big=$(find "$tmp" -name _C.abi3.so -printf '%s\n' | sort -n | tail -1)
mb=$((2 * big / 1048576 + 16))
(cd "$tmp" && tar -cf - -- *) | xz -T1 --lzma2=preset=6,dict="${mb}MiB" >prebuilt/pack.tar.xz.new
mv prebuilt/pack.tar.xz.new prebuilt/pack.tar.xz
echo "prebuilt/pack.tar.xz: $(du -h prebuilt/pack.tar.xz | cut -f1) ($*)"
for arg in "$@"; do echo "  ${arg%%=*}: $(cat "$tmp/${arg%%=*}/stamp")"; done
