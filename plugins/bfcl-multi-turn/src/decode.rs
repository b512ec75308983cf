//! BFCL's FC decoding of one model step (`OpenAICompletionsHandler.
//! _parse_query_response_FC` then `convert_to_function_call`): each tool
//! call `{name: arguments}` becomes the call string
//! `name(k1=repr(v1),k2=repr(v2))` (arguments through `json.loads`, names as
//! the model sent them); without tool calls the step is the content, which
//! decodes to nothing when empty and fails to decode otherwise.

use crate::py::from_json;
use serde_json::Value;

/// Why a step does not decode (BFCL: an exception in `decode_execute`).
pub type DecodeError = String;

/// The call strings of one step, `Ok(vec![])` for an empty step.
pub fn decode_step<'a>(
    tool_calls: impl IntoIterator<Item = (&'a str, &'a str)>,
    content: &str,
) -> Result<Vec<String>, DecodeError> {
    let calls: Vec<(&str, &str)> = tool_calls.into_iter().collect();
    if calls.is_empty() {
        // `model_responses` is the content string: "" iterates to nothing,
        // any other text fails on `str.items()`.
        return if content.is_empty() {
            Ok(Vec::new())
        } else {
            Err("'str' object has no attribute 'items'".into())
        };
    }
    calls
        .into_iter()
        .map(|(name, arguments)| call_string(name, arguments))
        .collect()
}

/// `f"{name}({','.join(f'{k}={repr(v)}' for k, v in json.loads(arguments).items())})"`.
pub fn call_string(name: &str, arguments: &str) -> Result<String, DecodeError> {
    let v: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("arguments of {name} are not JSON: {e}"))?;
    let Value::Object(map) = v else {
        return Err(format!(
            "'{}' object has no attribute 'items'",
            match v {
                Value::Array(_) => "list",
                Value::String(_) => "str",
                Value::Bool(_) => "bool",
                Value::Null => "NoneType",
                Value::Number(n) if n.is_f64() => "float",
                _ => "int",
            }
        ));
    };
    let args: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", from_json(v).repr()))
        .collect();
    Ok(format!("{name}({})", args.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_convert_to_function_call() {
        assert_eq!(
            decode_step(
                [
                    ("cd", r#"{"folder": "doc's"}"#),
                    (
                        "add",
                        r#"{"a": 1, "b": 2.0, "c": [true, null], "d": {"x": 1e5}}"#
                    )
                ],
                "ignored"
            )
            .unwrap(),
            vec![
                "cd(folder=\"doc's\")".to_string(),
                "add(a=1,b=2.0,c=[True, None],d={'x': 100000.0})".to_string()
            ]
        );
        assert_eq!(decode_step([], "").unwrap(), Vec::<String>::new());
        assert!(decode_step([], "I am done.").is_err());
        assert!(decode_step([("ls", "not json")], "").is_err());
        assert!(decode_step([("ls", "[1]")], "").is_err());
        assert_eq!(decode_step([("pwd", "{}")], "").unwrap(), vec!["pwd()"]);
    }

    /// `[name, arguments, call string]` from CPython 3.11 running
    /// `convert_to_function_call([{name: arguments}])`.
    const PYTHON: &str = r#"["f", "{\"s\": \"it's \\\"q\\\"\", \"u\": \"caf\\u00e9 \\ud83d\\ude00\", \"n\": \"a\\nb\\tc\\u0007\"}", "f(s='it\\'s \"q\"',u='caf\u00e9 \ud83d\ude00',n='a\\nb\\tc\\x07')"]
["g", "{\"x\": 1e-7, \"y\": 1e16, \"z\": -0.0, \"w\": 123456789012345678, \"v\": 0.1, \"t\": 2.50}", "g(x=1e-07,y=1e+16,z=-0.0,w=123456789012345678,v=0.1,t=2.5)"]
["h", "{\"l\": [1, 2.0, \"x\", null, true, {\"k\": [false]}], \"d\": {\"a\": {\"b\": \"c\"}}, \"e\": [], \"o\": {}}", "h(l=[1, 2.0, 'x', None, True, {'k': [False]}],d={'a': {'b': 'c'}},e=[],o={})"]
["i", "{\"big\": 1e300, \"small\": 5e-324, \"neg\": -12, \"f\": 3.0e2}", "i(big=1e+300,small=5e-324,neg=-12,f=300.0)"]
["j", "{\"k\": \"\\\\back\\\\slash\", \"q\": \"\\u0000\", \"r\": \"\\u00a0\\u2028\"}", "j(k='\\\\back\\\\slash',q='\\x00',r='\\xa0\\u2028')"]
["k", "{\"dup\": 1, \"dup\": 2, \"a\": \"\\u0027\\\"\"}", "k(dup=2,a='\\'\"')"]
"#;

    #[test]
    fn call_strings_match_python() {
        for line in PYTHON.lines().filter(|l| !l.is_empty()) {
            let row: Vec<String> = serde_json::from_str(line).unwrap();
            assert_eq!(call_string(&row[0], &row[1]).unwrap(), row[2], "{line}");
        }
    }
}
