#!/usr/bin/env python3
"""agentload vs GuideLLM, side by side, against one `agentload sim` at concurrency 1.

Run through scripts/compare-guidellm.sh (it installs GuideLLM and finds the
agentload binary). Standard library only.

Both tools send the same N prompts (one user message each, ~205 prompt
tokens, 64 completion tokens) to the same simulator (echo responder, one slot,
fixed timing model: by default 20,000 prompt tok/s, 1,000 decode tok/s, so
~73 ms a request), one request at a time. Per repeat: GuideLLM with
`--n-small` prompts, agentload with `--n-small`, GuideLLM with N, agentload
with N. Each client runs as a child process reaped with os.wait4, so its
user+sys CPU time includes every process it waited for (GuideLLM's spawned
worker process, agentload's threads). CPU per request is reported two ways:
run total / N (what a run of N costs, start-up included) and marginal
((CPU of the N runs - CPU of the small runs) / (N - n_small): the steady-state
cost of one more request, start-up excluded). Requests/s = requests / (last
completion - first request start), from each tool's own timestamps.

Timestamp error, per request = client TTFT - the simulator's server-side
first-token time (`agentload_sim.first_token_ns`: request head read -> first
token chunk handed to the response body). agentload records that field in
turns.jsonl. GuideLLM does not keep unknown response fields, so its runs get a
measurement hook: a `sitecustomize.py` on PYTHONPATH (loaded by the main and
the spawned worker processes) that wraps the chat-completions handler's
`extract_choices_and_usage` to copy a chunk's `agentload_sim` object into the
handler's `response_metrics`, which GuideLLM already serialises per request.
That is one dict lookup per streamed chunk; nothing else in GuideLLM changes.

What each client's TTFT is: agentload's `issued` is taken after the body is
serialised, just before the request goes to the (kept-alive) connection; its
first token is the arrival of the network read holding the first
token-bearing chunk, stamped before parsing. GuideLLM's `request_start` is
time.time() at httpcore's send_request_headers.started trace event; its first
token is time.time() when its worker's event loop gets, from httpx's
aiter_lines, the first SSE line whose delta has non-empty content, reasoning
or tool calls (a role-only chunk does not count), after the bytes were read,
decoded, split into lines and the preceding lines JSON-parsed. The simulator
writes the role chunk and the first token's chunk together, so both clients
time the same read. The first request of each run is left out of the error
statistics (connection set-up falls on different sides of the two tools'
start stamps).

Why not pair GuideLLM's requests with the server times of agentload's run of
the same prompt: with a fixed timing model the simulated time is identical,
but the simulator wakes on tokio's 1 ms timer tick, so the server-side
first-token time of the same prompt varies by up to ~1 ms from one request to
the next - more than the errors measured here. The paired estimate is still
computed (`guidellm_paired_estimate` in the JSON) to show the difference.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import compare_processes as processes

WORDS = (
    "the build fails when the parser reads an empty config file so check the "
    "loader handle missing keys return defaults write a test for each case run "
    "cargo test again then commit patch review diff refactor module function "
    "variable error result option stream token server client request response "
    "latency queue batch cache prefix decode prefill schedule worker thread"
).split()

HOOK = '''\
# Measurement hook for scripts/compare_guidellm.py: keep the simulator's
# server-side timestamps (`agentload_sim` on the closing chunks) in the
# per-request `response_metrics` that GuideLLM writes to its JSON report.
# It imports nothing itself: a finder patches GuideLLM's request handlers when
# the tool imports them. (Importing GuideLLM here would run in every Python
# process on this PYTHONPATH, multiprocessing's resource tracker included,
# which then starts another tracker, and so on.)
import sys

_TARGET = "guidellm.backends.openai.request_handlers"


def _patch(module):
    cls = module.TextCompletionsRequestHandler
    orig = cls.extract_choices_and_usage

    def extract_choices_and_usage(self, response):
        stamps = response.get("agentload_sim")
        if stamps is not None:
            self.response_metrics = dict(self.response_metrics or {}, agentload_sim=stamps)
        return orig(self, response)

    cls.extract_choices_and_usage = extract_choices_and_usage


class _PatchFinder:
    def find_spec(self, name, path=None, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            try:
                _patch(module)
            except Exception as exc:  # never break the tool; missing stamps are reported
                print(f"compare_guidellm hook not installed: {exc!r}", file=sys.stderr)

        spec.loader.exec_module = exec_and_patch
        return spec


sys.meta_path.insert(0, _PatchFinder())
'''


def log(msg: str) -> None:
    print(f"[compare-guidellm {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data


def make_prompts(n: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    prompts = []
    for i in range(n):
        body = " ".join(rng.choice(WORDS) for _ in range(words))
        # A distinct start per prompt, so the simulator's per-slot prefix reuse
        # matches (almost) nothing of the previous prompt.
        prompts.append(f"{rng.getrandbits(32):08x} request {i}: {body}")
    return prompts


def write_data(data_dir: Path, prompts: list[str], tag: str) -> tuple[Path, Path]:
    """The same prompts as a trajectory JSONL (agentload) and a prompt JSONL (GuideLLM)."""
    traj = data_dir / f"trajectories-{tag}.jsonl"
    with traj.open("w") as f:
        meta = {
            "_type": "dataset_metadata",
            "version": 1,
            "description": "compare-guidellm: one user turn per conversation",
        }
        f.write(json.dumps(meta) + "\n")
        for i, p in enumerate(prompts):
            cid = f"p{i:05d}"
            f.write(json.dumps({"conversation_id": cid, "turn": 1, "role": "user", "content": p}) + "\n")
            f.write(json.dumps({"conversation_id": cid, "turn": 2, "role": "assistant", "content": "ok"}) + "\n")
    gd = data_dir / f"prompts-{tag}.jsonl"
    with gd.open("w") as f:
        for p in prompts:
            f.write(json.dumps({"prompt": p}) + "\n")
    return traj, gd


def agentload_config(path: Path, traj: Path, url: str, n: int, out_tokens: int) -> Path:
    path.write_text(
        f'''name = "compare-guidellm"
data_dir = "{traj.parent}"
[model]
name = "agentload-sim"
tokenizer = "none"
[endpoint]
url = "{url}"
stream = true
include_usage = true
[load]
concurrency = 1
turn_timeout_s = 60.0
[performance]
workload = "coding-replay"
scorer = "shell-iou"
[performance.data]
trajectories = "{traj.name}"
[performance.settings]
num_trajectories_to_issue = {n}
inject_tool_delay = false
temperature = 0.0
seed = 42
max_completion_tokens = {out_tokens}
'''
    )
    return path


# ---------------------------------------------------------------- processes


def run_measured(cmd: list[str], env: dict, log_path: Path, cwd: Path) -> dict:
    """Runs cmd to completion; its CPU time (and its reaped children's) via wait4."""
    with log_path.open("w") as logf:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=logf, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n{tail}")
    return {
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "wall_s": wall,
        "max_rss_kib": ru.ru_maxrss,
    }


def reap_strays(hook_dir: Path, kill: bool = True) -> int:
    """Counts (and kills) leftover processes of ours: those whose PYTHONPATH holds hook_dir."""
    mark = f"PYTHONPATH={hook_dir}".encode()
    killed = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(v.startswith(mark) for v in env):
            if not kill:
                killed += 1
                continue
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def wait_for_quiet(limit: float | None, max_s: float) -> None:
    if limit is None:
        return
    t0 = time.monotonic()
    while os.getloadavg()[0] >= limit and time.monotonic() - t0 < max_s:
        time.sleep(2)
    if os.getloadavg()[0] >= limit:
        log(f"load average still {os.getloadavg()[0]:.2f} after {max_s:.0f} s; running anyway")


def start_sim(args, log_path: Path) -> tuple[subprocess.Popen, str]:
    cmd = [
        args.agentload, "sim", "--port", "0", "--responder", "echo", "--tokenizer", "approx",
        "--prefill-tps", str(args.prefill_tps), "--decode-tps", str(args.decode_tps),
        "--time-scale", str(args.time_scale),
    ]
    return processes.start_sim(cmd, log_path, log)


# ---------------------------------------------------------------- parsing


def parse_agentload(run_dir: Path, index: dict[str, int]) -> dict:
    reqs, failed = [], 0
    with (run_dir / "turns.jsonl").open() as f:
        for line in f:
            t = json.loads(line)
            if t.get("status") != "completed" or t.get("first_token_ns") is None:
                failed += 1
                continue
            server = (t.get("server_timestamps") or {}).get("first_token_ns")
            ttft_ns = t["first_token_ns"] - t["issued_ns"]
            reqs.append(
                {
                    "prompt": int(t["session_id"][1:]),
                    "start_s": t["issued_ns"] / 1e9,
                    "end_s": t["complete_ns"] / 1e9,
                    "ttft_us": ttft_ns / 1e3,
                    "server_first_token_us": None if server is None else server / 1e3,
                    "prompt_tokens": (t.get("usage") or {}).get("prompt_tokens"),
                    "output_tokens": (t.get("usage") or {}).get("completion_tokens"),
                }
            )
    reqs.sort(key=lambda r: r["start_s"])
    return {"requests": reqs, "failed": failed}


def parse_guidellm(report: Path, index: dict[str, int]) -> dict:
    d = json.loads(report.read_text())
    bench = d["benchmarks"][0]
    reqs = []
    for r in bench["requests"]["successful"]:
        body = json.loads(r["request_args"])["body"]
        content = body["messages"][-1]["content"]
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        tm = r["info"]["timings"]
        stamps = (r.get("response_metrics") or {}).get("agentload_sim") or {}
        server = stamps.get("first_token_ns")
        reqs.append(
            {
                "prompt": index[text],
                "start_s": tm["request_start"],
                "end_s": tm["request_end"],
                # GuideLLM's own TTFT: first_token_iteration - request_start
                "ttft_us": r["time_to_first_token_ms"] * 1e3,
                "server_first_token_us": None if server is None else server / 1e3,
                "prompt_tokens": r.get("prompt_tokens"),
                "output_tokens": r.get("output_tokens"),
            }
        )
    reqs.sort(key=lambda r: r["start_s"])
    failed = len(bench["requests"]["errored"]) + len(bench["requests"]["incomplete"])
    return {"requests": reqs, "failed": failed}


# ---------------------------------------------------------------- statistics


def pct(values: list[float], q: float) -> float | None:
    """Percentile with linear interpolation (numpy's default)."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def dist(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": pct(values, 50),
        "p90": pct(values, 90),
        "p99": pct(values, 99),
        "max": max(values),
        "min": min(values),
        "mean": statistics.fmean(values),
    }


def run_stats(parsed: dict, usage: dict, n: int) -> dict:
    reqs = parsed["requests"]
    # Skip each run's first request: it may pay for connection setup, which the
    # two tools put on different sides of their start timestamp.
    warm = reqs[1:]
    errors = [r["ttft_us"] - r["server_first_token_us"] for r in warm if r["server_first_token_us"] is not None]
    span = reqs[-1]["end_s"] - reqs[0]["start_s"] if reqs else float("nan")
    return {
        "requests": len(reqs),
        "failed": parsed["failed"],
        "missing_server_stamps": sum(r["server_first_token_us"] is None for r in warm),
        "ttft_error_us": dist(errors),
        "ttft_us": dist([r["ttft_us"] for r in warm]),
        "server_first_token_us": dist([r["server_first_token_us"] for r in warm if r["server_first_token_us"] is not None]),
        "requests_per_s": len(reqs) / span if span > 0 else None,
        "cpu": usage,
        "cpu_ms_per_request_total": 1e3 * usage["cpu_s"] / n,
        "prompt_tokens": sorted({r["prompt_tokens"] for r in reqs}),
        "output_tokens": sorted({r["output_tokens"] for r in reqs}),
    }


# ---------------------------------------------------------------- main


def versions(args) -> dict:
    gpy = str(Path(args.guidellm).parent / "python")
    gv = subprocess.run(
        [gpy, "-c", "import importlib.metadata as m, sys; print(m.version('guidellm'), m.version('httpx'), sys.version.split()[0])"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    al = subprocess.run([args.agentload, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    repo = Path(__file__).resolve().parent.parent
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
    binary = Path(args.agentload).resolve()
    return {
        "agentload": al,
        "agentload_binary": str(binary),
        "agentload_binary_mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(binary.stat().st_mtime)),
        "repo_commit": commit + ("+dirty" if dirty else ""),
        "guidellm": gv[0],
        "httpx": gv[1],
        "guidellm_python": gv[2],
        "host": f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs",
        "load_average_at_start": os.getloadavg(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agentload", required=True, help="agentload binary")
    ap.add_argument("--guidellm", required=True, help="guidellm entry point (inside its venv)")
    ap.add_argument("--plugin-dir", required=True, help="AGENTLOAD_PLUGIN_DIR")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--n", type=int, default=200, help="prompts per measured run")
    ap.add_argument("--n-small", type=int, default=20, help="prompts of the start-up-cost run (0: skip)")
    ap.add_argument("--repeats", type=int, default=2, help="GuideLLM/agentload alternations")
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=120)
    ap.add_argument("--prefill-tps", type=float, default=20000)
    ap.add_argument("--decode-tps", type=float, default=1000)
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--wait-load", type=float, default=None,
                    help="before each run, wait until the 1-minute load average is below this (shared machines)")
    ap.add_argument("--wait-max-s", type=float, default=300, help="longest wait for --wait-load per run")
    args = ap.parse_args()

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(exist_ok=True)
    data_dir = out / "data"
    data_dir.mkdir(exist_ok=True)
    hook_dir = out / "guidellm-hook"
    hook_dir.mkdir(exist_ok=True)
    (hook_dir / "sitecustomize.py").write_text(HOOK)

    ver = versions(args)
    log("versions: " + json.dumps(ver))

    prompts = make_prompts(args.n, args.prompt_words, args.seed)
    index = {p: i for i, p in enumerate(prompts)}
    sizes = {"n": args.n}
    if args.n_small:
        sizes["small"] = args.n_small
    files = {tag: write_data(data_dir, prompts[:k], tag) for tag, k in sizes.items()}

    base_env = dict(os.environ)
    al_env = dict(base_env, AGENTLOAD_PLUGIN_DIR=args.plugin_dir)
    g_env = dict(
        base_env,
        PYTHONPATH=str(hook_dir) + (os.pathsep + base_env["PYTHONPATH"] if base_env.get("PYTHONPATH") else ""),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        DO_NOT_TRACK="1",
    )

    sim, url = start_sim(args, out / "sim.log")
    runs = []
    try:
        log(f"simulator at {url}")

        def run_tool(tool: str, tag: str, rep: int) -> None:
            wait_for_quiet(args.wait_load, args.wait_max_s)
            load_before = os.getloadavg()[0]
            traj, gdata = files[tag]
            n = sizes[tag]
            name = f"{tool}-{tag}-r{rep}"
            rdir = out / "runs" / name
            if tool == "guidellm":
                rdir.mkdir(exist_ok=True)
                report = rdir / "benchmarks.json"
                cmd = [
                    args.guidellm, "run",
                    "--backend", f"kind=openai_http,target={url},max_tokens={args.output_tokens}",
                    "--profile", "kind=synchronous",
                    "--data", f"kind=json_file,path={gdata}",
                    "--constraint", f"kind=max_requests,count={n}",
                    "--output", f"kind=json,path={report}",
                    "--disable-console-interactive",
                ]
                log(f"{name}: {' '.join(cmd)}")
                usage = run_measured(cmd, g_env, out / "runs" / f"{name}.log", rdir)
                # multiprocessing's resource tracker outlives GuideLLM briefly.
                for _ in range(20):
                    if not reap_strays(hook_dir, kill=False):
                        break
                    time.sleep(0.1)
                if strays := reap_strays(hook_dir):
                    log(f"{name}: killed {strays} leftover GuideLLM processes")
                parsed = parse_guidellm(report, index)
            else:
                cfg = agentload_config(out / "runs" / f"{name}.toml", traj, url, n, args.output_tokens)
                cmd = [args.agentload, "run", str(cfg), "--mode", "perf", "--endpoint", url, "--out", str(rdir)]
                log(f"{name}: {' '.join(cmd)}")
                usage = run_measured(cmd, al_env, out / "runs" / f"{name}.log", out)
                parsed = parse_agentload(rdir, index)
            st = run_stats(parsed, usage, n)
            st["load_average_1m"] = {"before": load_before, "after": os.getloadavg()[0]}
            e = st["ttft_error_us"]
            log(
                f"{name}: {st['requests']} ok, {st['failed']} failed, error p50 {e.get('p50', float('nan')):.0f} us "
                f"p99 {e.get('p99', float('nan')):.0f} us, cpu {usage['cpu_s']:.2f} s, wall {usage['wall_s']:.1f} s"
            )
            runs.append({"tool": tool, "size": tag, "n": n, "repeat": rep, "cmd": cmd, "stats": st, "parsed": parsed})

        for rep in range(args.repeats):
            for tag in ("small", "n") if args.n_small else ("n",):
                for tool in ("guidellm", "agentload"):
                    run_tool(tool, tag, rep)
    finally:
        processes.stop(sim, timeout=10)

    with (out / "requests.jsonl").open("w") as f:
        for r in runs:
            for q in r["parsed"]["requests"]:
                f.write(json.dumps({"tool": r["tool"], "size": r["size"], "repeat": r["repeat"]} | q) + "\n")
    summary = summarize(args, ver, runs, url)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print_table(summary)
    print(f"\nresults in {out}/summary.json, per request in requests.jsonl (per-run logs and reports in {out}/runs)")


def summarize(args, ver: dict, runs: list[dict], url: str) -> dict:
    tools = {}
    for tool in ("guidellm", "agentload"):
        big = [r for r in runs if r["tool"] == tool and r["size"] == "n"]
        small = [r for r in runs if r["tool"] == tool and r["size"] == "small"]
        errors, ttft = [], []
        for r in big:
            for q in r["parsed"]["requests"][1:]:
                if q["server_first_token_us"] is not None:
                    errors.append(q["ttft_us"] - q["server_first_token_us"])
                ttft.append(q["ttft_us"])
        cpu_big = statistics.fmean(r["stats"]["cpu"]["cpu_s"] for r in big)
        t = {
            "runs": len(big),
            "requests": sum(r["stats"]["requests"] for r in big),
            "failed": sum(r["stats"]["failed"] for r in big),
            "missing_server_stamps": sum(r["stats"]["missing_server_stamps"] for r in big),
            "ttft_error_us": dist(errors),
            "ttft_us": dist(ttft),
            "cpu_s_per_run": cpu_big,
            "cpu_ms_per_request_total": 1e3 * cpu_big / args.n,
            "requests_per_s": statistics.fmean(r["stats"]["requests_per_s"] for r in big),
            "wall_s_per_run": statistics.fmean(r["stats"]["cpu"]["wall_s"] for r in big),
            "load_average_1m_per_run": [r["stats"]["load_average_1m"] for r in big],
            "per_run": [{k: v for k, v in r["stats"].items()} | {"repeat": r["repeat"], "n": r["n"]} for r in big + small],
        }
        if small:
            cpu_small = statistics.fmean(r["stats"]["cpu"]["cpu_s"] for r in small)
            t["cpu_s_small_run"] = cpu_small  # mean over the small runs
            t["cpu_ms_per_request_marginal"] = 1e3 * (cpu_big - cpu_small) / (args.n - args.n_small)
            t["cpu_s_fixed_estimate"] = cpu_small - args.n_small * (cpu_big - cpu_small) / (args.n - args.n_small)
        tools[tool] = t

    # The alternative (not used for the table): GuideLLM's TTFT minus the server
    # time agentload's runs saw for the same prompt (their median).
    server_by_prompt: dict[int, list[float]] = {}
    for r in runs:
        if r["tool"] == "agentload":
            for q in r["parsed"]["requests"]:
                if q["server_first_token_us"] is not None:
                    server_by_prompt.setdefault(q["prompt"], []).append(q["server_first_token_us"])
    paired = [
        q["ttft_us"] - statistics.median(server_by_prompt[q["prompt"]])
        for r in runs
        if r["tool"] == "guidellm" and r["size"] == "n"
        for q in r["parsed"]["requests"][1:]
        if q["prompt"] in server_by_prompt
    ]
    g, a = tools["guidellm"], tools["agentload"]

    def ratio(x, y):
        return None if x is None or y in (None, 0) else x / y

    ratios = {
        "ttft_error_p50": ratio(g["ttft_error_us"].get("p50"), a["ttft_error_us"].get("p50")),
        "ttft_error_p99": ratio(g["ttft_error_us"].get("p99"), a["ttft_error_us"].get("p99")),
        "cpu_ms_per_request_total": ratio(g["cpu_ms_per_request_total"], a["cpu_ms_per_request_total"]),
        "cpu_ms_per_request_marginal": ratio(g.get("cpu_ms_per_request_marginal"), a.get("cpu_ms_per_request_marginal")),
        "requests_per_s": ratio(g["requests_per_s"], a["requests_per_s"]),
    }
    return {
        "versions": ver,
        "setup": {
            "simulator": {
                "url": url,
                "responder": "echo",
                "tokenizer": "approx",
                "prefill_tps": args.prefill_tps,
                "decode_tps": args.decode_tps,
                "time_scale": args.time_scale,
                "slots": 1,
            },
            "prompts": args.n,
            "prompts_small_run": args.n_small,
            "prompt_words": args.prompt_words,
            "output_tokens": args.output_tokens,
            "concurrency": 1,
            "repeats": args.repeats,
            "order": "per repeat: GuideLLM small, agentload small, GuideLLM N, agentload N",
            "error_definition": "client TTFT - agentload_sim.first_token_ns, first request of each run excluded",
            "guidellm_server_times": "measurement hook (sitecustomize.py) keeping agentload_sim in response_metrics",
        },
        "tools": tools,
        "ratios_guidellm_over_agentload": ratios,
        "guidellm_paired_estimate": {
            "what": "GuideLLM TTFT minus the median server first-token time agentload's runs saw for the same prompt",
            "ttft_error_us": dist(paired),
        },
    }


def print_table(s: dict) -> None:
    g, a, r = s["tools"]["guidellm"], s["tools"]["agentload"], s["ratios_guidellm_over_agentload"]
    v = s["versions"]

    def f(x, fmt="{:.1f}"):
        return "-" if x is None else fmt.format(x)

    rows = [
        ("TTFT error p50 (us)", g["ttft_error_us"].get("p50"), a["ttft_error_us"].get("p50"), r["ttft_error_p50"]),
        ("TTFT error p99 (us)", g["ttft_error_us"].get("p99"), a["ttft_error_us"].get("p99"), r["ttft_error_p99"]),
        ("TTFT error mean (us)", g["ttft_error_us"].get("mean"), a["ttft_error_us"].get("mean"), None),
        ("CPU ms / request (run total / N)", g["cpu_ms_per_request_total"], a["cpu_ms_per_request_total"], r["cpu_ms_per_request_total"]),
        ("CPU ms / request (marginal)", g.get("cpu_ms_per_request_marginal"), a.get("cpu_ms_per_request_marginal"), r["cpu_ms_per_request_marginal"]),
        ("CPU s fixed (start-up estimate)", g.get("cpu_s_fixed_estimate"), a.get("cpu_s_fixed_estimate"), None),
        ("requests / s", g["requests_per_s"], a["requests_per_s"], r["requests_per_s"]),
        ("client TTFT p50 (us)", g["ttft_us"].get("p50"), a["ttft_us"].get("p50"), None),
    ]
    print()
    print(f"GuideLLM {v['guidellm']} (httpx {v['httpx']}, Python {v['guidellm_python']}) vs {v['agentload']} "
          f"({v['agentload_binary']}, built {v['agentload_binary_mtime']}, repo {v['repo_commit']})")
    st = s["setup"]
    sim = st["simulator"]
    print(f"simulator: echo, prefill {sim['prefill_tps']:g} tok/s, decode {sim['decode_tps']:g} tok/s, "
          f"time-scale {sim['time_scale']:g}; {st['prompts']} prompts x {st['repeats']} runs per tool, "
          f"{st['output_tokens']} output tokens, concurrency 1; {v['host']}, load avg at start {v['load_average_at_start'][0]:.2f}")
    loads = [x for t in (g, a) for d in t["load_average_1m_per_run"] for x in d.values()]
    print(f"1-minute load average during the measured runs: {min(loads):.2f} .. {max(loads):.2f}")
    print(f"requests: GuideLLM {g['requests']} ok / {g['failed']} failed / {g['missing_server_stamps']} without server stamp; "
          f"agentload {a['requests']} ok / {a['failed']} failed / {a['missing_server_stamps']} without server stamp")
    print()
    print(f"{'':34} {'GuideLLM':>12} {'agentload':>12} {'GuideLLM/agentload':>20}")
    for name, gv, av, rv in rows:
        print(f"{name:34} {f(gv):>12} {f(av):>12} {f(rv, '{:.2f}x'):>20}")
    pe = s["guidellm_paired_estimate"]["ttft_error_us"]
    print(f"\n(GuideLLM error if paired with agentload's server times for the same prompt instead: "
          f"p50 {f(pe.get('p50'))} us, p99 {f(pe.get('p99'))} us - not used, see the script's docstring)")


if __name__ == "__main__":
    main()
