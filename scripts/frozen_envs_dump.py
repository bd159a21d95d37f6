#!/usr/bin/env python3
"""Dump the frozen environment files of SWE-bench v4.1.0 as data, for src/spec/frozen_envs.json.

Facts only: for each SWE-bench Verified instance, the conda packages (name and version; the
build strings are dropped) and the pip packages (name==version) of the environment its
tests ran in, as `swebench/resources/swebench-og/<owner>__<repo>/<number>/environment.yml`
records them. These files ship in the SWE-bench repository at tag v4.1.0, not in the PyPI
wheel. Equal environments are stored once.

Usage: python3 scripts/frozen_envs_dump.py SWE_BENCH > src/spec/frozen_envs.json
SWE_BENCH is a checkout of the SWE-bench repository at v4.1.0, or its git directory (bare or
not; the files are then read at the tag v4.1.0). Standard library only.
"""
import json
import os
import re
import subprocess
import sys

TAG = "v4.1.0"
ROOT = "swebench/resources/swebench-og"


def read_files(src):
    """(path, text) of every environment.yml under ROOT, from a checkout or a git dir."""
    tree = os.path.join(src, ROOT)
    if os.path.isdir(tree):
        for dirpath, _, names in os.walk(tree):
            for n in names:
                if n == "environment.yml":
                    p = os.path.join(dirpath, n)
                    with open(p, encoding="utf-8") as f:
                        yield os.path.relpath(p, src), f.read()
        return
    git = ["git", "--git-dir", src]
    names = subprocess.run(
        git + ["ls-tree", "-r", "--name-only", TAG, ROOT],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    for p in names:
        if p.endswith("/environment.yml"):
            text = subprocess.run(
                git + ["show", f"{TAG}:{p}"], check=True, capture_output=True, text=True
            ).stdout
            yield p, text


CONDA = re.compile(r"^  - ([A-Za-z0-9_.+-]+)=([^=\s]+)=([^=\s]+)$")
PIP = re.compile(r"^      - ([A-Za-z0-9_.+-]+)==([^=\s]+)$")


def parse(path, text):
    """The conda pins (name=version), pip pins (name==version) and python version."""
    conda, pip, section = [], [], None
    for no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if not line.startswith(" "):
            section = line.split(":", 1)[0]
            continue
        if section != "dependencies":
            continue
        if line == "  - pip:":
            continue
        m = CONDA.match(line)
        if m:
            conda.append(f"{m.group(1)}={m.group(2)}")
            continue
        m = PIP.match(line)
        if m:
            pip.append(f"{m.group(1)}=={m.group(2)}")
            continue
        sys.exit(f"{path}:{no}: unexpected dependency line {line!r}")
    pythons = [c.split("=", 1)[1] for c in conda if c.startswith("python=")]
    if len(pythons) != 1:
        sys.exit(f"{path}: expected one python=VERSION line, found {len(pythons)}")
    return {"python": pythons[0], "conda": sorted(conda), "pip": sorted(pip, key=str.lower)}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    envs, index, instances = [], {}, {}
    for path, text in sorted(read_files(sys.argv[1])):
        parts = path.split("/")
        owner_repo, number = parts[-3], parts[-2]
        env = parse(path, text)
        key = json.dumps(env, sort_keys=True)
        if key not in index:
            index[key] = len(envs)
            envs.append(env)
        instances[f"{owner_repo}-{number}"] = index[key]
    if not instances:
        sys.exit(f"no {ROOT}/*/*/environment.yml under {sys.argv[1]}")
    out = {
        "source": f"SWE-bench {TAG}, {ROOT}/<owner>__<repo>/<number>/environment.yml "
        "(facts carried over as data; conda build strings dropped)",
        "envs": envs,
        "instances": dict(sorted(instances.items())),
    }
    json.dump(out, sys.stdout, indent=0, separators=(",", ":"))
    sys.stdout.write("\n")


main()
