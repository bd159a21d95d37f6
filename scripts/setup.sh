#!/usr/bin/env bash
# Prepares a fresh Debian machine for swe-eval, idempotently. Run as root (CI is root;
# elsewhere use sudo).
#
#   scripts/setup.sh           what `swe-eval run` needs: a Docker engine (docker.io) and
#                              debootstrap, with dockerd started when no daemon answers; what
#                              the build needs besides a Rust toolchain (libzstd-dev and
#                              pkg-config: zstd is linked, not compiled); and,
#                              in the background while cargo builds, the offline base image's
#                              root file system bootstrapped into swe-eval's cache
#                              (harness-images/base/prefetch.sh; the first run imports it, or
#                              waits for it while it is still being made).
#   scripts/setup.sh --tests   the same, and what the test suite needs besides: Debian's
#                              docker-registry (pull/push tests on loopback, the Swarm test's
#                              registry), chromium (the HTML report is looked at in a real
#                              headless browser), iproute2 and nsenter (the Swarm test's second
#                              daemon in a network namespace), fonts, and the Python oracles the
#                              tests compare against (scripts/requirements-oracle.txt). Podman
#                              is installed by its tests (scripts/ensure-podman.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tests=0
case "${1:-}" in
  --tests) tests=1 ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac

bash "$here/ensure-docker.sh"

# The base image's bootstrap (a few minutes, mostly downloads and unpacking) overlaps the
# build; niced, so the compiler keeps the cores. It ends by itself; its log is in the cache.
prefetch="$here/../harness-images/base/prefetch.sh"
if command -v python3 >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  nice -n 10 setsid bash "$prefetch" bookworm </dev/null >/dev/null 2>&1 &
fi

# The build links Debian's zstd (Cargo.toml: zstd's `pkg-config` feature) instead of compiling
# the bundled C: a few seconds of install against half a minute of the cores in every first build.
if ! pkg-config --exists libzstd 2>/dev/null; then
  echo "setup: installing libzstd-dev pkg-config"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq libzstd-dev pkg-config >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq libzstd-dev pkg-config >/dev/null; }
fi

if [ "$tests" -eq 1 ]; then
  missing=()
  command -v docker-registry >/dev/null 2>&1 || [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
  fc-list 2>/dev/null | grep -qi dejavu || missing+=(fonts-dejavu-core)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  python3 -m pip install -q --disable-pip-version-check -r "$here/requirements-oracle.txt"
fi
echo "setup: ready"
