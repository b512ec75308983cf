#!/usr/bin/env bash
# Installs what the test command and the README's commands call, on a fresh
# Debian machine, and says what it installs. Idempotent: what is already
# there is left alone (and nothing is printed for it).
#
#   apt packages: cmake, g++, make, libssl-dev (llama-server build, with
#                 HTTPS), curl (health polls, fetch-data.sh), unzip,
#                 python3 with pip (data wheels, parity fixtures),
#                 chromium-headless-shell and
#                 fonts-dejavu-core (the HTML report check), python3-venv
#                 (kubernetes-validate), iproute2 and util-linux (the
#                 sharded-run test's network and time namespaces)
#   rustup:       the pinned toolchain's clippy and rustfmt, wasm32-wasip2
#
# Runs apt-get as root (CI and the developers' machines are root) or with
# sudo when it is there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

need=()
command -v cmake >/dev/null || need+=(cmake)
{ command -v c++ >/dev/null || command -v g++ >/dev/null; } || need+=(g++)
command -v make >/dev/null || need+=(make)
# llama-server is built with OpenSSL (tests/all/llama_server.rs serves it over TLS).
[ -f /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
command -v curl >/dev/null || need+=(curl)
command -v unzip >/dev/null || need+=(unzip)
command -v python3 >/dev/null || need+=(python3 python3-pip)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need+=(python3-venv)
# tests/all/shards.rs puts a shard in its own network namespace (ip netns, veth)
# with its own monotonic clock (unshare --time).
command -v ip >/dev/null || need+=(iproute2)
command -v unshare >/dev/null || need+=(util-linux)
# tests/all/report.rs renders the HTML reports in a real headless Chromium (and
# its text needs a font).
command -v chromium-headless-shell >/dev/null || need+=(chromium-headless-shell)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
for extra in ${AGENTLOAD_EXTRA_APT:-}; do need+=("$extra"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${need[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The toolchain named in rust-toolchain.toml, with its components and target.
components=$(rustup component list --installed 2>/dev/null || true)
for c in clippy rustfmt; do
  if ! grep -q "^$c" <<<"$components"; then
    echo "install-deps: rustup component add $c"
    rustup component add "$c"
  fi
done
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  echo "install-deps: rustup target add wasm32-wasip2"
  rustup target add wasm32-wasip2
fi
