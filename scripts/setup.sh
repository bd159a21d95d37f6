#!/usr/bin/env bash
# Prepares a fresh Debian machine for swe-eval and its test suite, idempotently:
# - a Docker engine (docker.io) and debootstrap, with dockerd started when no daemon answers;
# - test-only tools: Debian's docker-registry (pull/push tests on loopback, the Swarm test's
#   registry), chromium (the HTML report is looked at in a real headless browser), iproute2 and
#   nsenter (the Swarm test's second daemon in a network namespace);
# - the Python oracles the tests compare against (scripts/requirements-oracle.txt).
# Run as root (CI is root; elsewhere use sudo).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

bash "$here/ensure-docker.sh"

missing=()
command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The two-node Swarm test: a network namespace, a veth pair, a second dockerd entered with nsenter.
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
fc-list 2>/dev/null | grep -qi dejavu || missing+=(fonts-dejavu-core)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ -f "$here/requirements-oracle.txt" ]; then
  python3 -m pip install -q --disable-pip-version-check -r "$here/requirements-oracle.txt"
fi
echo "setup: ready"
