#!/bin/sh
# Writes tests/fixtures/hostile/mini.parquet: the mini benchmark's dataset rows as Parquet, the
# way Hugging Face ships SWE-bench Verified (FAIL_TO_PASS/PASS_TO_PASS as JSON-encoded strings).
# The fuzz tests (tests/it/fuzz.rs) mutate it as the seed for the Parquet loader. Needs pyarrow.
set -eu
cd "$(dirname "$0")/.."
python3 - <<'PY'
import json
import pyarrow as pa
import pyarrow.parquet as pq

rows = [json.loads(l) for l in open("datasets/mini/dataset.jsonl") if l.strip()]
for r in rows:
    for k in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        r[k] = json.dumps(r[k])
cols = ["repo", "instance_id", "base_commit", "patch", "test_patch", "problem_statement",
        "hints_text", "created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS",
        "environment_setup_commit", "difficulty"]
table = pa.table({c: [None if r.get(c) is None else str(r[c]) for r in rows] for c in cols})
pq.write_table(table, "tests/fixtures/hostile/mini.parquet", compression="snappy")
print(f"wrote tests/fixtures/hostile/mini.parquet ({len(rows)} rows)")
PY
