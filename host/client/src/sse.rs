//! An incremental Server-Sent Events parser (the WHATWG event-stream rules
//! that matter for Chat Completions): `\n`, `\r\n` and `\r` line ends, even
//! split across reads; comment lines; multi-line `data`; a final event
//! without a trailing blank line; the `event` field (an `event: error`
//! without data is dispatched too). Bytes that are not UTF-8 are replaced as
//! the WHATWG rules say, and the event says so ([`SseEvent::invalid_utf8`]):
//! the client fails such a turn rather than record what the server did not
//! send.

/// One dispatched event, borrowed from the bytes just fed (an event whose one `data` line
/// came whole in one read, the usual case: nothing copied) or from the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// Its data lines joined with `\n`.
    pub data: &'a str,
    /// The `event` field's value, when the event had one.
    pub event: Option<&'a str>,
    /// Its data had bytes that are not UTF-8 (replaced with U+FFFD in `data`).
    pub invalid_utf8: bool,
}

impl SseEvent<'_> {
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
    /// The event's `data` lines so far, joined with `\n`, when they are not borrowed.
    data: String,
    has_data: bool,
    invalid_utf8: bool,
    event: Option<String>,
    /// The previous byte was a `\r`: a `\n` right after it ends no new line.
    after_cr: bool,
}

/// The event's one `data` line while it lies whole in the bytes being fed: it is handed out
/// borrowed unless a second line, or the end of those bytes, comes first.
type Pending<'b> = Option<&'b str>;

impl SseParser {
    /// Parses `bytes`, handing each completed event to `each`; stops at the first error
    /// `each` returns, and returns it (the stream is then over: the parser is not fed again).
    ///
    /// # Errors
    /// The first error of `each`.
    pub fn feed<E>(
        &mut self,
        mut bytes: &[u8],
        mut each: impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut pending: Pending<'_> = None;
        while !bytes.is_empty() {
            if std::mem::take(&mut self.after_cr) && bytes[0] == b'\n' {
                bytes = &bytes[1..];
                continue;
            }
            let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) else {
                self.line.extend_from_slice(bytes);
                break;
            };
            self.after_cr = bytes[end] == b'\r';
            if self.line.is_empty() {
                self.end_line(&bytes[..end], &mut pending, &mut each)?;
            } else {
                // A line split across reads: its bytes are the parser's, never borrowed.
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..end]);
                let ended = self.end_owned_line(&line, &mut each);
                line.clear();
                self.line = line;
                ended?;
            }
            bytes = &bytes[end + 1..];
        }
        // The event goes on in the next bytes: its line becomes the parser's.
        if let Some(data) = pending {
            self.data.push_str(data);
        }
        Ok(())
    }

    /// Ends the stream: an event still being built is dispatched.
    ///
    /// # Errors
    /// The error of `each`.
    pub fn finish<E>(
        &mut self,
        mut each: impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.end_owned_line(&line, &mut each)?;
        }
        self.dispatch(&mut None, &mut each)
    }

    /// A line that was not whole in one read (the parser holds its bytes): a `data` value in
    /// it is copied.
    fn end_owned_line<E>(
        &mut self,
        line: &[u8],
        each: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut pending = None;
        self.end_line(line, &mut pending, each)?;
        if let Some(data) = pending {
            self.data.push_str(data);
        }
        Ok(())
    }

    /// One line; a `data` value may stay borrowed in `pending`.
    fn end_line<'b, E>(
        &mut self,
        line: &'b [u8],
        pending: &mut Pending<'b>,
        each: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.is_empty() {
            return self.dispatch(pending, each);
        }
        if line[0] == b':' {
            return Ok(()); // comment
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        if field == b"data" {
            self.data_line(value, pending);
        } else if field == b"event" {
            self.event = Some(String::from_utf8_lossy(value).into_owned());
        }
        Ok(())
    }

    fn data_line<'b>(&mut self, value: &'b [u8], pending: &mut Pending<'b>) {
        let text = std::str::from_utf8(value);
        if let (false, Ok(text)) = (self.has_data, text) {
            *pending = Some(text);
            self.has_data = true;
            return;
        }
        if let Some(first) = pending.take() {
            self.data.push_str(first);
        }
        if self.has_data {
            self.data.push('\n');
        }
        match text {
            Ok(text) => self.data.push_str(text),
            Err(_) => {
                self.invalid_utf8 = true;
                self.data.push_str(&String::from_utf8_lossy(value));
            }
        }
        self.has_data = true;
    }

    fn dispatch<E>(
        &mut self,
        pending: &mut Pending<'_>,
        each: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let event = self.event.take();
        let sent = if self.has_data || event.as_deref() == Some("error") {
            each(SseEvent {
                data: pending.take().unwrap_or(&self.data),
                event: event.as_deref(),
                invalid_utf8: self.invalid_utf8,
            })
        } else {
            Ok(())
        };
        self.data.clear();
        self.has_data = false;
        self.invalid_utf8 = false;
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// An event as the tests compare it.
    #[derive(Debug, PartialEq)]
    struct Owned {
        data: String,
        event: Option<String>,
        invalid_utf8: bool,
    }

    fn keep(out: &mut Vec<Owned>) -> impl FnMut(SseEvent<'_>) -> Result<(), Infallible> + '_ {
        |e| {
            out.push(Owned {
                data: e.data.to_owned(),
                event: e.event.map(str::to_owned),
                invalid_utf8: e.invalid_utf8,
            });
            Ok(())
        }
    }

    fn events_in_pieces(input: &[u8], piece: usize) -> Vec<Owned> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for chunk in input.chunks(piece) {
            p.feed(chunk, keep(&mut out)).unwrap();
        }
        p.finish(keep(&mut out)).unwrap();
        out
    }

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<String> {
        let events = events_in_pieces(input, piece);
        events.into_iter().map(|e| e.data).collect()
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

    /// An event whose one data line came whole in the bytes fed is handed out from them, not
    /// copied; one that did not is the parser's own, whole.
    #[test]
    fn whole_events_are_borrowed_from_the_bytes_fed() {
        let input = b"data: {\"a\":1}\n\ndata: two\ndata: lines\n\ndata: spl";
        let mut p = SseParser::default();
        let mut seen = Vec::new();
        p.feed(input, |e| {
            let inside = input.as_ptr_range().contains(&e.data.as_ptr());
            seen.push((e.data.to_owned(), inside));
            Ok::<_, Infallible>(())
        })
        .unwrap();
        let got: Vec<(&str, bool)> = seen.iter().map(|(d, i)| (d.as_str(), *i)).collect();
        assert_eq!(got, [("{\"a\":1}", true), ("two\nlines", false)]);
        let mut rest = Vec::new();
        p.feed(b"it\n\n", keep(&mut rest)).unwrap();
        assert_eq!(rest[0].data, "split");
    }

    #[test]
    fn an_error_of_the_handler_stops_the_feed() {
        let mut p = SseParser::default();
        let mut seen = Vec::new();
        let stopped = p.feed(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", |e| {
            seen.push(e.data.to_owned());
            if e.data == "2" {
                Err("stop")
            } else {
                Ok(())
            }
        });
        assert_eq!(stopped, Err("stop"));
        assert_eq!(seen, ["1", "2"]);
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
            data: " [DONE] ",
            event: None,
            invalid_utf8: false,
        }
        .is_done());
    }

    #[test]
    fn event_field_is_kept_per_event() {
        let input = b"event: error\ndata: {\"x\":1}\n\ndata: a\n\nevent: error\n\nevent: ping\n\n";
        for piece in 1..input.len() {
            let out = events_in_pieces(input, piece);
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
                ],
                "split every {piece} bytes"
            );
        }
    }

    #[test]
    fn empty_data_line_is_an_event() {
        assert_eq!(parse_in_pieces(b"data\n\n", 1), vec![""]);
        assert_eq!(parse_in_pieces(b"data\n\n", 6), vec![""]);
    }

    #[test]
    fn data_that_is_not_utf8_is_flagged_in_any_split() {
        let input = b"data: {\"a\":\"\xff\xfe\"}\n\ndata: ok\ndata: \xff\n\ndata: ok\n\n";
        for piece in 1..=input.len() {
            let out = events_in_pieces(input, piece);
            let flags: Vec<bool> = out.iter().map(|e| e.invalid_utf8).collect();
            assert_eq!(flags, [true, true, false], "split every {piece} bytes");
            assert_eq!(out[1].data, "ok\n\u{fffd}", "split every {piece} bytes");
        }
    }
}
