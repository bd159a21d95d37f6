"""Shared steps of the mini benchmark's generator and test oracle (no Docker).

These follow the official SWE-bench harness 4.1.0: apply the model patch with `git apply -v`,
`git apply -v --reject`, then `patch --batch --fuzz=5 -p1`, each on the tree the one before
left (no reset between them; the first that exits 0 wins); reset the test files the test patch touches to the base commit;
apply the test patch; run `pytest -rA <those files>`; parse with swebench's pytest parser and
grade with its grading functions.

Strict mode (swe-eval's `--strict`, after SWE-bench 5's hardening) differs in three ways:
files the model patch touched that change pytest's collection (conftest.py, sitecustomize.py,
usercustomize.py, pytest.ini, *.pth; tox.ini, setup.cfg and pyproject.toml only when they
touch pytest settings) are restored to the base commit, or deleted, before the tests run;
a SKIPPED FAIL_TO_PASS test fails; and a non-zero exit code of the test command with no
failed test in the parsed log (forged PASSED lines) makes the run unresolved.
"""

import os
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from swebench.harness.constants import (
    FAIL_TO_PASS,
    PASS_TO_PASS,
    EvalType,
    ResolvedStatus,
)
from swebench.harness.grading import get_eval_tests_report, get_resolution_status
from swebench.harness.log_parsers.python import parse_log_pytest

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "datasets" / "mini"
OWNER = "swe-eval-mini"

GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "swe-eval mini",
    "GIT_AUTHOR_EMAIL": "mini@swe-eval.invalid",
    "GIT_COMMITTER_NAME": "swe-eval mini",
    "GIT_COMMITTER_EMAIL": "mini@swe-eval.invalid",
}


def run(cmd, cwd, input=None, check=True, timeout=None, env=None):
    return subprocess.run(
        cmd,
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
        env=env or GIT_ENV,
    )


def bundle(name):
    return MINI / "repos" / f"{name}.bundle"


def clone(name, commit, dest):
    """Clone the repository `name` from its bundle into `dest`, checked out at `commit`."""
    run(["git", "clone", "-q", str(bundle(name)), str(dest)], cwd=ROOT)
    run(["git", "checkout", "-q", commit], cwd=dest)


def rev(repo_dir, rev_spec):
    return run(["git", "rev-parse", rev_spec], cwd=repo_dir).stdout.strip()


def changed_files(patch):
    """Paths a diff touches, as the official harness reads them (`diff --git a/X b/Y`: Y)."""
    return re.findall(r"^diff --git a/.* b/(.*)$", patch, flags=re.M)


def is_test_path(path):
    parts = path.split("/")
    base = parts[-1]
    return (
        base == "conftest.py"
        or any(p in ("tests", "test", "testing") for p in parts[:-1])
        or (base.startswith("test_") and base.endswith(".py"))
        or base.endswith("_test.py")
    )


COLLECTION_NAMES = {"conftest.py", "sitecustomize.py", "usercustomize.py", "pytest.ini", ".pytest.ini"}
PYTEST_KEYS = ("pytest", "addopts", "testpaths", "python_files", "python_classes",
               "python_functions", "norecursedirs", "confcutdir")


def collection_paths(patch):
    """Files of the patch that change how pytest collects and reports tests."""
    out = []
    for chunk in re.split(r"^(?=diff --git )", patch, flags=re.M):
        m = re.match(r"diff --git a/.* b/(.*)$", chunk, flags=re.M)
        if not m:
            continue
        path = m.group(1)
        name = path.rsplit("/", 1)[-1]
        changed = [l for l in chunk.splitlines() if l[:1] in "+-" and l[:3] not in ("+++", "---")]
        config_hit = name in ("tox.ini", "setup.cfg", "pyproject.toml") and (
            "new file mode" in chunk or any(k in l for l in changed for k in PYTEST_KEYS)
        )
        if name in COLLECTION_NAMES or name.endswith(".pth") or config_hit:
            out.append(path)
    return out


def reset_tree(repo_dir):
    run(["git", "checkout", "--", "."], cwd=repo_dir)
    run(["git", "clean", "-fdq"], cwd=repo_dir)


def apply_model_patch(repo_dir, patch):
    """Returns the command that applied the patch, or None when all three failed."""
    path = Path(repo_dir).parent / "model.diff"
    path.write_text(patch)
    attempts = [
        ["git", "apply", "--verbose", str(path)],
        ["git", "apply", "--verbose", "--reject", str(path)],
        ["patch", "--batch", "--fuzz=5", "-p1", "-i", str(path)],
    ]
    for cmd in attempts:
        if run(cmd, cwd=repo_dir, check=False).returncode == 0:
            return " ".join(cmd[:-1])
    return None


def restore_test_files(repo_dir, base_commit, paths):
    """Puts `paths` back as they are at `base_commit`; deletes those that did not exist there."""
    for p in paths:
        exists = run(["git", "cat-file", "-e", f"{base_commit}:{p}"], cwd=repo_dir, check=False)
        if exists.returncode == 0:
            run(["git", "checkout", base_commit, "--", p], cwd=repo_dir)
        else:
            Path(repo_dir, p).unlink(missing_ok=True)


def run_tests(repo_dir, test_files, timeout, no_network, docker_image=None):
    """Runs `pytest -rA` on the test files; returns (output, exit code or None on timeout).

    With `docker_image`, the tests run in a throw-away container of that image (network off,
    the checkout mounted at /testbed), as the harness runs them."""
    container = None
    if docker_image:
        container = f"mini-verify-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        cmd = [
            "docker", "run", "--rm", "--name", container, "--network", "none",
            "--label", "swe-eval.mini-verify=1", "-e", "PYTHONDONTWRITEBYTECODE=1",
            "-v", f"{Path(repo_dir).resolve()}:/testbed", "-w", "/testbed",
            docker_image, "pytest", "-rA", *test_files,
        ]
    else:
        # `pytest` as the spec's test command has it (`python3 -m pytest` would put the
        # working folder on sys.path and could hide an import problem of the repository).
        runner = ["pytest"] if shutil.which("pytest") else ["python3", "-m", "pytest"]
        cmd = [*runner, "-rA", *test_files]
        if no_network:
            cmd = ["unshare", "-n", *cmd]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    proc = subprocess.Popen(
        cmd,
        cwd=repo_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out, proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        if container:
            subprocess.run(["docker", "rm", "-f", container], capture_output=True)
        out, _ = proc.communicate()
        return out + f"\nTimeout error: {timeout} seconds exceeded.", None


def grade(status_map, f2p, p2p):
    """Official grading of one run: (report dict, resolution status string)."""
    report = get_eval_tests_report(
        status_map, {FAIL_TO_PASS: f2p, PASS_TO_PASS: p2p}, eval_type=EvalType.PASS_AND_FAIL
    )
    return report, get_resolution_status(report)


def evaluate(instance, patch, timeout=15.0, strict=False, no_network=False, docker_image=None):
    """Runs one prediction the official way (or strictly) and returns a verdict dict:
    category (resolved, unresolved, error, empty_patch), error_kind, status, details."""
    if not patch or not patch.strip():
        return {"category": "empty_patch", "error_kind": None, "status": None}
    name = instance["repo"].split("/", 1)[1]
    base = instance["base_commit"]
    with tempfile.TemporaryDirectory(prefix="mini-") as tmp:
        repo_dir = Path(tmp) / "testbed"
        clone(name, base, repo_dir)
        applied_with = apply_model_patch(repo_dir, patch)
        if applied_with is None:
            return {"category": "error", "error_kind": "patch_apply_failed", "status": None}
        if strict:
            restore_test_files(repo_dir, base, collection_paths(patch))
        test_files = changed_files(instance["test_patch"])
        restore_test_files(repo_dir, base, test_files)
        run(["git", "apply", "-"], cwd=repo_dir, input=instance["test_patch"])
        test_files = [p for p in test_files if p.endswith(".py")]
        out, code = run_tests(repo_dir, test_files, timeout, no_network, docker_image)
        if code is None:
            return {"category": "error", "error_kind": "timeout", "status": None}
        status_map = parse_log_pytest(out, None)
        report, status = grade(status_map, instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"])
        resolved = status == ResolvedStatus.FULL.value
        if strict:
            failed = any(v in ("FAILED", "ERROR") for v in status_map.values())
            skipped_f2p = any(status_map.get(t) == "SKIPPED" for t in instance["FAIL_TO_PASS"])
            if (code != 0 and not failed) or skipped_f2p:
                resolved = False
        return {
            "category": "resolved" if resolved else "unresolved",
            "error_kind": None,
            "status": status,
            "exit_code": code,
            "applied_with": applied_with,
            "report": report,
            "log": out,
        }
