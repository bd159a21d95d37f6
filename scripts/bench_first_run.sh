#!/usr/bin/env bash
# The README's first command on a fresh clone, timed as a new machine would run it:
#   scripts/setup.sh && cargo run --release -- run
# in a fresh clone of COMMIT, with an empty cargo home (every crate downloaded and built), an
# empty target folder, an empty swe-eval cache, and a Docker daemon of its own with no image
# (so the offline base is bootstrapped and every image of the mini benchmark built), as root.
# The machine's own daemon, cargo home and cache are not touched.
#
# Usage: scripts/bench_first_run.sh [COMMIT]    (default HEAD; from the repository root)
# Settings (environment):
#   KEEP=0      1 keeps the scratch folder (clone, cargo home, daemon root, logs)
#   TIMINGS=0   1 adds --timings to the cargo command (cargo-timing.html kept beside the log)
#   OUT=        copy the log, the release binary (swe-eval-<commit>) and cargo-timing.html into
#               this folder
# Output: one line of figures on stdout (seconds from the start: setup done, build done, run
# done; the binary's size; the run's own closing line), the whole log in the scratch folder.
set -euo pipefail

commit="${1:-HEAD}"
KEEP=${KEEP:-0}
TIMINGS=${TIMINGS:-0}
OUT=${OUT:-}
root="$(cd "$(dirname "$0")/.." && pwd)"
sha="$(git -C "$root" rev-parse --verify "$commit^{commit}")"
[ "$(id -u)" -eq 0 ] || { echo "run as root (a private dockerd, debootstrap)" >&2; exit 1; }

# Short paths: the daemon's socket path must fit in sun_path.
scratch="$(mktemp -d /tmp/swe-eval-first.XXXXXX)"
bridge="swefr$$"
dockerd_pid=""
cleanup() {
  if [ -n "$dockerd_pid" ]; then
    DOCKER_HOST="unix://$scratch/d/docker.sock" docker rm -f -v \
      $(DOCKER_HOST="unix://$scratch/d/docker.sock" docker ps -aq 2>/dev/null) >/dev/null 2>&1 || true
    kill -TERM "$dockerd_pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 1; done
    kill -KILL "$dockerd_pid" 2>/dev/null || true
  fi
  ip link del "$bridge" 2>/dev/null || true
  # The clone's background bootstrap (setup.sh) ends by itself: wait for it to let go of its
  # lock (it holds it while it runs) before its folder goes.
  for lock in "$scratch"/cache/base/*.lock; do
    [ -e "$lock" ] && timeout 900 flock "$lock" true || true
  done
  if [ "$KEEP" = 1 ]; then
    echo "scratch kept: $scratch" >&2
  else
    umount -R "$scratch"/d/data/overlay2/*/merged 2>/dev/null || true
    rm -rf "$scratch"
  fi
}
trap cleanup EXIT

# A daemon of its own: own data root and bridge, no iptables rules (the host's stay as they are).
mkdir -p "$scratch/d"
ip link add "$bridge" type bridge
ip addr add 172.31.251.1/24 dev "$bridge"
ip link set "$bridge" up
dockerd --host="unix://$scratch/d/docker.sock" --data-root="$scratch/d/data" \
  --exec-root="$scratch/d/exec" --pidfile="$scratch/d/docker.pid" --bridge="$bridge" \
  --iptables=false --ip6tables=false >"$scratch/d/dockerd.log" 2>&1 </dev/null &
dockerd_pid=$!
export DOCKER_HOST="unix://$scratch/d/docker.sock"
for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
docker info >/dev/null 2>&1 || { tail -20 "$scratch/d/dockerd.log" >&2; exit 1; }

git clone -q --no-local "$root" "$scratch/clone"
git -C "$scratch/clone" checkout -q "$sha"
export CARGO_HOME="$scratch/cargo-home"
export SWE_EVAL_CACHE="$scratch/cache"
export CARGO_TARGET_DIR="$scratch/clone/target"
mkdir -p "$CARGO_HOME"
timings=()
[ "$TIMINGS" = 1 ] && timings=(--timings)

log="$scratch/first-run.log"
cd "$scratch/clone"
t0=$(date +%s.%N)
# Each line of output with its second since the start.
since() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
stamp() { while IFS= read -r line; do printf '%8s %s\n' "$(since)" "$line"; done; }
set +e
{
  scripts/setup.sh
  echo "@@ setup done"
  cargo run --release "${timings[@]}" -- run
} 2>&1 | stamp >"$log"
status=${PIPESTATUS[0]}
set -e
t_end=$(since)

at() { grep -m1 "$1" "$log" | awk '{print $1}'; }
setup_s=$(at '@@ setup done')
build_s=$(at 'Running `')
size=$(stat -c %s "$CARGO_TARGET_DIR/release/swe-eval" 2>/dev/null || echo 0)
closing=$(grep -m1 'mini benchmark:' "$log" | cut -c10- || true)
printf 'commit %s status %s setup %ss build done %ss run done %ss binary %.1f MB | %s\n' \
  "${sha:0:7}" "$status" "$setup_s" "$build_s" "$t_end" "$(awk -v s="$size" 'BEGIN { print s / 1048576 }')" "$closing"
if [ -n "$OUT" ]; then
  mkdir -p "$OUT"
  cp "$log" "$OUT/first-run-${sha:0:7}.log"
  cp "$CARGO_TARGET_DIR/release/swe-eval" "$OUT/swe-eval-${sha:0:7}" 2>/dev/null || true
  [ "$TIMINGS" = 1 ] && cp "$CARGO_TARGET_DIR"/cargo-timings/cargo-timing.html "$OUT/cargo-timing-${sha:0:7}.html" 2>/dev/null || true
fi
