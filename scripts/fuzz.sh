#!/usr/bin/env bash
# Runs every fuzz target (host/fuzz, driven by proptest) for SECONDS each
# (default 60), or only the TARGETs named, and prints how many inputs each
# ran. A failure prints the target, the seed and batch that reproduce it
# and the shrunk input, and the script exits non-zero.
#
#   scripts/fuzz.sh [SECONDS] [--seed S] [TARGET...]
#   scripts/fuzz.sh --list
#
# `cargo test` runs the same targets for 256 seeded inputs each
# (host/fuzz/tests/targets.rs). Built with the dev profile by default (the
# test build's artefacts, debug assertions and overflow checks on);
# FUZZ_PROFILE=release for more inputs per second after a release build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
args=()
if [[ ${1:-} =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
  args+=(--seconds "$1")
  shift
else
  args+=(--seconds 60)
fi
cargo run --locked --quiet --profile "${FUZZ_PROFILE:-dev}" -p agentload-fuzz -- "${args[@]}" "$@"
