#!/usr/bin/env bash
# The many-agents measurements of docs/performance.md ("Thousands of agents"):
# one sweep level of AGENTS synthetic agents (agentic-synth, lengths shrunk
# to what a 2-core machine serves: prompts of about 2.6K tokens, outputs of
# 4-64 tokens, AA-AgentPerf's tool delays) against `agentload sim` in its own
# process, each stream at TPS tokens/s. Prints agentload's peak RSS and CPU
# (GNU time) and the phase's send lag and counts (sweep/summary.json).
#
#   scripts/scale-run.sh AGENTS TPS STEADY_S OUT      e.g. 10000 2 60 /tmp/scale
#
# With --rate, the level is open-loop instead: sessions arriving as a Poisson
# process at RATE per second (a rate sweep of one level, `sweep.rates`), each
# then working closed-loop; the sessions in flight follow from the rate and
# their length (Little's law), and AGENTS only sizes the simulator's slots. It
# prints the configured, scheduled and delivered rates, the arrivals' send lag,
# the sessions in flight over the measured window and the harness's CPU per
# request.
#
#   scripts/scale-run.sh --rate RATE AGENTS TPS STEADY_S OUT   e.g. --rate 55 2000 10 60 /tmp/open
#
set -euo pipefail
rate=
if [ "${1:-}" = --rate ]; then rate=$2; shift 2; fi
[ $# -eq 4 ] || { echo "usage: $0 [--rate RATE] AGENTS TPS STEADY_S OUT" >&2; exit 2; }
n=$1 tps=$2 steady=$3 out=$4
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${AGENTLOAD:-${CARGO_TARGET_DIR:-$root/target}/release/agentload}
[ -x "$bin" ] || { echo "no agentload at $bin (cargo build --release, or set AGENTLOAD)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 2; }
# Two sockets per agent on this machine (agentload's and the simulator's).
ulimit -n "$(ulimit -Hn)"
rm -rf "$out"; mkdir -p "$out"
port=18090
cat > "$out/scale.toml" <<TOML
name = "scale"
version = "1.0"
report_dir = "$out/report"
[model]
name = "synthetic"
tokenizer = "none"
[endpoint]
url = "http://127.0.0.1:$port"
stream = true
include_usage = true
[load]
turn_timeout_s = 600.0
[performance]
workload = "agentic-synth"
[performance.settings]
seed = 42
turns_min = 4
turns_max = 8
system_words = 200
max_context = 8192
context = { median = 1500.0, sigma = 0.5, min = 300, max = 4000 }
tool_output = { median = 100.0, sigma = 0.8, min = 10, max = 800 }
tool_call_osl = { median = 8.0, sigma = 0.4, min = 4, max = 24 }
reasoning_osl = { median = 24.0, sigma = 0.4, min = 12, max = 64 }
[sweep]
min_trajectories = 1
min_per_agent = 0
steady_state_s = $steady
warmup_s = 15.0
max_phase_s = $((steady * 3))
max_tokens = 16384
keep_workload_max_tokens = true
salt = true
tool_delay = "recorded"
seed = 42
max_trajectories_per_agent = 40
TOML
if [ -n "$rate" ]; then
  # Open loop: the warm-up lasts long enough for the sessions in flight to
  # build up (a session lasts tens of seconds), and the level runs for
  # its warm-up and steady state, not until a count of sessions ends.
  sed -i "s/^warmup_s = .*/warmup_s = 60.0/; s/^max_phase_s = .*/max_phase_s = $((60 + steady * 2))/" "$out/scale.toml"
  cat >> "$out/scale.toml" <<TOML
rates = [$rate]
[load.arrivals]
of = "sessions"
process = "poisson"
seed = 7
TOML
else
  sed -i "s/^\[sweep\]$/[sweep]\nlevels = [$n]/" "$out/scale.toml"
fi
nice -n "${SIM_NICE:-0}" "$bin" sim --port "$port" --responder fill --tokenizer approx --slots $((n + 16)) \
  --decode-tps "$tps" --decode-batch-slowdown 0 --prefill-tps 100000000 \
  --prefill-chunk-tokens 100000000 --ctx-size 262144 > "$out/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null || true' EXIT
sleep 1
if ! kill -0 "$sim" 2>/dev/null; then
  echo "the simulator did not start ($out/sim.log):" >&2
  cat "$out/sim.log" >&2
  exit 1
fi
if ! /usr/bin/time -v "$bin" run "$out/scale.toml" --out "$out/run" > "$out/run.log" 2> "$out/time.log"; then
  echo "agentload run failed ($out/time.log):" >&2
  sed -n '/Command being timed/q;p' "$out/time.log" >&2
  exit 1
fi
echo "simulator CPU: $(awk '{print ($14+$15)/100}' /proc/$sim/stat) s"
grep -E "Maximum resident|User time|System time|Elapsed" "$out/time.log"
python3 - "$out/run/sweep" <<'PY'
import json, sys
sweep = sys.argv[1]
p = json.load(open(f"{sweep}/summary.json"))["phases"][0]
lag = p["send_lag_ms"]
print(f"level {p.get('rate') or p['level']}: {p['requests']} turns, {p['errors']['failed_turns']} failed, "
      f"window {p['window']['seconds']:.1f} s, send lag p50 {lag['p50']:.2f} ms p99 {lag['p99']:.2f} ms, "
      f"harness CPU {p['harness_cpu_ms_per_request']:.3f} ms/turn")
a = p.get("arrivals")
if a:
    d, l = a["delivered"], a["delivered"]["send_lag_ms"]
    print(f"arrivals: configured {a['configured']['rate']}/s, scheduled {d['scheduled_rate']:.3f}/s, "
          f"delivered {d['rate']:.3f}/s ({d['arrivals']} sessions); send lag p50 {l['p50']:.3f} "
          f"p99 {l['p99']:.3f} max {l['max']:.3f} ms; behind: {a['behind'] or 'no'}")
    # Sessions in flight (first request issued to last answer), sampled every
    # 100 ms over the measured window.
    span = {}
    for line in open(f"{sweep}/{p['turns']}"):
        r = json.loads(line)
        if r.get("issued_ns") is None:
            continue
        s, e = span.get(r["session_id"], (r["issued_ns"], 0))
        span[r["session_id"]] = (min(s, r["issued_ns"]), max(e, r.get("complete_ns") or r["issued_ns"]))
    w = p["window"]
    ticks = range(w["start_ns"], w["end_ns"], 100_000_000)
    flight = [sum(1 for s, e in span.values() if s <= t < e) for t in ticks]
    if flight:
        print(f"sessions in flight over the window: mean {sum(flight) / len(flight):.0f}, "
              f"min {min(flight)}, max {max(flight)}")
PY
