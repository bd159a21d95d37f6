#!/usr/bin/env python3
"""The tests' own time of each benchmark row: the lower bound any harness pays.

For each row of rows.jsonl (SWE-bench 5 shape: `image`, `eval_script`) and its prediction,
one container of the row's image, network off, applies the patch (`git apply -v`, else
`patch --batch --fuzz=5 -p1`) and runs the eval script; the time measured is that of the eval
script alone, inside the container (container start, patch and removal excluded). Rows run
one after another, so the figures do not contend with each other.

With `--jobs N`, N such containers run at a time instead (plain `docker run`, no harness): the
same eval scripts under the contention N concurrent containers bring, a floor for any harness
at N workers. Rows are then started longest first by the earlier figures given with
`--order OWN_TIME.txt` (this script's own output), else in file order.

Prints one line per row (`instance_id seconds`), the sum (`total seconds`) and, with
`--jobs`, the wall time of all the containers (`wall seconds`).

Usage: own_time.py ROWS.jsonl PREDS.jsonl [--jobs N] [--order OWN_TIME.txt]
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

INNER = r"""
cd /testbed
git apply -v /bench/patch.diff >/dev/null 2>&1 || patch --batch --fuzz=5 -p1 -i /bench/patch.diff >/dev/null 2>&1
s=$(date +%s.%N)
bash /bench/eval.sh >/dev/null 2>&1
e=$(date +%s.%N)
echo "own-time $s $e"
"""


def own_time(row, patch):
    """Seconds the row's eval script took in a fresh container of its image."""
    iid = row["instance_id"]
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "patch.diff"), "w") as f:
            f.write(patch)
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
    return float(e) - float(s)


def main():
    args = sys.argv[1:]
    jobs, order = 1, None
    while len(args) > 2:
        flag, value = args[-2], args[-1]
        if flag == "--jobs":
            jobs = int(value)
        elif flag == "--order":
            order = {l.split()[0]: float(l.split()[1]) for l in open(value) if l.strip()}
        else:
            sys.exit(__doc__)
        args = args[:-2]
    if len(args) != 2 or jobs < 1:
        sys.exit(__doc__)
    rows = [json.loads(l) for l in open(args[0]) if l.strip()]
    preds = {}
    for l in open(args[1]):
        if l.strip():
            p = json.loads(l)
            preds.setdefault(p["instance_id"], p.get("model_patch") or "")
    if order:
        rows.sort(key=lambda r: -order.get(r["instance_id"], 0.0))
    start = time.monotonic()
    total = 0.0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [(r["instance_id"], pool.submit(own_time, r, preds.get(r["instance_id"], ""))) for r in rows]
        for iid, fut in futures:
            secs = fut.result()
            total += secs
            print(f"{iid} {secs:.2f}", flush=True)
    print(f"total {total:.2f}")
    if jobs > 1:
        print(f"wall {time.monotonic() - start:.2f}")


if __name__ == "__main__":
    main()
