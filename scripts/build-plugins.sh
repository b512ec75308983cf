#!/usr/bin/env bash
# Builds the WebAssembly plugins (wasm32-wasip2, `plugin` profile) and puts
# the components where agentload looks for them:
#   official plugins -> $TARGET/plugins/<name>.wasm
#   extra plugins    -> $TARGET/plugins/<name>.wasm (not official: never in
#                       the lock; e.g. bfcl-ast-v2, for audits)
#   test fixtures    -> $TARGET/test-plugins/<name>.wasm
#
# The build is reproducible: the toolchain is pinned (rust-toolchain.toml),
# dependencies are locked (Cargo.lock), and source and target paths are
# remapped, so the same sources give the same bytes in any checkout, with any
# CARGO_TARGET_DIR, on any machine.
#
#   --check-lock   fail unless every official plugin's digest is the one in
#                  plugins/official.lock (the test script does this)
#   --update-lock  rewrite plugins/official.lock from this build (deliberate)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=${1:-}
case "$mode" in ""|--check-lock|--update-lock) ;; *) echo "usage: $0 [--check-lock|--update-lock]" >&2; exit 2;; esac
target=${CARGO_TARGET_DIR:-$root/target}
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
official=(coding-replay shell-iou bfcl-single bfcl-ast bfcl-multi bfcl-multi-score agentic-synth trace-replay aa-replay shell-tools)
extras=(bfcl-ast-v2)
fixtures=(misbehave old-workload old-scorer prev-workload v030-workload)
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
# The target folder too (last, so it wins inside a checkout): the SDK's export
# macros are generated into its OUT_DIR, and their panic locations name it.
mkdir -p "$target"
target=$(cd "$target" && pwd)
export CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS="--remap-path-prefix=$root=/agentload --remap-path-prefix=$cargo_home=/cargo --remap-path-prefix=$rustup_home=/rustup --remap-path-prefix=$target=/target"
mkdir -p "$target/plugins" "$target/test-plugins"
# One build of the workload and scorer components: each is a crate on agentload-sdk and the code they
# share is in plain library crates, so no component links another and no
# feature changes what a crate exports.
# The tool environment (shell-tools) builds on its own: its shell pulls in
# features of shared crates (regex, memchr...) that, unified into one build,
# would change every other component's bytes.
args=()
for p in "${official[@]}" "${extras[@]}" "${fixtures[@]}"; do [ "$p" = shell-tools ] || args+=(-p "$p"); done
cargo build --locked --profile plugin --target wasm32-wasip2 "${args[@]}"
cargo build --locked --profile plugin --target wasm32-wasip2 -p shell-tools
for p in "${official[@]}" "${extras[@]}"; do cp "$target/wasm32-wasip2/plugin/${p//-/_}.wasm" "$target/plugins/"; done
for p in "${fixtures[@]}"; do cp "$target/wasm32-wasip2/plugin/${p//-/_}.wasm" "$target/test-plugins/"; done
ls -l "$target/plugins" "$target/test-plugins" | grep wasm

lock="$root/plugins/official.lock"
version_of() { sed -n 's/^version = "\(.*\)"$/\1/p' "$root/plugins/$1/Cargo.toml" | head -1; }
digest_of() { echo "sha256:$(sha256sum "$target/plugins/${1//-/_}.wasm" | cut -d' ' -f1)"; }
wit=$(ls "$root/wit" | sed -n 's/^agentload-plugin@\(.*\)$/agentload:plugin@\1/p' | sort -V | tail -1)
case "$mode" in
  --update-lock)
    {
      echo "# The official agentload plugins: the only components a submission run"
      echo "# accepts. Rewrite only with scripts/build-plugins.sh --update-lock."
      echo "lock_version = 1"
      echo "wit = \"$wit\""
      for p in "${official[@]}"; do
        printf '\n[[plugin]]\nname = "%s"\nversion = "%s"\nfile = "%s.wasm"\ndigest = "%s"\n' \
          "$p" "$(version_of "$p")" "${p//-/_}" "$(digest_of "$p")"
      done
    } > "$lock"
    echo "updated $lock"
    ;;
  --check-lock)
    status=0
    for p in "${official[@]}"; do
      want=$(awk -v n="$p" '$1=="name" && $3=="\""n"\"" {f=1} f && $1=="digest" {gsub(/"/,"",$3); print $3; exit}' "$lock")
      got=$(digest_of "$p")
      if [ "$want" != "$got" ]; then
        echo "error: $p built to $got but plugins/official.lock has ${want:-nothing}" >&2
        echo "       (a deliberate plugin change: scripts/build-plugins.sh --update-lock)" >&2
        status=1
      fi
    done
    [ $status = 0 ] && echo "official plugins match plugins/official.lock"
    exit $status
    ;;
esac
