#!/usr/bin/env bash
# Builds the mini benchmark's repositories as git bundles with reproducible commit hashes.
#
# Each repository is scripts/mini/repos/<name>/<NN-slug>/: one folder per commit, applied in
# order as an overlay (files in it replace or add files; a `.delete` file lists paths to
# remove; `.commit-message` is the message). Author, committer, e-mail and dates are fixed,
# so the same sources always give the same commit ids (checked by `--check`).
#
# Usage: scripts/mini/build.sh [--check] [OUT_DIR]   (default OUT_DIR: datasets/mini/repos)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
check=0
if [[ "${1:-}" == "--check" ]]; then
    check=1
    shift
fi
out="${1:-$root/datasets/mini/repos}"
mkdir -p "$out"

export GIT_AUTHOR_NAME="swe-eval mini" GIT_AUTHOR_EMAIL="mini@swe-eval.invalid"
export GIT_COMMITTER_NAME="swe-eval mini" GIT_COMMITTER_EMAIL="mini@swe-eval.invalid"
# Keep the user's and system's git configuration out of the result.
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 TZ=UTC

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for repo_src in "$here"/repos/*/; do
    name="$(basename "$repo_src")"
    repo="$work/$name"
    git init -q -b main "$repo"
    day=1
    for commit_src in "$repo_src"*/; do
        # Overlay this commit's files (dot files included, the metadata files excluded).
        (cd "$commit_src" && find . -type f ! -name .commit-message ! -name .delete -print0 |
            while IFS= read -r -d '' f; do
                mkdir -p "$repo/$(dirname "$f")"
                cp "$f" "$repo/$f"
            done)
        if [[ -f "$commit_src/.delete" ]]; then
            while IFS= read -r gone; do
                [[ -n "$gone" ]] && git -C "$repo" rm -q -- "$gone"
            done <"$commit_src/.delete"
        fi
        git -C "$repo" add -A
        date="2024-03-$(printf %02d "$day")T12:00:00+0000"
        GIT_AUTHOR_DATE="$date" GIT_COMMITTER_DATE="$date" \
            git -C "$repo" commit -q -F "$commit_src/.commit-message"
        day=$((day + 1))
    done
    if [[ $check -eq 1 ]]; then
        want="$(git bundle list-heads "$out/$name.bundle" | awk '$2 == "refs/heads/main" {print $1}')"
        got="$(git -C "$repo" rev-parse HEAD)"
        if [[ "$want" != "$got" ]]; then
            echo "$name: bundle has $want, sources give $got; run scripts/mini/build.sh" >&2
            exit 1
        fi
        echo "$name: $got (up to date)"
    else
        git -C "$repo" bundle create -q "$out/$name.bundle" HEAD main
        echo "$name: $(git -C "$repo" rev-parse HEAD) -> $out/$name.bundle"
    fi
done
