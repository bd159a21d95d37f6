#!/usr/bin/env bash
# The mini benchmark's 22 predictions as one burst to `swe-eval serve` (its images ready)
# against `swe-eval run` on the same predictions, the same images and the same -j: wall times
# side by side, the two alternated (run first in odd rounds, serve first in even ones).
#
#   run:   `swe-eval run -o FRESH -j J --cache-level instance`, timed from start to exit
#          (start-up, image check, the 22 jobs, summaries and report included);
#   serve: a server started on a fresh state (--prepare-all --cache-level instance), waited for until its images
#          are ready (not timed), then `swe-eval bench serve --mode executed --connections 22`:
#          from the first request sent to the last verdict read.
# A warm-up run first (not timed) leaves the instance images in place (--cache-level instance);
# neither side then builds or removes an image. Fresh output folders each time: no verdict is
# resumed and nothing comes from the server's cache.
#
# Usage: scripts/bench_serve_burst.sh [ROUNDS]     (default 3; from the repository root)
# Settings (environment): BIN=target/release/swe-eval  J=2  PORT=8399  KEEP=0 (1 keeps the
# scratch folder with every log)
# Output: one line per measurement, then the medians and their ratio (serve / run).
set -euo pipefail

rounds="${1:-3}"
BIN=${BIN:-target/release/swe-eval}
J=${J:-2}
PORT=${PORT:-8399}
KEEP=${KEEP:-0}
. "$(dirname "$0")/serve_bench_lib.sh"
bench_scratch swe-eval-burst

echo "warm-up run (instance images kept; not timed)" >&2
"$BIN" run -o "$scratch/warm" -j "$J" --cache-level instance >"$scratch/warm.log" 2>&1 || {
  echo "the warm-up run failed: $scratch/warm.log" >&2; KEEP=1; exit 1; }

run_once() {
  local t0 t1
  t0=$(now)
  "$BIN" run -o "$scratch/run-$1" -j "$J" --cache-level instance >"$scratch/run-$1.log" 2>&1 || true
  t1=$(now)
  echo "$t1 - $t0" | bc -l
}

serve_once() {
  local health ready=0
  "$BIN" serve -o "$scratch/serve-$1" -j "$J" --cache-level instance --prepare-all --listen "127.0.0.1:$PORT" \
    >"$scratch/serve-$1.log" 2>&1 &
  server=$!
  for _ in $(seq 1 3000); do
    health=$(curl -fsS "127.0.0.1:$PORT/v1/health" 2>/dev/null || true)
    if [ -n "$health" ] && [ "$(jq '.images_preparing == 0 and .images_ready == 8' <<<"$health")" = true ]; then
      ready=1; break
    fi
    sleep 0.2
  done
  [ "$ready" = 1 ] || { echo "the server's images were not ready: $scratch/serve-$1.log" >&2; KEEP=1; exit 1; }
  "$BIN" bench serve --connect "127.0.0.1:$PORT" --mode executed --connections 22 \
    --json "$scratch/serve-$1.json" >>"$scratch/serve-$1.log" 2>&1 || true
  kill -TERM "$server"; wait "$server" || true; server=""
  jq -r '.all_done_secs' "$scratch/serve-$1.json"
}

runs=(); serves=()
for i in $(seq 1 "$rounds"); do
  if [ $((i % 2)) = 1 ]; then
    r=$(run_once "$i"); s=$(serve_once "$i")
  else
    s=$(serve_once "$i"); r=$(run_once "$i")
  fi
  runs+=("$r"); serves+=("$s")
  printf 'round %d (%s first): run %.1f s, serve %.1f s (load %s)\n' "$i" \
    "$([ $((i % 2)) = 1 ] && echo run || echo serve)" "$r" "$s" "$(cut -d' ' -f1 /proc/loadavg)"
done
mr=$(median "${runs[@]}"); ms=$(median "${serves[@]}")
printf 'median of %d: run %.1f s, serve %.1f s, serve/run %.3f (-j %s)\n' "$rounds" "$mr" "$ms" \
  "$(echo "$ms / $mr" | bc -l)" "$J"
