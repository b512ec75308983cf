#!/usr/bin/env python3
"""Times BFCL's own multi-turn checker on all 800 entries, the ground truth
standing in as the model's output (one step per turn), best of N: the Python
side of the side-by-side with `agentload rescore` on a ground-truth run
(which re-executes and checks the same 800 entries inside WASM).

Like for like: the timer covers parsing the data files' text (the scorer
parses its granted files in `configure`, timed by the host as part of the
pass) and the checker; reading the files from disk is outside it on both
sides (the host reads granted files before the pass).

    python3 tests/bfcl-multi-parity/bench_checker.py [BFCL_EVAL_SRC [BFCL_V4_DATA]] [--repeat 3]
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
repeat = 3
args = [a for a in sys.argv[1:]]
if "--repeat" in args:
    i = args.index("--repeat")
    repeat = int(args[i + 1])
    del args[i : i + 2]
sys.argv = [sys.argv[0]] + args  # gen_multi_parity reads its paths from argv
sys.path.insert(0, HERE)
import gen_multi_parity as g  # noqa: E402
import json  # noqa: E402


def main():
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    texts = []
    for cat in g.CATEGORIES:
        with open(f"{g.DATA}/BFCL_v4_multi_turn_{cat}.json") as f:
            questions = f.read()
        with open(f"{g.DATA}/possible_answer/BFCL_v4_multi_turn_{cat}.json") as f:
            answers = f.read()
        texts.append((cat, questions, answers))
    best = float("inf")
    passed = 0
    entries = []
    for rep in range(repeat):
        g.fresh_process_globals()
        t0 = time.perf_counter()
        entries = []
        for cat, questions, answers in texts:
            qs = [json.loads(l) for l in questions.splitlines() if l.strip()]
            ans = [json.loads(l) for l in answers.splitlines() if l.strip()]
            entries += [(cat, q, a["ground_truth"]) for q, a in zip(qs, ans)]
        passed = 0
        for cat, q, gt in entries:
            decoded = [[list(turn)] if turn else [] for turn in gt]
            v = multi_turn_checker(decoded, gt, q, cat, f"bench{rep}")
            passed += bool(v["valid"])
        best = min(best, time.perf_counter() - t0)
    print(f"{len(entries)} entries, {passed} pass; BFCL's checker (parse data, execute model + ground truth, check): best of {repeat} {best * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
