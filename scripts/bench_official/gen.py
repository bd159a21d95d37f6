#!/usr/bin/env python3
"""Writes the trivial tasks of the harness speed comparison, read as is by both harnesses.

dataset.json: SWE-bench 5 rows (`image`, `eval_script`, `log_parser`, `eval_type`, plus the
classic fields). preds.jsonl: one prediction per row; prediction i adds the file
added/pred_<i>.txt, which the row's test command checks, so every prediction resolves.

Usage: gen.py --n N --image IMAGE --base-commit SHA --out DIR
"""
import argparse
import json
from pathlib import Path

MODEL = "swe-eval-bench"
REPO = "swe-eval-bench/trivial"


def eval_script(i: int) -> str:
    # The official shape: markers around the test command, nothing after it but the end
    # marker (SWE-bench 5 inserts its exit-code capture right before that marker).
    test = (
        f"if grep -qx 'ok {i}' added/pred_{i}.txt; then echo 'PASSED test_trivial'; "
        "else echo 'FAILED test_trivial'; fi; echo 'PASSED test_ok'"
    )
    return (
        "#!/bin/bash\nset -uxo pipefail\ncd /testbed\n"
        ": '>>>>> Start Test Output'\n"
        f"{test}\n"
        ": '>>>>> End Test Output'\n"
    )


def patch(i: int) -> str:
    return (
        f"diff --git a/added/pred_{i}.txt b/added/pred_{i}.txt\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        f"+++ b/added/pred_{i}.txt\n"
        "@@ -0,0 +1 @@\n"
        f"+ok {i}\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--base-commit", required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    rows, preds = [], []
    for i in range(a.n):
        iid = f"swe-eval-bench__trivial-{i}"
        rows.append({
            "instance_id": iid,
            "repo": REPO,
            "version": "0.1",
            "base_commit": a.base_commit,
            "environment_setup_commit": a.base_commit,
            "created_at": "2026-01-01T00:00:00Z",
            "problem_statement": f"Add added/pred_{i}.txt containing 'ok {i}'.",
            "hints_text": "",
            "patch": patch(i),
            "test_patch": "",
            "FAIL_TO_PASS": json.dumps(["test_trivial"]),
            "PASS_TO_PASS": json.dumps(["test_ok"]),
            "image": a.image,
            "eval_script": eval_script(i),
            "log_parser": "parse_log_pytest",
            "eval_type": "pass_and_fail",
        })
        preds.append({"instance_id": iid, "model_name_or_path": MODEL, "model_patch": patch(i)})
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "dataset.json").write_text(json.dumps(rows, indent=1) + "\n")
    (a.out / "preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))


if __name__ == "__main__":
    main()
