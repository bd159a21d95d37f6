"""`pip install ./clients/python` works offline (nothing to download to build it: the backend in
_build/ is standard library only), as the user runs it (build isolation) and without build
isolation, and the installed package imports from where it was installed, typed, with its
version. The sources parse as Python 3.8."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(HERE, "_build"))

import swe_eval_client_build as backend  # noqa: E402

import swe_eval_client  # noqa: E402

PROBE = """
import importlib.metadata, json, os, sys
import swe_eval_client as c
print(json.dumps({
    "file": c.__file__,
    "version": c.__version__,
    "dist": importlib.metadata.version("swe-eval-client"),
    "typed": os.path.isfile(os.path.join(os.path.dirname(c.__file__), "py.typed")),
    "names": sorted(c.__all__),
}))
"""


def pip(*args: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PIP_FIND_LINKS", None)
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", *args],
        cwd=HERE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=300,
    )


class Install(unittest.TestCase):
    def check_installed(self, target: str) -> None:
        import json

        # Run from the target's parent with only the target added: not this folder's copy.
        out = subprocess.run(
            [sys.executable, "-c", "import sys; sys.path.insert(0, %r)\n%s" % (target, PROBE)],
            cwd=os.path.dirname(target),
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            timeout=60,
        )
        self.assertEqual(out.returncode, 0, out.stdout)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        self.assertTrue(got["file"].startswith(target + os.sep), got)
        self.assertEqual(got["version"], swe_eval_client.__version__)
        self.assertEqual(got["dist"], swe_eval_client.__version__)
        self.assertTrue(got["typed"])
        self.assertEqual(got["names"], sorted(swe_eval_client.__all__))

    def test_pip_installs_it_offline_as_a_user_does(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            target = os.path.join(tmp, "site")
            r = pip("--target", target, ".")
            self.assertEqual(r.returncode, 0, r.stdout)
            self.check_installed(target)

    def test_pip_installs_it_offline_without_build_isolation(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            target = os.path.join(tmp, "site")
            r = pip("--no-build-isolation", "--target", target, ".")
            self.assertEqual(r.returncode, 0, r.stdout)
            self.check_installed(target)


class Backend(unittest.TestCase):
    def test_the_wheel_holds_the_package_and_a_record_of_it(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            name = backend.build_wheel(tmp)
            self.assertEqual(name, "swe_eval_client-%s-py3-none-any.whl" % swe_eval_client.__version__)
            with zipfile.ZipFile(os.path.join(tmp, name)) as z:
                names = set(z.namelist())
                record = z.read("swe_eval_client-%s.dist-info/RECORD" % swe_eval_client.__version__).decode()
            files = {"swe_eval_client/%s" % f for f in os.listdir(os.path.join(HERE, "swe_eval_client")) if f.endswith(".py") or f == "py.typed"}
            self.assertTrue(files <= names, files - names)
            self.assertFalse({n for n in names if "test" in n or n.startswith("_build")})
            self.assertEqual({line.split(",")[0] for line in record.splitlines()}, names)
            # The same sources make the same bytes.
            again = os.path.join(tmp, "again")
            os.mkdir(again)
            backend.build_wheel(again)
            with open(os.path.join(tmp, name), "rb") as a, open(os.path.join(again, name), "rb") as b:
                self.assertEqual(a.read(), b.read())

    def test_the_sdist_builds_again(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            name = backend.build_sdist(tmp)
            with tarfile.open(os.path.join(tmp, name)) as t:
                names = set(t.getnames())
            top = name[: -len(".tar.gz")]
            for f in ("PKG-INFO", "pyproject.toml", "_build/swe_eval_client_build.py", "swe_eval_client/__init__.py", "swe_eval_client/py.typed"):
                self.assertIn("%s/%s" % (top, f), names)

    def test_the_editable_wheel_points_here(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            name = backend.build_editable(tmp)
            with zipfile.ZipFile(os.path.join(tmp, name)) as z:
                self.assertEqual(z.read("swe_eval_client.pth").decode().strip(), HERE)

    def test_the_project_table_reads_as_toml_does(self) -> None:
        got = backend._project()
        self.assertEqual(got["version"], swe_eval_client.__version__)
        try:
            import tomllib  # type: ignore[import-not-found]
        except ImportError:
            self.skipTest("tomllib is Python 3.11+")
        with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
            self.assertEqual(got, tomllib.load(f)["project"])

    def test_the_sources_are_python_3_8(self) -> None:
        folders = ["swe_eval_client", "_build", "tests", "examples"]
        paths = [os.path.join(HERE, d, f) for d in folders for f in os.listdir(os.path.join(HERE, d)) if f.endswith(".py")]
        paths.append(os.path.join(HERE, "test_swe_eval_client.py"))
        for p in paths:
            with open(p, encoding="utf-8") as f:
                ast.parse(f.read(), p, feature_version=(3, 8))


if __name__ == "__main__":
    unittest.main()
