#!/usr/bin/env python3
"""Generates tests/fixtures/correlate/*.json: inputs and the values SciPy and scikit-learn give
for every statistic `swe-eval correlate` reports. Run once; the output is committed, so the
Rust tests need no Python. Deterministic (fixed seeds).

Usage: python3 scripts/stats_fixtures.py [OUT_DIR]
"""
import json
import math
import os
import sys

import numpy as np
import scipy
import sklearn
from scipy import stats
from sklearn.calibration import calibration_curve
from sklearn.metrics import precision_score, recall_score, roc_auc_score, roc_curve

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "tests", "fixtures", "correlate")
THRESHOLDS = [0.0, 0.25, 0.5, 0.8, 1.0]


def f(x):
    """A float for JSON: None for NaN."""
    x = float(x)
    return None if math.isnan(x) else x


def numpy_bootstrap_ci(y, x, b=4000, seed=7):
    rng = np.random.default_rng(seed)
    n = len(y)
    vals = []
    for _ in range(b):
        idx = rng.integers(0, n, n)
        yy = y[idx]
        if yy.min() == yy.max():
            continue
        vals.append(roc_auc_score(yy, x[idx]))
    return [f(np.percentile(vals, 2.5)), f(np.percentile(vals, 97.5))]


def case(name, x, y, note):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=bool)
    exp = {}
    exp["auroc"] = f(roc_auc_score(y, x))
    exp["point_biserial"] = f(stats.pointbiserialr(y, x).statistic)
    exp["spearman"] = f(stats.spearmanr(x, y).statistic)
    exp["kendall_tau_b"] = f(stats.kendalltau(x, y, variant="b").statistic)
    exp["mean_resolved"] = f(np.mean(x[y]))
    exp["mean_unresolved"] = f(np.mean(x[~y]))
    exp["median_resolved"] = f(np.median(x[y]))
    exp["median_unresolved"] = f(np.median(x[~y]))
    pr = []
    for t in THRESHOLDS:
        pred = x >= t
        pr.append({
            "threshold": t,
            "precision": f(precision_score(y, pred, zero_division=np.nan)),
            "recall": f(recall_score(y, pred, zero_division=np.nan)),
        })
    exp["precision_recall"] = pr
    # Calibration: scikit-learn's uniform bins over [0, 1]; scores outside (format errors, -1)
    # are kept apart by the Rust code, so the oracle sees only the in-range ones.
    inr = (x >= 0) & (x <= 1)
    prob_true, prob_pred = calibration_curve(y[inr], x[inr], n_bins=10, strategy="uniform")
    edges = np.linspace(0.0, 1.0, 11)
    binids = np.searchsorted(edges[1:-1], x[inr])
    counts = np.bincount(binids, minlength=10)
    exp["calibration"] = {
        "bins_nonempty": [int(i) for i in np.nonzero(counts)[0]],
        "n": [int(c) for c in counts if c],
        "resolve_rate": [f(v) for v in prob_true],
        "mean_score": [f(v) for v in prob_pred],
    }
    fpr, tpr, thr = roc_curve(y, x, drop_intermediate=False)
    exp["roc"] = {"fpr": [f(v) for v in fpr[1:]], "tpr": [f(v) for v in tpr[1:]],
                  "thresholds": [f(v) for v in thr[1:]]}
    exp["auroc_ci95_numpy_bootstrap"] = numpy_bootstrap_ci(y, x)
    return {"name": name, "note": note, "scores": [float(v) for v in x],
            "resolved": [bool(v) for v in y], "thresholds": THRESHOLDS, "expected": exp}


def best_of_n_case(seed=3):
    """Instances with 1..6 samples; scores rounded so that ties are common."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(60):
        k = int(rng.integers(1, 7))
        skill = rng.random()
        for s in range(k):
            res = bool(rng.random() < skill)
            score = round(float(np.clip(0.5 * res + 0.6 * rng.random() - 0.1, 0, 1)), 1)
            rows.append({"instance_id": f"inst-{i:03d}", "sample": s, "score": score, "resolved": res})
    by = {}
    for r in rows:
        by.setdefault(r["instance_id"], []).append(r)
    max_n = max(len(v) for v in by.values())
    out = []
    for n in range(1, max_n + 1):
        groups = [sorted(v, key=lambda r: r["sample"])[:n] for v in by.values() if len(v) >= n]
        pick_max = pick_tie_mean = rand = first = oracle = 0.0
        for g in groups:
            best = max(r["score"] for r in g)
            top = [r for r in g if r["score"] == best]
            pick_max += top[0]["resolved"]  # ties: the lowest sample number
            pick_tie_mean += sum(r["resolved"] for r in top) / len(top)
            rand += sum(r["resolved"] for r in g) / len(g)
            first += g[0]["resolved"]
            oracle += any(r["resolved"] for r in g)
        m = len(groups)
        out.append({"n": n, "instances": m, "max_score": pick_max / m,
                    "max_score_ties_random": pick_tie_mean / m, "random": rand / m,
                    "first": first / m, "oracle": oracle / m})
    return {"name": "best_of_n", "note": "plain-Python reference (no library computes best of n)",
            "rows": rows, "expected": out}


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(42)
    cases = []
    cases.append(case(
        "small_ties",
        [0.0, 0.0, 0.1, 0.5, 0.5, 0.5, 0.9, 1.0, 0.3, 0.0, 0.8, 0.5],
        [0, 0, 0, 1, 0, 1, 1, 1, 0, 1, 0, 1],
        "twelve hand-picked points with ties across classes"))
    n = 400
    y = rng.random(n) < 0.45
    x = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.2 * y - 0.6)))
    cases.append(case("continuous", x, y, "400 logistic scores, no ties"))
    n = 700
    y = rng.random(n) < 0.4
    x = np.clip(np.round(0.35 * y + rng.random(n) * 0.8 - 0.15, 1), 0, 1)
    x[rng.random(n) < 0.05] = -1.0  # reward of a malformed patch
    cases.append(case("heavy_ties_format_errors", x, y,
                      "700 scores rounded to one decimal, many zeros, 5% at -1"))
    for c in cases:
        with open(os.path.join(OUT, f"{c['name']}.json"), "w") as fh:
            json.dump(c, fh, indent=1)
    with open(os.path.join(OUT, "best_of_n.json"), "w") as fh:
        json.dump(best_of_n_case(), fh, indent=1)
    with open(os.path.join(OUT, "VERSIONS.txt"), "w") as fh:
        fh.write(f"numpy {np.__version__}\nscipy {scipy.__version__}\nscikit-learn {sklearn.__version__}\n")


if __name__ == "__main__":
    main()
