#!/usr/bin/env bash
# Harness overhead per prediction, side by side: SWE-bench 5.0.2's official harness and
# `swe-eval run`, on the same local image, the same SWE-bench 5 dataset rows (`image`,
# `eval_script`, `log_parser`) and the same predictions, at the same number of workers.
#
# The task is trivial on purpose: /testbed is a one-commit git repository, prediction i adds
# added/pred_<i>.txt, and the row's test command (between the official markers) checks that
# file with grep and echoes two pytest-style PASSED lines. Everything measured besides that
# command is harness overhead; the command's own time is measured apart and subtracted.
#
# Usage: scripts/bench_official_harness.sh            (from the repository root)
# Settings (environment):
#   N=20           predictions per timed run
#   REPEATS=3      timed runs per harness (after one warm-up run of 2 predictions each),
#                  interleaved official/ours so load drift hits both alike
#   WORKERS=2      --max_workers (official) and -j (ours)
#   SB5_PY=/tmp/sb5/bin/python   Python of a venv with swebench==5.0.2:
#                  python3 -m venv /tmp/sb5 && /tmp/sb5/bin/pip install swebench==5.0.2
#   SWE_EVAL=      swe-eval binary [default: cargo build --release, then a copy of it, so a
#                  concurrent rebuild cannot change the binary mid-benchmark]
#   BASE_IMAGE=swe-eval/base.debian-bookworm:latest   local image with bash, git, patch
#   KEEP_IMAGE=0   1 keeps the benchmark image swe-eval-bench/trivial:latest
#   KEEP_SCRATCH=0 1 keeps the scratch folder (logs of every run)
#   RESULTS_OUT=   also copy results.tsv (one line per run) here
#   WARM=1         also time swe-eval in a warm output folder (one folder for all its runs,
#                  warmed by the warm-up run: durations file and caches in place), beside the
#                  fresh folder of each run ("ours-warm" rows; 0 leaves them out)
#   BEFORE=        a second swe-eval binary (e.g. a build of an earlier commit) timed the same
#                  way in every round, fresh and warm ("before" and "before-warm" rows)
#
# Offline: nothing is pulled (the base image must be local; the official harness runs through
# scripts/bench_official/run_official.py, which refuses pulls and gives its containers
# network_mode=none, as swe-eval does by default). Output: a table on stdout.
set -euo pipefail

N=${N:-20}
REPEATS=${REPEATS:-3}
WORKERS=${WORKERS:-2}
SB5_PY=${SB5_PY:-/tmp/sb5/bin/python}
SWE_EVAL=${SWE_EVAL:-}
BASE_IMAGE=${BASE_IMAGE:-swe-eval/base.debian-bookworm:latest}
KEEP_IMAGE=${KEEP_IMAGE:-0}
KEEP_SCRATCH=${KEEP_SCRATCH:-0}
WARM=${WARM:-1}
BEFORE=${BEFORE:-}
IMAGE=swe-eval-bench/trivial:latest
MODEL=swe-eval-bench

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HERE=$ROOT/scripts/bench_official
DATA=$HERE/data
SCRATCH=$(mktemp -d /tmp/swe-eval-bench.XXXXXX)
RESULTS=$SCRATCH/results.tsv

say() { printf '%s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

cleanup() {
    # Containers either harness may have left (the official ones are named sweb.eval.*).
    local left
    left=$(docker ps -aq --filter "ancestor=$IMAGE" 2>/dev/null || true)
    if [ -n "$left" ]; then
        say "removing leftover containers: $(echo $left)"
        docker rm -f $left >/dev/null 2>&1 || true
    fi
    if [ "$KEEP_IMAGE" != 1 ]; then
        docker rmi -f "$IMAGE" >/dev/null 2>&1 || true
    fi
    if [ "$KEEP_SCRATCH" != 1 ]; then
        rm -rf "$SCRATCH"
    else
        say "scratch kept: $SCRATCH"
    fi
}
trap cleanup EXIT

# --- checks -------------------------------------------------------------------------------
docker version >/dev/null 2>&1 || die "no Docker daemon answers (start dockerd; see scripts/ensure-docker.sh)"
docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 \
    || die "base image $BASE_IMAGE is not local (build it: swe-eval run bootstraps it, or set BASE_IMAGE)"
[ -x "$SB5_PY" ] || die "$SB5_PY missing: python3 -m venv /tmp/sb5 && /tmp/sb5/bin/pip install swebench==5.0.2"
SB5_VERSION=$("$SB5_PY" -c 'import swebench; print(swebench.__version__)')
[ "$SB5_VERSION" = 5.0.2 ] || say "warning: swebench $SB5_VERSION, not 5.0.2"
[ -x /usr/bin/time ] || die "/usr/bin/time missing (apt-get install time)"

if [ -z "$SWE_EVAL" ]; then
    say "building swe-eval (release)..."
    (cd "$ROOT" && cargo build --release --quiet)
    TARGET=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
    cp "$TARGET/release/swe-eval" "$SCRATCH/swe-eval"
    SWE_EVAL=$SCRATCH/swe-eval
fi

# --- the trivial task ---------------------------------------------------------------------
say "building $IMAGE from $BASE_IMAGE..."
docker build -q --network none --build-arg "BASE=$BASE_IMAGE" -t "$IMAGE" "$HERE" >/dev/null 2>"$SCRATCH/build.log" \
    || { cat "$SCRATCH/build.log" >&2; die "image build failed"; }
BASE_COMMIT=$(docker run --rm --network none "$IMAGE" git -C /testbed rev-parse HEAD)
python3 "$HERE/gen.py" --n "$N" --image "$IMAGE" --base-commit "$BASE_COMMIT" --out "$DATA"
WARM_IDS=(swe-eval-bench__trivial-0 swe-eval-bench__trivial-1)

# The test command's own time: the line between the markers of row 0, run 200 times in one
# container after prediction 0's file is in place.
TEST_LINE=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))[0]["eval_script"].splitlines(); print(s[s.index(": '"'"'>>>>> Start Test Output'"'"'")+1])' "$DATA/dataset.json")
TEST_MS=$(docker run --rm --network none "$IMAGE" bash -c "
    mkdir -p added && echo 'ok 0' > added/pred_0.txt
    t0=\$(date +%s%N); for k in \$(seq 200); do { $TEST_LINE; } >/dev/null; done; t1=\$(date +%s%N)
    echo \$(( (t1 - t0) / 200000 ))")
TEST_S=$(python3 -c "print($TEST_MS / 1e6)")
# The same with bash starting per run (the harnesses run the eval script as a new bash).
SCRIPT_MS=$(docker run --rm --network none "$IMAGE" bash -c "
    mkdir -p added && echo 'ok 0' > added/pred_0.txt
    printf '%s\n' \"\$1\" > /tmp/t.sh
    t0=\$(date +%s%N); for k in \$(seq 200); do bash /tmp/t.sh >/dev/null; done; t1=\$(date +%s%N)
    echo \$(( (t1 - t0) / 200000 ))" _ "$TEST_LINE")
say "test command: $(python3 -c "print(f'{$TEST_MS/1000:.3f}')") ms in a running shell, $(python3 -c "print(f'{$SCRIPT_MS/1000:.3f}')") ms as a new bash"

# --- runs ---------------------------------------------------------------------------------
printf 'harness\trun\tpredictions\twall_s\tmax_rss_kib\tload1_before\tload1_after\tresolved\tinstances_phase_s\treport_phase_s\n' >"$RESULTS"

load1() { cut -d' ' -f1 /proc/loadavg; }

# run NAME RUN_ID COUNT CMD... : times CMD in its own folder, appends a line to results.tsv.
run() {
    local name=$1 id=$2 count=$3
    shift 3
    local dir=$SCRATCH/$name-$id
    mkdir -p "$dir"
    local before after
    before=$(load1)
    (cd "$dir" && HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 /usr/bin/time -v -o "$dir/time.txt" "$@" >"$dir/out.log" 2>&1) \
        || { tail -20 "$dir/out.log" >&2; die "$name run $id failed (log: $dir/out.log)"; }
    after=$(load1)
    python3 - "$name" "$id" "$count" "$dir" "$before" "$after" "$MODEL" >>"$RESULTS" <<'EOF'
import json, re, sys
from pathlib import Path
name, rid, count, d, before, after, model = sys.argv[1:]
d = Path(d)
t = (d / "time.txt").read_text()
m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", t)
wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
out = Path((d / "output").read_text().strip()) if (d / "output").exists() else d
summary = json.loads((out / f"{model}.{rid}.json").read_text())
log = (d / "out.log").read_text()
phase = lambda p: (re.findall(rf"bench-phase {p} ([\d.]+)", log) or ["-"])[-1]
print("\t".join(map(str, [name, rid, count, f"{wall:.2f}", rss, before, after,
                          summary["resolved_instances"], phase("instances"), phase("report")])))
EOF
    tail -1 "$RESULTS" >&2
    local resolved
    resolved=$(tail -1 "$RESULTS" | cut -f8)
    if [ "$resolved" != "$count" ]; then
        say "warning: $name run $id resolved $resolved of $count; keeping its logs in $dir"
        KEEP_SCRATCH=1
    fi
}

official() { # RUN_ID [instance ids...]
    local id=$1
    shift
    local ids=()
    [ $# -gt 0 ] && ids=(-i "$@")
    run official "$id" "${COUNT}" "$SB5_PY" "$HERE/run_official.py" -d "$DATA/dataset.json" \
        -p "$DATA/preds.jsonl" --max_workers "$WORKERS" -id "$id" -t 120 --report_dir . "${ids[@]}"
}

# ours NAME BINARY OUTPUT RUN_ID [instance ids...]: OUTPUT "fresh" is a folder of the run's own.
ours() {
    local name=$1 bin=$2 out=$3 id=$4
    shift 4
    local ids=()
    [ $# -gt 0 ] && ids=(-i "$(IFS=,; echo "$*")")
    [ "$out" = fresh ] && out=$SCRATCH/$name-$id/ours
    mkdir -p "$SCRATCH/$name-$id"
    echo "$out" >"$SCRATCH/$name-$id/output"
    run "$name" "$id" "${COUNT}" "$bin" run -d "$DATA/dataset.json" -p "$DATA/preds.jsonl" \
        --run-id "$id" -j "$WORKERS" -t 120 --output "$out" "${ids[@]}"
}

# Every swe-eval variant of a round: NAME BINARY OUTPUT.
variants=("ours $SWE_EVAL fresh")
[ "$WARM" = 1 ] && variants+=("ours-warm $SWE_EVAL $SCRATCH/warm-ours")
if [ -n "$BEFORE" ]; then
    [ -x "$BEFORE" ] || die "BEFORE=$BEFORE is not an executable"
    cp "$BEFORE" "$SCRATCH/swe-eval-before"
    variants+=("before $SCRATCH/swe-eval-before fresh")
    [ "$WARM" = 1 ] && variants+=("before-warm $SCRATCH/swe-eval-before $SCRATCH/warm-before")
fi
each_ours() { # RUN_ID [instance ids...]
    local v
    for v in "${variants[@]}"; do
        # shellcheck disable=SC2086
        ours $v "$@"
    done
}

say "warm-up (2 predictions each, not counted)..."
COUNT=2
official swe-eval-bench-warm "${WARM_IDS[@]}"
each_ours swe-eval-bench-warm "${WARM_IDS[@]}"
COUNT=$N
for r in $(seq "$REPEATS"); do
    say "run $r/$REPEATS: $N predictions each at $WORKERS workers..."
    official "swe-eval-bench-r$r"
    each_ours "swe-eval-bench-r$r"
done

# --- figures ------------------------------------------------------------------------------
python3 - "$RESULTS" "$N" "$WORKERS" "$TEST_S" "$SB5_VERSION" <<'EOF'
import csv, statistics, sys
path, n, workers, test_s, sbv = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
rows = [r for r in csv.DictReader(open(path), delimiter="\t") if not r["run"].endswith("warm")]
print(f"{n} predictions per run, {workers} workers, test command {test_s * 1000:.3f} ms")
print(f"{'harness':<24}{'run':<22}{'wall s':>8}{'s/pred':>8}{'overhead s/pred':>17}{'peak RSS MiB':>14}{'load1':>12}{'resolved':>10}")
per = {}
for r in rows:
    spp = float(r["wall_s"]) / n
    over = spp - test_s
    per.setdefault(r["harness"], []).append((spp, over, int(r["max_rss_kib"]) / 1024))
    label = f"swebench {sbv}" if r["harness"] == "official" else f"swe-eval ({r['harness']})"
    print(f"{label:<24}{r['run']:<22}{float(r['wall_s']):>8.2f}{spp:>8.3f}{over:>17.3f}"
          f"{int(r['max_rss_kib']) / 1024:>14.1f}{r['load1_before'] + '/' + r['load1_after']:>12}{r['resolved'] + '/' + str(n):>10}")
for h, v in per.items():
    print(f"{h}: mean overhead {statistics.mean(x[1] for x in v):.3f} s/prediction "
          f"(min {min(x[1] for x in v):.3f}, max {max(x[1] for x in v):.3f}), peak RSS {max(x[2] for x in v):.1f} MiB")
if "official" in per:
    o = statistics.mean(x[1] for x in per["official"])
    for h, v in per.items():
        if h != "official":
            s = statistics.mean(x[1] for x in v)
            print(f"official / swe-eval ({h}) overhead per prediction: {o:.3f} / {s:.3f} = {o / s:.1f}x")
EOF
if [ -n "${RESULTS_OUT:-}" ]; then
    cp "$RESULTS" "$RESULTS_OUT"
    say "results: $RESULTS_OUT"
fi
