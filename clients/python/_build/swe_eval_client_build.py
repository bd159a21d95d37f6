"""The build backend of swe-eval-client (PEP 517 and PEP 660), standard library only.

The package is pure Python with no dependencies, so building it is zipping its files: this
backend does that, and so `pip install ./clients/python` needs nothing downloaded (a setuptools
build would need setuptools and wheel, which an offline machine's pip may lack). It reads the
`[project]` table of pyproject.toml (flat strings and lists of strings, all this project uses)
and writes:

- a wheel: the `swe_eval_client` package (with py.typed) and its .dist-info;
- an editable wheel: a .pth file putting this folder on the path;
- an sdist: pyproject.toml, this backend and the package, with PKG-INFO.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "swe_eval_client"
TAG = "py3-none-any"
# Fixed times, so the same sources build the same bytes.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
TAR_TIME = 315532800


def _project() -> Dict[str, Any]:
    """The `[project]` table of pyproject.toml (string and list-of-string values)."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    project: Optional[Dict[str, Any]] = None
    current: Optional[Dict[str, Any]] = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = None
            if line == "[project]":
                current = project = {}
            continue
        if current is None:
            continue
        key, eq, value = line.partition("=")
        if not eq:
            raise ValueError("pyproject.toml:%d: not `key = value`: %s" % (n, raw))
        try:
            current[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ValueError("pyproject.toml:%d: this backend reads strings and lists of strings only: %s" % (n, raw)) from None
    if project is None:
        raise ValueError("pyproject.toml has no [project] table")
    for k in ("name", "version"):
        if not isinstance(project.get(k), str):
            raise ValueError("pyproject.toml: [project] needs %s" % k)
    return project


def _dist(p: Dict[str, Any]) -> str:
    return re.sub(r"[-_.]+", "_", p["name"]).lower()


def _metadata(p: Dict[str, Any]) -> bytes:
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % p["version"]]
    if p.get("description"):
        lines.append("Summary: %s" % p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    if p.get("license"):
        lines.append("License: %s" % p["license"])
    for d in p.get("dependencies", []):
        lines.append("Requires-Dist: %s" % d)
    return ("\n".join(lines) + "\n").encode("utf-8")


def _package_files() -> List[Tuple[str, bytes]]:
    """(path in the archive, bytes) of the package: its .py files and py.typed."""
    out = []
    base = os.path.join(ROOT, PACKAGE)
    for name in sorted(os.listdir(base)):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(base, name), "rb") as f:
                out.append(("%s/%s" % (PACKAGE, name), f.read()))
    if not any(n.endswith("/__init__.py") for n, _ in out):
        raise ValueError("no %s/__init__.py under %s" % (PACKAGE, ROOT))
    return out


def _dist_info(p: Dict[str, Any]) -> List[Tuple[str, bytes]]:
    d = "%s-%s.dist-info" % (_dist(p), p["version"])
    wheel = "Wheel-Version: 1.0\nGenerator: swe_eval_client_build\nRoot-Is-Purelib: true\nTag: %s\n" % TAG
    return [("%s/METADATA" % d, _metadata(p)), ("%s/WHEEL" % d, wheel.encode("utf-8"))]


def _write_wheel(directory: str, p: Dict[str, Any], files: List[Tuple[str, bytes]]) -> str:
    name = "%s-%s-%s.whl" % (_dist(p), p["version"], TAG)
    files = files + _dist_info(p)
    record_path = "%s-%s.dist-info/RECORD" % (_dist(p), p["version"])
    rows = []
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
        rows.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    rows.append("%s,," % record_path)
    files.append((record_path, ("\n".join(rows) + "\n").encode("utf-8")))
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            info = zipfile.ZipInfo(path, ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


# PEP 517 hooks.


def get_requires_for_build_wheel(config_settings: Any = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Any = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Any = None) -> str:
    p = _project()
    d = "%s-%s.dist-info" % (_dist(p), p["version"])
    os.makedirs(os.path.join(metadata_directory, d), exist_ok=True)
    for path, data in _dist_info(p):
        with open(os.path.join(metadata_directory, path), "wb") as f:
            f.write(data)
    return d


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, _project(), _package_files())


def build_editable(wheel_directory: str, config_settings: Any = None, metadata_directory: Optional[str] = None) -> str:
    pth = ("%s\n" % ROOT).encode("utf-8")
    return _write_wheel(wheel_directory, _project(), [("%s.pth" % PACKAGE, pth)])


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    p = _project()
    top = "%s-%s" % (_dist(p), p["version"])
    name = top + ".tar.gz"
    files = [("PKG-INFO", _metadata(p))]
    for path in ("pyproject.toml", "_build/swe_eval_client_build.py"):
        with open(os.path.join(ROOT, path), "rb") as f:
            files.append((path, f.read()))
    files += _package_files()
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for path, data in files:
            info = tarfile.TarInfo("%s/%s" % (top, path))
            info.size = len(data)
            info.mtime = TAR_TIME
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return name
