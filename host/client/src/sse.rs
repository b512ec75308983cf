//! An incremental Server-Sent Events parser (the WHATWG event-stream rules
//! that matter for Chat Completions): `\n`, `\r\n` and `\r` line ends, even
//! split across reads; comment lines; multi-line `data`; a final event
//! without a trailing blank line; the `event` field (an `event: error`
//! without data is dispatched too). Bytes that are not UTF-8 are replaced as
//! the WHATWG rules say, and the event says so ([`SseEvent::invalid_utf8`]):
//! the client fails such a turn rather than record what the server did not
//! send.

/// One dispatched event's data (lines joined with `\n`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    pub data: String,
    /// The `event` field's value, when the event had one.
    pub event: Option<String>,
    /// Its data had bytes that are not UTF-8 (replaced with U+FFFD in `data`).
    pub invalid_utf8: bool,
}

impl SseEvent {
    /// Whether this is the OpenAI end-of-stream marker.
    pub fn is_done(&self) -> bool {
        self.data.trim() == "[DONE]"
    }
}

/// Feeds bytes in, gets events out.
#[derive(Debug, Default)]
pub struct SseParser {
    /// The start of a line whose end has not come yet.
    line: Vec<u8>,
    /// The event's `data` lines so far, joined with `\n`.
    data: String,
    has_data: bool,
    invalid_utf8: bool,
    event: Option<String>,
    /// The previous byte was a `\r`: a `\n` right after it ends no new line.
    after_cr: bool,
}

impl SseParser {
    /// Parses `bytes`, appending completed events to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) {
        while !bytes.is_empty() {
            if std::mem::take(&mut self.after_cr) && bytes[0] == b'\n' {
                bytes = &bytes[1..];
                continue;
            }
            let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) else {
                self.line.extend_from_slice(bytes);
                return;
            };
            self.after_cr = bytes[end] == b'\r';
            if self.line.is_empty() {
                self.end_line(&bytes[..end], out);
            } else {
                // A line split across reads.
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..end]);
                self.end_line(&line, out);
                line.clear();
                self.line = line;
            }
            bytes = &bytes[end + 1..];
        }
    }

    /// Ends the stream: an event still being built is dispatched.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.end_line(&line, out);
        }
        self.dispatch(out);
    }

    fn end_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // comment
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push('\n');
            }
            match std::str::from_utf8(value) {
                Ok(text) => self.data.push_str(text),
                Err(_) => {
                    self.invalid_utf8 = true;
                    self.data.push_str(&String::from_utf8_lossy(value));
                }
            }
            self.has_data = true;
        } else if field == b"event" {
            self.event = Some(String::from_utf8_lossy(value).into_owned());
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.has_data || event.as_deref() == Some("error") {
            out.push(SseEvent {
                data: std::mem::take(&mut self.data),
                event,
                invalid_utf8: self.invalid_utf8,
            });
        }
        self.data.clear();
        self.has_data = false;
        self.invalid_utf8 = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<String> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            p.feed(chunk, &mut out);
        }
        p.finish(&mut out);
        out.into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_in_any_split() {
        let input = b": keep-alive\r\ndata: {\"a\":1}\r\n\r\ndata:{\"b\":2}\n\ndata: x\rdata: y\r\rdata: [DONE]\n\n";
        for piece in 1..input.len() {
            assert_eq!(
                parse_in_pieces(input, piece),
                vec!["{\"a\":1}", "{\"b\":2}", "x\ny", "[DONE]"],
                "split every {piece} bytes"
            );
        }
    }

    #[test]
    fn comments_and_other_fields_are_ignored() {
        let input = b"event: message\nid: 7\n: note\ndata: hi\nretry: 10\n\n: only a comment\n\n";
        assert_eq!(parse_in_pieces(input, 5), vec!["hi"]);
    }

    #[test]
    fn trailing_event_without_blank_line_is_kept() {
        assert_eq!(parse_in_pieces(b"data: last", 3), vec!["last"]);
        assert!(SseEvent {
            data: " [DONE] ".into(),
            event: None,
            invalid_utf8: false,
        }
        .is_done());
    }

    #[test]
    fn event_field_is_kept_per_event() {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        p.feed(
            b"event: error\ndata: {\"x\":1}\n\ndata: a\n\nevent: error\n\nevent: ping\n\n",
            &mut out,
        );
        let got: Vec<(Option<&str>, &str)> = out
            .iter()
            .map(|e| (e.event.as_deref(), e.data.as_str()))
            .collect();
        // An error event without data still counts; a named event without data does not.
        assert_eq!(
            got,
            vec![
                (Some("error"), "{\"x\":1}"),
                (None, "a"),
                (Some("error"), "")
            ]
        );
    }

    #[test]
    fn empty_data_line_is_an_event() {
        assert_eq!(parse_in_pieces(b"data\n\n", 1), vec![""]);
    }

    #[test]
    fn data_that_is_not_utf8_is_flagged_in_any_split() {
        let input = b"data: {\"a\":\"\xff\xfe\"}\n\ndata: ok\n\n";
        for piece in 1..input.len() {
            let mut p = SseParser::default();
            let mut out = Vec::new();
            for chunk in input.chunks(piece) {
                p.feed(chunk, &mut out);
            }
            p.finish(&mut out);
            let flags: Vec<bool> = out.iter().map(|e| e.invalid_utf8).collect();
            assert_eq!(flags, [true, false], "split every {piece} bytes");
        }
    }
}
