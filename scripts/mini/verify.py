"""Test oracle: checks every expected verdict of the mini benchmark without Docker.

For each prediction in datasets/mini/predictions.jsonl it clones the task's bundle at
base_commit, applies the patch as the official harness does, resets the test files and
applies the test patch, runs `pytest -rA` on them under a timeout, parses the output with
swebench 4.1.0's pytest parser and grades it with its grading functions (see minilib.py);
then again in strict mode. The verdicts are compared with datasets/mini/expected.json.

Tests run without network (`unshare -n`) when that works, as in the harness's containers;
otherwise predictions marked `container_only` in expected.json are reported, not failed.

With `--docker IMAGE` the tests run in containers of IMAGE instead (Debian bookworm's python3
and python3-pytest, network off), e.g. the harness's base image.

Usage: python3 scripts/mini/verify.py [--timeout SECONDS] [--jobs N] [--docker IMAGE] [-v]
Exit status: 0 when every verdict matches, 1 otherwise.
"""

import argparse
import json
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import minilib  # noqa: E402


def load_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def can_unshare_network():
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def check(pred, instance, expected, args, no_network):
    patch = pred["model_patch"]
    got = {}
    for mode, strict in (("default", False), ("strict", True)):
        got[mode] = minilib.evaluate(
            instance,
            patch,
            timeout=args.timeout,
            strict=strict,
            no_network=no_network,
            docker_image=args.docker,
        )
    problems = []
    for mode, want in (("default", expected["category"]), ("strict", expected["strict_category"])):
        v = got[mode]
        if v["category"] != want:
            problems.append(f"{mode}: got {v['category']} ({v.get('status')}), want {want}")
        elif want == "error" and v["error_kind"] != expected["error_kind"]:
            problems.append(f"{mode}: error {v['error_kind']}, want {expected['error_kind']}")
    return got, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=15.0, help="per-run test timeout (s)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--docker",
        metavar="IMAGE",
        help="run the tests in containers of IMAGE (needs python3, pytest; network off)",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="print test logs of mismatches")
    args = ap.parse_args()

    dataset = {i["instance_id"]: i for i in load_jsonl(minilib.MINI / "dataset.jsonl")}
    preds = load_jsonl(minilib.MINI / "predictions.jsonl")
    expected = {
        (e["instance_id"], e["model_name_or_path"], e["sample"]): e
        for e in json.loads((minilib.MINI / "expected.json").read_text())
    }
    no_network = bool(args.docker) or can_unshare_network()
    if not no_network:
        print("note: `unshare -n` is not available; network cases are container-only here")

    def one(pred):
        key = (pred["instance_id"], pred["model_name_or_path"], pred["sample"])
        exp = expected.get(key)
        if exp is None:
            return key, None, None, ["no expected verdict"]
        start = time.monotonic()
        got, problems = check(pred, dataset[pred["instance_id"]], exp, args, no_network)
        return key, exp, (got, time.monotonic() - start), problems

    failures = 0
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for key, exp, result, problems in pool.map(one, preds):
            label = f"{key[0]} {key[1]}#{key[2]} [{exp['case'] if exp else '?'}]"
            if problems and exp and exp.get("container_only") and not no_network:
                print(f"SKIP {label}: container-only ({'; '.join(problems)})")
                continue
            if problems:
                failures += 1
                print(f"FAIL {label}: {'; '.join(problems)}")
                if args.verbose and result:
                    for mode, v in result[0].items():
                        print(f"--- {mode} log ---\n{v.get('log', '')}")
            else:
                got, secs = result
                m = re.search(r" in ([\d.]+)s ", got["default"].get("log") or "")
                pytest_secs = f", pytest {m.group(1)}s" if m else ""
                print(
                    f"ok   {label}: {got['default']['category']}/{got['strict']['category']}"
                    f" ({secs:.1f}s{pytest_secs})"
                )
    if len(expected) != len(preds):
        failures += 1
        print(f"FAIL expected.json has {len(expected)} verdicts for {len(preds)} predictions")
    print(f"{len(preds) - failures} of {len(preds)} predictions match expected.json")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
