#!/usr/bin/env python3
"""Generates tests/fixtures/compare/*.json: inputs and the values SciPy and statsmodels give for
every statistic `swe-eval compare` reports, and an independent computation of the comparisons
the issue asks for on the shared Sonnet 4.5 runs. Run once; the output is committed, so the
Rust tests need no Python. Deterministic (fixed seeds).

The bootstrap is checked two ways: exactly, against a same-seed reimplementation here of the
generator the Rust code uses (SplitMix64 streams, Lemire's multiply-shift, NumPy's linear
percentile), and within sampling error against a plain NumPy bootstrap.

Usage: python3 scripts/compare_fixtures.py [OUT_DIR] [SHARED_DATASETS_DIR]
"""
import itertools
import json
import math
import os
import sys
from fractions import Fraction
from math import comb

import numpy as np
import scipy
import statsmodels
from scipy import special, stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "fixtures", "compare")
SHARED = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.environ.get("SWE_EVAL_SHARED", os.path.join(HERE, "..", "..", "shared")), "datasets")
M64 = (1 << 64) - 1


# ---- the generator, as src/study/stats.rs and src/compare/stats.rs define it ----

class SplitMix:
    def __init__(self, state):
        self.state = state & M64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next() * n) >> 64


def stream_seed(seed, stream):
    return SplitMix(seed ^ ((stream * 0xD1B54A32D192ED03) & M64)).next()


def group_seed(seed, label):
    h = 0xCBF29CE484222325
    for b in label.encode():
        h ^= b
        h = (h * 0x100000001B3) & M64
    return stream_seed(seed, h)


def same_seed_bootstrap(v, resamples, seed):
    """The Rust bootstrap_mean_ci, step for step (sequential float sums in draw order)."""
    n = len(v)
    if n < 2 or resamples == 0:
        return None
    means = []
    for b in range(resamples):
        rng = SplitMix(stream_seed(seed, b))
        s = 0.0
        for _ in range(n):
            s += v[rng.below(n)]
        means.append(s / n)
    means.sort()
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def numpy_bootstrap(v, resamples=20000, seed=11):
    rng = np.random.default_rng(seed)
    v = np.asarray(v, dtype=float)
    idx = rng.integers(0, len(v), (resamples, len(v)))
    means = v[idx].mean(axis=1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


# ---- the statistics, by the libraries ----

def wilson(k, n):
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    assert abs(ci.low - lo) < 1e-12 and abs(ci.high - hi) < 1e-12, (k, n)
    return [float(lo), float(hi)]


def mcnemar_p(b, c):
    if b + c == 0:
        return 1.0
    p = mcnemar([[0, b], [c, 0]], exact=True).pvalue
    q = stats.binomtest(min(b, c), b + c, 0.5).pvalue
    assert abs(p - q) < 1e-12, (b, c, p, q)
    return float(p)


def pass_at_k(n, c, k):
    exact = 1 - Fraction(comb(n - c, k), comb(n, k))
    approx = 1 - special.comb(n - c, k) / special.comb(n, k)
    assert abs(float(exact) - approx) < 1e-9
    return float(exact)


def mean(v):
    return sum(v) / len(v)


# ---- a comparison, computed independently of the Rust code ----

def diff(rows, single, resamples, seed):
    """rows: (rate_a, rate_b) per instance."""
    a = [r[0] for r in rows]
    b = [r[1] for r in rows]
    d = [y - x for x, y in rows]
    up = sum(1 for x, y in rows if y > x)
    down = sum(1 for x, y in rows if y < x)
    return {
        "n": len(rows), "rate_a": mean(a), "rate_b": mean(b), "difference": mean(b) - mean(a),
        "ci95": same_seed_bootstrap(d, resamples, seed),
        "mcnemar_p": mcnemar_p(down, up) if single else None,
        "n_to_resolved": up, "n_to_unresolved": down,
    }


def similarity_change(sa, sb, ids, rows, resamples, seed):
    """sa, sb: (instance, sample) -> similarity; per instance the mean over its samples."""
    def inst(sims, i):
        v = [x for (j, _), x in sims.items() if j == i]
        return mean(v) if v else None
    xa, xb, d, up, down = [], [], [], [], []
    for i in ids:
        a, b = inst(sa, i), inst(sb, i)
        if a is None or b is None:
            continue
        xa.append(a)
        xb.append(b)
        d.append(b - a)
        if rows[i][1] > rows[i][0]:
            up.append(b - a)
        elif rows[i][1] < rows[i][0]:
            down.append(b - a)
    return {"n": len(d), "mean_a": mean(xa), "mean_b": mean(xb), "mean_difference": mean(d),
            "ci95": same_seed_bootstrap(d, resamples, group_seed(seed, "similarity")),
            "mean_difference_to_resolved": mean(up) if up else None,
            "mean_difference_to_unresolved": mean(down) if down else None,
            "n_changed": sum(1 for x in d if abs(x) > 1e-12)}


def compare(runs, labels, repeats, pairs, resamples, seed, sims=None):
    """runs: name -> {instance: [bool per sample]}; labels: instance -> (repo, difficulty);
    sims: run -> {(instance, sample): similarity} for the runs with rewards."""
    sims = sims or {}
    out = {"runs": {}, "repeats": {}, "pairs": []}
    for name, r in runs.items():
        rates = [sum(r[i]) / len(r[i]) for i in sorted(r)]
        n_pred = sum(len(v) for v in r.values())
        n_res = sum(sum(v) for v in r.values())
        single = all(len(v) == 1 for v in r.values())
        maxs = max(len(v) for v in r.values())
        pk = []
        for k in range(1, maxs + 1):
            vals = [pass_at_k(len(v), sum(v), k) for v in r.values() if len(v) >= k]
            pk.append({"k": k, "instances": len(vals), "value": mean(vals)})
        out["runs"][name] = {
            "n_instances": len(r), "n_predictions": n_pred, "n_resolved": n_res,
            "resolve_rate": mean(rates),
            "ci95": wilson(n_res, n_pred) if single else same_seed_bootstrap(rates, resamples, seed),
            "pass_at_k": pk,
        }
    unstable = set()
    for g, members in repeats.items():
        rates = [out["runs"][m]["resolve_rate"] for m in members]
        common = [i for i in runs[members[0]] if all(i in runs[m] for m in members)]
        always = never = 0
        uns = []
        counts = []
        for i in sorted(common):
            allv = [x for m in members for x in runs[m][i]]
            counts.append((len(allv), sum(allv)))
            if all(allv):
                always += 1
            elif not any(allv):
                never += 1
            else:
                uns.append(i)
        unstable |= set(uns)
        pk = []
        for k in range(1, max(c[0] for c in counts) + 1):
            vals = [pass_at_k(n, c, k) for n, c in counts if n >= k]
            pk.append({"k": k, "instances": len(vals), "value": mean(vals)})
        out["repeats"][g] = {
            "rates": rates, "mean": float(np.mean(rates)), "sd": float(np.std(rates, ddof=1)),
            "sd_population": float(np.std(rates, ddof=0)), "range": max(rates) - min(rates),
            "n_instances": len(common), "n_always": always, "n_never": never,
            "unstable": uns, "pass_at_k": pk,
        }
    out["unstable"] = sorted(unstable)
    for a, b in pairs:
        ra, rb = runs[a], runs[b]
        single = all(len(v) == 1 for v in list(ra.values()) + list(rb.values()))
        ids = sorted(i for i in ra if i in rb)
        rows = {i: (sum(ra[i]) / len(ra[i]), sum(rb[i]) / len(rb[i])) for i in ids}
        p = diff([rows[i] for i in ids], single, resamples, seed)
        p["a"], p["b"] = a, b
        p["to_resolved"] = [i for i in ids if rows[i][1] > rows[i][0]]
        p["to_unresolved"] = [i for i in ids if rows[i][1] < rows[i][0]]
        n = len(ids)
        p["difference_unstable"] = sum(rows[i][1] - rows[i][0] for i in ids if i in unstable) / n
        p["difference_stable"] = sum(rows[i][1] - rows[i][0] for i in ids if i not in unstable) / n
        for kind, col in (("repo", 0), ("difficulty", 1)):
            groups = {}
            for i in ids:
                groups.setdefault(labels[i][col], []).append(rows[i])
            p["per_" + kind] = {
                name: diff(rs, single, resamples, group_seed(seed, f"{kind}:{name}"))
                for name, rs in sorted(groups.items())
            }
        if a in sims and b in sims:
            p["similarity"] = similarity_change(sims[a], sims[b], ids, rows, resamples, seed)
        out["pairs"].append(p)
    return out


def repo_of(instance_id):
    head, _, tail = instance_id.rpartition("-")
    base = head if tail.isdigit() and head else instance_id
    return base.replace("__", "/", 1)


def synthetic():
    """Five runs over 60 instances in four repositories: A and B differ, A2 and A3 repeat A
    (some instances flip), M has three samples per instance (one missing instance)."""
    rng = np.random.default_rng(5)
    repos = ["alpha/one", "beta/two", "gamma/three", "delta/four"]
    diffs = ["<15 min fix", "15 min - 1 hour", "1-4 hours"]
    ids, labels = [], {}
    for k in range(60):
        repo = repos[k % 4] if k < 56 else repos[0]
        iid = f"{repo.replace('/', '__')}-{100 + k}"
        ids.append(iid)
        labels[iid] = (repo, diffs[(k * 7) % 3])
    skill = {i: rng.random() for i in ids}

    def draw(bias, samples=1, drop=()):
        return {i: [bool(rng.random() < min(1.0, skill[i] + bias)) for _ in range(samples)]
                for i in ids if i not in drop}

    runs = {"A": draw(0.0), "B": draw(0.12), "A2": draw(0.0), "A3": draw(0.0),
            "M": draw(0.05, samples=3, drop=(ids[3],))}
    repeats = {"A": ["A", "A2", "A3"]}
    pairs = [("A", "B"), ("A", "M")]
    resamples, seed = 1000, 7
    # Similarity for A and B (B's patches closer where it resolves), some rows missing, some
    # unchanged between the two runs.
    sims = {}
    for name in ("A", "B"):
        sims[name] = {}
        for i, vs in runs[name].items():
            for s, v in enumerate(vs):
                if rng.random() < 0.1:
                    continue
                sims[name][(i, s)] = round(float(0.2 + 0.5 * v + 0.3 * rng.random()), 2)
    for i in ids[:8]:
        sims["B"][(i, 0)] = sims["A"].get((i, 0), 0.5)
    expected = compare(runs, labels, repeats, pairs, resamples, seed, sims)
    rewards = {name: [{"instance_id": i, "sample": s, "similarity": x, "reward": x}
                      for (i, s), x in m.items()] for name, m in sims.items()}
    rows = {name: [{"instance_id": i, "sample": s, "resolved": v}
                   for i, vs in r.items() for s, v in enumerate(vs)]
            for name, r in runs.items()}
    dataset = [{"instance_id": i, "repo": labels[i][0], "difficulty": labels[i][1]} for i in ids]
    return {"name": "synthetic", "note": "five runs over 60 instances (numpy seed 5)",
            "runs": rows, "rewards": rewards, "dataset": dataset, "repeats": repeats, "pairs": pairs,
            "bootstrap": resamples, "seed": seed, "expected": expected}


def sonnet():
    path = os.path.join(SHARED, "predictions", "mini-swe-agent_claude-sonnet-4.5",
                        "per_run_results.json")
    with open(path) as fh:
        per_run = json.load(fh)
    ids = sorted(set().union(*[set(v) for v in per_run.values()]))
    # A task missing from a run had no valid patch: unresolved (the source's convention).
    runs = {name: {i: [bool(r.get(i, 0))] for i in ids} for name, r in per_run.items()}
    with open(os.path.join(SHARED, "partial-verified", "swebench_verified_partial.jsonl")) as fh:
        ds = {r["instance_id"]: r for r in map(json.loads, fh)}
    labels = {i: (ds[i]["repo"], ds[i].get("difficulty") or "unknown") for i in ids}
    i0 = [f"i0_run{k}" for k in range(1, 6)]
    pairs = [("i0_run1", "i1c")] + list(itertools.combinations(i0, 2))
    resamples, seed = 2000, 0
    expected = compare(runs, labels, {"i0": i0}, pairs, resamples, seed)
    return {"name": "sonnet", "note": "mini-swe-agent + Claude Sonnet 4.5, 7 runs over 100 "
            "Verified tasks (per_run_results.json); repo and difficulty from the partial "
            "Verified dataset", "bootstrap": resamples, "seed": seed, "pairs": pairs,
            "expected": expected}


def unit_cases():
    w = [(0, 10), (1, 10), (5, 10), (10, 10), (79, 100), (74, 100), (0, 1), (1, 1),
         (229, 486), (3, 7), (4999, 5000), (1, 2000)]
    m = [(5, 3), (3, 5), (4, 4), (0, 0), (0, 1), (0, 7), (10, 31), (31, 10), (1, 20),
         (100, 140), (600, 700), (2, 1000), (0, 1000)]
    pk = [(n, c, k) for n in range(1, 9) for c in range(0, n + 1) for k in range(1, n + 1)]
    pk += [(100, 37, 10), (200, 3, 50), (200, 199, 1), (1000, 10, 100)]
    sds = [[0.79, 0.75, 0.77, 0.76, 0.72], [0.5, 0.5], [0.1, 0.2, 0.4, 0.8, 1.6, 3.2]]
    rng = np.random.default_rng(9)
    boots = []
    for name, v, seed in [
        ("ternary", [float(x) for x in rng.choice([-1, 0, 0, 0, 0, 1, 1], 100)], 0),
        ("rates", [float(x) for x in np.round(rng.random(57) - rng.random(57), 3)], 42),
        ("small", [1.0, 0.0], 3),
    ]:
        boots.append({"name": name, "values": v, "seed": seed, "resamples": 3000,
                      "same_seed": same_seed_bootstrap(v, 3000, seed),
                      "numpy": numpy_bootstrap(v), "mean": mean(v)})
    return {
        "wilson": [{"k": k, "n": n, "ci": wilson(k, n)} for k, n in w],
        "mcnemar": [{"b": b, "c": c, "p": mcnemar_p(b, c)} for b, c in m],
        "pass_at_k": [{"n": n, "c": c, "k": k, "value": pass_at_k(n, c, k)} for n, c, k in pk],
        "sd": [{"values": v, "ddof1": float(np.std(v, ddof=1)), "ddof0": float(np.std(v))}
               for v in sds],
        "bootstrap": boots,
        "group_seed": [{"seed": s, "label": l, "value": group_seed(s, l)}
                       for s, l in [(0, "repo:django/django"), (7, "difficulty:<15 min fix")]],
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "stats.json"), "w") as fh:
        json.dump(unit_cases(), fh, indent=1)
    with open(os.path.join(OUT, "synthetic.json"), "w") as fh:
        json.dump(synthetic(), fh, indent=1)
    if os.path.isdir(SHARED):
        with open(os.path.join(OUT, "sonnet.json"), "w") as fh:
            json.dump(sonnet(), fh, indent=1)
    else:
        print(f"shared data not found at {SHARED}: sonnet.json not regenerated", file=sys.stderr)
    with open(os.path.join(OUT, "VERSIONS.txt"), "w") as fh:
        fh.write(f"numpy {np.__version__}\nscipy {scipy.__version__}\n"
                 f"statsmodels {statsmodels.__version__}\n")


if __name__ == "__main__":
    main()
