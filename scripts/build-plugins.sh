#!/usr/bin/env bash
# Builds the WebAssembly plugins (wasm32-wasip2, `plugin` profile) and puts
# the components where agentload looks for them:
#   official plugins -> $TARGET/plugins/<name>.wasm
#   test fixtures    -> $TARGET/test-plugins/<name>.wasm
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
official=(coding-replay shell-iou)
fixtures=(misbehave)
args=()
for p in "${official[@]}" "${fixtures[@]}"; do args+=(-p "$p"); done
cargo build --locked --profile plugin --target wasm32-wasip2 "${args[@]}"
mkdir -p "$target/plugins" "$target/test-plugins"
for p in "${official[@]}"; do cp "$target/wasm32-wasip2/plugin/${p//-/_}.wasm" "$target/plugins/"; done
for p in "${fixtures[@]}"; do cp "$target/wasm32-wasip2/plugin/${p//-/_}.wasm" "$target/test-plugins/"; done
ls -l "$target/plugins" "$target/test-plugins" | grep wasm
