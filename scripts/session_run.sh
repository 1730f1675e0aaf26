#!/usr/bin/env bash
# One device call: build + tests + benchmark (scripts/gpu_check.sh), optionally the sanitizers
# (SANITIZE=1) and the sort profile (PROFILE=1), then a tarball of the logs under $OUT (the device
# tool returns a few files only).
set -uo pipefail
OUT=${OUT:-$PWD/out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
OUT=$LOGS bash scripts/gpu_check.sh "$@" 2>&1 | tee "$LOGS/gpu_check.txt" | grep -v "^| [0-9]" | tail -30
tar czf "$OUT/logs.tgz" -C "$OUT" logs  # (again at the end: a timeout keeps what came first)
if [ "${PROFILE:-0}" = 1 ]; then OUT=$LOGS bash scripts/profile_sort.sh 2>&1 | tee "$LOGS/profile.txt"; fi
if [ "${SANITIZE:-0}" = 1 ]; then OUT=$LOGS bash scripts/sanitize.sh 2>&1 | tee "$LOGS/sanitize.txt"; fi
tar czf "$OUT/logs2.tgz" -C "$OUT" logs && rm -rf "$LOGS"
