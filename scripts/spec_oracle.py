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
import posixpath
import sys

import swebench
from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
from swebench.harness.test_spec.python import get_test_directives
from swebench.harness.test_spec.test_spec import make_test_spec
from swebench.harness.utils import get_modified_files
import swebench.harness.test_spec.python as tsp

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


# Synthetic repository files for the specs that read requirements.txt / environment.yml, served
# to the oracle through a stand-in for requests.get (no network): the first listed path is
# missing whenever there are two, to exercise the fallback order.
REQS = "# comment\n-r base.txt\n-e .\nnumpy>=1.0\ntypes-pkg_resources==0.1\n.[test]\n  pytest\n"
REQS_BASE = "six\n# x\nmock==1.0\n-e .\n"
YML = ("name: upstream\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.10\n  - numpy\n"
       "  - pip\n  - pip:\n    - types-pkg_resources\n    - pytest\n")


def synthetic_files(repo):
    files = {}
    paths = tsp.MAP_REPO_TO_REQS_PATHS.get(repo, [])
    if paths:
        p = paths[-1]
        d = posixpath.dirname(p)
        files[p] = REQS
        files[posixpath.join(d, "base.txt") if d else "base.txt"] = REQS_BASE
    ymls = tsp.MAP_REPO_TO_ENV_YML_PATHS.get(repo, [])
    if ymls:
        files[ymls[-1]] = YML
    return files


class _Resp:
    def __init__(self, text):
        self.status_code = 200 if text is not None else 404
        self.text = text or ""


def serve(repo, commit, files):
    prefix = posixpath.join(tsp.SWE_BENCH_URL_RAW, repo, commit) + "/"

    def get(url, headers=None):
        assert url.startswith(prefix), url
        return _Resp(files.get(posixpath.normpath(url[len(prefix):])))

    tsp.get_requirements_by_commit.cache_clear()
    tsp.get_environment_yml_by_commit.cache_clear()
    tsp.requests.get = get


specs = {}
for repo in VERIFIED:
    for version, spec in MAP_REPO_VERSION_TO_SPECS[repo].items():
        entry = {"spec": spec}
        inst = {
            "instance_id": repo.replace("/", "__") + "-1",
            "repo": repo,
            "version": version,
            "base_commit": "0123456789abcdef0123456789abcdef01234567",
            "test_patch": SYNTH_PATCH,
            "environment_setup_commit": "0123456789abcdef0123456789abcdef01234567",
        }
        if spec.get("packages", "") not in NETWORK_PACKAGES:
            entry["rendered"] = rendered(inst)
        else:
            files = synthetic_files(repo)
            serve(repo, inst["base_commit"], files)
            entry["files"] = files
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
