#!/usr/bin/env bash
# The mini benchmark's 22 predictions as one batch to `swe-eval serve` against `swe-eval run`
# on the same predictions and -j, both from instance images not yet built: wall times side by
# side, the two alternated (run first in odd rounds, serve first in even ones).
#
#   run:   `swe-eval run -o FRESH -j J`, timed from start to exit (start-up, the image builds,
#          the 22 jobs, summaries and report included);
#   serve: a server started on a fresh state (`serve -o FRESH -j J`, images prepared on first
#          use), then `swe-eval bench serve --mode executed --connections 22`: from the first
#          request sent to the last verdict read (the image builds included).
# Before each measurement the mini's instance and history images (`swe-eval.eval.*mini__*`,
# `swe-eval.history.swe-eval-mini__*`) are removed; base and environment images stay. An image
# another process on the daemon holds cannot be removed: the round is then said to be warm and
# left out. Both sides remove those images again at their end (the default cache level), and
# both order their jobs by the durations earlier runs recorded (`<cache>/durations.json`).
#
# Usage: scripts/bench_serve_cold.sh [ROUNDS]     (default 3; from the repository root)
# Settings (environment): BIN=target/release/swe-eval  J=2  PORT=8398  KEEP=0 (1 keeps the
# scratch folder with every log)
# Output: one line per measurement, then the medians and their ratio (serve / run).
set -euo pipefail

rounds="${1:-3}"
BIN=${BIN:-target/release/swe-eval}
J=${J:-2}
PORT=${PORT:-8398}
KEEP=${KEEP:-0}
. "$(dirname "$0")/serve_bench_lib.sh"
bench_scratch swe-eval-cold


mini_images() {
  docker images --format '{{.Repository}}:{{.Tag}}' |
    grep -E '^swe-eval\.(eval\.[^/]*swe-eval-mini__|history\.swe-eval-mini__)' || true
}

# Removes the mini's instance and history images; fails (1) when one is left (held elsewhere).
make_cold() {
  local img
  # Instance images first: a history image is the parent of its instance images.
  for img in $(mini_images | grep '^swe-eval\.eval\.') $(mini_images | grep '^swe-eval\.history\.'); do
    docker rmi "$img" >/dev/null 2>&1 || true
  done
  [ -z "$(mini_images)" ]
}

run_once() {
  local t0 t1
  t0=$(now)
  "$BIN" run -o "$scratch/run-$1" -j "$J" >"$scratch/run-$1.log" 2>&1 || true
  t1=$(now)
  echo "$t1 - $t0" | bc -l
}

serve_once() {
  local up=0
  "$BIN" serve -o "$scratch/serve-$1" -j "$J" --listen "127.0.0.1:$PORT" >"$scratch/serve-$1.log" 2>&1 &
  server=$!
  for _ in $(seq 1 600); do
    if curl -fsS "127.0.0.1:$PORT/v1/health" >/dev/null 2>&1; then up=1; break; fi
    sleep 0.2
  done
  [ "$up" = 1 ] || { echo "the server did not answer: $scratch/serve-$1.log" >&2; KEEP=1; exit 1; }
  "$BIN" bench serve --connect "127.0.0.1:$PORT" --mode executed --connections 22 \
    --json "$scratch/serve-$1.json" >>"$scratch/serve-$1.log" 2>&1 || true
  kill -TERM "$server"; wait "$server" || true; server=""
  jq -r '.all_done_secs' "$scratch/serve-$1.json"
}

# One measurement of `side` in round `i`, from cold; "warm" when an image could not be removed.
measure() {
  if ! make_cold; then echo warm; return; fi
  if [ "$1" = run ]; then run_once "$2"; else serve_once "$2"; fi
}

runs=(); serves=()
for i in $(seq 1 "$rounds"); do
  if [ $((i % 2)) = 1 ]; then
    r=$(measure run "$i"); s=$(measure serve "$i")
  else
    s=$(measure serve "$i"); r=$(measure run "$i")
  fi
  if [ "$r" = warm ] || [ "$s" = warm ]; then
    printf 'round %d: left out, a mini image was held by another process: %s\n' "$i" "$(mini_images | tr '\n' ' ')"
    continue
  fi
  runs+=("$r"); serves+=("$s")
  printf 'round %d (%s first): run %.1f s, serve %.1f s (load %s)\n' "$i" \
    "$([ $((i % 2)) = 1 ] && echo run || echo serve)" "$r" "$s" "$(cut -d' ' -f1 /proc/loadavg)"
done
[ "${#runs[@]}" -gt 0 ] || { echo "no round was cold" >&2; exit 1; }
mr=$(median "${runs[@]}"); ms=$(median "${serves[@]}")
printf 'median of %d: run %.1f s, serve %.1f s, serve/run %.3f (-j %s, cold)\n' "${#runs[@]}" "$mr" "$ms" \
  "$(echo "$ms / $mr" | bc -l)" "$J"
