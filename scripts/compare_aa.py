#!/usr/bin/env python3
"""agentload vs Artificial Analysis's agentperf-local 0.3.4, side by side, on
AA's default replay (agentperf-default-v1: 8 tasks, 168 turns).

Run through scripts/compare-aa.sh (it installs agentperf-local into its own
virtual environment from pinned hashes, seeds o200k_base for tiktoken offline
and finds the agentload binary). Standard library only.

Both clients run the whole replay under AA's defaults (exact output policy,
standard sampling, tool mode none) with the same cache namespace, each
against a fresh `agentload sim` of its own (same settings, `--log-requests`),
so both meet the same server state: the two probe requests, then the 168
turns. Compared:

  1. every request body, byte for byte: the simulator logs each body's length
     and sha256 as it arrived; 170 POSTs each (2 probes + 168 turns), in order.
     A mismatch is listed with the JSON paths where the bodies differ;
  2. every token count of every turn (server prompt/output/cached/uncached,
     local o200k_base, recorded, target) and the turn's other untimed fields
     (ids, success, error, requested max tokens, finish reason, response
     chunks, tool calls, tool delays, normalization token counts, warnings);
  3. every field of summary.json, tasks.json, tools.json and failures.json,
     except the run id, wall-clock times and paths that name the run
     (EXCLUDED) and timing-derived values (TIMED);
  4. timing-derived values within the simulator's own jitter: per turn,
     generation (first to last visible event) within --tolerance-ms plus
     --tolerance-pct; the headline rates and the distributions' p50 within
     --tolerance-pct (with --no-check-timing reported, not failed: on a busy
     machine the jitter is the machine's). The simulator's own pace, from the
     server-side stamps in agentload's records, is printed beside;
  5. the per-turn TTFT and e2e differences (AA minus agentload): the same
     server answers both, so the difference is the two clients' overheads
     (AA: Python, timestamps at its reads' return, the clock started before
     the body is serialised; agentload: kernel arrival stamps, the clock
     started at the request's write).

Exit status 0 when everything agrees, 1 when a field differs, or a timing
is outside the tolerance with --check-timing (the table and OUT/summary.json
say which), 2 when a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tomllib
from pathlib import Path

import compare_processes as processes

# Fields that name the run, its time or its place, not its measurement.
EXCLUDED = {
    "run_id",
    "started_at",
    "ended_at",
    "manifest",  # the manifest's path: AA's bundled copy vs agentload's data directory
    "config.base_url",  # each client has its own simulator (port)
    "config.client_backend",  # python vs agentload
}

# Values computed from timestamps: compared within the tolerance, not exactly.
TIMED_SUFFIXES = ("_ms", "_per_second")
TIMED_TURN = {
    "timing",
    "normalization.generation_ms_per_token",
    "normalization.normalized_generation_ms",
    "normalization.normalized_e2e_latency_ms",
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed(path: str) -> bool:
    """Whether a summary/tasks/tools field is timing-derived."""
    last = path.rsplit(".", 1)[-1]
    if path.startswith("latency_distributions_ms.") and not path.endswith(".count"):
        return True
    if last in ("recorded_duration_ms", "total_recorded_tool_delay_ms", "recorded_tool_delay_ms"):
        return False  # the recording's, not this run's
    if last.endswith(("replayed_duration_ms", "replayed_tool_delay_ms")):
        return False  # the run's pauses: 0 under tool mode none, the recorded ones otherwise
    return last.endswith(TIMED_SUFFIXES) or last == "mean"


def diff(a, b, path: str = "") -> list[tuple[str, object, object]]:
    """Every leaf where two JSON values differ (path, a, b)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            p = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append((p, a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                out.extend(diff(a[k], b[k], p))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [(f"{path}[len]", len(a), len(b))]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(diff(x, y, f"{path}[{i}]"))
        return out
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                       and not isinstance(a, bool) and not isinstance(b, bool)):
        return [(path, a, b)]
    return [] if a == b else [(path, a, b)]


def strip_index(path: str) -> str:
    """`tasks[3].totals.x` -> `tasks.totals.x`."""
    out, depth = [], 0
    for c in path:
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


# ---------------------------------------------------------------- processes


def start_sim(args, req_log: Path, log_path: Path) -> tuple[subprocess.Popen, str]:
    cmd = [args.agentload, "sim", "--port", "0", "--responder", "echo",
           "--ctx-size", str(args.ctx_size), "--prefill-tps", str(args.prefill_tps),
           "--decode-tps", str(args.decode_tps), "--tokenizer", "approx",
           "--log-requests", str(req_log)]
    if args.sim_cpus:
        cmd += ["--cpus", args.sim_cpus]
    return processes.start_sim(cmd, log_path, log)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def toml_text(table: dict, prefix: str = "") -> str:
    """A small TOML writer: scalars and arrays first, then sub-tables."""
    lines, subs = [], []
    for k, v in table.items():
        if isinstance(v, dict):
            subs.append((k, v))
        else:
            lines.append(f"{json.dumps(k)} = {toml_value(v)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in subs:
        name = f"{prefix}.{json.dumps(k)}" if prefix else json.dumps(k)
        out += f"\n[{name}]\n" + toml_text(v, name)
    return out


def agentload_config(args, out: Path) -> Path:
    """The AA preset, with the run's model name and the shared cache namespace."""
    config = tomllib.loads(Path(args.preset).read_text())
    config.setdefault("model", {})["name"] = args.model
    perf = config.setdefault("performance", {})
    settings = perf.setdefault("settings", {})
    settings["cache_namespace"] = args.namespace
    path = out / "agentload.toml"
    path.write_text(toml_text(config))
    return path


# ---------------------------------------------------------------- comparison


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def compare_bodies(aa: list[dict], al: list[dict]) -> dict:
    out = {"aa_posts": len(aa), "agentload_posts": len(al), "identical": 0, "mismatches": []}
    for i, (a, b) in enumerate(zip(aa, al)):
        if a["sha256"] == b["sha256"] and a["bytes"] == b["bytes"]:
            out["identical"] += 1
        else:
            paths = diff(a["body"], b["body"])[:5]
            out["mismatches"].append({"post": i, "aa_bytes": a["bytes"], "agentload_bytes": b["bytes"],
                                      "json_differences": [[p, str(x)[:80], str(y)[:80]] for p, x, y in paths]
                                      or "same JSON, different bytes (key order, spacing or escapes)"})
    out["ok"] = out["aa_posts"] == out["agentload_posts"] and not out["mismatches"]
    return out


def within(a, b, ms: float, pct: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= ms + pct / 100 * max(abs(a), abs(b))


def compare_turns(aa: list[dict], al: list[dict], args) -> dict:
    out = {"turns": [len(aa), len(al)], "token_mismatches": [], "field_mismatches": [],
           "generation_outside_tolerance": [], "ttft_ms_aa_minus_agentload": [],
           "ttfb_ms_aa_minus_agentload": [], "e2e_ms_aa_minus_agentload": [],
           "generation_ms_aa_minus_agentload": []}
    for a, b in zip(aa, al):
        tid = a.get("turn_id")
        for p, x, y in diff(a, b):
            if p.startswith("tokens."):
                out["token_mismatches"].append([tid, p, x, y])
            elif not any(p == t or p.startswith(t + ".") for t in TIMED_TURN):
                out["field_mismatches"].append([tid, p, x, y])
        ta, tb = a["timing"], b["timing"]
        if not within(ta["generation_ms"], tb["generation_ms"], args.tolerance_ms, args.tolerance_pct):
            out["generation_outside_tolerance"].append([tid, ta["generation_ms"], tb["generation_ms"]])
        for key, name in [("time_to_first_token_ms", "ttft"), ("time_to_first_byte_ms", "ttfb"),
                          ("e2e_latency_ms", "e2e"), ("generation_ms", "generation")]:
            if ta[key] is not None and tb[key] is not None:
                out[f"{name}_ms_aa_minus_agentload"].append(ta[key] - tb[key])
    for name in ("ttft", "ttfb", "e2e", "generation"):
        values = out.pop(f"{name}_ms_aa_minus_agentload")
        out[f"{name}_ms_aa_minus_agentload"] = stats(values)
    out["ok"] = out["turns"][0] == out["turns"][1] and not out["token_mismatches"] and not out["field_mismatches"]
    out["timing_ok"] = not out["generation_outside_tolerance"]
    return out


def stats(values: list[float]) -> dict:
    if not values:
        return {"count": 0}
    s = sorted(values)
    q = lambda f: s[min(len(s) - 1, int(round(f * (len(s) - 1))))]
    return {"count": len(s), "mean": statistics.fmean(s), "p5": q(0.05), "p50": q(0.5), "p95": q(0.95),
            "min": s[0], "max": s[-1]}


def compare_file(name: str, a: dict, b: dict, args) -> dict:
    exact, timed_out, timed_ok = [], [], 0
    for p, x, y in diff(a, b):
        key = strip_index(p)
        if key in EXCLUDED:
            continue
        if timed(key):
            if key.endswith("_per_second") or key.endswith(".p50"):
                if not within(x, y, 0, args.tolerance_pct):
                    timed_out.append([p, x, y])
                else:
                    timed_ok += 1
            continue
        exact.append([p, x, y])
    return {"file": name, "differences": exact, "timed_outside_tolerance": timed_out,
            "ok": not exact, "timing_ok": not timed_out}


def sim_ms_per_token(turns: Path) -> dict:
    """The simulator's own decode pace per turn, from the server-side stamps agentload's records keep
    (`agentload_sim`: last token minus first token, over n - 1 tokens): the jitter of the server itself."""
    values = []
    for r in read_log(turns):
        st, usage = r.get("server_timestamps") or {}, r.get("usage") or {}
        n = usage.get("completion_tokens") or 0
        if n >= 2 and "first_token_ns" in st and "last_token_ns" in st:
            values.append((st["last_token_ns"] - st["first_token_ns"]) / 1e6 / (n - 1))
    return stats(values) if values else {}


def headline(s: dict) -> dict:
    d = s["latency_distributions_ms"]
    return {"output_tokens_per_second": s["output_tokens_per_second"],
            "end_to_end_output_tokens_per_second": s["end_to_end_output_tokens_per_second"],
            "ttft_p50_ms": d["time_to_first_token"]["p50"], "ttft_p95_ms": d["time_to_first_token"]["p95"],
            "e2e_p50_ms": d["e2e"]["p50"], "e2e_p95_ms": d["e2e"]["p95"]}


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def run(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for side in ("aa", "agentload"):
        if (out / side).exists():
            subprocess.run(["rm", "-rf", str(out / side)], check=True)
        (out / side).mkdir()
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=args.tiktoken_cache)
    seconds = {}
    # AA's harness.
    sim, url = start_sim(args, out / "aa/requests.jsonl", out / "aa/sim.log")
    try:
        seconds["aa"] = processes.run_logged(
            [args.aa_cli, "run", "--base-url", f"{url}/v1", "--model", args.model, "--output-dir",
             str(out / "aa/run"), "--cache-namespace", args.namespace, "--no-progress"],
            env, out / "aa/run.log", args.timeout, log)
    finally:
        processes.stop(sim)
    # agentload.
    config = agentload_config(args, out / "agentload")
    sim, url = start_sim(args, out / "agentload/requests.jsonl", out / "agentload/sim.log")
    try:
        seconds["agentload"] = processes.run_logged(
            [args.agentload, "run", str(config), "--endpoint", url, "--out", str(out / "agentload/run")],
            env, out / "agentload/run.log", args.timeout, log)
    finally:
        processes.stop(sim)
    aa_dir, al_dir = out / "aa/run", out / "agentload/run/aa"
    report = {
        "agentperf_local": "0.3.4",
        "simulator": {"decode_tps": args.decode_tps, "prefill_tps": args.prefill_tps, "ctx_size": args.ctx_size,
                      "responder": "echo", "tokenizer": "approx"},
        "namespace": args.namespace,
        "wall_s": seconds,
        "bodies": compare_bodies(read_log(out / "aa/requests.jsonl"), read_log(out / "agentload/requests.jsonl")),
        "turns": compare_turns(read_log(aa_dir / "turns.jsonl"), read_log(al_dir / "turns.jsonl"), args),
        "files": [compare_file(n, json.loads((aa_dir / n).read_text()), json.loads((al_dir / n).read_text()), args)
                  for n in ("summary.json", "tasks.json", "tools.json", "failures.json")],
        "tolerance": {"ms": args.tolerance_ms, "pct": args.tolerance_pct},
    }
    aa_sum = json.loads((aa_dir / "summary.json").read_text())
    al_sum = json.loads((al_dir / "summary.json").read_text())
    report["headline"] = {"aa": headline(aa_sum), "agentload": headline(al_sum)}
    exact_ok = report["bodies"]["ok"] and report["turns"]["ok"] and all(f["ok"] for f in report["files"])
    timing_ok = report["turns"]["timing_ok"] and all(f["timing_ok"] for f in report["files"])
    report["sim_decode_ms_per_token"] = {
        "nominal": 1000.0 / args.decode_tps,
        "agentload_server_side": sim_ms_per_token(out / "agentload/run/turns.jsonl"),
    }
    ok = exact_ok and (timing_ok or not args.check_timing)
    report.update(ok=ok, exact_ok=exact_ok, timing_ok=timing_ok)
    (out / "summary.json").write_text(json.dumps(report, indent=2) + "\n")

    b, t = report["bodies"], report["turns"]
    rows = [
        ("request bodies byte for byte", f"{b['identical']} / {b['aa_posts']} identical "
                                         f"(agentload sent {b['agentload_posts']})", b["ok"]),
        ("turns", f"{t['turns'][0]} AA, {t['turns'][1]} agentload", t["turns"][0] == t["turns"][1]),
        ("token counts (every turn, every count)", f"{len(t['token_mismatches'])} differences",
         not t["token_mismatches"]),
        ("other per-turn fields (untimed)", f"{len(t['field_mismatches'])} differences", not t["field_mismatches"]),
        ("per-turn generation within tolerance (timing)",
         f"{len(t['generation_outside_tolerance'])} of {t['turns'][0]} outside", t["timing_ok"]),
    ]
    for f in report["files"]:
        rows.append((f["file"], f"{len(f['differences'])} differences", f["ok"]))
        rows.append((f"{f['file']} rates and p50s within tolerance (timing)",
                     f"{len(f['timed_outside_tolerance'])} outside", f["timing_ok"]))
    print(f"agentload vs agentperf-local 0.3.4 on agentperf-default-v1 (AA {seconds['aa']:.0f} s, "
          f"agentload {seconds['agentload']:.0f} s)\n")
    print("| check | result | |\n|---|---|---|")
    for name, result, good in rows:
        print(f"| {name} | {result} | {'ok' if good else 'DIFFERS'} |")
    print("\n| headline | AA | agentload |\n|---|---|---|")
    for k in report["headline"]["aa"]:
        print(f"| {k} | {fmt(report['headline']['aa'][k])} | {fmt(report['headline']['agentload'][k])} |")
    print("\n| per turn, AA minus agentload (ms) | mean | p5 | p50 | p95 | min | max |\n|---|---|---|---|---|---|---|")
    for name in ("ttft", "ttfb", "e2e", "generation"):
        s = t[f"{name}_ms_aa_minus_agentload"]
        if s.get("count"):
            print(f"| {name.upper()} | " + " | ".join(fmt(s[k]) for k in ("mean", "p5", "p50", "p95", "min", "max"))
                  + " |")
    for what, items in [("body", b["mismatches"]), ("token", t["token_mismatches"]),
                        ("turn field", t["field_mismatches"]), ("generation", t["generation_outside_tolerance"])]:
        for item in items[:10]:
            print(f"{what} differs: {item}")
    for f in report["files"]:
        for item in (f["differences"] + f["timed_outside_tolerance"])[:10]:
            print(f"{f['file']} differs: {item}")
    sim = report["sim_decode_ms_per_token"]
    if sim["agentload_server_side"]:
        print(f"\nsimulator decode, ms per token: nominal {sim['nominal']:.3f}, as its own stamps measured it "
              f"(agentload's run, first to last token per turn): " +
              ", ".join(f"{k} {fmt(v)}" for k, v in sim["agentload_server_side"].items() if k != "count"))
    verdict = "AGREE" if ok else "DIFFER"
    if exact_ok and not timing_ok:
        verdict += " (exact fields agree; timing outside tolerance" + \
            (")" if args.check_timing else ", not checked: --no-check-timing)")
    print(f"\n{verdict}: {out / 'summary.json'}")
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--agentload", required=True)
    r.add_argument("--aa-cli", required=True, help="the venv's agentperf-local")
    r.add_argument("--preset", required=True, help="agentload's AA default-replay config")
    r.add_argument("--tiktoken-cache", required=True, help="TIKTOKEN_CACHE_DIR holding o200k_base")
    r.add_argument("--out", required=True)
    r.add_argument("--model", default="agentload-sim", help="the simulator's model id (what /v1/models lists)")
    r.add_argument("--namespace", default=" ".join("31415926535897932384626433832795"))
    r.add_argument("--decode-tps", type=float, default=1000.0)
    r.add_argument("--prefill-tps", type=float, default=200000.0)
    r.add_argument("--ctx-size", type=int, default=65536)
    r.add_argument("--sim-cpus", default="", help="pin each simulator (e.g. 1)")
    r.add_argument("--tolerance-ms", type=float, default=3.0)
    r.add_argument("--tolerance-pct", type=float, default=10.0)
    r.add_argument("--timeout", type=float, default=900.0)
    r.add_argument("--check-timing", action=argparse.BooleanOptionalAction, default=True,
                   help="fail when timing-derived values are outside the tolerance (default); "
                        "--no-check-timing reports them only (a loaded machine's own jitter)")
    args = p.parse_args()
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
