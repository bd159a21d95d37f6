#!/usr/bin/env bash
# Offline-capable base image root file system for swe-eval: Debian minbase with Python, pytest,
# pip, venv, git and patch, built by debootstrap from a Debian mirror (no container registry
# needed). swe-eval runs this script, tars TARGET and imports it as
# `swe-eval/base.debian-<release>:<hash of this script and the release>`; editing this file
# therefore changes the tag and rebuilds the image.
#
# usage: bootstrap.sh RELEASE TARGET_DIR [MIRROR]   (as root; takes a few minutes)
# RELEASE: bookworm (Python 3.11), bullseye (3.9), trixie (3.13).
set -euo pipefail

release="$1"
target="$2"
mirror="${3:-http://deb.debian.org/debian}"

debootstrap --variant=minbase \
  --include=python3,python3-pytest,python3-pip,python3-venv,git,patch,ca-certificates \
  "$release" "$target" "$mirror"

# The image is a container: let pip install into the system Python (PEP 668 marker off),
# and give `python` its usual name.
rm -f "$target"/usr/lib/python3*/EXTERNALLY-MANAGED
[ -e "$target/usr/bin/python" ] || ln -s python3 "$target/usr/bin/python"
[ -e "$target/usr/bin/pip" ] || ln -s pip3 "$target/usr/bin/pip"
# Repositories are owned by whoever built the image; git must not refuse them.
chroot "$target" git config --system --add safe.directory '*'
chroot "$target" git config --system user.name swe-eval
chroot "$target" git config --system user.email swe-eval@localhost

# Keep it small: no package lists or caches, documentation, manuals or translations.
chroot "$target" apt-get clean
rm -rf "$target"/var/lib/apt/lists/* "$target"/var/cache/apt/* \
  "$target"/var/cache/debconf/*-old "$target"/var/log/* \
  "$target"/usr/share/doc/* "$target"/usr/share/man/* "$target"/usr/share/info/* \
  "$target"/usr/share/locale/* "$target"/usr/share/lintian/*
# Docker supplies these at run time.
rm -rf "$target"/dev/* "$target"/proc/* "$target"/sys/* "$target"/run/* "$target"/tmp/*
: > "$target/etc/hostname"
rm -f "$target/etc/resolv.conf"
