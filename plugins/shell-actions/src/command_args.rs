//! The `command` and `cmd` arguments of a model's bash call, decoded as the
//! reference decodes them: `json.loads` (pysem's, which accepts what
//! Python's does: `NaN`, `Infinity`, numbers beyond `f64`, lone surrogate
//! escapes), and the call skipped on any decode error or a document that is
//! not an object.
//!
//! Where the reference itself raises instead of skipping (integers over
//! 4,300 digits, nesting deeper than [`MAX_DEPTH`]) the call is skipped.

use pysem::json::loads;
pub use pysem::json::MAX_DEPTH;
use pysem::value::Value;

/// What canonicalization needs from one argument value: its text if it is a
/// string, else its Python truthiness (`command or cmd` picks by truthiness).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A JSON string.
    Str(String),
    /// Any other value; `true` when Python's `bool()` of it is true.
    NotStr(bool),
}

impl Arg {
    fn of(value: &Value) -> Arg {
        match value {
            Value::Str(s) => Arg::Str(s.clone()),
            other => Arg::NotStr(other.truthy()),
        }
    }
}

/// The `command` and `cmd` members of a top-level JSON object.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CommandArgs {
    /// Last value of the `command` key, if present.
    pub command: Option<Arg>,
    /// Last value of the `cmd` key, if present.
    pub cmd: Option<Arg>,
}

/// Decodes `text` as `json.loads` would. Returns `None` when it would raise
/// or when the document is not an object (the reference skips both).
pub fn command_args(text: &str) -> Option<CommandArgs> {
    let doc = loads(text)?;
    if !matches!(doc, Value::Dict(_)) {
        return None;
    }
    Some(CommandArgs {
        command: doc.get("command").map(Arg::of),
        cmd: doc.get("cmd").map(Arg::of),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Option<Arg> {
        Some(Arg::Str(text.to_owned()))
    }

    fn command(text: &str) -> Option<Arg> {
        command_args(text).expect("decodes").command
    }

    #[test]
    fn plain_object() {
        let args = command_args(r#" {"command": "ls -la", "cmd": 3} "#).unwrap();
        assert_eq!(args.command, s("ls -la"));
        assert_eq!(args.cmd, Some(Arg::NotStr(true)));
    }

    #[test]
    fn duplicate_keys_keep_the_last_value() {
        assert_eq!(
            command(r#"{"command": "ls", "command": "cat x"}"#),
            s("cat x")
        );
        assert_eq!(
            command(r#"{"command": "ls", "command": null}"#),
            Some(Arg::NotStr(false))
        );
    }

    #[test]
    fn escapes_and_surrogates() {
        assert_eq!(
            command(r#"{"comm\u0061nd": "a\tb\/c\"d\\"}"#),
            s("a\tb/c\"d\\")
        );
        assert_eq!(command(r#"{"command": "\ud83d\ude00"}"#), s("\u{1f600}"));
        // Lone surrogates are kept by Python; U+FFFD stands in for them.
        assert_eq!(
            command(r#"{"command": "\ud800/bin/ls"}"#),
            s("\u{fffd}/bin/ls")
        );
        assert_eq!(command(r#"{"command": "\ud800\u0041"}"#), s("\u{fffd}A"));
        assert_eq!(command(r#"{"command": "\udc00"}"#), s("\u{fffd}"));
        assert_eq!(command_args(r#"{"command": "\ud800\u00zz"}"#), None);
        assert_eq!(command_args(r#"{"command": "\x"}"#), None);
    }

    #[test]
    fn python_extensions_are_accepted() {
        for text in [
            r#"{"command": "ls", "x": NaN}"#,
            r#"{"command": "ls", "x": [Infinity, -Infinity]}"#,
            r#"{"command": "ls", "x": 1e400}"#,
            r#"{"command": "ls", "x": 123456789012345678901234567890}"#,
        ] {
            assert_eq!(command(text), s("ls"), "{text}");
        }
    }

    #[test]
    fn truthiness_of_non_strings() {
        for (literal, truthy) in [
            ("0", false),
            ("-0", false),
            ("0.0", false),
            ("0e5", false),
            ("1e-400", false),
            ("0.5", true),
            ("-1", true),
            ("NaN", true),
            ("-Infinity", true),
            ("[]", false),
            ("[0]", true),
            ("{}", false),
            ("{\"a\": 1}", true),
            ("false", false),
            ("true", true),
            ("null", false),
        ] {
            let text = format!("{{\"command\": {literal}}}");
            assert_eq!(command(&text), Some(Arg::NotStr(truthy)), "{literal}");
        }
    }

    #[test]
    fn decode_errors() {
        for text in [
            "",
            "   ",
            "{",
            r#"{"command": "ls",}"#,
            r#"{"command": "ls"} x"#,
            r#"{"command": 01}"#,
            r#"{"command": 1.}"#,
            r#"{"command": 1e}"#,
            r#"{"command": -}"#,
            r#"{"command": nan}"#,
            r#"{'command': 'ls'}"#,
            "{\"command\": \"a\nb\"}",
            "\u{feff}{\"command\": \"ls\"}",
            r#"{"command": "ls"  "cmd": "x"}"#,
            r#"{"command": [1,]}"#,
        ] {
            assert_eq!(command_args(text), None, "{text:?}");
        }
    }

    #[test]
    fn non_objects_are_skipped() {
        for text in ["[1]", "\"{}\"", "3", "null"] {
            assert_eq!(command_args(text), None, "{text}");
        }
    }

    #[test]
    fn nesting_limit() {
        let deep = |n: usize| {
            format!(
                "{{\"command\": \"ls\", \"x\": {}{}}}",
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        assert_eq!(command_args(&deep(MAX_DEPTH - 1)).unwrap().command, s("ls"));
        assert_eq!(command_args(&deep(MAX_DEPTH)), None);
    }
}
