#!/usr/bin/env python3
"""Differential oracle and speed baseline for `swe-eval reward`, in plain Python.

Uses only the standard library's difflib and the `unidiff` package (0.7.5), following the
semantics in ../shared/docs/swe-rl-reward.md (SWE-RL's reward.py). Never part of the harness.

  reward_oracle.py unidiff --dataset D --predictions P [--output OUT.jsonl]
      The unified-diff reward of every prediction against its gold patch; prints
      {"rows": n, "seconds": compute time, "total_seconds": including loading} on stdout.
  reward_oracle.py batch < cases.json > answers.json
      Answers a JSON list of cases (used by the Rust property tests), one answer per case:
        {"op": "blocks", "a": str, "b": str}       -> {"blocks": [[i, j, n], ...], "ratio": repr(float)}
        {"op": "unidiff", "text": str}             -> {"ok": bool, "files": [[path, change]], "str": str}
        {"op": "normalized", "old": str, "new": str} -> {"patch": str}
        {"op": "reward", "oracle": [str], "pred": [str]} -> {"reward": float, "files": {path: sim}}
"""

import argparse
import difflib
import json
import sys
import time

from unidiff import PatchSet


def file_changes(text):
    """path -> change text of one diff; {} when unidiff raises anything."""
    try:
        patch = PatchSet(text)
    except Exception:  # the reference swallows every exception here
        return None
    out = {}
    for pf in patch:
        if pf.is_binary_file:
            continue
        header, path = "", pf.path
        if pf.is_rename:
            src, tgt = pf.source_file, pf.target_file
            src = src[2:] if src.startswith("a/") else src
            tgt = tgt[2:] if tgt.startswith("b/") else tgt
            header, path = "rename from %s to %s" % (src, tgt), src
        body = "\n".join(str(h).strip() for h in pf)
        out[path] = (header + "\n" + body).strip()
    return out


def reward(oracle_texts, pred_texts):
    oracle, pred = {}, {}
    for t in oracle_texts:
        oracle.update(file_changes(t) or {})
    for t in pred_texts:
        pred.update(file_changes(t) or {})
    sims = {}
    for path in set(oracle) | set(pred):
        o, p = oracle.get(path, ""), pred.get(path, "")
        if o == "" or p == "":
            sims[path] = 0.0
        else:
            sims[path] = difflib.SequenceMatcher(None, p, o, autojunk=False).ratio()
    if not sims:
        return 1.0, sims
    return sum(sims.values()) / len(sims), sims


def normalized(old, new):
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), "old", "new", lineterm="", n=3))
    return "\n".join(lines[2:])


def answer(case):
    op = case["op"]
    if op == "blocks":
        sm = difflib.SequenceMatcher(None, case["a"], case["b"], autojunk=False)
        # repr, so the reader can parse the exact double (JSON number parsers may round).
        return {"blocks": [list(m) for m in sm.get_matching_blocks()], "ratio": repr(sm.ratio())}
    if op == "unidiff":
        changes = file_changes(case["text"])
        if changes is None:
            return {"ok": False, "files": [], "str": ""}
        return {"ok": True, "files": [[k, v] for k, v in changes.items()], "str": str(PatchSet(case["text"]))}
    if op == "normalized":
        return {"patch": normalized(case["old"], case["new"])}
    if op == "reward":
        r, sims = reward(case["oracle"], case["pred"])
        return {"reward": r, "files": sims}
    raise SystemExit("unknown op %r" % op)


def read_jsonl(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("unidiff")
    u.add_argument("--dataset", required=True)
    u.add_argument("--predictions", required=True)
    u.add_argument("--output")
    sub.add_parser("batch")
    args = ap.parse_args()
    if args.cmd == "batch":
        cases = json.load(sys.stdin)
        json.dump([answer(c) for c in cases], sys.stdout)
        return
    t0 = time.perf_counter()
    gold = {row["instance_id"]: row["patch"] or "" for row in read_jsonl(args.dataset)}
    preds = read_jsonl(args.predictions)
    t1 = time.perf_counter()
    rows = []
    for p in preds:
        if p["instance_id"] not in gold:
            continue
        r, sims = reward([gold[p["instance_id"]]], [p.get("model_patch") or ""])
        rows.append({"instance_id": p["instance_id"], "similarity": r, "files": sims})
    t2 = time.perf_counter()
    if args.output:
        with open(args.output, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    t3 = time.perf_counter()
    json.dump({"rows": len(rows), "seconds": t2 - t1, "total_seconds": t3 - t0}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
