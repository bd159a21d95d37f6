#!/usr/bin/env python3
"""The tests' own time of each benchmark row: the lower bound any harness pays.

For each row of rows.jsonl (SWE-bench 5 shape: `image`, `eval_script`) and its prediction,
one container of the row's image, network off, applies the patch (`git apply -v`, else
`patch --batch --fuzz=5 -p1`) and runs the eval script; the time measured is that of the eval
script alone, inside the container (container start, patch and removal excluded). Rows run
one after another, so the figures do not contend with each other.

Prints one line per row (`instance_id seconds`) and the sum last (`total seconds`).

Usage: own_time.py ROWS.jsonl PREDS.jsonl
"""
import json
import os
import subprocess
import sys
import tempfile

INNER = r"""
cd /testbed
git apply -v /bench/patch.diff >/dev/null 2>&1 || patch --batch --fuzz=5 -p1 -i /bench/patch.diff >/dev/null 2>&1
s=$(date +%s.%N)
bash /bench/eval.sh >/dev/null 2>&1
e=$(date +%s.%N)
echo "own-time $s $e"
"""


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    preds = {}
    for l in open(sys.argv[2]):
        if l.strip():
            p = json.loads(l)
            preds.setdefault(p["instance_id"], p.get("model_patch") or "")
    total = 0.0
    for row in rows:
        iid = row["instance_id"]
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "patch.diff"), "w") as f:
                f.write(preds.get(iid, ""))
            with open(os.path.join(d, "eval.sh"), "w") as f:
                f.write(row["eval_script"])
            os.chmod(d, 0o755)
            out = subprocess.run(
                ["docker", "run", "--rm", "--network", "none", "-v", f"{d}:/bench:ro",
                 "--entrypoint", "bash", row["image"], "-c", INNER],
                capture_output=True, text=True, check=False,
            )
        line = [l for l in out.stdout.splitlines() if l.startswith("own-time ")]
        if not line:
            sys.exit(f"{iid}: no timing from the container (exit {out.returncode}): {out.stderr[-500:]}")
        _, s, e = line[-1].split()
        secs = float(e) - float(s)
        total += secs
        print(f"{iid} {secs:.2f}", flush=True)
    print(f"total {total:.2f}")


if __name__ == "__main__":
    main()
