#!/usr/bin/env bash
# Fetches Artificial Analysis's replay data (Apache-2.0) into DIR/aa_replays/ and verifies it.
#
# The data ships inside the Python package agentperf-local (agentperf_local/data/replays/:
# agentperf-default-v1 and aa-mini-v1), pinned with every file's sha256 in
# workloads/aa-replays/data.lock. The wheel is downloaded with pip (no dependencies, no
# install; it declares Python >= 3.12, so pip is told that version: only its data is used),
# its sha256 checked, and every extracted file checked against the lock. Nothing is written
# to DIR unless every digest matches.
#
# Usage: scripts/fetch-aa-replays.sh DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: fetch-aa-replays.sh DIR}
lock="$root/workloads/aa-replays/data.lock"
version=$("$root/scripts/lock.py" source "$lock" agentperf-local version)
wheel_sha=$("$root/scripts/lock.py" source "$lock" agentperf-local sha256)
wheel=$("$root/scripts/lock.py" source "$lock" agentperf-local wheel)
dest="$dir/aa_replays"
files=$("$root/scripts/lock.py" files "$lock" pypi-wheel)

verify_tree() { # verify_tree TREE: every locked aa_replays/ file present in TREE with its digest
  (cd "$1" && printf '%s\n' "$files" | awk -F'\t' '{sub("^aa_replays/", "", $1); print $2"  "$1}' | sha256sum -c --quiet -)
}

if [ -d "$dest" ] && verify_tree "$dest" 2>/dev/null; then
  echo "ok       aa_replays ($(printf '%s\n' "$files" | wc -l) files)"
  exit 0
fi
mkdir -p "$dir"
wheels=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}/pip
whl="$wheels/$wheel"
if [ -f "$whl" ] && ! echo "$wheel_sha  $whl" | sha256sum -c --quiet - >/dev/null 2>&1; then
  # A damaged or substituted cached wheel is never used, nor left for pip to reuse.
  echo "note: $whl does not have sha256 $wheel_sha: removed, fetching it again"
  rm -f "$whl"
fi
if ! [ -f "$whl" ]; then
  echo "fetching agentperf-local==$version (wheel) with pip"
  mkdir -p "$wheels"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    -d "$wheels" "agentperf-local==$version"
fi
if ! echo "$wheel_sha  $whl" | sha256sum -c --quiet -; then
  echo "error: $whl does not have sha256 $wheel_sha" >&2
  exit 1
fi
tmp=$(mktemp -d "$dir/.aa-replays.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python3 - "$whl" "$tmp" <<'PY'
import sys, zipfile
prefix = "agentperf_local/data/replays/"
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [m for m in z.namelist() if m.startswith(prefix)])
PY
if ! verify_tree "$tmp/agentperf_local/data/replays"; then
  echo "error: extracted replay data does not match $lock" >&2
  exit 1
fi
rm -rf "$dest"
mv "$tmp/agentperf_local/data/replays" "$dest"
echo "ok       aa_replays -> $dest"
