//! Tool calls to canonical shell executables, as the reference's
//! `_bash_actions` computes them (Python semantics throughout).

use serde_json::{Map, Value};

use crate::command_args::{self, Arg, CommandArgs};
use pysem::chars;

/// Arguments of one tool call.
#[derive(Debug, Clone, Copy)]
pub enum Arguments<'a> {
    /// A JSON text, decoded as Python's `json.loads` would.
    Text(&'a str),
    /// An already-decoded JSON object (a recorded dataset row).
    Object(&'a Map<String, Value>),
    /// Any other recorded value: the call is skipped.
    Other,
}

/// One function call to canonicalize.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// Function name; only calls named exactly `bash` count.
    pub name: &'a str,
    /// The call's arguments.
    pub arguments: Arguments<'a>,
}

/// Canonical executables of every `bash` call, in order (the reference's
/// `_bash_actions`). Calls whose arguments do not decode to an object with a
/// string `command` (or, when `command` is falsy, `cmd`) are skipped.
pub fn bash_actions<'a>(calls: impl IntoIterator<Item = Call<'a>>) -> Vec<String> {
    calls
        .into_iter()
        .filter(|call| call.name == "bash")
        .filter_map(|call| command(call.arguments))
        .flat_map(|command| command_actions(&command))
        .map(str::to_owned)
        .collect()
}

/// The calls of a recorded `tool_calls` list, read as the reference reads
/// them: objects `{"function": {"name", "arguments"}}`; other entries are
/// skipped.
pub fn recorded_calls(tool_calls: &[Value]) -> Vec<Call<'_>> {
    tool_calls
        .iter()
        .filter_map(|call| call.as_object()?.get("function")?.as_object())
        .map(|function| Call {
            name: function.get("name").and_then(Value::as_str).unwrap_or(""),
            arguments: match function.get("arguments") {
                Some(Value::String(text)) => Arguments::Text(text),
                Some(Value::Object(object)) => Arguments::Object(object),
                _ => Arguments::Other,
            },
        })
        .collect()
}

/// `args.get("command") or args.get("cmd")`, kept only if it is a string.
fn command(arguments: Arguments<'_>) -> Option<String> {
    let args = match arguments {
        Arguments::Text(text) => command_args::command_args(text)?,
        Arguments::Object(object) => CommandArgs {
            command: object.get("command").map(arg),
            cmd: object.get("cmd").map(arg),
        },
        Arguments::Other => return None,
    };
    let chosen = match args.command {
        Some(Arg::Str(command)) if !command.is_empty() => return Some(command),
        Some(Arg::NotStr(true)) => return None,
        _ => args.cmd,
    };
    match chosen {
        Some(Arg::Str(command)) => Some(command),
        _ => None,
    }
}

/// A decoded JSON value as [`Arg`] (string, or Python truthiness).
fn arg(value: &Value) -> Arg {
    match value {
        Value::String(text) => Arg::Str(text.clone()),
        Value::Null => Arg::NotStr(false),
        Value::Bool(b) => Arg::NotStr(*b),
        Value::Number(n) => Arg::NotStr(n.as_f64().is_some_and(|x| x != 0.0)),
        Value::Array(items) => Arg::NotStr(!items.is_empty()),
        Value::Object(members) => Arg::NotStr(!members.is_empty()),
    }
}

/// Canonical executables of one shell command string.
pub fn command_actions(command: &str) -> Vec<&'static str> {
    let unquoted = blank_quoted(command);
    stages(&unquoted)
        .into_iter()
        .filter_map(|stage| {
            let mut tokens = stage.split(chars::is_space).filter(|t| !t.is_empty());
            let first = tokens.find(|t| !is_assignment(t) && !WRAPPERS.contains(t))?;
            executable(first)
        })
        .collect()
}

/// Leading tokens dropped before the executable (matched case-sensitively).
const WRAPPERS: [&str; 6] = ["env", "time", "nice", "sudo", "exec", "command"];

/// `re.sub(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`", " ", command)`: each
/// quoted span becomes one space. An unterminated quote stays as it is. In
/// the double-quoted form `\\.` does not match a backslash before a newline
/// (Python's `.` excludes `\n`), which ends the span without a match.
fn blank_quoted(command: &str) -> String {
    let chars: Vec<char> = command.chars().collect();
    let mut out = String::with_capacity(command.len());
    let mut i = 0;
    while i < chars.len() {
        match span_end(&chars, i) {
            Some(end) => {
                out.push(' ');
                i = end;
            }
            None => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

/// End (exclusive) of the quoted span starting at `start`, if one matches.
fn span_end(chars: &[char], start: usize) -> Option<usize> {
    let quote = chars[start];
    let rest = chars.get(start + 1..)?;
    match quote {
        '\'' | '`' => rest.iter().position(|&c| c == quote).map(|p| start + p + 2),
        '"' => {
            let mut i = 0;
            loop {
                match rest.get(i)? {
                    '"' => return Some(start + i + 2),
                    '\\' if rest.get(i + 1).is_some_and(|&c| c != '\n') => i += 2,
                    '\\' => return None,
                    _ => i += 1,
                }
            }
        }
        _ => None,
    }
}

/// `re.split(r"\|\||\||&&|;|\n", command)`.
fn stages(command: &str) -> Vec<&str> {
    let bytes = command.as_bytes();
    let mut stages = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let width = match (bytes[i], bytes.get(i + 1)) {
            (b'|', Some(b'|')) | (b'&', Some(b'&')) => 2,
            (b'|' | b';' | b'\n', _) => 1,
            _ => 0,
        };
        if width == 0 {
            i += 1;
        } else {
            stages.push(&command[start..i]);
            i += width;
            start = i;
        }
    }
    stages.push(&command[start..]);
    stages
}

/// `re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", token)`.
fn is_assignment(token: &str) -> bool {
    let bytes = token.as_bytes();
    let Some(eq) = bytes.iter().position(|&b| b == b'=') else {
        return false;
    };
    let name = &bytes[..eq];
    name.first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// Basename after the last `/`, lowercased (`str.lower`), version suffix
/// stripped, mapped through the alias table; `None` when not in the table.
fn executable(token: &str) -> Option<&'static str> {
    let base = token.rsplit('/').next().unwrap_or(token);
    let lower = base.to_lowercase();
    alias(strip_version(&lower))
}

/// `re.sub(r"\.\d+(\.\d+)?$", "", name)` with Unicode `\d`: the leftmost
/// match wins, so `a.1.2` loses `.1.2` and `a.b.1` loses `.1`.
fn strip_version(name: &str) -> &str {
    let Some(last) = dot_before_digits(name) else {
        return name;
    };
    match dot_before_digits(&name[..last]) {
        Some(earlier) => &name[..earlier],
        None => &name[..last],
    }
}

/// Byte index of the `.` that precedes a non-empty run of decimal digits
/// ending the string, if the string ends that way.
fn dot_before_digits(name: &str) -> Option<usize> {
    let head = name.trim_end_matches(chars::is_decimal);
    (head.len() < name.len() && head.ends_with('.')).then(|| head.len() - 1)
}

/// The reference's executable alias table.
fn alias(name: &str) -> Option<&'static str> {
    Some(match name {
        "python" | "python2" | "python3" | "py" => "python",
        "pip" | "pip3" => "pip",
        "pytest" => "pytest",
        "pylint" => "pylint",
        "sphinx-build" | "sphinx-quickstart" => "sphinx",
        "cython" => "cython",
        "make" => "make",
        "conda" => "conda",
        "cat" | "less" | "more" => "cat",
        "head" => "head",
        "tail" => "tail",
        "wc" => "wc",
        "diff" => "diff",
        "grep" | "egrep" | "fgrep" | "rg" | "ag" => "grep",
        "sed" => "sed",
        "awk" | "gawk" => "awk",
        "tr" => "tr",
        "sort" => "sort",
        "uniq" => "uniq",
        "cut" => "cut",
        "find" | "locate" => "find",
        "ls" => "ls",
        "xargs" => "xargs",
        "cp" => "cp",
        "mv" => "mv",
        "rm" => "rm",
        "mkdir" => "mkdir",
        "touch" => "touch",
        "tee" => "tee",
        "source" | "." => "source",
        "which" => "which",
        "alias" => "alias",
        "unset" => "unset",
        "export" => "export",
        "git" => "git",
        "curl" | "wget" => "curl",
        "true" => "true",
        "false" => "false",
        "timeout" => "timeout",
        "date" => "date",
        "apt-get" | "apt" => "apt",
        "yum" => "yum",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn actions(command: &str) -> Vec<&'static str> {
        command_actions(command)
    }

    fn model_call(arguments: &str) -> Call<'_> {
        Call {
            name: "bash",
            arguments: Arguments::Text(arguments),
        }
    }

    #[test]
    fn reference_examples() {
        assert_eq!(
            actions(r#"find . -type f -name "*.py" | xargs grep -l "readonly_fields" | head -20"#),
            ["find", "xargs", "head"]
        );
        assert_eq!(actions("sudo -u root python x.py"), Vec::<&str>::new());
        assert_eq!(actions("python3.11 -m pytest"), ["python"]);
        assert_eq!(
            actions("FOO=1 env time python3 a.py && cat x | grep y"),
            ["python", "cat", "grep"]
        );
        assert_eq!(
            actions("CUDA_VISIBLE_DEVICES=0 /usr/bin/python3 -m pytest"),
            ["python"]
        );
    }

    #[test]
    fn separators_inside_quotes_do_not_split() {
        assert_eq!(actions(r#"grep "a|b; c && d" f | wc -l"#), ["grep", "wc"]);
        assert_eq!(actions("echo 'x | cat' ; ls"), ["ls"]);
        assert_eq!(
            actions("python -c `cat f | head`; tail x"),
            ["python", "tail"]
        );
        assert_eq!(actions(r#"sed -n "s/\"|\"/x/" f"#), ["sed"]);
        // A quoted span at the start of a stage becomes a space, so the
        // executable is the next token.
        assert_eq!(actions(r#""ignored" cat f"#), ["cat"]);
        // Here-document bodies are not quoted: each line is a stage.
        assert_eq!(actions("python - <<'EOF'\nls\nEOF"), ["python", "ls"]);
        assert_eq!(actions("cat <<'EOF'\nimport x\nEOF\n"), ["cat"]);
    }

    #[test]
    fn unterminated_and_escaped_quotes() {
        // No closing quote: the quote stays and the separators count.
        assert_eq!(actions("echo 'a | cat"), ["cat"]);
        assert_eq!(actions(r#"echo "a \" | cat"#), ["cat"]);
        // Backslash-newline cannot be matched by `\\.` (no DOTALL).
        assert_eq!(actions("echo \"a \\\n| grep x\" | cat"), ["grep", "cat"]);
        // Backtick and single-quote spans may contain newlines.
        assert_eq!(actions("echo `a\nls` | cat"), ["cat"]);
    }

    #[test]
    fn separator_alternation_order() {
        assert_eq!(actions("ls ||| cat"), ["ls", "cat"]);
        assert_eq!(actions("ls &&& cat"), ["ls"]);
        assert_eq!(actions("ls & cat; head"), ["ls", "head"]);
        assert_eq!(actions("ls\r\ncat"), ["ls", "cat"]);
        assert_eq!(actions("git diff > x 2>&1 $(cat y)"), ["git"]);
    }

    #[test]
    fn wrappers_and_assignments() {
        assert_eq!(actions("env A=1 B_2=x nice cat f"), ["cat"]);
        assert_eq!(actions("Env cat f"), Vec::<&str>::new());
        assert_eq!(actions("1A=2 cat"), Vec::<&str>::new());
        assert_eq!(actions("=x cat"), Vec::<&str>::new());
        assert_eq!(actions("_=x exec command timeout 5 ls"), ["timeout"]);
        assert_eq!(actions("sudo"), Vec::<&str>::new());
    }

    #[test]
    fn executable_normalization() {
        assert_eq!(actions("/usr/bin/GREP x"), ["grep"]);
        assert_eq!(actions("./bin/ls"), ["ls"]);
        assert_eq!(actions("dir/"), Vec::<&str>::new());
        assert_eq!(actions(". venv/bin/activate"), ["source"]);
        assert_eq!(actions("pip3.10 install x"), ["pip"]);
        assert_eq!(actions("python3.11.4 x"), ["python"]);
        // Leftmost match: `.3.11.4` is too many groups, `.11.4` goes.
        assert_eq!(actions("python.3.11.4"), Vec::<&str>::new());
        assert_eq!(actions("python3."), Vec::<&str>::new());
        assert_eq!(actions("python3.x"), Vec::<&str>::new());
        // Python's `\d` is Unicode: Arabic-Indic digits are stripped too.
        assert_eq!(actions("python3.\u{661}\u{662}"), ["python"]);
        // `str.lower` maps the Kelvin sign to ASCII `k`.
        assert_eq!(actions("ma\u{212a}e all"), ["make"]);
        assert_eq!(
            actions("apt-get install x; yum y; wget z; less w"),
            ["apt", "yum", "curl", "cat"]
        );
        assert_eq!(actions("echo hi; printf x; cd /tmp"), Vec::<&str>::new());
    }

    #[test]
    fn python_whitespace_splits_tokens() {
        assert_eq!(actions("env\u{1f}cat f"), ["cat"]);
        assert_eq!(actions("env\u{a0}cat"), ["cat"]);
        // U+200B is not whitespace for Python: one token, not an alias.
        assert_eq!(actions("env\u{200b}cat"), Vec::<&str>::new());
    }

    #[test]
    fn strip_version_is_leftmost() {
        assert_eq!(strip_version("a.1.2.3"), "a.1");
        assert_eq!(strip_version("a..1.2"), "a.");
        assert_eq!(strip_version("a.b.1"), "a.b");
        assert_eq!(strip_version(".5"), "");
        assert_eq!(strip_version("a1"), "a1");
    }

    #[test]
    fn arguments_command_then_cmd() {
        assert_eq!(bash_actions([model_call(r#"{"cmd": "cat f"}"#)]), ["cat"]);
        assert_eq!(
            bash_actions([model_call(r#"{"command": "ls", "cmd": "cat f"}"#)]),
            ["ls"]
        );
        // `command or cmd`: a falsy command falls back to cmd.
        for falsy in [r#""""#, "null", "0", "[]", "false"] {
            let text = format!(r#"{{"command": {falsy}, "cmd": "cat f"}}"#);
            assert_eq!(bash_actions([model_call(&text)]), ["cat"], "{falsy}");
        }
        // A truthy non-string command is skipped, cmd is not consulted.
        assert!(bash_actions([model_call(r#"{"command": ["ls"], "cmd": "cat"}"#)]).is_empty());
        assert!(bash_actions([model_call(r#"{"command": 1, "cmd": "cat"}"#)]).is_empty());
        assert!(bash_actions([model_call(r#"{"cmd": 5}"#)]).is_empty());
    }

    #[test]
    fn malformed_arguments_are_skipped() {
        let calls = [
            model_call(r#"{"command": "ls"#),
            model_call("ls -la"),
            model_call(r#"["ls"]"#),
            model_call(r#""{\"command\": \"ls\"}""#),
            model_call(r#"{"command": "cat f"}"#),
        ];
        assert_eq!(bash_actions(calls), ["cat"]);
    }

    #[test]
    fn only_bash_calls_count() {
        let calls = [
            Call {
                name: "Bash",
                arguments: Arguments::Text(r#"{"command": "ls"}"#),
            },
            Call {
                name: "python",
                arguments: Arguments::Text(r#"{"command": "ls"}"#),
            },
            model_call(r#"{"command": "git status"}"#),
        ];
        assert_eq!(bash_actions(calls), ["git"]);
    }

    #[test]
    fn recorded_calls_in_dataset_shape() {
        let tool_calls = json!([
            {"id": "functions.bash:0", "type": "function",
             "function": {"name": "bash", "arguments": "{\"command\": \"ls -la\"}"}},
            {"id": "functions.bash:1", "type": "function",
             "function": {"name": "bash", "arguments": {"command": "grep x | sort"}}},
            {"function": {"name": "bash", "arguments": ["ls"]}},
            {"function": {"name": "bash"}},
            {"function": null},
            {"function": {"name": 1, "arguments": {"command": "ls"}}},
            "not a call",
            {"function": {"name": "bash", "arguments": {"command": "", "cmd": "head f"}}}
        ]);
        assert_eq!(
            bash_actions(recorded_calls(tool_calls.as_array().unwrap())),
            ["ls", "grep", "sort", "head"]
        );
    }

    #[test]
    fn duplicate_keys_keep_the_last_value() {
        // In a recorded object (decoded by serde_json) ...
        let tool_calls: Vec<Value> = serde_json::from_str(
            r#"[{"function": {"name": "bash", "arguments": {"command": "ls", "command": "cat f"}}}]"#,
        )
        .unwrap();
        assert_eq!(bash_actions(recorded_calls(&tool_calls)), ["cat"]);
        // ... and in an arguments string (decoded like json.loads).
        assert_eq!(
            bash_actions([model_call(r#"{"command": "ls", "command": "head f"}"#)]),
            ["head"]
        );
    }
}
