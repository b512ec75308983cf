#!/usr/bin/env python3
"""Scores a finished agentload accuracy run with the reference checker, timed.

For the side-by-side measurement of scoring cost: reads RUN_DIR/accuracy/
turns.jsonl (every sample's expected data and recorded completion), scores
each sample the way the reference does (gen_parity.reference_verdict: the
reference's extraction and bfcl-eval's real ast_checker), and prints the
time taken next to agentload's own verdicts from RUN_DIR/accuracy/samples.jsonl,
with the number of disagreements.

Like for like with the WASM scorer: the timer covers what the scorer does
with what the host hands it, parsing each sample's expected JSON text
included (the scorer parses `expected-json` inside its `score`); the
completion arrives structured on both sides.

    python3 tests/bfcl-parity/bench_reference.py ~/.cache/agentload/data/bfcl_eval_src RUN_DIR [--repeat 5]

Compare with `agentload rescore RUN_DIR`, which prints the WASM scorer's time.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_parity  # noqa: E402  (the reference flow lives there)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checker", help="directory holding the unpacked bfcl_eval package")
    ap.add_argument("run_dir", help="an agentload run directory with an accuracy phase")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    checker, Language = gen_parity.load_checker(args.checker)
    run = os.path.expanduser(args.run_dir)
    samples = []
    with open(os.path.join(run, "accuracy", "turns.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            c = r.get("completion")
            completion = None
            if r["status"] == "completed" and c is not None:
                completion = {
                    "content": c["content"],
                    "reasoning_content": c["reasoning_content"],
                    "tool_calls": [
                        {"name": t["name"], "arguments": t["arguments"]} for t in c["tool_calls"]
                    ],
                }
            samples.append((r["expected_json"], completion))

    def score_all():
        verdicts = {}
        for expected_json, completion in samples:
            expected = json.loads(expected_json)
            if completion is None:
                verdicts[expected["id"]] = (False, "missing")
                continue
            entry = {"id": expected["id"], "function": expected["functions"]}
            verdicts[expected["id"]] = gen_parity.reference_verdict(
                checker, Language, entry, expected["ground_truth"], expected["subset"], completion
            )
        return verdicts

    times = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        verdicts = score_all()
        times.append((time.perf_counter() - started) * 1e3)
    ours = {}
    with open(os.path.join(run, "accuracy", "samples.jsonl")) as f:
        for line in f:
            row = json.loads(line)
            ours[row["id"]] = (row["valid"], row["error_type"])
    disagreements = [k for k, v in verdicts.items() if ours.get(k) != v]
    passed = sum(1 for v in verdicts.values() if v[0])
    print(f"samples {len(samples)}, reference passes {passed}")
    print(
        f"reference scoring: median {statistics.median(times):.1f} ms, "
        f"min {min(times):.1f} ms over {args.repeat} passes"
    )
    print(f"disagreements with agentload's samples.jsonl: {len(disagreements)} {disagreements[:5]}")
    sys.exit(1 if disagreements else 0)


if __name__ == "__main__":
    main()
