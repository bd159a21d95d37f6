#!/usr/bin/env python3
"""Dump which releases of a few PyPI packages have binary wheels for each Debian Python, for
src/spec/wheels.json.

Facts only, from PyPI's JSON API (https://pypi.org/pypi/NAME/json): for each named package and
each CPython minor version a Debian release of the Debian flavour ships (3.9 bullseye, 3.11
bookworm, 3.13 trixie), the oldest and newest non-yanked final release with a compiled wheel
that installs there (Linux x86_64, glibc manylinux tags up to the release's glibc, the
interpreter's own `cpXY` ABI or an older `abi3`), and every release in between. The Debian
flavour's frozen environments use it to replace a pin that would compile from source (or not
build at all) by the nearest release that has such a wheel.

The packages are those a frozen environment pins at a release with no wheel for the Python it
gets here and whose source build is long or fails (found in environment builds), not a list of
every package.

Usage: python3 scripts/wheels_dump.py NAME... > src/spec/wheels.json
Set SSL_CERT_FILE for a TLS-inspecting proxy. Standard library only.
"""
import json
import re
import sys
import urllib.request

PYTHONS = {"3.9": (2, 31), "3.11": (2, 36), "3.13": (2, 41)}  # minor -> glibc of the release
WHEEL = re.compile(r"^(?P<name>.+?)-(?P<ver>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
FINAL = re.compile(r"^\d+(\.\d+)*$")


def vkey(v):
    return tuple(int(p) for p in v.split("."))


def platform_ok(plat, glibc):
    for p in plat.split("."):
        if p in ("manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"):
            return True
        m = re.match(r"^manylinux_(\d+)_(\d+)_x86_64$", p)
        if m and (int(m.group(1)), int(m.group(2))) <= glibc:
            return True
    return False


def abi_ok(py, abi, minor):
    tag = "cp3" + minor.split(".")[1]
    for p in py.split("."):
        if abi == tag and p == tag:
            return True
        if abi == "abi3" and p.startswith("cp3") and int(p[3:]) <= int(minor.split(".")[1]):
            return True
    return False


def ranges(name):
    with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/json", timeout=60) as r:
        data = json.load(r)
    out = {}
    for minor, glibc in PYTHONS.items():
        ok = []
        for ver, files in data["releases"].items():
            if not FINAL.match(ver):
                continue
            for f in files:
                if f.get("yanked"):
                    continue
                m = WHEEL.match(f["filename"])
                if m and platform_ok(m["plat"], glibc) and abi_ok(m["py"], m["abi"], minor):
                    ok.append(ver)
                    break
        if ok:
            out[minor] = sorted(ok, key=vkey)
    return data["info"]["name"], out


def main(names):
    table = {}
    for n in names:
        canonical, per_python = ranges(n)
        table[canonical] = per_python
    doc = {
        "source": "PyPI's JSON API, by scripts/wheels_dump.py: per package and Debian CPython minor, the final releases with a compiled Linux x86_64 wheel for it (oldest first)",
        "packages": table,
    }
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
