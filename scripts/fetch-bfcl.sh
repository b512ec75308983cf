#!/usr/bin/env bash
# Fetches the BFCL v4 data (Apache-2.0) into DIR/bfcl_v4/ and verifies it.
#
# The data ships inside the Python package bfcl-eval (bfcl_eval/data/), pinned
# with every file's sha256 in workloads/bfcl-v4/data.lock. The wheel is
# downloaded with pip (no dependencies, no install), its sha256 checked, and
# every extracted file checked against the lock. Nothing is written to DIR unless every digest
# matches. With --checker, the package's Python sources are also unpacked to
# DIR/bfcl_eval_src/ (used only by the parity-fixture generator).
#
# Also written from the same wheel: DIR/bfcl_v4_extra/long_context.json, the
# constants of the package's multi-turn `long_context.py` (the padding the
# long_context category loads) as JSON, which the bfcl-multi workload and
# scorer are granted; its sha256 is checked against the lock's (the same
# bytes as tests/bfcl-multi-parity/gen_multi_parity.py's long_context.json).
#
# Usage: scripts/fetch-bfcl.sh [--checker] DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
checker=0
if [ "${1:-}" = "--checker" ]; then checker=1; shift; fi
dir=${1:?usage: fetch-bfcl.sh [--checker] DIR}
lock="$root/workloads/bfcl-v4/data.lock"
version=$("$root/scripts/lock.py" source "$lock" bfcl-eval version)
wheel_sha=$("$root/scripts/lock.py" source "$lock" bfcl-eval sha256)
dest="$dir/bfcl_v4"
long_context="$dir/$("$root/scripts/lock.py" file "$lock" long_context.json path)"
long_context_sha=$("$root/scripts/lock.py" file "$lock" long_context.json sha256)
files=$("$root/scripts/lock.py" files "$lock" pypi-wheel)

verify_tree() { # verify_tree TREE: every locked bfcl_v4/ file present in TREE with its digest
  (cd "$1" && printf '%s\n' "$files" | awk -F'\t' '{sub("^bfcl_v4/", "", $1); print $2"  "$1}' | sha256sum -c --quiet -)
}

if [ -d "$dest" ] && verify_tree "$dest" 2>/dev/null && { [ $checker = 0 ] || [ -f "$dir/bfcl_eval_src/bfcl_eval/eval_checker/ast_eval/ast_checker.py" ]; } \
   && echo "$long_context_sha  $long_context" | sha256sum -c --quiet - >/dev/null 2>&1; then
  echo "ok       bfcl_v4 ($(printf '%s\n' "$files" | wc -l) files)"
  exit 0
fi
mkdir -p "$dir"
wheels=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}/pip
whl="$wheels/bfcl_eval-$version-py3-none-any.whl"
if [ -f "$whl" ] && ! echo "$wheel_sha  $whl" | sha256sum -c --quiet - >/dev/null 2>&1; then
  # A damaged or substituted cached wheel is never used, nor left for pip to
  # reuse (pip keeps a file already in its download directory).
  echo "note: $whl does not have sha256 $wheel_sha: removed, fetching it again"
  rm -f "$whl"
fi
if ! [ -f "$whl" ]; then
  echo "fetching bfcl-eval==$version (wheel) with pip"
  mkdir -p "$wheels"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" "bfcl-eval==$version"
fi
if ! echo "$wheel_sha  $whl" | sha256sum -c --quiet -; then
  echo "error: $whl does not have sha256 $wheel_sha" >&2
  exit 1
fi
tmp=$(mktemp -d "$dir/.bfcl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
python3 - "$whl" "$tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2])
PY
if ! verify_tree "$tmp/bfcl_eval/data"; then
  echo "error: extracted BFCL data does not match $lock" >&2
  exit 1
fi
python3 - "$tmp/bfcl_eval/eval_checker/multi_turn_eval/func_source_code/long_context.py" "$tmp/long_context.json" <<'PY'
import json, sys
ns = {}
exec(compile(open(sys.argv[1]).read(), "long_context.py", "exec"), ns)
with open(sys.argv[2], "w") as f:
    # As `{k: getattr(long_context, k) for k in dir(long_context) if k.isupper()}`;
    # WATCH_LIST_EXTENSION ends with a literal `...` (Ellipsis).
    json.dump({k: ns[k] for k in sorted(ns) if k.isupper()}, f,
              default=lambda o: {"__ellipsis__": True} if o is Ellipsis else str(o))
PY
if ! echo "$long_context_sha  $tmp/long_context.json" | sha256sum -c --quiet -; then
  echo "error: long_context.json from the wheel does not have sha256 $long_context_sha" >&2
  exit 1
fi
rm -rf "$dest"
mv "$tmp/bfcl_eval/data" "$dest"
mkdir -p "$(dirname "$long_context")"
mv "$tmp/long_context.json" "$long_context"
if [ $checker = 1 ]; then
  rm -rf "$dir/bfcl_eval_src"
  mkdir -p "$dir/bfcl_eval_src"
  mv "$tmp/bfcl_eval" "$dir/bfcl_eval_src/bfcl_eval"
fi
echo "ok       bfcl_v4 -> $dest"
