#!/usr/bin/env python3
"""Writes tests/fixtures/grading/*.json: small synthetic test logs, one per Verified repository
plus grading edge cases, with what the official harness (swebench==4.1.0) makes of them.

Each fixture holds the log, the repository, FAIL_TO_PASS/PASS_TO_PASS and the model patch,
and the oracle's answers: the status map `get_logs_eval` returns (markers, failure markers,
whole-log fallback) and the `report.json` entry `get_eval_report` writes. The logs are written
here by hand in each framework's output format, exercising each parser's quirks; no log is
copied from a real run. Run once and commit the output:

    python3 scripts/grading_fixtures.py            # needs: pip install swebench==4.1.0
"""

import json
import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
from swebench.harness.grading import get_eval_report, get_logs_eval
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "grading"
START = "+ : '>>>>> Start Test Output'\n"
END = "+ : '>>>>> End Test Output'\n"
PRE = "+ source /opt/miniconda3/bin/activate\n+ git checkout abc123 tests/x.py\nUpdated 1 path from 4f1c2\n"
POST = "+ git checkout abc123 tests/x.py\n"
PATCH = "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a\n+b\n"
ESC = "\x1b"


def wrap(body: str) -> str:
    return PRE + START + body + END + POST


def c(code: str, text: str) -> str:
    return f"{ESC}[{code}m{text}{ESC}[0m"


PYTEST_SUMMARY = (
    "============================= test session starts ==============================\n"
    "collected 6 items\n\n"
    "tests/test_x.py ..F.sx                                                   [100%]\n\n"
    "=========================== short test summary info ============================\n"
)

REPOS = {
    "astropy/astropy": wrap(
        "astropy/io/tests/test_a.py::test_old_order PASSED\n"
        + PYTEST_SUMMARY
        + f"{c('32', 'PASSED')} astropy/io/tests/test_a.py::{c('1', 'test_one')}\n"
        + f"{c('32', 'PASSED')} astropy/io/tests/test_a.py::{c('1', 'test_param[1-2]')}\n"
        + f"{c('33', 'SKIPPED')} [1] astropy/io/tests/test_a.py:40: needs scipy\n"
        + f"{c('33', 'XFAIL')} astropy/io/tests/test_a.py::{c('1', 'test_xf')} - known bug\n"
        + f"{c('31', 'FAILED')} astropy/io/tests/test_a.py::{c('1', 'test_bad')} - AssertionError: 1 != 2\n"
        + f"{c('31', 'ERROR')} astropy/io/tests/test_a.py::{c('1', 'test_err')} - ValueError\n"
        + f"{c('32', '==== ')}{c('31', '1 failed')}, {c('32', '2 passed')}{c('32', ' in 0.50s')} ====\n"
    ),
    "django/django": wrap(
        "Testing against Django installed in '/testbed/django' with up to 1 processes\n"
        "Importing application migrations\n"
        "test_ok (migrations.test_a.Tests) ... ok\n"
        "test_skip (migrations.test_a.Tests) ... skipped 'no db'\n"
        "test_fail (migrations.test_a.Tests) ... FAIL\n"
        "test_error (migrations.test_a.Tests) ... ERROR\n"
        "test_docstring (migrations.test_a.Tests)\n"
        "A docstring that is part of the name. ... ok\n"
        "test_interrupted (migrations.test_a.Tests) ... Some output printed mid-test\n"
        "ok\n"
        "test_syscheck (migrations.test_a.Tests) ... System check identified no issues (0 silenced).\n"
        "ok\n"
        "test_expected (migrations.test_a.Tests) ... expected failure\n"
        "--version is equivalent to version\n"
        "\n"
        "======================================================================\n"
        "FAIL: test_fail (migrations.test_a.Tests)\n"
        "----------------------------------------------------------------------\n"
        "ERROR: test_header_only (migrations.test_a.Tests)\n"
        "----------------------------------------------------------------------\n"
        "Ran 9 tests in 0.123s\n\nFAILED (failures=1, errors=2, skipped=1)\n"
    ),
    "pallets/flask": wrap(
        PYTEST_SUMMARY
        + "PASSED tests/test_basic.py::test_one\n"
        + "PASSED tests/test_basic.py::test_param[a b]\n"
        + "SKIPPED [1] tests/test_basic.py:9: skip me\n"
        + "XFAIL tests/test_basic.py::test_xf - reason\n"
        + "FAILED tests/test_basic.py::test_bad - AssertionError: assert 1 == 2\n"
        + "ERROR tests/test_basic.py::test_err\n"
        + "========================= 1 failed, 2 passed in 0.10s =========================\n"
    ),
    "matplotlib/matplotlib": wrap(
        PYTEST_SUMMARY
        + "PASSED lib/matplotlib/tests/test_widgets.py::test_click[MouseButton.LEFT]\n"
        + "PASSED lib/matplotlib/tests/test_widgets.py::test_click[MouseButton.RIGHT]\n"
        + "FAILED lib/matplotlib/tests/test_axes.py::test_plot[png] - ImageComparisonFailure\n"
        + "SKIPPED [2] lib/matplotlib/testing/compare.py:285: no inkscape\n"
        + "========================= 1 failed, 2 passed in 3.10s =========================\n"
    ),
    "pylint-dev/pylint": wrap(
        PYTEST_SUMMARY
        + "PASSED tests/test_functional.py::test_functional[/tmp/pytest-of-root/abc/functional/a.py]\n"
        + "PASSED tests/test_self.py::test_glob[/tests/*]\n"
        + "PASSED tests/test_self.py::test_unc[//server/share]\n"
        + "FAILED tests/test_self.py::test_x[arg] - assert False\n"
        + "========================= 1 failed, 3 passed in 9.10s =========================\n"
    ),
    "pytest-dev/pytest": wrap(
        PYTEST_SUMMARY
        + "PASSED testing/test_capture.py::TestCapture::test_one\n"
        + "PASSED testing/test_capture.py::test_two[fd]\n"
        + "XFAIL testing/test_capture.py::test_xf\n"
        + "  reason: flaky\n"
        + "FAILED testing/test_capture.py::test_bad - assert 0\n"
        + "=============== 1 failed, 2 passed, 1 xfailed in 6.48 seconds ===============\n"
    ),
    "psf/requests": wrap(
        PYTEST_SUMMARY
        + "PASSED test_requests.py::RequestsTestCase::test_basic\n"
        + "PASSED test_requests.py::test_urls[http://example.com/path]\n"
        + "PASSED test_requests.py::test_file[/tmp/x/data.bin]\n"
        + "FAILED test_requests.py::RequestsTestCase::test_timeout - ConnectionError\n"
        + "========================= 1 failed, 3 passed in 1.00s =========================\n"
    ),
    "scikit-learn/scikit-learn": wrap(
        PYTEST_SUMMARY
        + f"{c('32', 'PASSED')} sklearn/tests/test_base.py::{c('1', 'test_clone')}\n"
        + f"{c('32', 'PASSED')} sklearn/tests/test_base.py::{c('1', 'test_repr[est0]')}\n"
        + f"{c('31', 'FAILED')} sklearn/tests/test_base.py::{c('1', 'test_bad')} - ValueError: x\n"
        + f"{c('33', '===== ')}{c('32', '2 passed')}, {c('33', '3 warnings')}{c('33', ' in 1.00s')} =====\n"
    ),
    "mwaskom/seaborn": wrap(
        "tests/test_core.py::TestX::test_one PASSED                        [ 33%]\n"
        "tests/test_core.py::TestX::test_two FAILED                        [ 66%]\n"
        "tests/test_core.py::TestX::test_three SKIPPED                     [100%]\n"
        + PYTEST_SUMMARY
        + "PASSED tests/test_core.py::TestX::test_four\n"
        + "FAILED tests/test_core.py::TestX::test_two - AssertionError\n"
        + "========================= 1 failed, 2 passed in 2.00s =========================\n"
    ),
    "sphinx-doc/sphinx": wrap(
        "py39: commands[0]> python -X dev -m pytest -rA --durations 25 tests/test_ext.py\n"
        + PYTEST_SUMMARY
        + f"{c('32', 'PASSED')} tests/test_ext.py::{c('1', 'test_one')}\n"
        + f"{c('31', 'FAILED')} tests/test_ext.py::{c('1', 'test_two')} - assert 'a' in ''\n"
        + f"{c('33', 'SKIPPED')} [1] tests/test_ext.py:12: docutils\n"
        + f"{c('33', '===== ')}{c('32', '1 passed')}, {c('31', '1 failed')}{c('33', ' in 1.55s')} =====\n"
        + "py39: exit 1 (2.37 seconds) /testbed> python -X dev -m pytest pid=89\n"
    ),
    "sympy/sympy": wrap(
        "============================= test process starts ==============================\n"
        "executable:         /opt/miniconda3/envs/testbed/bin/python  (3.9.19-final-0) [CPython]\n"
        "\n"
        "sympy/core/tests/test_basic.py[4] \n"
        "test_one ok\n"
        "test_two F\n"
        "test_three E\n"
        "test_four f\n"
        "test_five s\n"
        "                                                                            [FAIL]\n"
        "\n"
        "________________________________________________________________________________\n"
        "_____________ sympy/core/tests/test_basic.py:test_two _____________\n"
        "AssertionError\n"
        "\n"
        "======= tests finished: 1 passed, 1 failed, 1 skipped, 1 expected to fail, 1 exceptions, in 0.10 seconds ========\n"
        "DO *NOT* COMMIT!\n"
    ),
    "pydata/xarray": wrap(
        PYTEST_SUMMARY
        + "PASSED xarray/tests/test_dataset.py::TestDataset::test_repr\n"
        + "PASSED xarray/tests/test_dataset.py::test_isin[test_elements0]\n"
        + "XFAIL xarray/tests/test_dataset.py::test_dask - reason: no dask\n"
        + "FAILED xarray/tests/test_dataset.py::TestDataset::test_sel - KeyError: 'x'\n"
        + "========================= 1 failed, 2 passed in 4.00s =========================\n"
    ),
}

FLASK_F2P = ["tests/test_basic.py::test_one", "tests/test_basic.py::test_new"]
FLASK_P2P = ["tests/test_basic.py::test_old"]

# Grading cases: (name, repo, log, FAIL_TO_PASS, PASS_TO_PASS, patch).
CASES = [
    ("resolved", "pallets/flask", wrap(
        "PASSED tests/test_basic.py::test_one\nPASSED tests/test_basic.py::test_new\n"
        "PASSED tests/test_basic.py::test_old\n== 3 passed in 0.1s ==\n"), FLASK_F2P, FLASK_P2P, PATCH),
    ("f2p_failed", "pallets/flask", wrap(
        "PASSED tests/test_basic.py::test_one\nFAILED tests/test_basic.py::test_new - x\n"
        "PASSED tests/test_basic.py::test_old\n== 1 failed, 2 passed in 0.1s ==\n"), FLASK_F2P, FLASK_P2P, PATCH),
    ("p2p_error", "pallets/flask", wrap(
        "PASSED tests/test_basic.py::test_one\nPASSED tests/test_basic.py::test_new\n"
        "ERROR tests/test_basic.py::test_old\n== 2 passed, 1 error in 0.1s ==\n"), FLASK_F2P, FLASK_P2P, PATCH),
    ("f2p_missing", "pallets/flask", wrap(
        "PASSED tests/test_basic.py::test_one\nPASSED tests/test_basic.py::test_old\n== 2 passed in 0.1s ==\n"),
        FLASK_F2P, FLASK_P2P, PATCH),
    ("f2p_all_skipped", "pallets/flask", wrap(
        "SKIPPED tests/test_basic.py::test_one\nSKIPPED tests/test_basic.py::test_new\n"
        "PASSED tests/test_basic.py::test_old\n== 1 passed, 2 skipped in 0.1s ==\n"), FLASK_F2P, FLASK_P2P, PATCH),
    ("f2p_xfail_counts_as_pass", "pallets/flask", wrap(
        "XFAIL tests/test_basic.py::test_one\nPASSED tests/test_basic.py::test_new\n"
        "PASSED tests/test_basic.py::test_old\n== 2 passed, 1 xfailed in 0.1s ==\n"), FLASK_F2P, FLASK_P2P, PATCH),
    ("apply_failed_marker", "pallets/flask", ">>>>> Patch Apply Failed:\nerror: corrupt patch\n"
        + wrap("PASSED tests/test_basic.py::test_one\n"), FLASK_F2P, FLASK_P2P, PATCH),
    ("end_marker_missing", "pallets/flask", PRE + START + "PASSED tests/test_basic.py::test_one\n",
        FLASK_F2P, FLASK_P2P, PATCH),
    ("section_empty_whole_log_fallback", "pallets/flask",
        "PASSED tests/test_basic.py::test_one\nPASSED tests/test_basic.py::test_new\n"
        "PASSED tests/test_basic.py::test_old\n" + wrap("collected 0 items\n"), FLASK_F2P, FLASK_P2P, PATCH),
    ("carriage_returns_split_lines", "pallets/flask", wrap(
        "PASSED tests/test_basic.py::test_one\rPASSED tests/test_basic.py::test_new\r\n"
        "progress 50%\rFAILED tests/test_basic.py::test_old - x\n== 2 passed, 1 failed in 0.1s ==\n"),
        FLASK_F2P, FLASK_P2P, PATCH),
    ("empty_lists_resolve", "pallets/flask", wrap("== no tests ran in 0.01s ==\n"), [], [], PATCH),
    ("django_partial", "django/django", REPOS["django/django"],
        ["test_ok (migrations.test_a.Tests)", "test_fail (migrations.test_a.Tests)"],
        ["test_interrupted (migrations.test_a.Tests)"], PATCH),
    ("sympy_error_fails", "sympy/sympy", REPOS["sympy/sympy"], ["test_one"], ["test_three", "test_five"], PATCH),
]


def spec(repo: str, f2p, p2p, iid: str):
    version = list(MAP_REPO_VERSION_TO_SPECS[repo])[-1]
    return SimpleNamespace(instance_id=iid, repo=repo, version=version, FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p)


def oracle(repo, log, f2p, p2p, patch, iid):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(log)
        path = f.name
    try:
        ts = spec(repo, f2p, p2p, iid)
        statuses, found = get_logs_eval(ts, path)
        pred = {"instance_id": iid, "model_name_or_path": "fixture", "model_patch": patch}
        report = get_eval_report(ts, pred, path, include_tests_status=True)[iid]
    finally:
        os.unlink(path)
    return statuses, found, report


def write(name, repo, log, f2p, p2p, patch):
    statuses, found, report = oracle(repo, log, f2p, p2p, patch, name)
    fixture = {
        "name": name,
        "repo": repo,
        "parser": MAP_REPO_TO_PARSER[repo].__name__,
        "log": log,
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
        "model_patch": patch,
        "oracle": {"statuses": statuses, "found": found, "report": report},
    }
    (OUT / f"{name}.json").write_text(json.dumps(fixture, indent=2, sort_keys=False) + "\n")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.json"):
        old.unlink()
    for repo, log in REPOS.items():
        # Every test the parser finds, split into two groups, so the report is exercised too.
        statuses, _, _ = oracle(repo, log, [], [], PATCH, "probe")
        names = sorted(statuses)
        write("parser_" + repo.replace("/", "__"), repo, log, names[::2], names[1::2], PATCH)
    for case in CASES:
        write("grade_" + case[0], *case[1:])
    print(f"wrote {len(REPOS) + len(CASES)} fixtures to {OUT}")


if __name__ == "__main__":
    main()
