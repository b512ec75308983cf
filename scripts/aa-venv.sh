#!/usr/bin/env bash
# Installs Artificial Analysis's harness, agentperf-local 0.3.4, into its own
# virtual environment, and seeds tiktoken's o200k_base for it offline.
#
#   scripts/aa-venv.sh VENV TIKTOKEN_DIR
#
# - VENV: made with AA_PYTHON (default: python3.12, else the newest
#   ~/.pyenv/versions/3.12.*/bin/python; agentperf-local needs Python >= 3.12),
#   then `pip install --require-hashes --only-binary=:all:` of
#   scripts/aa-requirements.txt (the package and each dependency, wheel sha256
#   pinned). Reinstalled when the requirements change.
# - TIKTOKEN_DIR: o200k_base.tiktoken from the tiktoken-rs crate agentload
#   builds with (the same ranks agentload counts with), its sha256 checked
#   against the digest tiktoken itself expects, under the name tiktoken's cache
#   uses: the sha1 of the ranks' URL. Point TIKTOKEN_CACHE_DIR at it.
# Exits 3 (after saying why) when no Python 3.12 is found.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:?usage: scripts/aa-venv.sh VENV TIKTOKEN_DIR}
tk=${2:?usage: scripts/aa-venv.sh VENV TIKTOKEN_DIR}
reqs=$root/scripts/aa-requirements.txt
O200K_URL=https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken
O200K_SHA256=446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d

stamp=$(sha256sum < "$reqs" | cut -c1-16)
if [[ ! -x $venv/bin/agentperf-local || $(cat "$venv/.agentload-stamp" 2>/dev/null) != "$stamp" ]]; then
    py=${AA_PYTHON:-}
    if [[ -z $py ]]; then
        # The first that runs: a pyenv shim is found but fails when 3.12 is not selected.
        for c in "$(command -v python3.12 || true)" $(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python 2>/dev/null | sort -Vr); do
            if [[ -n $c ]] && "$c" --version >/dev/null 2>&1; then py=$c; break; fi
        done
    fi
    if [[ -z $py ]]; then
        echo "no Python 3.12 (agentperf-local needs >= 3.12; set AA_PYTHON)" >&2
        exit 3
    fi
    echo "installing agentperf-local 0.3.4 into $venv with $py" >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: -r "$reqs"
    echo "$stamp" > "$venv/.agentload-stamp"
fi

name=$(printf %s "$O200K_URL" | sha1sum | cut -d' ' -f1)
if ! echo "$O200K_SHA256  $tk/$name" | sha256sum -c --quiet - >/dev/null 2>&1; then
    crate=$(cd "$root" && cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "tiktoken-rs":
        print(p["manifest_path"].rsplit("/", 1)[0]); break')
    src=$crate/assets/o200k_base.tiktoken
    [[ -f $src ]] || { echo "o200k_base not found in the tiktoken-rs crate ($src)" >&2; exit 2; }
    echo "$O200K_SHA256  $src" | sha256sum -c --quiet - || { echo "$src: unexpected digest" >&2; exit 2; }
    mkdir -p "$tk"
    cp "$src" "$tk/$name.part" && mv "$tk/$name.part" "$tk/$name"
fi
echo "agentperf-local: $venv/bin/agentperf-local; TIKTOKEN_CACHE_DIR=$tk"
