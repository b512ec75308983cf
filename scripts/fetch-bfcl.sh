#!/usr/bin/env bash
# Fetches the BFCL v4 data (Apache-2.0) into DIR/bfcl_v4/ and verifies it.
#
# The data ships inside the Python package bfcl-eval==2026.3.23
# (bfcl_eval/data/). The wheel is downloaded with pip (no dependencies, no
# install), its sha256 checked, and every extracted file checked against
# workloads/bfcl-v4.manifest. Nothing is written to DIR unless every digest
# matches. With --checker, the package's Python sources are also unpacked to
# DIR/bfcl_eval_src/ (used only by the parity-fixture generator).
#
# Also written from the same wheel: DIR/bfcl_v4_extra/long_context.json, the
# constants of the package's multi-turn `long_context.py` (the padding the
# long_context category loads) as JSON, which the bfcl-multi workload and
# scorer are granted; its sha256 is checked against the one below (the same
# bytes as tests/bfcl-multi-parity/gen_multi_parity.py's long_context.json;
# also in workloads/data.lock, so that the host checks it when granting it).
#
# Usage: scripts/fetch-bfcl.sh [--checker] DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
checker=0
if [ "${1:-}" = "--checker" ]; then checker=1; shift; fi
dir=${1:?usage: fetch-bfcl.sh [--checker] DIR}
version=2026.3.23
wheel_sha=3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a
manifest="$root/workloads/bfcl-v4.manifest"
dest="$dir/bfcl_v4"
long_context="$dir/bfcl_v4_extra/long_context.json"
long_context_sha=2ef89ec119985adc742b2b0efcc6de65d75f602d402ba39b4915d6bafa387279

verify_tree() { # verify_tree TREE: every manifest entry present with its digest
  (cd "$1" && grep -v '^\s*#' "$manifest" | awk 'NF==3 {print $3"  "$1}' | sha256sum -c --quiet -)
}

if [ -d "$dest" ] && verify_tree "$dest" 2>/dev/null && { [ $checker = 0 ] || [ -f "$dir/bfcl_eval_src/bfcl_eval/eval_checker/ast_eval/ast_checker.py" ]; } \
   && echo "$long_context_sha  $long_context" | sha256sum -c --quiet - >/dev/null 2>&1; then
  echo "ok       bfcl_v4 ($(grep -vc '^\s*#' "$manifest") files)"
  exit 0
fi
mkdir -p "$dir"
wheels=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}/pip
whl="$wheels/bfcl_eval-$version-py3-none-any.whl"
if ! [ -f "$whl" ] || ! echo "$wheel_sha  $whl" | sha256sum -c --quiet - 2>/dev/null; then
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
  echo "error: extracted BFCL data does not match $manifest" >&2
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
