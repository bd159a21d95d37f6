#!/usr/bin/env bash
# Makes a Podman service answer on this Debian machine, for the tests that run swe-eval on
# Podman (tests/it/podman.rs calls it; scripts/setup.sh does not: Docker stays the default).
# Idempotent; run as root. Prints the socket's path on its last line.
#
# usage: ensure-podman.sh rootful|rootless
#   rootful:  `podman system service` as root on /run/podman/podman.sock.
#   rootless: an ordinary user, $SWE_EVAL_PODMAN_USER (default swe-eval-podman), created with
#             subordinate ids when missing, with its runtime folder /run/user/<uid> and the
#             overlay storage driver, serving /run/user/<uid>/podman/podman.sock.
#
# What it installs when missing: Debian's podman, uidmap (newuidmap, for the user's
# subordinate ids), slirp4netns (rootless networking), fuse-overlayfs, crun (runc comes with
# podman). A service it starts exits by itself after SWE_EVAL_PODMAN_IDLE seconds without a
# client (default 120), so a test run leaves nothing running; the rootless one then also ends
# the user's pause process (the user namespace Podman keeps).
#
# Two things this machine kind needs, done here and said in README ("Running without Docker"):
# - crun 1.8 refuses hybrid cgroups (v1 controllers, and a v2 hierarchy with a controller in
#   it): the service then runs with runc;
# - the overlay storage driver for the rootless user (without storage.conf Podman 4.3 falls
#   back to vfs, which copies a whole image per container).
set -euo pipefail
mode="${1:?usage: ensure-podman.sh rootful|rootless}"
# The services outlive the caller: they must not keep its working folder (a test's temporary
# folder, removed later, leaves conmon unable to start any container: "Failed to get working
# directory").
cd /
idle="${SWE_EVAL_PODMAN_IDLE:-120}"
user="${SWE_EVAL_PODMAN_USER:-swe-eval-podman}"

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-podman: run as root (it installs packages and starts services)" >&2
  exit 1
fi

# One at a time (tests of both modes may call this at once; apt-get takes a lock of its own).
# The services started below must not inherit the lock's descriptor (9>&-), or they hold it.
mkdir -p /run/lock
exec 9>/run/lock/swe-eval-ensure-podman.lock
flock 9

missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v newuidmap >/dev/null 2>&1 || missing+=(uidmap)
command -v slirp4netns >/dev/null 2>&1 || missing+=(slirp4netns)
command -v fuse-overlayfs >/dev/null 2>&1 || missing+=(fuse-overlayfs)
command -v crun >/dev/null 2>&1 || missing+=(crun)
command -v runc >/dev/null 2>&1 || missing+=(runc)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-podman: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# crun cannot start containers on hybrid cgroups with a controller in the v2 hierarchy (cgroup
# files have no size: read, not `test -s`).
runtime=crun
if grep -qs '[a-z]' /sys/fs/cgroup/unified/cgroup.controllers; then
  runtime=runc
fi

answers() { curl -sf --max-time 5 --unix-socket "$1" http://podman/_ping >/dev/null 2>&1; }
command -v curl >/dev/null 2>&1 || {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl >/dev/null
}

wait_for() {
  local sock="$1" log="$2"
  for _ in $(seq 1 100); do
    answers "$sock" && return 0
    sleep 0.2
  done
  echo "ensure-podman: no answer on $sock; its log ($log):" >&2
  tail -n 20 "$log" >&2 || true
  return 1
}

case "$mode" in
rootful)
  sock=/run/podman/podman.sock
  if ! answers "$sock"; then
    mkdir -p /run/podman
    log=/run/podman/swe-eval-service.log
    rm -f "$sock"
    setsid podman --runtime "$runtime" system service --time "$idle" "unix://$sock" \
      >"$log" 2>&1 </dev/null 9>&- &
    wait_for "$sock" "$log"
  fi
  ;;
rootless)
  if ! id -u "$user" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash "$user"
  fi
  uid="$(id -u "$user")"
  home="$(getent passwd "$user" | cut -d: -f6)"
  # Subordinate ids: useradd gives them on Debian 12 (SUB_UID_COUNT); add them otherwise.
  grep -q "^$user:" /etc/subuid 2>/dev/null || usermod --add-subuids 200000-265535 "$user"
  grep -q "^$user:" /etc/subgid 2>/dev/null || usermod --add-subgids 200000-265535 "$user"
  run="/run/user/$uid"
  mkdir -p "$run"
  chown "$user:" "$run"
  chmod 700 "$run"
  # The user is this script's: its settings are written every time (a service already running
  # keeps the ones it started with until it exits when idle).
  conf="$home/.config/containers"
  runuser -u "$user" -- mkdir -p "$conf"
  runuser -u "$user" -- sh -c "printf '[storage]\ndriver = \"overlay\"\n' > '$conf/storage.conf'"
  runuser -u "$user" -- sh -c "printf '[engine]\nruntime = \"$runtime\"\n' > '$conf/containers.conf'"
  sock="$run/podman/podman.sock"
  if ! answers "$sock"; then
    runuser -u "$user" -- mkdir -p "$run/podman"
    log="$run/podman/swe-eval-service.log"
    rm -f "$sock"
    # When the service has been idle long enough it exits; the pause process that holds the
    # user's namespace goes with it (else it would outlive the tests).
    setsid runuser -u "$user" -- env -i HOME="$home" USER="$user" LOGNAME="$user" \
      XDG_RUNTIME_DIR="$run" PATH=/usr/local/bin:/usr/bin:/bin \
      sh -c 'podman system service --time "$1" "unix://$2" > "$3" 2>&1 < /dev/null
             p="$XDG_RUNTIME_DIR/libpod/tmp/pause.pid"
             [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; exit 0' \
      service "$idle" "$sock" "$log" </dev/null >/dev/null 2>&1 9>&- &
    wait_for "$sock" "$log"
  fi
  ;;
*)
  echo "ensure-podman: mode is rootful or rootless, not $mode" >&2
  exit 2
  ;;
esac
echo "$sock"
