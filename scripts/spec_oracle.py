#!/usr/bin/env python3
"""Dump swebench 4.1.0's view of the spec table and of the 399 partial-Verified rows into
tests/fixtures/spec/oracle.json, for tests/it/spec.rs to compare against (generated once).

For each (repo, version) of the Verified repos: the spec, and -- for specs whose environment
script needs no network (a plain package list) -- the official env script, env image key,
env/instance Dockerfiles and setup_repo.sh of a synthetic instance. For each dataset row with
a test_patch: get_test_directives, get_modified_files and the env image key when computable.

Usage: python3 scripts/spec_oracle.py ../shared/datasets/partial-verified/swebench_verified_partial.jsonl
"""
import json
import sys

import swebench
from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
from swebench.harness.test_spec.python import get_test_directives
from swebench.harness.test_spec.test_spec import make_test_spec
from swebench.harness.utils import get_modified_files

assert swebench.__version__ == "4.1.0", swebench.__version__

VERIFIED = [
    "astropy/astropy", "django/django", "pallets/flask", "matplotlib/matplotlib",
    "pylint-dev/pylint", "pytest-dev/pytest", "psf/requests", "scikit-learn/scikit-learn",
    "mwaskom/seaborn", "sphinx-doc/sphinx", "sympy/sympy", "pydata/xarray",
]
NETWORK_PACKAGES = {"requirements.txt", "environment.yml"}
SYNTH_PATCH = (
    "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n"
    "+++ b/tests/test_x.py\n@@ -1 +1,2 @@\n x\n+y\n"
)


def rendered(inst):
    ts = make_test_spec(inst)
    return {
        "env_script": ts.setup_env_script,
        "env_image_key": ts.env_image_key,
        "instance_image_key": ts.instance_image_key,
        "remote_instance_image_key": make_test_spec(inst, namespace="swebench").instance_image_key,
        "install_repo_script": ts.install_repo_script,
        "eval_script": ts.eval_script,
        "env_dockerfile": ts.env_dockerfile,
        "instance_dockerfile": ts.instance_dockerfile,
    }


specs = {}
for repo in VERIFIED:
    for version, spec in MAP_REPO_VERSION_TO_SPECS[repo].items():
        entry = {"spec": spec}
        if spec.get("packages", "") not in NETWORK_PACKAGES:
            inst = {
                "instance_id": repo.replace("/", "__") + "-1",
                "repo": repo,
                "version": version,
                "base_commit": "0123456789abcdef0123456789abcdef01234567",
                "test_patch": SYNTH_PATCH,
                "environment_setup_commit": "0123456789abcdef0123456789abcdef01234567",
            }
            entry["rendered"] = rendered(inst)
        specs.setdefault(repo, {})[version] = entry

rows = {}
with open(sys.argv[1]) as f:
    for line in f:
        r = json.loads(line)
        if not r.get("test_patch"):
            continue
        out = {
            "directives": get_test_directives(r),
            "modified_files": get_modified_files(r["test_patch"]),
        }
        spec = MAP_REPO_VERSION_TO_SPECS[r["repo"]][r["version"]]
        if spec.get("packages", "") not in NETWORK_PACKAGES:
            out["env_image_key"] = make_test_spec(r).env_image_key
        rows[r["instance_id"]] = out

base = make_test_spec({"instance_id": "x__y-1", "repo": "psf/requests", "version": "2.0",
                       "base_commit": "0" * 40, "test_patch": SYNTH_PATCH}).base_dockerfile
json.dump({"swebench": swebench.__version__, "base_dockerfile": base, "specs": specs, "rows": rows}, sys.stdout, indent=1, sort_keys=True)
sys.stdout.write("\n")
