#!/usr/bin/env python3
"""The reward side of a GRPO-shaped training loop against `swe-eval serve`.

Each step takes every prompt (an instance of PREDICTIONS, a JSONL file of SWE-bench
predictions) with its group of answers (the predictions of that instance: their
`model_name_or_path` and `sample` kept), asks the server for their rewards through the
verl-style reward functions, and computes GRPO's group-relative advantages from the scores:
(score - the group's mean) / (the group's standard deviation + 1e-6), over the samples that are
not masked (a masked sample, decided by the infrastructure, is dropped: no advantage). The
answers are the same at every step (a replay), so from the second step on the server answers
from its cache.

    --reward-fn batch   `compute_scores` once per step (verl's batch reward manager)
    --reward-fn each    `compute_score` per sample from a pool of --threads threads (verl's
                        naive reward manager, run in parallel)

The server may be killed and started again on the same address while a step waits: the client
retries connection errors for --retry-deadline seconds, the server keeps every accepted request,
and the step ends with every sample answered once.

Writes one JSON line per sample and step (--out, else standard output): `step`, `instance_id`,
`model_name_or_path`, `sample`, `advantage` (None when masked), and compute_score's result
(`score`, `mask`, `status`, `strict_status`, `graded_by`, `objections`, `reason`, `cached`, `id`,
...). A line per step on standard error gives the mean score, the masked samples and the time.
Exit code 0 when every step ended, 1 when the client gave up (the error on standard error).

    PYTHONPATH=clients/python python3 clients/python/examples/grpo_loop.py \\
        OUT/serve/mini/predictions.jsonl --steps 3 --url http://127.0.0.1:8321
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import swe_eval_client as sec  # noqa: E402

Sample = Dict[str, Any]


def read_predictions(path: str) -> List[Sample]:
    """The predictions of a JSONL file, in order; a line that is not a JSON object with an
    `instance_id` is an error naming the file and line."""
    out: List[Sample] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                p = json.loads(line)
            except ValueError as e:
                raise SystemExit("%s:%d: not JSON: %s" % (path, n, e))
            if not isinstance(p, dict) or not isinstance(p.get("instance_id"), str):
                raise SystemExit("%s:%d: no `instance_id` (a string)" % (path, n))
            out.append(p)
    return out


def answer_of(p: Sample) -> str:
    """A model's answer carrying the prediction's patch after some prose, as a policy writes it
    (`patch_of` takes the patch back from its `diff --git` line); no patch is an empty answer."""
    patch = p.get("model_patch") or ""
    return "The fix:\n\n" + patch if patch else ""


def extra_info_of(p: Sample) -> Dict[str, Any]:
    info: Dict[str, Any] = {"instance_id": p["instance_id"]}
    if p.get("model_name_or_path") is not None:
        info["model_name_or_path"] = p["model_name_or_path"]
    if p.get("sample") is not None:
        info["sample"] = p["sample"]
    return info


def advantages(results: Sequence[Dict[str, Any]], groups: Sequence[str]) -> List[Optional[float]]:
    """GRPO's advantages: each unmasked sample's score against its group's (same prompt) mean
    and standard deviation; None for a masked sample."""
    by_group: Dict[str, List[float]] = {}
    for r, g in zip(results, groups):
        if not r["mask"]:
            by_group.setdefault(g, []).append(float(r["score"]))
    out: List[Optional[float]] = []
    for r, g in zip(results, groups):
        if r["mask"]:
            out.append(None)
            continue
        scores = by_group[g]
        mean = sum(scores) / len(scores)
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
        out.append((float(r["score"]) - mean) / (std + 1e-6))
    return out


def rewards(preds: Sequence[Sample], args: argparse.Namespace, client: sec.Client) -> List[Dict[str, Any]]:
    """One step's rewards, in the order of `preds`."""
    kw: Dict[str, Any] = {"client": client, "timeout": args.timeout}
    if args.reward_fn == "batch":
        return sec.compute_scores(
            ["swe-eval"] * len(preds),
            [answer_of(p) for p in preds],
            [p["instance_id"] for p in preds],
            [extra_info_of(p) for p in preds],
            **kw,
        )
    with ThreadPoolExecutor(max_workers=args.threads) as pool:
        futures = [
            pool.submit(sec.compute_score, "swe-eval", answer_of(p), p["instance_id"], extra_info_of(p), **kw)
            for p in preds
        ]
        return [f.result() for f in futures]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("predictions", help="a JSONL file of predictions (one group per instance)")
    ap.add_argument("--steps", type=int, default=3, help="training steps [default: 3]")
    ap.add_argument("--reward-fn", choices=["batch", "each"], default="batch")
    ap.add_argument("--threads", type=int, default=16, help="threads of --reward-fn each [default: 16]")
    ap.add_argument("--url", help="the server [default: $SWE_EVAL_URL, else http://127.0.0.1:8321]")
    ap.add_argument("--token", help="its bearer token [default: $SWE_EVAL_TOKEN]")
    ap.add_argument("--timeout", type=float, help="seconds a step waits for its verdicts [default: no limit]")
    ap.add_argument("--retry-deadline", type=float, default=600.0, help="seconds a failing request is retried [default: 600]")
    ap.add_argument("--out", help="the results, a JSON line per sample and step [default: standard output]")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.threads < 1:
        ap.error("--steps and --threads are 1 or more")
    preds = read_predictions(args.predictions)
    if not preds:
        ap.error("%s has no predictions" % args.predictions)
    groups = [p["instance_id"] for p in preds]
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    client = sec.Client(args.url, args.token, retry_deadline=args.retry_deadline)
    try:
        for step in range(args.steps):
            t0 = time.monotonic()
            try:
                results = rewards(preds, args, client)
            except sec.ClientError as e:
                print("step %d: %s" % (step, e), file=sys.stderr)
                return 1
            adv = advantages(results, groups)
            for p, r, a in zip(preds, results, adv):
                row = {
                    "step": step,
                    "instance_id": p["instance_id"],
                    "model_name_or_path": p.get("model_name_or_path"),
                    "sample": p.get("sample"),
                    "advantage": a,
                }
                row.update(r)
                out.write(json.dumps(row) + "\n")
            out.flush()
            kept = [r["score"] for r in results if not r["mask"]]
            mean = sum(kept) / len(kept) if kept else float("nan")
            print(
                "step %d: %d samples, mean score %.3f, %d masked, %d from the cache, %.1f s"
                % (step, len(results), mean, len(results) - len(kept), sum(1 for r in results if r["cached"]), time.monotonic() - t0),
                file=sys.stderr,
                flush=True,
            )
    finally:
        client.close()
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
