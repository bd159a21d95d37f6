#!/usr/bin/env bash
# Side by side on real SWE-bench instances: SWE-bench 5.0.2's official harness and
# `swe-eval run` on the same instance images, the same eval scripts and the same predictions,
# at the same number of workers; swe-eval's wall time against the limit (the tests' own time
# divided by the workers), and the verdicts of both compared, verdict by verdict and test by
# test (and with official reports when REPORTS is given).
#
# Usage: scripts/bench_real.sh DATASET PREDICTIONS IDS OUT [swe-eval run options...]
#   DATASET      dataset rows (JSON Lines), e.g. SWE-bench Verified
#   PREDICTIONS  predictions (JSON Lines)
#   IDS          comma-separated instance ids
#   OUT          a new folder for everything the benchmark writes
#   options      passed to the preparing swe-eval run: where the repositories come from
#                (`--mirrors DIR`, `--repo owner/name=PATH`), `--flavour debian`,
#                `--ca-cert FILE`, ...
# Settings (environment):
#   WORKERS=2    --max_workers (official) and -j (swe-eval)
#   TIMEOUT=1800 per-instance timeout of both
#   SB5_PY=/tmp/sb5/bin/python   Python of a venv with swebench==5.0.2
#   SWE_EVAL=    swe-eval binary [default: target/release/swe-eval after cargo build --release,
#                copied into OUT so a rebuild cannot change it mid-benchmark]
#   REPORTS=     official per-instance reports (JSON Lines) to compare both runs with
#
# Steps: (1) `swe-eval run` over IDS with `--cache-level instance` builds the instance images
# (and is the warm-up); (2) scripts/bench_real/rows.py writes SWE-bench 5 rows naming those
# images and the eval scripts that run used; (3) scripts/bench_real/own_time.py measures each
# eval script alone in a container, one at a time (the tests' own time), then the same
# containers WORKERS at a time with plain `docker run` and no harness, longest first (what
# running them side by side costs on this machine, whatever runs them); (4) the timed runs,
# official first, then swe-eval on the rows, each timed by /usr/bin/time; (5) the comparison.
# swe-eval starts the longest jobs first by the durations earlier runs left in its cache (step
# 1 leaves them for these instances); a second swe-eval run with an empty cache
# (SWE_EVAL_CACHE=OUT/cold-cache) shows the time in the rows' own order.
# Offline: the official harness runs through scripts/bench_official/run_official.py, which
# refuses pulls and gives its containers no network, as swe-eval does by default.
# The instance images are left in place (remove them with the run's --cache-level or by name).
set -euo pipefail

[ $# -ge 4 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
DATASET=$(realpath "$1"); PREDS=$(realpath "$2"); IDS=$3; OUT=$4; shift 4
WORKERS=${WORKERS:-2}
TIMEOUT=${TIMEOUT:-1800}
SB5_PY=${SB5_PY:-/tmp/sb5/bin/python}
REPORTS=${REPORTS:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HERE=$ROOT/scripts

[ ! -e "$OUT" ] || { echo "error: $OUT exists; give a new folder" >&2; exit 2; }
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
"$SB5_PY" -c 'import swebench, sys; sys.exit(swebench.__version__ != "5.0.2")' \
    || { echo "error: $SB5_PY has no swebench 5.0.2" >&2; exit 2; }
if [ -z "${SWE_EVAL:-}" ]; then
    (cd "$ROOT" && cargo build --release --locked -q)
    SWE_EVAL=$ROOT/target/release/swe-eval
fi
mkdir -p "$OUT/bin"; cp "$SWE_EVAL" "$OUT/bin/swe-eval"; SWE_EVAL=$OUT/bin/swe-eval
say() { printf '%s\n' "$*" >&2; }
wall() { # wall NAME CMD...: runs CMD, appends "NAME seconds" to $OUT/times.tsv
    local name=$1; shift
    local s e; s=$(date +%s.%N); "$@"; e=$(date +%s.%N)
    echo "$name $(echo "$e - $s" | bc)" >> "$OUT/times.tsv"
}

say "1/5 preparing images (swe-eval run, --cache-level instance)"
wall prepare "$SWE_EVAL" run -d "$DATASET" -p "$PREDS" -i "$IDS" -j "$WORKERS" -t "$TIMEOUT" \
    --run-id bench-prepare -o "$OUT/prepare" --cache-level instance "$@" > "$OUT/prepare.log" 2>&1 \
    || say "the preparing run exited $? (see $OUT/prepare.log)"

say "2/5 SWE-bench 5 rows naming the images and eval scripts"
"$SB5_PY" "$HERE/bench_real/rows.py" "$DATASET" "$PREDS" \
    "$OUT/prepare/logs/run_evaluation/bench-prepare" "$IDS" "$OUT"

say "3/5 the tests' own time (one container at a time)"
"$SB5_PY" "$HERE/bench_real/own_time.py" "$OUT/rows.jsonl" "$OUT/preds.jsonl" | tee "$OUT/own_time.txt" >&2
"$SB5_PY" "$HERE/bench_real/own_time.py" "$OUT/rows.jsonl" "$OUT/preds.jsonl" --jobs "$WORKERS" \
    --order "$OUT/own_time.txt" | tee "$OUT/plain_parallel.txt" >&2

say "4/5 timed runs: official, then swe-eval"
mkdir -p "$OUT/official"
(cd "$OUT/official" && wall official "$SB5_PY" "$HERE/bench_official/run_official.py" \
    -d "$OUT/rows.jsonl" -p "$OUT/preds.jsonl" --max_workers "$WORKERS" -id bench-official \
    -t "$TIMEOUT" --report_dir . > "$OUT/official.log" 2>&1) || say "official harness exited $?"
wall swe-eval "$SWE_EVAL" run -d "$OUT/rows.jsonl" -p "$OUT/preds.jsonl" -j "$WORKERS" \
    -t "$TIMEOUT" --run-id bench-swe-eval -o "$OUT/swe-eval" --cache-level instance \
    > "$OUT/swe-eval.log" 2>&1 || say "swe-eval exited $?"
mkdir -p "$OUT/cold-cache"
SWE_EVAL_CACHE=$OUT/cold-cache wall swe-eval-cold "$SWE_EVAL" run -d "$OUT/rows.jsonl" \
    -p "$OUT/preds.jsonl" -j "$WORKERS" -t "$TIMEOUT" --run-id bench-swe-eval-cold \
    -o "$OUT/swe-eval-cold" --cache-level instance > "$OUT/swe-eval-cold.log" 2>&1 \
    || say "swe-eval (no durations known) exited $?"

say "5/5 comparison"
N=$(wc -l < "$OUT/rows.jsonl")
OWN=$(awk '$1 == "total" { print $2 }' "$OUT/own_time.txt")
T_OFF=$(awk '$1 == "official" { print $2 }' "$OUT/times.tsv")
T_OURS=$(awk '$1 == "swe-eval" { print $2 }' "$OUT/times.tsv")
T_COLD=$(awk '$1 == "swe-eval-cold" { print $2 }' "$OUT/times.tsv")
T_PLAIN=$(awk '$1 == "wall" { print $2 }' "$OUT/plain_parallel.txt")
OWN_PAR=$(awk '$1 == "total" { print $2 }' "$OUT/plain_parallel.txt")
LIMIT=$(echo "scale=2; $OWN / $WORKERS" | bc)
{
    echo "instances $N, workers $WORKERS"
    echo "tests' own time: $OWN s in sum; limit (sum / workers): $LIMIT s"
    printf 'official 5.0.2: %.1f s\nswe-eval: %.1f s (%.2fx the limit)\n' \
        "$T_OFF" "$T_OURS" "$(echo "scale=4; $T_OURS / $LIMIT" | bc)"
    printf 'swe-eval, no durations known (rows order): %.1f s (%.2fx the limit)\n' \
        "$T_COLD" "$(echo "scale=4; $T_COLD / $LIMIT" | bc)"
    printf 'plain docker run, %s at a time, no harness: %.1f s (%.2fx the limit); the eval scripts took %s s in sum there\n' \
        "$WORKERS" "$T_PLAIN" "$(echo "scale=4; $T_PLAIN / $LIMIT" | bc)" "$OWN_PAR"
    grep -h 'time went' "$OUT/swe-eval.log" "$OUT/swe-eval-cold.log" || true
    echo "swe-eval against the official harness, same images and eval scripts:"
    python3 "$HERE/compare_official.py" "$OUT/swe-eval/logs/run_evaluation/bench-swe-eval" \
        "$OUT/official/logs/run_evaluation/bench-official" --ids "$IDS" || true
    if [ -n "$REPORTS" ]; then
        echo "swe-eval against the official reports ($REPORTS):"
        python3 "$HERE/compare_official.py" "$OUT/swe-eval/logs/run_evaluation/bench-swe-eval" \
            "$REPORTS" --ids "$IDS" || true
        echo "the official harness here against the official reports:"
        python3 "$HERE/compare_official.py" "$OUT/official/logs/run_evaluation/bench-official" \
            "$REPORTS" --ids "$IDS" || true
    fi
} | tee "$OUT/summary.txt"
