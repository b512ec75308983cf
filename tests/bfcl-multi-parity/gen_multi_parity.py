#!/usr/bin/env python3
"""Parity fixtures for the Rust port of BFCL's multi-turn simulators
(plugins/bfcl-multi-turn), produced with BFCL's own Python code:

- gt_results.jsonl: the ground truth of every multi-turn entry executed
  exactly as the checker does (`execute_multi_turn_func_call`, model name
  `parity_ground_truth`, `is_evaL_run=True`), one line per entry:
  {"id", "category", "involved_classes", "initial_config", "long_context",
   "model", "turns": [[{"call", "class", "result"}...]...],
   "state": {Class: {attr: canonical repr}}} (state right after the entry);
- probe_results.jsonl: the same with model-like variants before each
  ground-truth call (an argument dropped, an unknown keyword added, one value
  changed) and a few generic probes (unknown and blocked names, ...);
- checker_results.jsonl: `multi_turn_checker` verdicts on four synthetic
  model outputs per entry;
- long_context.json: the constants of `long_context.py`, which the Rust
  simulators load at run time (BFCL data: not committed);
- python_timing.txt: best of 5 runs of all entries' ground truth, seconds.

Each fixture stands for a fresh Python process (module-level state that the
simulators share is reset before each).

Usage: gen_multi_parity.py [BFCL_EVAL_SRC_DIR [BFCL_V4_DATA_DIR [OUT_DIR]]]
(defaults: ~/.cache/agentload/data/bfcl_eval_src, ~/.cache/agentload/data/bfcl_v4,
~/.cache/agentload/bfcl-multi-parity). Python 3.11 stdlib + mpmath (pure Python;
put its unpacked directory in MPMATH_PATH if it is not installed).
"""
import ast
import copy
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
_LC_SNAPSHOT = {
    n: copy.deepcopy(getattr(long_context, n))
    for n in ("CREDIT_CARD_EXTENSION", "LONG_WEATHER_EXTENSION")
}
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


def _perturb(v):
    """A different literal of the same shape, or None."""
    if isinstance(v, ast.Constant):
        x = v.value
        if isinstance(x, bool):
            return ast.Constant(not x)
        if isinstance(x, str):
            return ast.Constant("zz_missing")
        if isinstance(x, int):
            return ast.Constant(-1)
        if isinstance(x, float):
            return ast.Constant(0.0)
        return None
    if isinstance(v, ast.List):
        return ast.List(elts=[], ctx=ast.Load())
    if isinstance(v, ast.Dict):
        return ast.Dict(keys=[], values=[])
    return None


def probe_variants(call):
    """Calls a model might make instead of a ground-truth call: an argument
    dropped, an unknown keyword added, one argument value changed."""
    tree = ast.parse(call, mode="eval").body
    args, kws = list(tree.args), list(tree.keywords)

    def mk(a, k):
        return ast.unparse(ast.Call(func=tree.func, args=a, keywords=k))

    out = []
    if kws:
        out.append(mk(args, kws[:-1]))
    elif args:
        out.append(mk(args[:-1], kws))
    out.append(mk(args, kws + [ast.keyword(arg="bogus_param", value=ast.Constant(1))]))
    for i, a in enumerate(args):
        new = _perturb(a)
        if new is not None:
            out.append(mk(args[:i] + [new] + args[i + 1:], kws))
    for i, kw in enumerate(kws):
        new = _perturb(kw.value)
        if new is not None:
            out.append(mk(args, kws[:i] + [ast.keyword(arg=kw.arg, value=new)] + kws[i + 1:]))
    return out


EXTRA_PROBES = [
    "nonexistent_function(x=1)",
    "exit()",
    "echo(content='run ls() now (ok)')",
    "cd(folder=5)",
    "mean(numbers=[])",
    "mean(numbers=['a'])",
]


def probe_turns(gt):
    """Per turn: each ground-truth call preceded by its variants; the first
    turn also gets some generic probes."""
    turns = []
    for ti, turn in enumerate(gt):
        calls = list(EXTRA_PROBES) if ti == 0 else []
        for c in turn:
            calls.extend(probe_variants(c))
            calls.append(c)
        turns.append(calls)
    return turns


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


def fresh_process_globals():
    """Each fixture stands for one fresh Python process: empty the mutable
    defaults of `TwitterAPI.post_tweet` (`tags=[]`, `mentions=[]`), which
    every tweet posted without them shares and `mention()` extends."""
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import posting_api

    for d in posting_api.TwitterAPI.post_tweet.__defaults__:
        d.clear()
    # Long-context dicts that simulators adopt by reference and change in
    # place (card balances, the weather reading): back to their import values.
    for name in ("CREDIT_CARD_EXTENSION", "LONG_WEATHER_EXTENSION"):
        live, orig = getattr(long_context, name), _LC_SNAPSHOT[name]
        if name == "CREDIT_CARD_EXTENSION":
            for k, card in live.items():
                card.clear()
                card.update(copy.deepcopy(orig[k]))
        else:
            live.clear()
            live.update(copy.deepcopy(orig))


def run(entries, model, out_name, make_turns):
    fresh_process_globals()
    rows = []
    t0 = time.perf_counter()
    for cat, q, gt in entries:
        lc_flag = "long_context" in cat
        turns_calls = make_turns(gt)
        turns = []
        instances = {}
        for turn in turns_calls:
            results, instances = multi_turn_utils.execute_multi_turn_func_call(
                turn, q["initial_config"], q["involved_classes"], model,
                q["id"], long_context=lc_flag, is_evaL_run=True)
            turns.append(results)
        # The state right after the entry: later entries can still change
        # objects shared through module globals.
        state = {c: public_state(i) for c, i in instances.items()}
        rows.append((cat, q, turns_calls, turns, state))
    elapsed = time.perf_counter() - t0
    ncalls = 0
    with open(os.path.join(OUT, out_name), "w") as f:
        for cat, q, calls_turns, turns, state in rows:
            mc = method_class(q["involved_classes"])
            out_turns = []
            for calls, results in zip(calls_turns, turns):
                out_turns.append([
                    {"call": c, "class": mc.get(c.split("(")[0].strip(), None), "result": r}
                    for c, r in zip(calls, results)])
                ncalls += len(calls)
            f.write(json.dumps({
                "id": q["id"], "category": cat, "involved_classes": q["involved_classes"],
                "initial_config": q["initial_config"], "long_context": "long_context" in cat,
                "model": model + "_eval",
                "turns": out_turns,
                "state": state,
            }) + "\n")
    return len(rows), ncalls, elapsed


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
    n, ncalls, elapsed = run(entries, MODEL + "_ground_truth", "gt_results.jsonl", lambda gt: gt)
    print(f"{n} entries, {ncalls} GT calls executed in {elapsed:.3f} s (Python)")
    # Timing: best of 5 runs of all entries' ground truth (fresh instances each).
    best = elapsed
    for rep in range(5):
        fresh_process_globals()
        t0 = time.perf_counter()
        for cat, q, gt in entries:
            for turn in gt:
                multi_turn_utils.execute_multi_turn_func_call(
                    turn, q["initial_config"], q["involved_classes"], f"timing{rep}",
                    q["id"], long_context="long_context" in cat, is_evaL_run=True)
        best = min(best, time.perf_counter() - t0)
    print(f"Python: best of 5 runs of the 800 entries' ground truth: {best:.3f} s")
    with open(os.path.join(OUT, "python_timing.txt"), "w") as f:
        f.write(f"{best:.6f}\n")
    n, ncalls, elapsed = run(entries, "probe", "probe_results.jsonl", probe_turns)
    print(f"{n} entries, {ncalls} probe calls executed in {elapsed:.3f} s (Python)")
    n = run_checker(entries)
    print(f"{n} checker verdicts (4 synthetic model outputs per entry)")


def synthetic_outputs(gt):
    """Decoded model outputs (per turn, a list of steps, each a list of call
    strings) that exercise the checker: the ground truth itself; the ground
    truth preceded by model-like variants; the ground truth with the last
    call of its middle non-empty turn dropped; the variants alone."""
    def steps(calls):
        return [calls] if calls else []

    as_is = [steps(list(t)) for t in gt]
    probed = [steps([v for c in t for v in probe_variants(c)] + list(t)) for t in gt]
    nonempty = [i for i, t in enumerate(gt) if t]
    mid = nonempty[len(nonempty) // 2] if nonempty else None
    dropped = [steps(list(t[:-1]) if i == mid else list(t)) for i, t in enumerate(gt)]
    variants = [steps([v for c in t for v in probe_variants(c)]) for t in gt]
    return {"gt": as_is, "probed": probed, "dropped": dropped, "variants": variants}


def run_checker(entries):
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    scenarios = ["gt", "probed", "dropped", "variants"]
    verdicts = {}
    for sc in scenarios:
        fresh_process_globals()  # one Python process per scenario
        model = f"ck_{sc}"
        for cat, q, gt in entries:
            decoded = synthetic_outputs(gt)[sc]
            try:
                v = multi_turn_checker(decoded, gt, q, cat, model)
            except AssertionError as e:
                v = {"valid": False, "error_type": "assertion", "error_message": str(e)}
            details = v.get("details", {})
            if v.get("error_type") == "multi_turn:instance_state_mismatch":
                det = sorted(details.get("differences", {}).keys())
            elif v.get("error_type") == "multi_turn:execution_response_mismatch":
                det = details.get("missing_items", [])
            else:
                det = []
            verdicts[(q["id"], sc)] = {
                "id": q["id"], "scenario": sc, "model": model, "decoded": decoded,
                "valid": v["valid"], "error_type": v.get("error_type"),
                "error_message": v.get("error_message"), "details": det,
            }
    with open(os.path.join(OUT, "checker_results.jsonl"), "w") as f:
        for cat, q, gt in entries:
            for sc in scenarios:
                f.write(json.dumps(verdicts[(q["id"], sc)]) + "\n")
    return len(verdicts)


if __name__ == "__main__":
    main()
