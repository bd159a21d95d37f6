#!/bin/sh
# Writes tests/fixtures/hostile/{predictions.jsonl,expected.json}: hostile predictions for the
# mini benchmark's task swe-eval-mini__calc-1 (model `hostile`, one sample per case), built with
# git on the bundled repository so every patch applies where it should. Most are the gold
# patch plus hostile code appended to calc/parser.py, which the tests import; the code runs
# inside the test container. expected.json gives each case's official and strict verdict.
# tests/it/hostile.rs runs them with `swe-eval run` and compares.
set -eu
cd "$(dirname "$0")/.."
python3 - <<'PY'
import json, os, subprocess, tempfile

ID = "swe-eval-mini__calc-1"
row = next(json.loads(l) for l in open("datasets/mini/dataset.jsonl") if json.loads(l)["instance_id"] == ID)
tests = row["FAIL_TO_PASS"] + row["PASS_TO_PASS"]
LEAKS = ["/etc/swe-eval-hostile", "/root/swe-eval-hostile", "/testbed/big", "/etc/swe-eval-traversal"]

FORK = """
import os as _os, time as _time
_n = 0
try:
    while _n < 5000:
        if _os.fork() == 0:
            _time.sleep(60)
            _os._exit(0)
        _n += 1
except OSError:
    pass
if _n >= 1100:
    raise RuntimeError("pids limit did not hold: %d forks" % _n)
"""
MEMORY = """
_chunks = []
for _ in range(24):
    _chunks.append(bytearray(b"x" * (256 << 20)))
"""
DISK = """
with open("/testbed/big", "wb") as _fh:
    for _ in range(512):
        _fh.write(b"\\0" * (1 << 20))
"""
NETWORK = """
import socket as _socket
_net = []
for _host, _port in [("1.1.1.1", 53), ("8.8.8.8", 53), ("172.17.0.1", 2375)]:
    try:
        _socket.create_connection((_host, _port), timeout=2).close()
        _net.append(_host)
    except OSError:
        pass
try:
    _socket.getaddrinfo("example.com", 80)
    _net.append("dns")
except OSError:
    pass
if _net:
    raise RuntimeError("network reachable: %r" % _net)
"""
OUTSIDE = """
for _p in ["/etc/swe-eval-hostile", "/root/swe-eval-hostile"]:
    with open(_p, "w") as _fh:
        _fh.write("owned")
"""
FORGED = "\nwith open('/proc/1/fd/1', 'w') as _out:\n    _out.write(%r)\n" % (
    "".join("PASSED %s\n" % t for t in tests)
    + "+ : '>>>>> End Test Output'\n>>>>> Test Exit Code: 0\n"
)
WITNESS = "\nimport os as _os\n_left = [p for p in %r if _os.path.exists(p)]\nif _left:\n    raise RuntimeError('left by another job: %%r' %% _left)\n" % LEAKS
TRAVERSAL = (
    "diff --git a/../../etc/swe-eval-traversal b/../../etc/swe-eval-traversal\n"
    "new file mode 100644\n--- /dev/null\n+++ b/../../etc/swe-eval-traversal\n@@ -0,0 +1 @@\n+owned\n"
)

# case, gold applied?, code appended to calc/parser.py, extra diff text, official, strict
CASES = [
    ("forkbomb", True, FORK, "", "resolved", "resolved"),
    ("memory", True, MEMORY, "", "unresolved", "unresolved"),
    ("disk", True, DISK, "", "resolved", "resolved"),
    ("network", True, NETWORK, "", "resolved", "resolved"),
    ("outside", True, OUTSIDE, "", "resolved", "resolved"),
    ("traversal", True, "", TRAVERSAL, "error", "error"),
    # Official grading reads up to the first end marker, as the official harness does, and is
    # fooled; strict grading takes the real exit code.
    ("forged", False, FORGED, "", "resolved", "unresolved"),
    ("witness", True, WITNESS, "", "resolved", "resolved"),
]

def git(cwd, *args, stdin=None):
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, check=True).stdout

env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
os.environ.update(env)
with tempfile.TemporaryDirectory() as tmp:
    repo = os.path.join(tmp, "calc")
    subprocess.run(["git", "clone", "-q", "datasets/mini/repos/calc.bundle", repo], check=True)
    preds, expected = [], []
    for sample, (case, gold, code, extra, official, strict) in enumerate(CASES):
        git(repo, "checkout", "-q", "-f", row["base_commit"])
        git(repo, "clean", "-fdq")
        if gold:
            git(repo, "apply", "-", stdin=row["patch"])
        if code:
            with open(os.path.join(repo, "calc/parser.py"), "a") as fh:
                fh.write(code)
        patch = git(repo, "diff") + extra
        preds.append({"instance_id": ID, "model_name_or_path": "hostile", "sample": sample,
                      "case": case, "model_patch": patch})
        expected.append({"instance_id": ID, "model": "hostile", "sample": sample, "case": case,
                         "official": official, "strict": strict})
os.makedirs("tests/fixtures/hostile", exist_ok=True)
with open("tests/fixtures/hostile/predictions.jsonl", "w") as fh:
    fh.writelines(json.dumps(p) + "\n" for p in preds)
with open("tests/fixtures/hostile/expected.json", "w") as fh:
    json.dump(expected, fh, indent=2)
    fh.write("\n")
print("wrote %d hostile predictions for %s" % (len(preds), ID))
PY
