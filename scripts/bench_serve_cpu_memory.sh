#!/usr/bin/env bash
# `swe-eval serve`'s own CPU time and memory under two loads from `swe-eval bench serve`, each
# on a server of its own over loopback (fresh state, the mini benchmark):
#
#   similarity: N similarity-only requests (`--mode similarity`, 64 connections); the server's
#               CPU seconds (user + system, /proc/PID/stat) per 10,000 requests, and its
#               resident memory (VmRSS) and peak (VmHWM) before and after;
#   queue:      N executed requests with distinct patches queued (`--mode queue`, -j 1,
#               --max-queue 2N); the server's CPU seconds for accepting them and its memory
#               with them queued. The server is then stopped (its running job finishes).
#
# Usage: scripts/bench_serve_cpu_memory.sh [N]      (default 10000; from the repository root)
# Settings (environment): BIN=target/release/swe-eval  KEEP=0 (1 keeps the scratch folder)
#   LOADS="similarity queue" (the loads to run, in that order)
set -euo pipefail

n="${1:-10000}"
BIN=${BIN:-target/release/swe-eval}
KEEP=${KEEP:-0}
LOADS=${LOADS:-similarity queue}
. "$(dirname "$0")/serve_bench_lib.sh"
bench_scratch swe-eval-cpu-memory

tck=$(getconf CLK_TCK)
cpu_s() { awk -v t="$tck" '{print ($14 + $15) / t}' "/proc/$server/stat"; }
mem() { awk '/^VmRSS|^VmHWM/ {printf "%s %.1f MB ", $1, $2 / 1024}' "/proc/$server/status"; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

wants() { [[ " $LOADS " == *" $1 "* ]]; }

if wants similarity; then
serve_start similarity -j 2
before=$(mem); c0=$(cpu_s)
"$BIN" bench serve --mode similarity --requests "$n" --connections 64 --connect "$addr" \
  --json "$scratch/similarity.json" | tail -1
c1=$(cpu_s)
printf 'similarity: server CPU %.2f s for %d requests, %.2f s per 10,000; memory before: %s; after: %s\n' \
  "$(echo "$c1 - $c0" | bc -l)" "$n" "$(echo "($c1 - $c0) * 10000 / $n" | bc -l)" "$before" "$(mem)"
serve_stop
fi

if wants queue; then
serve_start queue -j 1 --max-queue $((n * 2))
before=$(mem); c0=$(cpu_s)
"$BIN" bench serve --mode queue --requests "$n" --connect "$addr" --json "$scratch/queue.json" | tail -1
c1=$(cpu_s)
printf 'queue: server CPU %.2f s to accept %d executed requests; memory before: %s; with them queued: %s\n' \
  "$(echo "$c1 - $c0" | bc -l)" "$n" "$before" "$(mem)"
serve_stop
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
