"""Writes datasets/mini/dataset.jsonl, predictions.jsonl and expected.json from the sources.

Tasks (tasks.json) are commits of the bundled repositories, as SWE-bench's are merged pull
requests: the base is the fix commit's parent, the gold patch is the fix without its tests,
the test patch is the rest. FAIL_TO_PASS and PASS_TO_PASS are measured by running the tests
before and after the gold patch (the test patch applied both times). Predictions
(predictions.json) are gold patches, diffs computed from overlay folders against the base
commit, or raw diff files (for malformed and unappliable ones).

Run scripts/mini/build.sh first when a repository changed. Usage: python3 make_dataset.py
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import minilib  # noqa: E402
from swebench.harness.log_parsers.python import parse_log_pytest  # noqa: E402
from swebench.harness.grading import test_passed  # noqa: E402

HERE = Path(__file__).resolve().parent


def diff(repo_dir, a, b, paths_filter):
    files = minilib.run(["git", "diff", "--name-only", a, b], cwd=repo_dir).stdout.split()
    keep = [f for f in files if paths_filter(f)]
    if not keep:
        return ""
    return minilib.run(["git", "diff", a, b, "--", *keep], cwd=repo_dir).stdout


def statuses(repo_dir, base, test_patch, gold):
    minilib.reset_tree(repo_dir)
    minilib.run(["git", "checkout", "-q", base], cwd=repo_dir)
    if gold:
        minilib.run(["git", "apply", "-"], cwd=repo_dir, input=gold)
    minilib.run(["git", "apply", "-"], cwd=repo_dir, input=test_patch)
    files = [f for f in minilib.changed_files(test_patch) if f.endswith(".py")]
    out, code = minilib.run_tests(repo_dir, files, 60, False)
    return parse_log_pytest(out, None), code


def build_instance(task, tmp):
    name = task["repo"]
    repo_dir = Path(tmp) / name
    if not repo_dir.exists():
        minilib.run(["git", "clone", "-q", str(minilib.bundle(name)), str(repo_dir)], cwd=tmp)
    fix = minilib.rev(repo_dir, f"main~{count_commits(repo_dir) - task['fix_commit']}")
    base = minilib.rev(repo_dir, f"{fix}~1")
    first = minilib.run(["git", "rev-list", "--max-parents=0", "main"], cwd=repo_dir).stdout.strip()
    gold = diff(repo_dir, base, fix, lambda f: not minilib.is_test_path(f))
    test_patch = diff(repo_dir, base, fix, minilib.is_test_path)
    before, _ = statuses(repo_dir, base, test_patch, None)
    after, code = statuses(repo_dir, base, test_patch, gold)
    if code != 0:
        raise SystemExit(f"{name}-{task['number']}: tests fail with the gold patch")
    f2p = sorted(t for t in after if test_passed(t, after) and not test_passed(t, before))
    p2p = sorted(t for t in after if test_passed(t, after) and test_passed(t, before))
    date = minilib.run(["git", "show", "-s", "--format=%cI", fix], cwd=repo_dir).stdout.strip()
    minilib.reset_tree(repo_dir)
    return {
        "repo": f"{minilib.OWNER}/{name}",
        "instance_id": f"{minilib.OWNER}__{name}-{task['number']}",
        "base_commit": base,
        "patch": gold,
        "test_patch": test_patch,
        "problem_statement": task["problem_statement"],
        "hints_text": "",
        "created_at": date.replace("+00:00", "Z"),
        "version": "0.1",
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
        "environment_setup_commit": first,
        "difficulty": task["difficulty"],
    }


def count_commits(repo_dir):
    return int(minilib.run(["git", "rev-list", "--count", "main"], cwd=repo_dir).stdout)


def overlay_patch(instance, folder):
    """The diff that turns the base commit into base + the files under `folder`."""
    name = instance["repo"].split("/", 1)[1]
    with tempfile.TemporaryDirectory() as tmp:
        repo_dir = Path(tmp) / "r"
        minilib.clone(name, instance["base_commit"], repo_dir)
        for src in sorted(folder.rglob("*")):
            if src.is_file():
                dest = repo_dir / src.relative_to(folder)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(src.read_bytes())
        minilib.run(["git", "add", "-A"], cwd=repo_dir)
        return minilib.run(["git", "diff", "--cached"], cwd=repo_dir).stdout


def build_predictions(instances):
    by_id = {i["instance_id"]: i for i in instances}
    specs = json.loads((HERE / "predictions.json").read_text())
    preds, expected, samples = [], [], {}
    for spec in specs:
        inst = by_id[spec["instance_id"]]
        source = spec["source"]
        if source == "gold":
            patch = inst["patch"]
        elif source == "empty":
            patch = ""
        elif source.startswith("overlay:"):
            patch = overlay_patch(inst, HERE / "predictions" / source[len("overlay:"):])
        elif source.startswith("raw:"):
            patch = (HERE / "predictions" / source[len("raw:"):]).read_text()
        else:
            raise SystemExit(f"unknown source {source!r}")
        key = (spec["instance_id"], spec["model"])
        sample = samples.get(key, 0)
        samples[key] = sample + 1
        preds.append({
            "instance_id": spec["instance_id"],
            "model_name_or_path": spec["model"],
            "sample": sample,
            "case": spec["case"],
            "model_patch": patch,
        })
        row = {
            "instance_id": spec["instance_id"],
            "model_name_or_path": spec["model"],
            "sample": sample,
            "case": spec["case"],
            "category": spec["category"],
            "strict_category": spec["strict_category"],
            "error_kind": spec.get("error_kind"),
            "container_only": spec.get("container_only", False),
        }
        # Written only where true: the verdict must say its failing tests need the network.
        if spec.get("needs_network"):
            row["needs_network"] = True
        row["reason"] = spec["reason"]
        expected.append(row)
    return preds, expected


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def main():
    tasks = json.loads((HERE / "tasks.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        instances = [build_instance(t, tmp) for t in tasks]
    write_jsonl(minilib.MINI / "dataset.jsonl", instances)
    for inst in instances:
        print(inst["instance_id"], "F2P", inst["FAIL_TO_PASS"], "P2P", len(inst["PASS_TO_PASS"]))
    preds, expected = build_predictions(instances)
    write_jsonl(minilib.MINI / "predictions.jsonl", preds)
    (minilib.MINI / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    print(f"{len(instances)} instances, {len(preds)} predictions")


if __name__ == "__main__":
    main()
