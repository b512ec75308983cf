#!/usr/bin/env python3
"""Execute the ground truth of every BFCL v4 multi-turn entry with BFCL's own
simulators (exactly as `multi_turn_utils.execute_multi_turn_func_call` does in
the checker) and write one JSON line per entry:

  {"id", "category", "involved_classes", "long_context",
   "turns": [[{"call", "class", "result"}...]...],
   "state": {Class: canonical repr of the public attributes after the last turn}}

plus `long_context.json` (the padding data of `long_context.py`, which the
Rust simulators load at run time: it is BFCL data and is not committed).

Usage: gen_multi_parity.py BFCL_EVAL_SRC_DIR BFCL_V4_DATA_DIR OUT_DIR
(defaults: ~/.cache/agentload/data/bfcl_eval_src, ~/.cache/agentload/data/bfcl_v4,
~/.cache/agentload/bfcl-multi-parity). Python 3.11 stdlib + mpmath (pure Python;
pass its unpacked directory in MPMATH_PATH if it is not installed).
"""
import json
import os
import sys
import time

HOME = os.path.expanduser("~")
SRC = sys.argv[1] if len(sys.argv) > 1 else f"{HOME}/.cache/agentload/data/bfcl_eval_src"
DATA = sys.argv[2] if len(sys.argv) > 2 else f"{HOME}/.cache/agentload/data/bfcl_v4"
OUT = sys.argv[3] if len(sys.argv) > 3 else f"{HOME}/.cache/agentload/bfcl-multi-parity"
sys.path.insert(0, SRC)
if os.environ.get("MPMATH_PATH"):
    sys.path.insert(0, os.environ["MPMATH_PATH"])

from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils  # noqa: E402
from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context  # noqa: E402

CATEGORIES = ["base", "miss_func", "miss_param", "long_context"]
MODEL = "parity"  # the checker runs GT as model_name + "_ground_truth", is_evaL_run=True


def canon(v):
    """A canonical, type-preserving text of a Python value (repr, with the
    file-system objects expanded)."""
    cls = type(v).__name__
    if cls in ("Directory", "File"):
        d = {k: val for k, val in vars(v).items() if k != "parent" and not k.startswith("_")}
        return f"<{cls} " + canon(d) + ">"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{canon(k)}: {canon(x)}" for k, x in v.items()) + "}"
    if isinstance(v, set):
        return "{" + ", ".join(sorted(canon(x) for x in v)) + "}" if v else "set()"
    if isinstance(v, list):
        return "[" + ", ".join(canon(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(canon(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def public_state(inst):
    return {k: canon(v) for k, v in vars(inst).items() if not k.startswith("_")}


def method_class(involved):
    import importlib
    import inspect
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    out = {}
    for c in involved:
        cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[c]), c)
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not name.startswith("_"):
                out[name] = c
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    lc = {k: getattr(long_context, k) for k in dir(long_context) if k.isupper()}
    with open(os.path.join(OUT, "long_context.json"), "w") as f:
        # WATCH_LIST_EXTENSION ends with a literal `...` (Ellipsis).
        json.dump(lc, f, default=lambda o: {"__ellipsis__": True} if o is Ellipsis else str(o))
    entries = []
    for cat in CATEGORIES:
        qs = [json.loads(l) for l in open(f"{DATA}/BFCL_v4_multi_turn_{cat}.json")]
        ans = [json.loads(l) for l in open(f"{DATA}/possible_answer/BFCL_v4_multi_turn_{cat}.json")]
        assert len(qs) == len(ans)
        for q, a in zip(qs, ans):
            assert q["id"] == a["id"]
            entries.append((cat, q, a["ground_truth"]))
    rows = []
    t0 = time.perf_counter()
    for cat, q, gt in entries:
        lc_flag = "long_context" in cat
        turns = []
        instances = {}
        for turn in gt:
            results, instances = multi_turn_utils.execute_multi_turn_func_call(
                turn, q["initial_config"], q["involved_classes"], MODEL + "_ground_truth",
                q["id"], long_context=lc_flag, is_evaL_run=True)
            turns.append(results)
        rows.append((cat, q, gt, turns, instances))
    elapsed = time.perf_counter() - t0
    ncalls = 0
    with open(os.path.join(OUT, "gt_results.jsonl"), "w") as f:
        for cat, q, gt, turns, instances in rows:
            mc = method_class(q["involved_classes"])
            out_turns = []
            for calls, results in zip(gt, turns):
                out_turns.append([
                    {"call": c, "class": mc.get(c.split("(")[0].strip(), None), "result": r}
                    for c, r in zip(calls, results)])
                ncalls += len(calls)
            f.write(json.dumps({
                "id": q["id"], "category": cat, "involved_classes": q["involved_classes"],
                "initial_config": q["initial_config"], "long_context": "long_context" in cat,
                "turns": out_turns,
                "state": {c: public_state(i) for c, i in instances.items()},
            }) + "\n")
    print(f"{len(rows)} entries, {ncalls} GT calls executed in {elapsed:.3f} s (Python)")
    with open(os.path.join(OUT, "python_timing.txt"), "w") as f:
        f.write(f"{elapsed:.6f}\n")


if __name__ == "__main__":
    main()
