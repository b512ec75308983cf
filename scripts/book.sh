#!/usr/bin/env bash
# Builds the user guide (docs/, an mdBook) into target/book (or $1) and fails
# on a broken internal link: every relative href and src of the built pages
# must name a file of the book, and every #fragment an id on that page.
#
#   scripts/book.sh                 # build and check; open target/book/index.html
#   scripts/book.sh /tmp/book       # somewhere else
#
# mdbook is installed on first use with `cargo install --locked` at a pinned
# version into the agentload cache (~/.cache/agentload/mdbook-<version>), and
# reused from there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
version=0.5.4
cache=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}
mdbook="$cache/mdbook-$version/bin/mdbook"
if ! [ -x "$mdbook" ] || [ "$("$mdbook" --version)" != "mdbook v$version" ]; then
  echo "book: cargo install mdbook $version into $cache/mdbook-$version"
  # The search index is the only feature the built book needs (no server, no watcher).
  CARGO_TARGET_DIR="$cache/mdbook-build" cargo install --locked --quiet mdbook \
    --version "=$version" --no-default-features --features search \
    --root "$cache/mdbook-$version"
  rm -rf "$cache/mdbook-build"
fi
out=$(realpath -m "${1:-target/book}")
"$mdbook" build docs --dest-dir "$out"
python3 scripts/check-links.py "$out"
