//! The text of a closed-loop tool message, written the way the
//! recording's agent harness wrote it, so that a closed-loop request
//! differs from the recording only where the model's own actions made it
//! differ.
//!
//! - [`Harness::MiniSweAgent`] (the MLPerf Edge Agentic trajectories, AA's
//!   SWE-bench tasks): `<returncode>N</returncode>`, then `<output>` with
//!   the output, or, from 10,000 characters on, mini-swe-agent's warning
//!   and the first and last 5,000 characters.
//! - [`Harness::Openclaw`] (AA's PinchBench tasks): a JSON object, two-space
//!   indented, `returncode` then `output`, or from 10,000 characters on
//!   `output_head`, `output_tail` (5,000 characters each), `elided_chars`
//!   and `warning`; non-ASCII and `<`, `>`, `&`, `'` written as `\uXXXX`.
//!   The limit is inferred from AA's recording, where the longest output
//!   kept whole has 8,885 characters and the shortest cut one 11,314.
//! - [`Harness::Plain`]: the output as it is.
//!
//! Lengths count characters (Python's `len` of a `str`), as the harnesses do.

pub use agentload_config::tools::ToolMessages as Harness;
use serde_json::{Map, Value};

/// Outputs this long (characters) or longer are cut to their ends.
pub const LONG: usize = 10_000;
/// Characters kept from each end of a cut output.
pub const END: usize = 5_000;

const MINI_WARNING: &str = "<warning>\nThe output of your last command was too long.\nPlease try a different command that produces less output.\nIf you're looking at a file you can try use head, tail or sed to view a smaller number of lines selectively.\nIf you're using grep or find and it produced too much output, you can use a more selective search pattern.\nIf you really need to see something from the full command's output, you can redirect output to a file and then search in that file.\n</warning>";

/// The tool message's text for a call that printed `output` and exited with
/// `exit_code` (none: the call did not get to exit, mini-swe-agent's -1).
pub fn render(harness: Harness, output: &str, exit_code: Option<i32>) -> String {
    let rc = exit_code.unwrap_or(-1);
    match harness {
        Harness::Plain => output.to_owned(),
        Harness::MiniSweAgent => {
            let chars = output.chars().count();
            if chars < LONG {
                format!("<returncode>{rc}</returncode>\n<output>\n{output}</output>")
            } else {
                let (head, tail) = ends(output, chars);
                format!(
                    "<returncode>{rc}</returncode>\n{MINI_WARNING}<output_head>\n{head}\n</output_head>\n<elided_chars>\n{} characters elided\n</elided_chars>\n<output_tail>\n{tail}\n</output_tail>",
                    chars - 2 * END
                )
            }
        }
        Harness::Openclaw => {
            let chars = output.chars().count();
            let mut object = Map::new();
            object.insert("returncode".into(), Value::from(rc));
            if chars <= LONG {
                object.insert("output".into(), Value::from(output));
            } else {
                let (head, tail) = ends(output, chars);
                object.insert("output_head".into(), Value::from(head));
                object.insert("output_tail".into(), Value::from(tail));
                object.insert("elided_chars".into(), Value::from(chars - 2 * END));
                object.insert("warning".into(), Value::from("Output too long."));
            }
            let text =
                pysem::json::dumps_with(&Value::Object(object), &pysem::json::Format::indented(2));
            html_safe(&text)
        }
    }
}

/// The first and last [`END`] characters.
fn ends(output: &str, chars: usize) -> (&str, &str) {
    let at = |n: usize| {
        output
            .char_indices()
            .nth(n)
            .map_or(output.len(), |(i, _)| i)
    };
    (&output[..at(END)], &output[at(chars - END)..])
}

/// `<`, `>`, `&` and `'` as `\u` escapes (they appear only inside strings).
fn html_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\'' => out.push_str("\\u0027"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mini_swe_agent_tags_as_the_edge_trajectories_have_them() {
        assert_eq!(
            render(Harness::MiniSweAgent, "a\nb\n", Some(0)),
            "<returncode>0</returncode>\n<output>\na\nb\n</output>"
        );
        assert_eq!(
            render(Harness::MiniSweAgent, "", Some(1)),
            "<returncode>1</returncode>\n<output>\n</output>"
        );
        let long: String = "x".repeat(4000) + &"é".repeat(8000);
        let text = render(Harness::MiniSweAgent, &long, Some(0));
        assert!(
            text.contains("</warning><output_head>\n"),
            "{}",
            &text[..600]
        );
        assert!(text.contains("\n</output_head>\n<elided_chars>\n2000 characters elided\n</elided_chars>\n<output_tail>\n"));
        assert!(text.ends_with(&format!("{}\n</output_tail>", "é".repeat(5000))));
    }

    #[test]
    fn openclaw_json_as_aas_recording_has_it() {
        // A result as the recording of task_skill_search carries it.
        assert_eq!(
            render(
                Harness::Openclaw,
                "/workspace/config/settings.json\n/workspace/config/database.yml\n",
                Some(0)
            ),
            "{\n  \"returncode\": 0,\n  \"output\": \"/workspace/config/settings.json\\n/workspace/config/database.yml\\n\"\n}"
        );
        assert_eq!(
            render(Harness::Openclaw, "don't <b> & é —", Some(0)),
            "{\n  \"returncode\": 0,\n  \"output\": \"don\\u0027t \\u003cb\\u003e \\u0026 \\u00e9 \\u2014\"\n}"
        );
        let long = "y".repeat(LONG + 1);
        let text = render(Harness::Openclaw, &long, Some(0));
        let v: Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "returncode",
                "output_head",
                "output_tail",
                "elided_chars",
                "warning"
            ]
        );
        assert_eq!(v["elided_chars"], 1);
        assert_eq!(v["output_head"].as_str().unwrap().len(), END);
    }

    #[test]
    fn a_call_that_never_exited_reports_minus_one() {
        assert!(render(Harness::MiniSweAgent, "", None).starts_with("<returncode>-1</returncode>"));
        assert_eq!(render(Harness::Plain, "as is", None), "as is");
    }
}
