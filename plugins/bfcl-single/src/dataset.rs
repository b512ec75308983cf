//! Reading a subset's question and answer files (JSON lines, aligned by
//! line), with errors that name the file, the line and the rule.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// A problem in a granted file.
#[derive(Debug, Clone, PartialEq)]
pub struct DataError {
    pub file: String,
    /// 1-based; 0 when not tied to a line.
    pub line: u32,
    pub message: String,
}

/// One question entry, with the raw JSON the scorer needs verbatim.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: String,
    /// The single turn's messages.
    pub messages: Vec<Message>,
    /// The `function` array as parsed; the gate takes it to build the request's tools.
    pub functions: Vec<Value>,
    /// The `function` array's JSON text, verbatim.
    pub functions_raw: Box<RawValue>,
    /// The answer's `ground_truth` JSON text, verbatim (none for hallucination subsets).
    pub ground_truth_raw: Option<Box<RawValue>>,
}

/// A question message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Message {
    pub role: String,
    /// `null` is sent as `""`, as the reference does.
    #[serde(default)]
    pub content: Option<String>,
}

#[derive(Deserialize)]
struct QuestionLine {
    id: String,
    question: Vec<Vec<Message>>,
    function: Box<RawValue>,
}

#[derive(Deserialize)]
struct AnswerLine {
    id: String,
    ground_truth: Box<RawValue>,
}

/// Non-empty lines with their 1-based numbers.
fn lines(text: &str) -> impl Iterator<Item = (u32, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i as u32 + 1, l))
}

/// Parses the first `limit` entries of a question file and, when given,
/// their answers (same position in the answer file, same id).
pub fn read(
    question_file: (&str, &[u8]),
    answer_file: Option<(&str, &[u8])>,
    limit: Option<usize>,
) -> Result<Vec<Entry>, DataError> {
    let (qname, qbytes) = question_file;
    let err = |file: &str, line: u32, message: String| DataError {
        file: file.to_owned(),
        line,
        message,
    };
    let qtext =
        std::str::from_utf8(qbytes).map_err(|e| err(qname, 0, format!("not UTF-8: {e}")))?;
    let mut entries = Vec::new();
    for (line, text) in lines(qtext).take(limit.unwrap_or(usize::MAX)) {
        let q: QuestionLine = serde_json::from_str(text)
            .map_err(|e| err(qname, line, format!("not a BFCL question entry: {e}")))?;
        let [turn] = <[Vec<Message>; 1]>::try_from(q.question).map_err(|turns| {
            err(
                qname,
                line,
                format!(
                    "{}: single-turn entries have exactly one turn, found {}",
                    q.id,
                    turns.len()
                ),
            )
        })?;
        for m in &turn {
            if !matches!(m.role.as_str(), "system" | "user" | "assistant") {
                return Err(err(
                    qname,
                    line,
                    format!("{}: unsupported role '{}'", q.id, m.role),
                ));
            }
        }
        let functions: Vec<Value> = serde_json::from_str(q.function.get()).map_err(|e| {
            err(
                qname,
                line,
                format!("{}: 'function' is not an array: {e}", q.id),
            )
        })?;
        entries.push(Entry {
            id: q.id,
            messages: turn,
            functions,
            functions_raw: q.function,
            ground_truth_raw: None,
        });
    }
    if let Some((aname, abytes)) = answer_file {
        let atext =
            std::str::from_utf8(abytes).map_err(|e| err(aname, 0, format!("not UTF-8: {e}")))?;
        let mut answers = lines(atext);
        for entry in &mut entries {
            let (line, text) = answers.next().ok_or_else(|| {
                err(
                    aname,
                    0,
                    format!(
                        "no answer for {}: the answer file is shorter than the question file",
                        entry.id
                    ),
                )
            })?;
            let a: AnswerLine = serde_json::from_str(text)
                .map_err(|e| err(aname, line, format!("not a BFCL answer entry: {e}")))?;
            if a.id != entry.id {
                return Err(err(
                    aname,
                    line,
                    format!(
                        "answer id '{}' does not match question id '{}'",
                        a.id, entry.id
                    ),
                ));
            }
            entry.ground_truth_raw = Some(a.ground_truth);
        }
    }
    Ok(entries)
}

/// Number of entries (lines that are not only whitespace) in a file, in one pass without
/// splitting it into lines.
pub fn count(bytes: &[u8]) -> usize {
    let (mut n, mut blank) = (0, true);
    for &b in bytes {
        let newline = b == b'\n';
        n += usize::from(newline & !blank);
        blank = newline | (blank & b.is_ascii_whitespace());
    }
    n + usize::from(!blank)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_the_lines_not_only_whitespace() {
        let by_lines = |t: &[u8]| {
            t.split(|&b| b == b'\n')
                .filter(|l| l.iter().any(|b| !b.is_ascii_whitespace()))
                .count()
        };
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "\n\na\n\n",
            " \t\r\n{}\r\n \n",
            "x \n \x0c\n y",
            "{\"a\": 1}\n{\"b\": 2}\n",
            "é\n\n\u{a0}\n",
        ] {
            assert_eq!(
                count(text.as_bytes()),
                by_lines(text.as_bytes()),
                "{text:?}"
            );
        }
    }

    const Q: &str = concat!(
        r#"{"id": "simple_python_0", "question": [[{"role": "user", "content": "Area?"}]], "function": [{"name": "area", "parameters": {"type": "dict", "properties": {"b": {"type": "float", "description": "base"}}, "required": ["b"]}}]}"#,
        "\n",
        r#"{"id": "simple_python_1", "question": [[{"role": "system", "content": null}, {"role": "user", "content": "Q"}]], "function": []}"#,
        "\n"
    );
    const A: &str = concat!(
        r#"{"id": "simple_python_0", "ground_truth": [{"area": {"b": [10.0, 1e400]}}]}"#,
        "\n",
        r#"{"id": "simple_python_1", "ground_truth": []}"#,
        "\n"
    );

    #[test]
    fn reads_entries_and_keeps_raw_answers_verbatim() {
        let e = read(
            ("q.json", Q.as_bytes()),
            Some(("a.json", A.as_bytes())),
            None,
        )
        .unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].id, "simple_python_0");
        // 10.0 stays a float and 1e400 is kept as written.
        assert_eq!(
            e[0].ground_truth_raw.as_ref().unwrap().get(),
            r#"[{"area": {"b": [10.0, 1e400]}}]"#
        );
        assert_eq!(e[1].messages[0].content, None);
        assert_eq!(count(Q.as_bytes()), 2);
        let first = read(("q.json", Q.as_bytes()), None, Some(1)).unwrap();
        assert_eq!(first.len(), 1);
    }

    #[test]
    fn errors_name_file_line_and_rule() {
        let bad = Q.replace(r#"[[{"role": "system""#, r#"[[{"role": "tool""#);
        let e = read(("q.json", bad.as_bytes()), None, None).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("q.json", 2));
        assert!(e.message.contains("unsupported role 'tool'"), "{e:?}");
        let e = read(("q.json", b"{\"id\": 1}\n"), None, None).unwrap_err();
        assert_eq!(e.line, 1);
        let swapped = A.lines().rev().collect::<Vec<_>>().join("\n");
        let e = read(
            ("q.json", Q.as_bytes()),
            Some(("a.json", swapped.as_bytes())),
            None,
        )
        .unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("a.json", 1));
        assert!(e.message.contains("does not match"), "{e:?}");
        let two_turns = r#"{"id": "x", "question": [[], []], "function": []}"#;
        let e = read(("q.json", two_turns.as_bytes()), None, None).unwrap_err();
        assert!(e.message.contains("exactly one turn"), "{e:?}");
    }
}
