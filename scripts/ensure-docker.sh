#!/usr/bin/env bash
# Makes sure a Docker daemon answers on this machine, idempotently:
# installs docker.io and debootstrap with apt when missing, starts dockerd in the background
# (log in $DOCKERD_LOG, default /var/log/dockerd.log) when `docker info` fails, waits up to
# 60 s for it, and prints the daemon's API version. Run as root (or with sudo).
set -euo pipefail

log="${DOCKERD_LOG:-/var/log/dockerd.log}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

missing=()
# The engine, not the client: a machine may carry a docker client binary alone
# (/usr/local/bin/docker) with no daemon to talk to.
command -v dockerd >/dev/null 2>&1 || [ -x /usr/sbin/dockerd ] || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-docker: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null 2>&1; then
    echo "ensure-docker: dockerd not found; install docker.io" >&2
    exit 1
  fi
  echo "ensure-docker: starting dockerd (log: $log)"
  # setsid: the daemon must outlive this script and its session.
  "${sudo_cmd[@]}" setsid dockerd >>"$log" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then
      break
    fi
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "ensure-docker: dockerd did not answer within 60 s; last lines of $log:" >&2
    tail -n 20 "$log" >&2 || true
    exit 1
  fi
fi
echo "ensure-docker: docker API $(docker version --format '{{.Server.APIVersion}}')"
