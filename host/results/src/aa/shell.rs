//! The executable a recorded shell command runs, as agentperf-local names it
//! for `tools.json`'s `by_command` groups and each turn's `tool_calls[].command`:
//! heredoc bodies dropped, the rest split as Python's
//! `shlex.shlex(text, posix=True, punctuation_chars=";&")` with
//! `whitespace_split = True` splits it (comments, quotes and escapes
//! included), and the first word of the last `;`- or `&&`-separated segment
//! taken. A command that does not split (an unclosed quote, a trailing
//! escape) names none.

use regex::Regex;
use std::sync::LazyLock;

/// `<<` or `<<-`, then the delimiter word, quoted or bare (Python's pattern;
/// `\w` is Unicode's word characters in both).
static HEREDOC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"<<-?[ \t]*(?:'([^']+)'|"([^"]+)"|([A-Za-z_]\w*))"#).expect("valid pattern")
});

/// The executable of `command`'s last segment (`None`: no command, no word, or it
/// does not split).
pub fn executable(command: Option<&str>) -> Option<String> {
    let command = command.filter(|c| !c.is_empty())?;
    let tokens = split(&without_heredoc_bodies(command))?;
    let mut segment: Vec<&String> = Vec::new();
    for token in &tokens {
        if token == ";" || token == "&&" {
            segment.clear();
        } else {
            segment.push(token);
        }
    }
    let first = if segment.is_empty() {
        tokens.first()
    } else {
        segment.first().copied()
    };
    first.cloned()
}

/// Heredoc bodies removed: their text is data, not shell. A marker whose
/// closing line never comes keeps the lines after it.
fn without_heredoc_bodies(command: &str) -> String {
    let lines: Vec<&str> = command.split('\n').collect();
    let mut kept = Vec::with_capacity(lines.len());
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        kept.push(line);
        index += 1;
        for found in HEREDOC.captures_iter(line) {
            let whole = found.get(0).expect("a match has group 0");
            if line[..whole.start()].ends_with('<') {
                continue; // a <<< here-string carries no body
            }
            let delimiter = (1..=3)
                .find_map(|g| found.get(g))
                .expect("one alternative matched")
                .as_str();
            let end = (index..lines.len()).find(|&i| lines[i].trim() == delimiter);
            if let Some(end) = end {
                index = end + 1;
            }
        }
    }
    kept.join("\n")
}

/// Lexer states of Python's `shlex.read_token`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Whitespace,
    Word,
    Punctuation,
    Quote(char),
    Escape,
    End,
}

const PUNCTUATION: [char; 2] = [';', '&'];

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// shlex's word characters in posix mode with punctuation characters set.
fn is_wordchar(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || "_~-./*?=".contains(c)
        || ('\u{df}'..='\u{ff}').contains(&c) && c != '\u{f7}'
        || ('\u{c0}'..='\u{de}').contains(&c) && c != '\u{d7}'
}

/// The words of `text` as the lexer gives them (`None`: "No closing quotation" or
/// "No escaped character").
fn split(text: &str) -> Option<Vec<String>> {
    let mut chars = text.chars();
    let mut pushed_back: Option<char> = None;
    let mut state = State::Whitespace;
    let mut tokens = Vec::new();
    loop {
        let mut token = String::new();
        let mut quoted = false;
        let mut escaped_from = State::Whitespace;
        loop {
            let next = pushed_back.take().or_else(|| chars.next());
            match state {
                State::End => break,
                State::Whitespace => match next {
                    None => {
                        state = State::End;
                        break;
                    }
                    Some(c) if is_whitespace(c) => {
                        if !token.is_empty() || quoted {
                            break;
                        }
                    }
                    Some('#') => skip_line(&mut chars),
                    Some('\\') => {
                        escaped_from = State::Word;
                        state = State::Escape;
                    }
                    Some(c) if is_wordchar(c) => {
                        token.push(c);
                        state = State::Word;
                    }
                    Some(c) if PUNCTUATION.contains(&c) => {
                        token.push(c);
                        state = State::Punctuation;
                    }
                    Some(c @ ('\'' | '"')) => state = State::Quote(c),
                    Some(c) => {
                        // whitespace_split: anything else starts a word.
                        token.push(c);
                        state = State::Word;
                    }
                },
                State::Quote(q) => {
                    quoted = true;
                    match next {
                        None => return None,
                        Some(c) if c == q => state = State::Word,
                        Some('\\') if q == '"' => {
                            escaped_from = state;
                            state = State::Escape;
                        }
                        Some(c) => token.push(c),
                    }
                }
                State::Escape => {
                    let c = next?;
                    // Within quotes only the quote itself or the escape may be escaped.
                    if let State::Quote(q) = escaped_from {
                        if c != '\\' && c != q {
                            token.push('\\');
                        }
                    }
                    token.push(c);
                    state = escaped_from;
                }
                State::Word | State::Punctuation => match next {
                    None => {
                        state = State::End;
                        break;
                    }
                    Some(c) if is_whitespace(c) => {
                        state = State::Whitespace;
                        if !token.is_empty() || quoted {
                            break;
                        }
                    }
                    Some('#') => {
                        skip_line(&mut chars);
                        state = State::Whitespace;
                        if !token.is_empty() || quoted {
                            break;
                        }
                    }
                    Some(c) if state == State::Punctuation => {
                        if PUNCTUATION.contains(&c) {
                            token.push(c);
                        } else {
                            if !is_whitespace(c) {
                                pushed_back = Some(c);
                            }
                            state = State::Whitespace;
                            break;
                        }
                    }
                    Some(c @ ('\'' | '"')) => state = State::Quote(c),
                    Some('\\') => {
                        escaped_from = State::Word;
                        state = State::Escape;
                    }
                    Some(c) if !PUNCTUATION.contains(&c) => token.push(c),
                    Some(c) => {
                        pushed_back = Some(c);
                        state = State::Whitespace;
                        if !token.is_empty() || quoted {
                            break;
                        }
                    }
                },
            }
        }
        if token.is_empty() && !quoted {
            // posix: an empty unquoted token is the end.
            return Some(tokens);
        }
        tokens.push(token);
    }
}

/// Python's `instream.readline()`: the rest of the line, its newline included.
fn skip_line(chars: &mut std::str::Chars<'_>) {
    for c in chars.by_ref() {
        if c == '\n' {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values from Python 3.12's agentperf_local.tools.shell.shell_executable.
    #[test]
    fn names_the_last_segments_executable() {
        for (command, expected) in [
            ("ls -la", Some("ls")),
            ("cd /repo && python -m pytest tests/x.py", Some("python")),
            ("cd /repo; git status", Some("git")),
            ("cat file | grep x", Some("cat")),
            ("echo 'a; b' && sed -n 1p f", Some("sed")),
            ("FOO=1 make", Some("FOO=1")),
            ("a & b", Some("a")),
            ("a&&b", Some("b")),
            ("a;;b", Some("a")),
            ("x&&", Some("x")),
            ("é=1 ok", Some("é=1")),
            ("a\\ b c", Some("a b")),
            ("a \"\" b", Some("a")),
            ("x;", Some("x")),
            ("   ", None),
            ("", None),
            ("echo \"unclosed", None),
            ("echo trailing\\", None),
            ("# only a comment", None),
            ("ls # a comment; rm", Some("ls")),
            ("\"quoted cmd\" arg", Some("quoted cmd")),
            ("echo \"a\\\"b\" ; tail", Some("tail")),
            (
                "cat <<'EOF' > f.py\nimport x; y && z\nEOF\npython f.py",
                Some("cat"),
            ),
            (
                "cat <<'EOF' > f.py\nimport x; y && z\nEOF\n&& python f.py",
                Some("python"),
            ),
            ("cat <<EOF\nno end && here", Some("here")),
            ("grep x <<< \"$a\" && wc", Some("wc")),
        ] {
            assert_eq!(
                executable(Some(command)).as_deref(),
                expected,
                "{command:?}"
            );
        }
        assert_eq!(executable(None), None);
    }
}
