#!/usr/bin/env python3
"""Dump the Python half of swebench 4.1.0's spec table as data, for src/spec/specs.json.

Facts only: the per-repository, per-version install and test specifications, the
requirements/environment.yml paths, the base-commit branches and the log-parser names.
The project's own mini benchmark entry is appended by hand (it is not an official repo).

Usage: python3 scripts/spec_dump_table.py > src/spec/specs.json
"""
import json
import sys

import swebench
from swebench.harness.constants import python as py
from swebench.harness.constants import REPO_BASE_COMMIT_BRANCH
from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY

assert swebench.__version__ == "4.1.0", swebench.__version__

specs = {}
for repo, versions in py.MAP_REPO_VERSION_TO_SPECS_PY.items():
    if repo == "swe-bench/humaneval":
        continue
    # dbt-core's specs have no test command (the official harness cannot run them): left out.
    kept = {v: dict(s) for v, s in versions.items() if isinstance(s.get("test_cmd"), str)}
    if kept:
        specs[repo] = kept

specs["swe-eval-mini/*"] = {
    "0.1": {
        "python": "3.11",
        "test_cmd": "pytest -rA",
        "flavour": "debian",
    }
}

out = {
    "source": "swebench 4.1.0, swebench/harness/constants/python.py (facts carried over as data)",
    "specs": specs,
    "log_parsers": {
        **{repo: fn.__name__ for repo, fn in MAP_REPO_TO_PARSER_PY.items()},
        "swe-eval-mini/*": "parse_log_pytest",
    },
    "requirements_paths": py.MAP_REPO_TO_REQS_PATHS,
    "environment_yml_paths": py.MAP_REPO_TO_ENV_YML_PATHS,
    "base_commit_branch": {
        r: b for r, b in REPO_BASE_COMMIT_BRANCH.items() if r in specs
    },
    "use_x86": sorted(py.USE_X86_PY),
}
json.dump(out, sys.stdout, indent=1)
sys.stdout.write("\n")
