#!/usr/bin/env python3
"""Generate the bfcl-ast parity fixture from the REAL BFCL v4 checker.

For every single-turn entry with answers or an irrelevance rule (13 subsets,
3,641 entries) this writes deterministic model outputs at the completion
level (tool calls with raw argument strings, or content/reasoning text) and
the verdict the MLPerf Edge Agentic reference reaches on them:

* the reference's scoring flow (mlcommons/endpoints ``BFCLv4Scorer``:
  serialise tool calls or take reasoning+content, run the extractor, apply
  the hallucination rule or decode ``{name: args}``) is re-implemented
  minimally below, from its documented behaviour, because that package is
  not installed here; its ``FunctionCallExtractor`` is re-implemented the
  same way (stdlib ``json``/``re``/``ast``);
* the checking itself is bfcl-eval's own ``ast_checker``, imported from the
  unpacked package, with ``bfcl_eval.constants.model_config`` stubbed (its
  real module imports every model handler) to register the reference's
  model name ``gpt-4o-2024-11-20-FC`` with ``underscore_to_dot=True``.

Where the reference would raise (it does not catch exceptions from the
checker or from ``json.dumps`` in the extractor) the case records
``checker_exception:<Name>`` / ``extractor_exception:<Name>``. Before the
checker, BFCL's ``is_function_calling_format_output`` test is applied
(``ast_decoder:decoder_wrong_output_format``), as BFCL's own runner does.

Usage:
    python3 tests/bfcl-parity/gen_parity.py ~/.cache/agentload/data/bfcl_eval_src \
        [--data ~/.cache/agentload/data/bfcl_v4] \
        [--out ~/.cache/agentload/bfcl-parity/parity.jsonl]

Stdlib only (Python 3.11). Output: one JSON object per line,
``{id, subset, case, completion, valid, error_type}``.
"""

import argparse
import ast
import contextlib
import copy
import io
import json
import os
import re
import sys
import types
from collections import Counter

SUBSETS = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
    "live_relevance",
]
HALLUCINATION = {"irrelevance", "live_irrelevance"}
MODEL_NAME = "gpt-4o-2024-11-20-FC"
EXPECTED_ENTRIES = 3641


def load_checker(src_dir):
    """Import bfcl_eval's ast_checker with the heavy model_config stubbed."""
    sys.path.insert(0, os.path.abspath(os.path.expanduser(src_dir)))
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {
        MODEL_NAME.replace("_", "/"): types.SimpleNamespace(underscore_to_dot=True)
    }
    sys.modules["bfcl_eval.constants.model_config"] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language


# --------------------------------------------------------------------------
# The reference's extractor, re-implemented from its documented behaviour.
# --------------------------------------------------------------------------

_CALL_START = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_SIGNATURE_PART = re.compile(r"[A-Za-z_]\w*(?:\s*:\s*\w+)?")
_NOT_CALLS = set(
    "print return if for while def class import from with assert raise try except "
    "len str int float list dict set tuple type isinstance range enumerate zip map "
    "filter Note Example Here This The For".split()
)


def _loads_or_none(text):
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def native_tool_calls(text):
    """Stage 1: serialized OpenAI tool_calls -> JSON text of calls, or None."""
    data = _loads_or_none(text)
    if not isinstance(data, list):
        return None
    calls = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("function"), dict):
            return None
        fn = item["function"]
        arguments = fn.get("arguments", "{}")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass
        calls.append({"name": fn.get("name", ""), "arguments": arguments})
    return json.dumps(calls) if calls else None


def function_array(text):
    """Stage 2: a JSON array of {name, arguments} objects."""
    data = _loads_or_none(text)
    if not isinstance(data, list):
        return None
    calls = []
    for item in data:
        if not isinstance(item, dict) or "name" not in item:
            return None
        calls.append({"name": item["name"], "arguments": item.get("arguments", {})})
    return json.dumps(calls) if calls else None


def _closing_paren(text, start):
    depth, i, in_s, in_d = 0, start, False, False
    while i < len(text):
        c = text[i]
        if c == "\\" and (in_s or in_d):
            i += 2
            continue
        if c == "'" and not in_d:
            in_s = not in_s
        elif c == '"' and not in_s:
            in_d = not in_d
        elif not in_s and not in_d:
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return i
        i += 1
    return None


def _keyword_arguments(args):
    if not args:
        return {}
    result = {}
    try:
        body = ast.parse(f"dict({args})", mode="eval").body
        if isinstance(body, ast.Call):
            for kw in body.keywords:
                if kw.arg is None:
                    continue
                try:
                    result[kw.arg] = ast.literal_eval(kw.value)
                except (ValueError, SyntaxError):
                    result[kw.arg] = ast.unparse(kw.value)
    except (SyntaxError, ValueError):
        result = {"_raw": args}
    return result


def text_calls(text):
    """Stage 3: f(a=1) calls found in free text."""
    calls, taken = [], []
    for m in _CALL_START.finditer(text):
        if any(a <= m.start() < b for a, b in taken) or m.group(1) in _NOT_CALLS:
            continue
        open_at = m.end() - 1
        close_at = _closing_paren(text, open_at)
        if close_at is None:
            continue
        taken.append((open_at, close_at + 1))
        args = text[open_at + 1 : close_at].strip()
        parts = [p.strip() for p in args.split(",")]
        if args and all(_SIGNATURE_PART.fullmatch(p) for p in parts if p):
            continue
        calls.append({"name": m.group(1), "arguments": _keyword_arguments(args)})
    return json.dumps(calls) if calls else None


def extract(text):
    if not text or not isinstance(text, str):
        return "[]"
    text = text.strip()
    if not text:
        return "[]"
    for stage in (native_tool_calls, function_array, text_calls):
        found = stage(text)
        if found is not None:
            return found
    return "[]"


# --------------------------------------------------------------------------
# The reference's per-sample scoring flow.
# --------------------------------------------------------------------------


def output_text(completion):
    calls = completion["tool_calls"]
    if calls:
        return json.dumps(
            [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for i, c in enumerate(calls)
            ]
        )
    return completion["reasoning_content"] + completion["content"]


def function_calling_format(decoded):
    """bfcl_eval.utils.is_function_calling_format_output (utils has heavy imports)."""
    if type(decoded) != list:
        return False
    return all(
        type(item) == dict and len(item) == 1 and type(list(item.values())[0]) == dict
        for item in decoded
    )


def reference_verdict(checker, Language, entry, ground_truth, subset, completion):
    raw = output_text(completion)
    if subset in HALLUCINATION:
        if native_tool_calls(raw) is not None:
            return False, "irrelevance_error:decoder_success"
        return True, None
    try:
        extracted = extract(raw)
    except Exception as e:  # json.dumps of a set/complex/bytes value
        return False, f"extractor_exception:{type(e).__name__}"
    model_output = json.loads(extracted)
    if not ground_truth:
        if model_output:
            return False, "irrelevance_error:decoder_success"
        return True, None
    try:
        decoded = []
        for call in model_output:
            if not isinstance(call, dict) or "name" not in call:
                continue
            args = call.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    args = {}
            decoded.append({call["name"]: args})
    except Exception as e:
        return False, f"checker_exception:{type(e).__name__}"
    if not function_calling_format(decoded):
        return False, "ast_decoder:decoder_wrong_output_format"
    language = {"simple_java": "JAVA", "simple_javascript": "JAVASCRIPT"}.get(subset, "PYTHON")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            result = checker(
                func_description=copy.deepcopy(entry["function"]),
                model_output=decoded,
                possible_answer=copy.deepcopy(ground_truth),
                language=Language[language],
                test_category=subset,
                model_name=MODEL_NAME,
            )
    except Exception as e:
        return False, f"checker_exception:{type(e).__name__}"
    if result["valid"]:
        return True, None
    return False, result["error_type"]


# --------------------------------------------------------------------------
# Deterministic model outputs.
# --------------------------------------------------------------------------


def doc_for(functions, name):
    for f in functions:
        if f.get("name") == name:
            return f
    return {}


def first_choice(candidates):
    """The first acceptable value, or None when it marks 'may be omitted'."""
    if not isinstance(candidates, list) or not candidates:
        return None
    v = candidates[0]
    return None if v == "" else (v,)


def python_value(v, spec):
    """A gold Python value: dict candidates become {key: first value}."""
    t = spec.get("type")
    items = (spec.get("items") or {}).get("type") if isinstance(spec.get("items"), dict) else None
    if t == "dict" and isinstance(v, dict):
        return {k: c[0] for k, vs in v.items() if (c := first_choice(vs))}
    if t == "array" and items == "dict" and isinstance(v, list):
        return [python_value(x, {"type": "dict"}) for x in v]
    return v


def java_elem(v, t):
    if t in ("String", "any", "char"):
        return v if isinstance(v, str) else json.dumps(v)
    return java_literal(v, t, None)


def java_value_literal(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def java_literal(v, t, items):
    """A Java source literal the BFCL converter turns back into v."""
    if isinstance(v, str) and t not in ("String", "any", "char"):
        return v  # a variable name
    if t in ("String", "any", "char"):
        return v if isinstance(v, str) else java_value_literal(v)
    if t == "boolean":
        return "true" if v else "false"
    if t in ("integer", "short", "byte"):
        return str(int(v))
    if t == "long":
        return f"{int(v)}L"
    if t == "float":
        return f"{v}f"
    if t == "double":
        return repr(float(v))
    if t == "Array" and isinstance(v, list):
        return "new Object[]{" + ", ".join(java_elem(x, items) for x in v) + "}"
    if t == "ArrayList" and isinstance(v, list):
        parts = []
        for x in v:
            parts.append(f'"{x}"' if items in ("String", "char") else java_elem(x, items))
        return "new ArrayList<>(Arrays.asList(" + ", ".join(parts) + "))"
    if t == "HashMap" and isinstance(v, dict):
        puts = "".join(
            f'put("{k}", {java_value_literal(c[0])}); '
            for k, vs in v.items()
            if (c := first_choice(vs))
        )
        return "new HashMap<String, Object>() {{ " + puts + "}}"
    return json.dumps(v)


def js_value_literal(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(js_value_literal(x) for x in v) + "]"
    return repr(v)


def js_literal(v, t, items):
    """A JavaScript source literal the BFCL converter turns back into v."""
    if isinstance(v, str) and t not in ("String", "any"):
        return v
    if t in ("String", "any"):
        return v if isinstance(v, str) else js_value_literal(v)
    if t == "Boolean":
        return "true" if v else "false"
    if t == "integer":
        return str(int(v))
    if t == "Bigint":
        return f"{int(v)}n"
    if t == "float":
        return repr(v)
    if t == "array" and isinstance(v, list):
        return "[" + ", ".join(js_value_literal(x) for x in v) + "]"
    if t == "dict" and isinstance(v, dict):
        parts = [
            f'"{k}": {js_value_literal(c[0])}' for k, vs in v.items() if (c := first_choice(vs))
        ]
        return "{" + ", ".join(parts) + "}"
    return json.dumps(v)


def java_alt_literal(v, t, items):
    """Other spellings the converter accepts (or not): spaced arrays, the
    double-brace ArrayList, multi-line HashMap, lower-case suffixes."""
    if isinstance(v, str) and t not in ("String", "any", "char"):
        return v
    if t == "long":
        return f"{int(v)}l"
    if t == "float":
        return f"{v}F"
    if t == "Array" and isinstance(v, list):
        return "new Object[] { " + ", ".join(java_elem(x, items) for x in v) + " }"
    if t == "ArrayList" and isinstance(v, list):
        adds = "".join(
            f"add({f'{chr(34)}{x}{chr(34)}' if items in ('String', 'char') else java_elem(x, items)}); "
            for x in v
        )
        return "new ArrayList<Object>() {{ " + adds + "}}"
    if t == "HashMap" and isinstance(v, dict):
        puts = "".join(
            f'put("{k}", {java_value_literal(c[0])});\n'
            for k, vs in v.items()
            if (c := first_choice(vs))
        )
        return "new HashMap<>() {\n{ " + puts + "}\n}"
    return java_literal(v, t, items)


def js_alt_literal(v, t, items):
    if isinstance(v, str) and t not in ("String", "any"):
        return v
    if t == "String" and isinstance(v, str):
        return f"'{v}'"
    if t == "array" and isinstance(v, list):
        return "new Array(" + ", ".join(
            f"'{x}'" if isinstance(x, str) else js_value_literal(x) for x in v
        ) + ")"
    if t == "dict" and isinstance(v, dict):
        parts = [
            f"'{k}': {js_value_literal(c[0])}" for k, vs in v.items() if (c := first_choice(vs))
        ]
        return "{" + ", ".join(parts) + "}"
    return js_literal(v, t, items)


def render(v, spec, language, alt=False):
    t = spec.get("type")
    items = (spec.get("items") or {}).get("type") if isinstance(spec.get("items"), dict) else None
    if language == "java":
        return (java_alt_literal if alt else java_literal)(v, t, items)
    if language == "javascript":
        return (js_alt_literal if alt else js_literal)(v, t, items)
    return python_value(v, spec)


def floats_to_ints(v):
    if isinstance(v, float) and v == v and abs(v) != float("inf"):
        return int(v)
    if isinstance(v, list):
        return [floats_to_ints(x) for x in v]
    if isinstance(v, dict):
        return {k: floats_to_ints(x) for k, x in v.items()}
    return v


def gold_calls(entry, ground_truth, language, transform=lambda v: v, alt=False):
    """[(tool name, dotted name, args)] in ground-truth order: the first
    acceptable value of each parameter, omitting those whose first value is
    "" (unless the schema requires them) and optional ones the schema lacks."""
    calls = []
    for gt_call in ground_truth:
        name, params = next(iter(gt_call.items()))
        doc = doc_for(entry["function"], name)
        props = (doc.get("parameters") or {}).get("properties") or {}
        required = (doc.get("parameters") or {}).get("required") or []
        args = {}
        for p, candidates in params.items():
            c = first_choice(candidates)
            if c is None and p in required:
                # A required parameter whose first candidate is "": take the
                # first real value instead.
                c = next(((x,) for x in candidates if x != ""), None)
            if c is None or (p not in props and p not in required and "" in candidates):
                continue
            args[p] = render(transform(c[0]), props.get(p, {}), language, alt)
        calls.append((name.replace(".", "_"), name, args))
    return calls


def completion(tool_calls=(), content="", reasoning=""):
    return {
        "content": content,
        "reasoning_content": reasoning,
        "tool_calls": [{"name": n, "arguments": a} for n, a in tool_calls],
    }


def as_tools(calls):
    return completion([(n, json.dumps(a)) for n, _, a in calls])


def as_text(calls, dotted=False):
    inner = ", ".join(
        f"{d if dotted else n}(" + ", ".join(f"{k}={v!r}" for k, v in a.items()) + ")"
        for n, d, a in calls
    )
    return f"[{inner}]"


def to_tuples(v):
    if isinstance(v, list):
        return tuple(to_tuples(x) for x in v)
    if isinstance(v, dict):
        return {k: to_tuples(x) for k, x in v.items()}
    return v


def inner_mutation(calls):
    """Breaks the inside of the first dict or list argument."""
    calls = copy.deepcopy(calls)
    for _, _, args in calls:
        for k, v in args.items():
            if isinstance(v, dict) and v:
                first = next(iter(v))
                v[first] = wrong_value(v[first])
                return calls
            if isinstance(v, list) and v:
                args[k] = [json.dumps(x) if not isinstance(x, str) else x.upper() + "!" for x in v]
                return calls
    return calls


def wrong_type(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return 12345
    if isinstance(v, list):
        return "not a list"
    if isinstance(v, dict):
        return [v]
    return 0


def wrong_value(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v + 1.5
    if isinstance(v, str):
        return v + " zz wrong"
    if isinstance(v, list):
        return v + [v[0]] if v else ["zz"]
    if isinstance(v, dict):
        return {**v, "zz_wrong_key": 1}
    return "zz"


def mutate_first(calls, fn):
    calls = copy.deepcopy(calls)
    if calls and calls[0][2]:
        name, dotted, args = calls[0]
        k = next(iter(args))
        args[k] = fn(args[k])
    return calls


def required_of(entry, dotted):
    doc = doc_for(entry["function"], dotted)
    return (doc.get("parameters") or {}).get("required") or []


def ast_cases(entry, ground_truth, language):
    gold = gold_calls(entry, ground_truth, language)
    cases = [("gold", as_tools(gold))]
    cases.append(("gold_text", completion(content=as_text(gold))))
    cases.append(
        (
            "gold_json_array",
            completion(content=json.dumps([{"name": n, "arguments": a} for n, _, a in gold])),
        )
    )
    if any("." in d for _, d, _ in gold):
        cases.append(("dotted_text", completion(content=as_text(gold, dotted=True))))
    cases.append(
        (
            "reasoning_then_text",
            completion(content=as_text(gold), reasoning="I will look this up (carefully). "),
        )
    )
    cases.append(("double_encoded", completion([(n, json.dumps(json.dumps(a))) for n, _, a in gold])))
    cases.append(("malformed_args", completion([(n, json.dumps(a)[:-1]) for n, _, a in gold])))
    cases.append(("wrong_type", as_tools(mutate_first(gold, wrong_type))))
    missing = copy.deepcopy(gold)
    if missing:
        name, dotted, args = missing[0]
        required = [p for p in required_of(entry, dotted) if p in args]
        drop = required[0] if required else next(iter(args), None)
        if drop is not None:
            del args[drop]
    cases.append(("missing_required", as_tools(missing)))
    extra = copy.deepcopy(gold)
    if extra:
        extra[0][2]["zz_extra_param"] = "x"
    cases.append(("extra_param", as_tools(extra)))
    cases.append(("wrong_value", as_tools(mutate_first(gold, wrong_value))))
    renamed = copy.deepcopy(gold)
    if renamed:
        n, d, a = renamed[0]
        renamed[0] = (n + "_v2", d, a)
    cases.append(("wrong_name", as_tools(renamed)))
    swapped = list(reversed(gold)) if len(gold) > 1 else gold + gold
    cases.append(("swapped_or_duplicated", as_tools(swapped)))
    cases.append(("int_for_float", as_tools(gold_calls(entry, ground_truth, language, floats_to_ints))))

    def shout(v):
        return v.upper().replace(" ", "-") + "." if isinstance(v, str) else v

    cases.append(
        ("string_case", as_tools([(n, d, {k: shout(v) for k, v in a.items()}) for n, d, a in gold]))
    )
    tupled = [(n, d, to_tuples(a)) for n, d, a in gold]
    cases.append(("gold_text_tuples", completion(content=as_text(tupled))))
    if language == "python":
        cases.append(("inner_mutation", as_tools(inner_mutation(gold))))
    else:
        alt = gold_calls(entry, ground_truth, language, alt=True)
        cases.append(("literal_variants", as_tools(alt)))
    cases.append(("args_not_object", completion([(n, "[]") for n, _, _ in gold])))
    cases.append(("args_json_string", completion([(n, json.dumps("just text")) for n, _, _ in gold])))
    first = gold[0] if gold else ("f", "f", {})
    cases.append(
        ("name_not_string", completion(content=json.dumps([{"name": 5, "arguments": first[2]}])))
    )
    cases.append(
        ("name_unhashable", completion(content=json.dumps([{"name": [first[0]], "arguments": {}}])))
    )
    cases.append(("text_set_value", completion(content=f"{first[0]}(zz={{1, 2}})")))
    cases.append(("no_call", completion(content="I'm sorry, but I can't help with that request.")))
    cases.append(
        ("prose_parens", completion(content="The answer (as computed) is unknown; see notes (below)."))
    )
    cases.append(("empty", completion()))
    return cases


def hallucination_cases(entry):
    functions = entry["function"]
    name = functions[0]["name"].replace(".", "_") if functions else "lookup"
    native = json.dumps(
        [{"id": "c0", "type": "function", "function": {"name": name, "arguments": "{}"}}]
    )
    return [
        ("gold", completion(content="I cannot answer that with the available functions.")),
        ("tool_call", completion([(name, '{"query": "x"}')])),
        ("tool_call_malformed", completion([(name, "{oops")])),
        ("native_json_content", completion(content=native)),
        ("native_json_with_reasoning", completion(content="\n" + native + "\n", reasoning=" ")),
        ("text_call", completion(content=f"{name}(query='x')")),
        ("json_array_content", completion(content=json.dumps([{"name": name, "arguments": {}}]))),
        ("prose_parens", completion(content="The answer (as computed) is unknown.")),
        ("empty", completion()),
    ]


def category_of(subset):
    if subset in HALLUCINATION:
        return "hallucination"
    return "live" if subset.startswith("live_") else "non_live"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checker", help="directory holding the unpacked bfcl_eval package")
    ap.add_argument("--data", default="~/.cache/agentload/data/bfcl_v4")
    ap.add_argument("--out", default="~/.cache/agentload/bfcl-parity/parity.jsonl")
    opts = ap.parse_args()

    checker, Language = load_checker(opts.checker)
    data = os.path.expanduser(opts.data)
    out_path = os.path.expanduser(opts.out)
    os.makedirs(os.path.dirname(out_path), exist_ok=True)

    entries = 0
    counts = Counter()
    with open(out_path + ".tmp", "w") as out:
        for subset in SUBSETS:
            with open(os.path.join(data, f"BFCL_v4_{subset}.json")) as f:
                questions = [json.loads(l) for l in f if l.strip()]
            answer_file = os.path.join(data, "possible_answer", f"BFCL_v4_{subset}.json")
            answers = {}
            if os.path.exists(answer_file):
                with open(answer_file) as f:
                    for line in f:
                        if line.strip():
                            a = json.loads(line)
                            answers[a["id"]] = a["ground_truth"]
            language = {"simple_java": "java", "simple_javascript": "javascript"}.get(subset, "python")
            for entry in questions:
                entries += 1
                ground_truth = answers.get(entry["id"])
                if ground_truth:
                    cases = ast_cases(entry, ground_truth, language)
                else:
                    cases = hallucination_cases(entry)
                for case, comp in cases:
                    valid, error_type = reference_verdict(
                        checker, Language, entry, ground_truth, subset, comp
                    )
                    counts[(case, valid)] += 1
                    out.write(
                        json.dumps(
                            {
                                "id": entry["id"],
                                "subset": subset,
                                "category": category_of(subset),
                                "case": case,
                                "completion": comp,
                                "valid": valid,
                                "error_type": error_type,
                            }
                        )
                        + "\n"
                    )
    os.replace(out_path + ".tmp", out_path)
    if entries != EXPECTED_ENTRIES:
        sys.exit(f"expected {EXPECTED_ENTRIES} single-turn entries, found {entries}")
    total = sum(counts.values())
    print(f"{entries} entries, {total} cases -> {out_path}")
    for case in sorted({c for c, _ in counts}):
        print(f"  {case:28} valid {counts[(case, True)]:6}  invalid {counts[(case, False)]:6}")


if __name__ == "__main__":
    main()
