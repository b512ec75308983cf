#!/usr/bin/env bash
# agentload vs GuideLLM, side by side: the same N prompts against one
# `agentload sim` (echo responder, fixed timing model) at concurrency 1,
# GuideLLM then agentload, alternating; per tool the timestamp error (client
# TTFT minus the simulator's server-side first-token time), client CPU per
# request (user+sys of the client process tree) and requests/s, plus the
# ratios GuideLLM / agentload. A benchmark, not part of scripts/test.sh.
#
#   scripts/compare-guidellm.sh [OUT_DIR] [-- extra args for scripts/compare_guidellm.py]
#
# OUT_DIR defaults to results/compare-guidellm (git-ignored results/); the
# table is printed and written as OUT_DIR/summary.json (per request:
# OUT_DIR/requests.jsonl). Takes ~3 minutes with the defaults (200 prompts,
# 2 alternations, each with a 20-prompt start-up-cost run per tool). The
# method (and why GuideLLM's runs get a small measurement hook) is in
# scripts/compare_guidellm.py's docstring. On a shared machine pass
# `-- --wait-load 3` to wait for a quiet moment before each run. Helper
# options (see `python3 scripts/compare_guidellm.py --help`): --n, --n-small, --repeats, --output-tokens, --prompt-words, --prefill-tps,
# --decode-tps, --time-scale, --seed.
#
# Environment:
#   AGENTLOAD_BIN         agentload binary (default: $CARGO_TARGET_DIR/release/agentload,
#                         built with `cargo build --release -p agentload` when missing;
#                         a debug binary works but its timings are worse)
#   AGENTLOAD_PLUGIN_DIR  plugin directory (default: $CARGO_TARGET_DIR/plugins, built by
#                         scripts/build-plugins.sh when coding_replay.wasm is missing)
#   GUIDELLM_VENV         GuideLLM's virtual environment (default:
#                         $AGENTLOAD_CACHE_DIR/guidellm-venv, i.e. ~/.cache/agentload/guidellm-venv);
#                         created with GuideLLM $GUIDELLM_VERSION from PyPI when missing
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

GUIDELLM_VERSION=0.8.1
cache=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}
venv=${GUIDELLM_VENV:-$cache/guidellm-venv}
target=${CARGO_TARGET_DIR:-$root/target}

out=results/compare-guidellm
if [[ $# -gt 0 && $1 != -- ]]; then out=$1; shift; fi
[[ ${1:-} == -- ]] && shift

# ---- GuideLLM, pinned ---------------------------------------------------------
have=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('guidellm'))" 2>/dev/null || true)
if [[ $have != "$GUIDELLM_VERSION" ]]; then
    echo "installing guidellm==$GUIDELLM_VERSION into $venv (found: ${have:-none})" >&2
    [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "guidellm==$GUIDELLM_VERSION"
fi

# ---- agentload and its plugins -------------------------------------------------
bin=${AGENTLOAD_BIN:-$target/release/agentload}
if [[ ! -x $bin ]]; then
    if [[ -n ${AGENTLOAD_BIN:-} ]]; then echo "AGENTLOAD_BIN=$bin is not executable" >&2; exit 1; fi
    echo "building $bin" >&2
    cargo build --release -p agentload
fi
plugins=${AGENTLOAD_PLUGIN_DIR:-$target/plugins}
if [[ ! -f $plugins/coding_replay.wasm || ! -f $plugins/shell_iou.wasm ]]; then
    if [[ -n ${AGENTLOAD_PLUGIN_DIR:-} ]]; then echo "no coding_replay.wasm / shell_iou.wasm in $plugins" >&2; exit 1; fi
    scripts/build-plugins.sh
fi

exec python3 "$root/scripts/compare_guidellm.py" \
    --agentload "$bin" --guidellm "$venv/bin/guidellm" --plugin-dir "$plugins" --out "$out" "$@"
