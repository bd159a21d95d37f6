#!/usr/bin/env python3
"""Writes the inputs of the side-by-side benchmark on real instances (scripts/bench_real.sh).

From a finished `swe-eval run` over the chosen instances (its images kept), it writes:

- `rows.jsonl`: the dataset rows of those instances in SWE-bench 5's shape, so that both
  harnesses run the same thing: `image` (the instance image the swe-eval run used, from its
  `run_instance.log`), `eval_script` (the `eval.sh` it ran), `log_parser` (the official parser
  of the repository, as SWE-bench 5.0.2 maps it), `eval_type` (`pass_and_fail`), beside the
  classic fields;
- `preds.jsonl`: the predictions of those instances (SWE-bench 5 refuses predictions whose
  instance is not in the dataset).

Run it with the Python that has swebench 5.0.2 (it reads the parser map from there).

Usage: rows.py DATASET PREDICTIONS RUN_DIR IDS OUT_DIR
  RUN_DIR: `<output>/logs/run_evaluation/<run_id>` of the swe-eval run; IDS: comma-separated.
"""
import glob
import json
import os
import sys

from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    dataset, preds, run_dir, ids, out = sys.argv[1:]
    ids = [i for i in ids.split(",") if i]
    rows = {r["instance_id"]: r for r in read_jsonl(dataset)}
    os.makedirs(out, exist_ok=True)
    written = []
    for iid in ids:
        row = dict(rows[iid])
        dirs = glob.glob(os.path.join(run_dir, "*", iid))
        if not dirs:
            sys.exit(f"{run_dir}: no log folder for {iid} (did the swe-eval run cover it?)")
        image = None
        with open(os.path.join(dirs[0], "run_instance.log")) as f:
            for line in f:
                if line.startswith("image "):
                    image = line.split(" ", 1)[1].strip()
                    break
        if image is None:
            sys.exit(f"{dirs[0]}/run_instance.log: no `image` line (the image did not build?)")
        with open(os.path.join(dirs[0], "eval.sh")) as f:
            row["eval_script"] = f.read()
        row["image"] = image
        row["log_parser"] = MAP_REPO_TO_PARSER_PY[row["repo"]].__name__
        row["eval_type"] = "pass_and_fail"
        written.append(row)
    with open(os.path.join(out, "rows.jsonl"), "w") as f:
        for r in written:
            f.write(json.dumps(r) + "\n")
    wanted = set(ids)
    with open(os.path.join(out, "preds.jsonl"), "w") as f:
        for p in read_jsonl(preds):
            if p["instance_id"] in wanted:
                f.write(json.dumps(p) + "\n")
    print(f"{len(written)} rows, images and eval scripts of {run_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
