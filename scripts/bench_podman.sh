#!/usr/bin/env bash
# The mini benchmark (official, then strict) and the harness's own overhead per prediction
# (`swe-eval bench harness`) on Docker, rootful Podman and rootless Podman, one after the other
# on this machine, with the wall times side by side (issue 24). Run as root: it starts the
# Podman services (scripts/ensure-podman.sh) and runs the rootless part as that script's
# ordinary user, who finds their own socket (`--engine podman`, XDG_RUNTIME_DIR).
#
# usage: scripts/bench_podman.sh OUT [ENGINES]
#   OUT      a new folder for everything the benchmark writes; OUT/times.tsv has the figures
#   ENGINES  which of docker, rootful, rootless (default all three, in that order)
# Settings (environment):
#   SWE_EVAL=      swe-eval binary [default: target/release/swe-eval after cargo build --release;
#                  copied into OUT so a rebuild cannot change it mid-benchmark]
#   PREDICTIONS=50 predictions of `bench harness` (trivial tasks), at WORKERS=2
#
# Per engine: a warm-up mini run (builds the environment images, which the default cache level
# keeps; the offline base must already be there or is bootstrapped then), the timed official
# run, the timed strict run (each builds and removes its instance images, as a first run of a
# new benchmark does), each checked 22/22 by the run itself, then `bench harness` (its first
# phase only: distinct trivial predictions, wall time per prediction).
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
OUT=$1
ENGINES=${2:-docker rootful rootless}
PREDICTIONS=${PREDICTIONS:-50}
WORKERS=${WORKERS:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
USER_NAME=${SWE_EVAL_PODMAN_USER:-swe-eval-podman}

[ ! -e "$OUT" ] || { echo "error: $OUT exists; give a new folder" >&2; exit 2; }
mkdir -p "$OUT/bin"
chmod 755 "$OUT" "$OUT/bin"
OUT=$(realpath "$OUT")
if [ -z "${SWE_EVAL:-}" ]; then
  (cd "$ROOT" && cargo build --release --locked -q)
  SWE_EVAL=$ROOT/target/release/swe-eval
fi
cp "$SWE_EVAL" "$OUT/bin/swe-eval"
BIN=$OUT/bin/swe-eval
printf 'engine\tstep\tseconds\tresult\n' >"$OUT/times.tsv"

as_engine() { # as_engine ENGINE CMD...: runs CMD as the engine's user with its settings
  local e=$1; shift
  case $e in
  docker) env -u DOCKER_HOST "$@" ;;
  rootful) env -u DOCKER_HOST -u CONTAINER_HOST "$@" ;;
  rootless)
    local uid home
    uid=$(id -u "$USER_NAME"); home=$OUT/rootless/home
    mkdir -p "$home"; chown "$USER_NAME:" "$home"
    setpriv --reuid "$USER_NAME" --regid "$USER_NAME" --init-groups \
      env -i HOME="$home" XDG_RUNTIME_DIR="/run/user/$uid" PATH=/usr/local/bin:/usr/bin:/bin "$@"
    ;;
  esac
}
engine_flag() { [ "$1" = docker ] && echo docker || echo podman; }
socket() {
  case $1 in
  docker) echo unix:///var/run/docker.sock ;;
  rootful) echo unix:///run/podman/podman.sock ;;
  rootless) echo "unix:///run/user/$(id -u "$USER_NAME")/podman/podman.sock" ;;
  esac
}
timed() { # timed ENGINE STEP CMD...: appends "ENGINE STEP seconds exit" to times.tsv
  local e=$1 step=$2; shift 2
  local s rc; s=$(date +%s.%N)
  set +e; "$@"; rc=$?; set -e
  printf '%s\t%s\t%s\t%s\n' "$e" "$step" "$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')" "exit $rc" \
    | tee -a "$OUT/times.tsv" >&2
}

for e in $ENGINES; do
  dir=$OUT/$e
  mkdir -p "$dir"
  case $e in
  rootful | rootless) SWE_EVAL_PODMAN_IDLE=900 bash "$ROOT/scripts/ensure-podman.sh" "$e" >/dev/null ;;
  esac
  [ "$e" = rootless ] && chown -R "$USER_NAME:" "$dir"
  run() { as_engine "$e" "$BIN" run --engine "$(engine_flag "$e")" -o "$dir/results" "$@"; }
  echo "== $e (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  timed "$e" warm-up run --run-id warm >"$dir/warm.out" 2>"$dir/warm.err"
  timed "$e" official run --run-id official >"$dir/official.out" 2>"$dir/official.err"
  timed "$e" strict run --run-id strict --strict >"$dir/strict.out" 2>"$dir/strict.err"
  for r in warm official strict; do
    grep -h 'mini benchmark:' "$dir/$r.out" | sed "s/^ */$e $r: /" >&2 || echo "$e $r: no check line" >&2
  done
  timed "$e" "bench harness" as_engine "$e" env DOCKER_HOST="$(socket "$e")" "$BIN" bench harness \
    --predictions "$PREDICTIONS" -j "$WORKERS" --queued-run 0 --no-fake --json "$dir/harness.json" \
    >"$dir/harness.out" 2>"$dir/harness.err"
  echo "== $e done (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
column -t -s $'\t' "$OUT/times.tsv" >&2
