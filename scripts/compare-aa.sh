#!/usr/bin/env bash
# agentload vs Artificial Analysis's own harness, agentperf-local 0.3.4, side
# by side on AA's default replay (agentperf-default-v1, 168 turns): both
# clients against a fresh `agentload sim --log-requests` each, with the same
# cache namespace; request bodies byte for byte, token counts, AA's result
# files field by field, timing within the simulator's jitter, and the per-turn
# TTFT difference (AA minus agentload). scripts/compare_aa.py says what is
# compared and how; the table is printed and written to OUT_DIR/summary.json.
#
#   scripts/compare-aa.sh [OUT_DIR] [-- extra args for scripts/compare_aa.py run]
#
# OUT_DIR defaults to results/compare-aa (git-ignored). About 2 minutes on two
# cores once installed (each client replays the 168 turns in 30-60 s).
# Exit status: 0 agree, 1 a field differs, 2 a run failed.
#
# What it installs (once, under $AGENTLOAD_CACHE_DIR, default ~/.cache/agentload):
#   aa-agentperf-local-venv  agentperf-local 0.3.4 and every dependency, from
#                            scripts/aa-requirements.txt (pip --require-hashes,
#                            wheels only), with AA_PYTHON (default python3.12, else
#                            ~/.pyenv/versions/3.12.*/bin/python: AA needs >= 3.12)
#   aa-tiktoken              TIKTOKEN_CACHE_DIR for the venv's tiktoken: o200k_base
#                            copied from the tiktoken-rs crate agentload builds with
#                            (its digest checked), named as tiktoken names its cache
#                            file (the sha1 of the ranks' URL), so AA never downloads it
#
# Environment:
#   AGENTLOAD_BIN          agentload binary (default: $CARGO_TARGET_DIR/release/agentload,
#                          built when missing; a debug binary works)
#   AGENTLOAD_PLUGIN_DIR   plugin directory (default: $CARGO_TARGET_DIR/plugins, built by
#                          scripts/build-plugins.sh when aa_replay.wasm is missing)
#   AGENTLOAD_DATA_DIR     holds AA's replays (aa_replays/; scripts/fetch-data.sh)
#   AA_PRESET              agentload's config for AA's default replay
#                          (default configs/aa-agentperf-local.toml)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

cache=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}
target=${CARGO_TARGET_DIR:-$root/target}
venv=${AA_VENV:-$cache/aa-agentperf-local-venv}
tk=$cache/aa-tiktoken
preset=${AA_PRESET:-$root/configs/aa-agentperf-local.toml}

out=results/compare-aa
if [[ $# -gt 0 && $1 != -- ]]; then out=$1; shift; fi
[[ ${1:-} == -- ]] && shift

# ---- agentperf-local 0.3.4, pinned ------------------------------------------------
scripts/aa-venv.sh "$venv" "$tk" >&2

# ---- agentload and its plugins ------------------------------------------------------
bin=${AGENTLOAD_BIN:-$target/release/agentload}
if [[ ! -x $bin ]]; then
    if [[ -n ${AGENTLOAD_BIN:-} ]]; then echo "AGENTLOAD_BIN=$bin is not executable" >&2; exit 2; fi
    echo "building $bin" >&2
    cargo build --release -p agentload
fi
plugins=${AGENTLOAD_PLUGIN_DIR:-$target/plugins}
if [[ ! -f $plugins/aa_replay.wasm ]]; then
    if [[ -n ${AGENTLOAD_PLUGIN_DIR:-} ]]; then echo "no aa_replay.wasm in $plugins" >&2; exit 2; fi
    scripts/build-plugins.sh
fi
export AGENTLOAD_PLUGIN_DIR=$plugins

exec python3 "$root/scripts/compare_aa.py" run \
    --agentload "$bin" --aa-cli "$venv/bin/agentperf-local" --preset "$preset" \
    --tiktoken-cache "$tk" --out "$out" "$@"
