#!/usr/bin/env python3
"""Runs SWE-bench 5's `swebench.harness.run_evaluation` unchanged, with two settings forced.

1. Containers get `network_mode="none"` unless one is given: the benchmark machine's Docker
   daemon has no usable default bridge (creating a container endpoint on it fails), and
   swe-eval runs its test containers without network too, so both harnesses run under the
   same condition.
2. An image is never pulled: the trivial image must exist locally, and no registry is
   reachable. A pull attempt raises instead of waiting on the network.

3. The time spent in the instance thread pool and in the final report is printed to stderr
   (`bench-phase NAME SECONDS`), so a slow daemon call in the report (it inspects every
   container on the daemon) can be told apart from the per-instance work.

Everything else (container lifecycle, `docker stop --time=15`, patch application, grading,
reports) is the official code as installed. Usage: same arguments as
`python -m swebench.harness.run_evaluation`.
"""
import runpy
import sys
import time

import docker.models.containers
import docker.models.images

_create = docker.models.containers.ContainerCollection.create


def create(self, image, command=None, **kwargs):
    kwargs.setdefault("network_mode", "none")
    return _create(self, image, command, **kwargs)


def pull(self, repository, *args, **kwargs):
    raise RuntimeError(f"benchmark: refusing to pull {repository} (the image must be local)")


def timed(name, fn):
    def wrapper(*args, **kwargs):
        t = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            print(f"bench-phase {name} {time.monotonic() - t:.3f}", file=sys.stderr, flush=True)

    return wrapper


docker.models.containers.ContainerCollection.create = create
docker.models.images.ImageCollection.pull = pull

# run_evaluation imports these by name when runpy executes it, so it gets the timed ones.
import swebench.harness.reporting  # noqa: E402
import swebench.harness.utils  # noqa: E402

swebench.harness.utils.run_threadpool = timed("instances", swebench.harness.utils.run_threadpool)
swebench.harness.reporting.make_run_report = timed("report", swebench.harness.reporting.make_run_report)

if __name__ == "__main__":
    sys.argv[0] = "swebench.harness.run_evaluation"
    runpy.run_module("swebench.harness.run_evaluation", run_name="__main__", alter_sys=True)
