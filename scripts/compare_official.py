#!/usr/bin/env python3
"""Compares a run's verdicts and per-test statuses with official per-instance reports.

A test oracle for real runs: it reads every `report.json` under a run's log folder (the
layout `swe-eval run` and the official harness both write:
`<run_dir>/<model>/<instance_id>/report.json`) and the official reports as JSON Lines
(`{"instance_id": ..., "report": {<instance_id>: {...}}}` or the bare `{<instance_id>: {...}}`
of a report.json per line), and prints, per repository, how many verdicts and test statuses
agree, then each difference: the verdict, and every test whose side (success/failure) or group
differs. Instances the run has no report.json for are listed with the run's own verdict.json
category and reason when there is one (errors, infrastructure errors).

Usage: scripts/compare_official.py RUN_DIR OFFICIAL [--ids a,b,...] [--json OUT]

OFFICIAL is the reports file, or another run's log folder (the official harness's
`logs/run_evaluation/<run_id>`): then only its report.json files count.

RUN_DIR is `<output>/logs/run_evaluation/<run_id>`. With --ids, only those instances count
(an id without a report in the run is a difference). --json writes the per-instance rows.
Exit status: 0 when everything compared agrees, 1 otherwise.
"""
import argparse
import glob
import json
import os
import sys
from collections import defaultdict

GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS")


def load_official(path):
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            row = json.loads(line)
            if "instance_id" in row and "report" in row:
                iid, rep = row["instance_id"], row["report"]
                rep = rep.get(iid, rep)
            elif len(row) == 1:
                (iid, rep), = row.items()
            else:
                sys.exit(f"{path}:{n}: neither {{instance_id, report}} nor {{<id>: report}}")
            out[iid] = rep
    return out


def load_run(run_dir):
    """instance id -> (report or None, verdict.json or None); the first model folder wins."""
    out = {}
    for d in sorted(glob.glob(os.path.join(run_dir, "*", "*"))):
        if not os.path.isdir(d):
            continue
        iid = os.path.basename(d)
        if iid in out:
            continue
        rep = verdict = None
        rp = os.path.join(d, "report.json")
        if os.path.exists(rp):
            with open(rp) as f:
                r = json.load(f)
            rep = r.get(iid, r)
        vp = os.path.join(d, "verdict.json")
        if os.path.exists(vp):
            with open(vp) as f:
                verdict = json.load(f)
        out[iid] = (rep, verdict)
    return out


def statuses(rep):
    """test -> (group, passed) of a report's tests_status."""
    st = {}
    for g in GROUPS:
        groups = (rep.get("tests_status") or {}).get(g) or {}
        for t in groups.get("success", []):
            st[t] = (g, True)
        for t in groups.get("failure", []):
            st[t] = (g, False)
    return st


def compare(iid, official, ours):
    rep, verdict = ours
    row = {"instance_id": iid, "official_resolved": official.get("resolved", False)}
    if rep is None:
        row["ours_resolved"] = None
        row["ours_category"] = (verdict or {}).get("category", "no verdict")
        row["ours_reason"] = (verdict or {}).get("reason")
        row["verdict_equal"] = False
        row["tests_equal"] = False
        row["test_differences"] = []
        return row
    row["ours_resolved"] = rep.get("resolved", False)
    row["ours_category"] = (verdict or {}).get("category")
    row["ours_reason"] = (verdict or {}).get("reason")
    row["verdict_equal"] = row["ours_resolved"] == row["official_resolved"]
    so, su = statuses(official), statuses(rep)
    diffs = []
    for t in sorted(set(so) | set(su)):
        a, b = so.get(t), su.get(t)
        if a != b:
            diffs.append({"test": t, "official": a, "ours": b})
    row["tests_equal"] = not diffs and official.get(
        "patch_successfully_applied"
    ) == rep.get("patch_successfully_applied")
    row["test_differences"] = diffs
    return row


def show(side):
    return "absent" if side is None else f"{side[0]} {'pass' if side[1] else 'fail'}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("official")
    ap.add_argument("--ids", help="comma-separated instance ids to compare")
    ap.add_argument("--json", help="write the per-instance rows here (JSON Lines)")
    a = ap.parse_args()
    if os.path.isdir(a.official):
        # Another run's log folder (the official harness writes the same layout).
        official = {i: rep for i, (rep, _) in load_run(a.official).items() if rep is not None}
    else:
        official = load_official(a.official)
    run = load_run(a.run_dir)
    ids = a.ids.split(",") if a.ids else sorted(i for i in run if i in official)
    rows = []
    for iid in ids:
        if iid not in official:
            print(f"{iid}: no official report, skipped", file=sys.stderr)
            continue
        rows.append(compare(iid, official[iid], run.get(iid, (None, None))))
    per_repo = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in rows:
        repo = r["instance_id"].rsplit("-", 1)[0]
        c = per_repo[repo]
        c[0] += 1
        c[1] += r["verdict_equal"]
        c[2] += r["tests_equal"]
        c[3] += bool(r["official_resolved"])
        c[4] += bool(r["ours_resolved"])
    print("repository\tinstances\tverdicts equal\ttest statuses equal\tofficial resolved\tours resolved")
    for repo, c in sorted(per_repo.items()):
        print(f"{repo}\t{c[0]}\t{c[1]}/{c[0]}\t{c[2]}/{c[0]}\t{c[3]}\t{c[4]}")
    for r in rows:
        if r["verdict_equal"] and r["tests_equal"]:
            continue
        head = (
            f"{r['instance_id']}: official {'resolved' if r['official_resolved'] else 'unresolved'}, "
            f"ours {r['ours_category'] or ('resolved' if r['ours_resolved'] else 'unresolved')}"
        )
        if r["ours_reason"]:
            head += f" ({r['ours_reason']})"
        print(head)
        for d in r["test_differences"][:15]:
            print(f"    {d['test']}: official {show(d['official'])}, ours {show(d['ours'])}")
        if len(r["test_differences"]) > 15:
            print(f"    ... {len(r['test_differences']) - 15} more")
    if a.json:
        with open(a.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    sys.exit(0 if all(r["verdict_equal"] and r["tests_equal"] for r in rows) else 1)


if __name__ == "__main__":
    main()
