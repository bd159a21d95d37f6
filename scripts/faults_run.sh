#!/bin/sh
# Runs the fault-injection, hostile-patch and fuzz tests (tests/it/{faults,hostile,fuzz}.rs).
#   scripts/faults_run.sh            the bounded run CI does
#   scripts/faults_run.sh 10         fuzz targets with 10x the cases (a longer run by hand)
# Docker tests skip with a message when no daemon answers; disk-full and daemon-restart tests
# need root (they mount a tmpfs and start a private dockerd). Keep a failing test's folders
# with SWE_EVAL_KEEP_TEST_DIRS=1.
set -eu
cd "$(dirname "$0")/.."
SWE_EVAL_FUZZ_SCALE="${1:-1}" exec cargo test --test it -- faults:: hostile:: fuzz:: --nocapture
