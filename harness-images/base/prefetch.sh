#!/usr/bin/env bash
# Bootstraps the offline base's root file system ahead of the first run, so that it overlaps
# the build of swe-eval (scripts/setup.sh starts it in the background): unless the base image
# is already on the daemon, runs bootstrap.sh into swe-eval's cache and leaves the root file
# system there as a tar, which the first run imports (and removes) instead of bootstrapping.
#
# Files, in <cache>/base (<cache>: $SWE_EVAL_CACHE, else $XDG_CACHE_HOME/swe-eval, else
# ~/.cache/swe-eval, as swe-eval resolves it), named after the image
# swe-eval/base.debian-<release>:<12 hex>:
#   debian-<release>-<hex>.lock  held while the bootstrap runs: a run that needs the base
#                                waits for it, then imports the tar (or bootstraps itself
#                                when there is none, e.g. after a failed bootstrap);
#   debian-<release>-<hex>.tar   the root file system (written whole, then renamed);
#   debian-<release>-<hex>.log   this script's log.
#
# usage: prefetch.sh [RELEASE [MIRROR]]   (as root: debootstrap needs it; default bookworm)
#        prefetch.sh --name RELEASE       prints the image name and exits
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# The image's tag as swe-eval computes it: SHA-256 over each part (this folder's bootstrap.sh,
# then the release name) preceded by its length as a little-endian u64.
image_name() {
  python3 - "$here/bootstrap.sh" "$1" <<'EOF'
import hashlib, struct, sys
h = hashlib.sha256()
for part in (open(sys.argv[1], "rb").read(), sys.argv[2].encode()):
    h.update(struct.pack("<Q", len(part)) + part)
print(f"swe-eval/base.debian-{sys.argv[2]}:{h.hexdigest()[:12]}")
EOF
}

if [ "${1:-}" = "--name" ]; then
  image_name "${2:?usage: prefetch.sh --name RELEASE}"
  exit 0
fi
release="${1:-bookworm}"
mirror="${2:-http://deb.debian.org/debian}"
cache="${SWE_EVAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/swe-eval}"
image="$(image_name "$release")"
stem="debian-${release}-${image##*:}"
dir="$cache/base"

docker image inspect "$image" >/dev/null 2>&1 && exit 0
mkdir -p "$dir"
exec 9>"$dir/$stem.lock"
flock 9
# Under the lock: a run (or an earlier prefetch) may have made it meanwhile.
if docker image inspect "$image" >/dev/null 2>&1 || [ -f "$dir/$stem.tar" ]; then
  exit 0
fi
work="$(mktemp -d "$dir/rootfs.XXXXXX")"
trap 'rm -rf "$work" "$dir/$stem.tar.part"' EXIT
{
  echo "prefetch: bootstrapping $release for $image ($(date -u +%FT%TZ))"
  bash "$here/bootstrap.sh" "$release" "$work/rootfs" "$mirror"
  tar --numeric-owner --xattrs -C "$work/rootfs" -cf "$dir/$stem.tar.part" .
  mv "$dir/$stem.tar.part" "$dir/$stem.tar"
  echo "prefetch: done ($(date -u +%FT%TZ)): $dir/$stem.tar"
} >"$dir/$stem.log" 2>&1
