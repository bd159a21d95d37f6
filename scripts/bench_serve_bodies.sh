#!/usr/bin/env bash
# `swe-eval serve`'s memory under large request bodies, each load on a server of its own over
# loopback (fresh state, the mini benchmark, default --max-body 64 MiB and --max-body-memory
# 128 MiB unless SERVE_ARGS says otherwise):
#
#   one:   one POST /v1/evaluations of a batch of MB predictions (not executed) whose patches
#          are 1 MB of text each (under the default --max-patch-bytes of 1 MiB; not a diff, so
#          the similarity is quick and the figure is the body's): MB megabytes in one body;
#          the server's peak (VmHWM) and resident (VmRSS) memory before and after, the status;
#   eight: eight such POSTs at once (curl in the background); the same figures, and each
#          one's status and Retry-After (past the body budget, 503 with Retry-After).
#
# Usage: scripts/bench_serve_bodies.sh      (from the repository root)
# Settings (environment): BIN=target/release/swe-eval  MB=60  KEEP=0 (1 keeps the scratch
# folder)  SERVE_ARGS="" (more `serve` flags)
set -euo pipefail

BIN=${BIN:-target/release/swe-eval}
MB=${MB:-60}
KEEP=${KEEP:-0}
SERVE_ARGS=${SERVE_ARGS:-}
. "$(dirname "$0")/serve_bench_lib.sh"
bench_scratch swe-eval-bodies
command -v curl >/dev/null || { echo "needs curl" >&2; exit 1; }

mem() { awk '/^VmHWM|^VmRSS/ {printf "%s %.1f MB ", $1, $2 / 1024}' "/proc/$server/status"; }


# POSTs the body; prints "STATUS RETRY-AFTER SECONDS".
post() {
  curl -s -o "$scratch/answer.$1" -w '%{http_code} %header{retry-after} %{time_total}\n' \
    -H 'Content-Type: application/json' --data-binary @"$scratch/body.json" \
    "http://$addr/v1/evaluations"
}

# MB predictions (samples 0, 1, ...) whose patches are 1 MB of lines of 99 letters and a
# newline each.
python3 - "$scratch/body.json" "$MB" <<'EOF'
import json, sys
path, mb = sys.argv[1], int(sys.argv[2])
line = "x" * 99 + "\n"
patch = line * (1_000_000 // len(line) - 1)
with open(path, "w") as f:
    json.dump([{"instance_id": "swe-eval-mini__calc-1", "model_patch": patch,
                "sample": k, "execute": False} for k in range(mb)], f)
EOF
size=$(stat -c %s "$scratch/body.json")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "body: $size bytes; server: $BIN serve -j 1 ${SERVE_ARGS}"

# shellcheck disable=SC2086
serve_start one -j 1 $SERVE_ARGS
before=$(mem)
got=$(post 0 | awk '{printf "%s in %.2f s", $1, $NF}')
printf 'one body: status %s; memory before: %s; after: %s\n' "$got" "$before" "$(mem)"
serve_stop

# shellcheck disable=SC2086
serve_start eight -j 1 $SERVE_ARGS
before=$(mem)
curls=()
for k in 1 2 3 4 5 6 7 8; do
  post "$k" >"$scratch/status.$k" &
  curls+=($!)
done
wait "${curls[@]}" || true
statuses=$(for k in 1 2 3 4 5 6 7 8; do cut -d' ' -f1-2 "$scratch/status.$k" | sed 's/ $//; s/ / Retry-After /'; done | sort | uniq -c | awk '{c=$1; $1=""; printf "%s%dx%s", (NR>1?", ":""), c, $0}')
printf 'eight bodies at once: statuses %s; memory before: %s; after: %s\n' "$statuses" "$before" "$(mem)"
serve_stop
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
