//! The HTTP/1.1 response codec, without sockets: the response head (status, headers, how its
//! body ends and whether the connection can be reused, RFC 9112 §6.3, for a client that only
//! sends GET and POST), then the body, `Content-Length`, chunked or until the connection
//! closes, decoded from the connection's read buffer in place: body data is handed out as
//! slices of that buffer, and the framing bytes are consumed whatever way the reads split
//! them.

use bytes::{Buf, Bytes, BytesMut};

/// A response head longer than this is refused.
const MAX_HEAD_BYTES: usize = 64 << 10;
/// A response head with more headers than this is refused.
const MAX_HEADERS: usize = 100;
/// A chunk size line (with its extensions) longer than this is refused.
const MAX_SIZE_LINE: usize = 4 << 10;
/// A chunk larger than this (1 TiB) is refused as absurd.
const MAX_CHUNK: u64 = 1 << 40;
/// Trailer fields longer than this in all are refused.
const MAX_TRAILER_BYTES: usize = 64 << 10;
/// Bytes of a refused line or head quoted in its error.
const QUOTE_BYTES: usize = 64;

/// Why a response cannot be read. The `Display` text ends up in a failed turn's cause.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum ProtocolError {
    #[error("the response head is not HTTP: {reason}; it starts `{start}`")]
    NotHttp { reason: String, start: String },
    #[error("the response head is over {MAX_HEAD_BYTES} bytes")]
    HeadTooLarge,
    #[error("the response head has more than {MAX_HEADERS} headers")]
    TooManyHeaders,
    #[error("the server answered 101 Switching Protocols, but no upgrade was asked for")]
    SwitchingProtocols,
    #[error("Content-Length `{0}` is not a length")]
    BadContentLength(String),
    #[error("conflicting Content-Length values {0} and {1}")]
    ConflictingLengths(u64, u64),
    #[error("chunk size line `{0}` is not hex")]
    ChunkSizeNotHex(String),
    #[error("chunk size line `{0}` announces a chunk over {MAX_CHUNK} bytes")]
    ChunkTooLarge(String),
    #[error("a chunk size line is over {MAX_SIZE_LINE} bytes")]
    SizeLineTooLong,
    #[error("chunk data is followed by `{got}` instead of CRLF, after {body_bytes} body bytes")]
    NoCrlfAfterChunk { got: String, body_bytes: u64 },
    #[error("the trailers are over {MAX_TRAILER_BYTES} bytes")]
    TrailersTooLarge,
    #[error("the connection closed {missing} bytes short of Content-Length {length}")]
    ClosedShort { missing: u64, length: u64 },
    #[error("the connection closed in the middle of a chunk after {body_bytes} body bytes ({missing} more were announced)")]
    ClosedInChunk { body_bytes: u64, missing: u64 },
    #[error("the connection closed {at} ({body_bytes} body bytes received)")]
    ClosedInFraming { at: &'static str, body_bytes: u64 },
}

/// How the body of a response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body (1xx, 204, 304).
    None,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Whatever comes until the server closes the connection.
    UntilClose,
}

/// A response's status line and headers.
#[derive(Debug)]
pub(super) struct ResponseHead {
    pub(super) status: u16,
    pub(super) framing: Framing,
    /// The connection may carry another request once this body ended.
    pub(super) keep_alive: bool,
    /// (name lowercased, raw value), in the order received.
    headers: Vec<(String, Vec<u8>)>,
}

impl ResponseHead {
    /// A header's value (name case-insensitive; the first one when repeated).
    pub(super) fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// The values of every `name` header (lowercase).
    fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// The comma-separated elements of every `name` header, trimmed, empty ones left out.
    fn tokens<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.values(name)
            .flat_map(|v| v.split(|&b| b == b','))
            .map(<[u8]>::trim_ascii)
            .filter(|e| !e.is_empty())
    }

    fn has_token(&self, name: &str, token: &str) -> bool {
        self.tokens(name)
            .any(|e| e.eq_ignore_ascii_case(token.as_bytes()))
    }

    /// How the body ends and whether the connection outlives it (RFC 9112 §6.3), for a head
    /// of `HTTP/1.{minor}`.
    fn frame(&mut self, minor: u8) -> Result<(), ProtocolError> {
        let te_last = self.tokens("transfer-encoding").last();
        let te_chunked = te_last.map(|c| c.eq_ignore_ascii_case(b"chunked"));
        let has_length = self.values("content-length").next().is_some();
        // HTTP/1.0 is kept alive only when asked for, and never with a Transfer-Encoding
        // (RFC 9112 §6.1: its framing is faulty).
        let mut reusable = !self.has_token("connection", "close")
            && (minor != 0 || (te_last.is_none() && self.has_token("connection", "keep-alive")));
        self.framing = match (self.status, te_chunked) {
            (204 | 304, _) => Framing::None,
            (_, Some(true)) => {
                // Both: a request smuggling pattern; the RFC says close after it.
                reusable &= !has_length;
                Framing::Chunked
            }
            (_, Some(false)) => Framing::UntilClose,
            (_, None) if has_length => Framing::Length(self.content_length()?),
            (_, None) => Framing::UntilClose,
        };
        self.keep_alive = reusable && self.framing != Framing::UntilClose;
        Ok(())
    }

    /// The `Content-Length`: digits only; every value given (repeated headers, comma lists)
    /// must be the same.
    fn content_length(&self) -> Result<u64, ProtocolError> {
        let mut length = None;
        for value in self.values("content-length") {
            for e in value.split(|&b| b == b',') {
                let n = std::str::from_utf8(e.trim_ascii())
                    .ok()
                    .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok())
                    .ok_or_else(|| ProtocolError::BadContentLength(quote(value)))?;
                match length {
                    Some(first) if first != n => {
                        return Err(ProtocolError::ConflictingLengths(first, n))
                    }
                    _ => length = Some(n),
                }
            }
        }
        Ok(length.unwrap_or(0))
    }
}

/// Parses the response head at the start of `buf`, removing its bytes from `buf`. `Ok(None)`:
/// the head is not complete yet (read more). Informational heads (100 Continue, 103 Early
/// Hints; not 101) are skipped, counted in `interim`, and parsing goes on with the next head.
pub(super) fn parse_head(
    buf: &mut BytesMut,
    interim: &mut u32,
) -> Result<Option<ResponseHead>, ProtocolError> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let len = match response.parse(buf) {
            Ok(httparse::Status::Complete(len)) if len <= MAX_HEAD_BYTES => len,
            Ok(httparse::Status::Partial) if buf.len() <= MAX_HEAD_BYTES => return Ok(None),
            Ok(_) => return Err(ProtocolError::HeadTooLarge),
            Err(httparse::Error::TooManyHeaders) => return Err(ProtocolError::TooManyHeaders),
            Err(e) => {
                // A TLS alert or handshake record (21 or 22, version 3.x): a TLS port.
                let reason = match buf[..] {
                    [21 | 22, 3, ..] => "it is a TLS record: this port speaks TLS (use an \
                                         https:// URL)"
                        .to_owned(),
                    _ => e.to_string(),
                };
                return Err(ProtocolError::NotHttp {
                    reason,
                    start: quote(buf),
                });
            }
        };
        let (status, minor) = (response.code.unwrap_or(0), response.version.unwrap_or(1));
        let informational = (100..200).contains(&status) && status != 101;
        let head = (!informational).then(|| ResponseHead {
            status,
            framing: Framing::None,
            keep_alive: false,
            headers: response
                .headers
                .iter()
                .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
                .collect(),
        });
        buf.advance(len);
        *interim += u32::from(informational);
        if let Some(mut head) = head {
            if status == 101 {
                return Err(ProtocolError::SwitchingProtocols);
            }
            head.frame(minor)?;
            return Ok(Some(head));
        }
    }
}

/// What the decoder took out of the buffer.
#[derive(Debug, PartialEq)]
pub(super) enum Decoded {
    /// Body data (never empty).
    Data(Bytes),
    /// The buffer holds no more of the body: read more.
    NeedMore,
    /// The body ended.
    End,
}

/// Where a body's decoding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// This many bytes of the `Content-Length` to come.
    Length(u64),
    UntilClose,
    /// At (or in) a chunk size line.
    SizeLine,
    /// This many bytes of the chunk to come.
    ChunkData(u64),
    /// At the CRLF that ends a chunk's data.
    ChunkEnd,
    /// After the last chunk: trailer fields until an empty line, this many bytes of them so
    /// far.
    Trailers(usize),
    Done,
}

/// A response body's decoder: fed the connection's read buffer, it hands out body data
/// without copying and consumes the framing bytes (chunk size lines and their extensions,
/// CRLFs, trailers).
#[derive(Debug)]
pub(super) struct BodyDecoder {
    state: State,
    data_bytes: u64,
}

impl BodyDecoder {
    pub(super) fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::None | Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::SizeLine,
            Framing::UntilClose => State::UntilClose,
        };
        Self {
            state,
            data_bytes: 0,
        }
    }

    /// The next piece of body data in `buf` (as much as is there, up to the chunk's or
    /// length's end), `NeedMore` when `buf` holds none, `End` once the body ended (bytes after
    /// its end are left in `buf`).
    pub(super) fn decode(&mut self, buf: &mut BytesMut) -> Result<Decoded, ProtocolError> {
        loop {
            match self.state {
                State::Done => return Ok(Decoded::End),
                State::Length(remaining) | State::ChunkData(remaining) => {
                    if buf.is_empty() {
                        return Ok(Decoded::NeedMore);
                    }
                    let n = remaining.min(buf.len() as u64);
                    let left = remaining - n;
                    self.state = match self.state {
                        State::Length(_) if left == 0 => State::Done,
                        State::Length(_) => State::Length(left),
                        _ if left == 0 => State::ChunkEnd,
                        _ => State::ChunkData(left),
                    };
                    return Ok(self.take(buf, n as usize));
                }
                State::UntilClose if buf.is_empty() => return Ok(Decoded::NeedMore),
                State::UntilClose => return Ok(self.take(buf, buf.len())),
                State::SizeLine => {
                    let Some(line) = line(buf, MAX_SIZE_LINE, ProtocolError::SizeLineTooLong)?
                    else {
                        return Ok(Decoded::NeedMore);
                    };
                    let size = chunk_size(&buf[..line.content])?;
                    buf.advance(line.len);
                    self.state = match size {
                        0 => State::Trailers(0),
                        n => State::ChunkData(n),
                    };
                }
                State::ChunkEnd => {
                    let end = match buf.first() {
                        None => return Ok(Decoded::NeedMore),
                        Some(b'\n') => 1,
                        Some(b'\r') if buf.len() == 1 => return Ok(Decoded::NeedMore),
                        Some(b'\r') if buf[1] == b'\n' => 2,
                        Some(_) => {
                            return Err(ProtocolError::NoCrlfAfterChunk {
                                got: quote(&buf[..buf.len().min(2)]),
                                body_bytes: self.data_bytes,
                            })
                        }
                    };
                    buf.advance(end);
                    self.state = State::SizeLine;
                }
                State::Trailers(seen) => {
                    let limit = MAX_TRAILER_BYTES - seen;
                    let Some(line) = line(buf, limit, ProtocolError::TrailersTooLarge)? else {
                        return Ok(Decoded::NeedMore);
                    };
                    buf.advance(line.len);
                    self.state = match line.content {
                        0 => State::Done,
                        _ => State::Trailers(seen + line.len),
                    };
                }
            }
        }
    }

    /// The server closed the connection (a read returned 0) with `buf` drained as far as
    /// [`BodyDecoder::decode`] goes: `Ok` when that ends the body (it lasts until the close,
    /// or had ended), else the error saying where it was cut.
    pub(super) fn closed(&mut self) -> Result<(), ProtocolError> {
        let body_bytes = self.data_bytes;
        let at = match self.state {
            State::Done | State::UntilClose => {
                self.state = State::Done;
                return Ok(());
            }
            State::Length(remaining) => {
                return Err(ProtocolError::ClosedShort {
                    missing: remaining,
                    length: body_bytes + remaining,
                })
            }
            State::ChunkData(remaining) => {
                return Err(ProtocolError::ClosedInChunk {
                    body_bytes,
                    missing: remaining,
                })
            }
            State::SizeLine => "before the end of a chunk size line",
            State::ChunkEnd => "before the CRLF that ends a chunk",
            State::Trailers(_) => "after the last chunk, before the end of its trailers",
        };
        Err(ProtocolError::ClosedInFraming { at, body_bytes })
    }

    /// Body data bytes handed out so far.
    #[cfg(test)]
    pub(super) fn data_bytes(&self) -> u64 {
        self.data_bytes
    }

    /// Hands out the first `n` bytes of `buf` (`n` > 0) as data.
    fn take(&mut self, buf: &mut BytesMut, n: usize) -> Decoded {
        self.data_bytes += n as u64;
        Decoded::Data(buf.split_to(n).freeze())
    }
}

/// A complete line at the start of a buffer: `len` bytes with its end, `content` without.
struct Line {
    len: usize,
    content: usize,
}

/// The line at the start of `buf` (ended by LF, or CRLF), `None` while its end has not come;
/// `too_long` when it is (or would be) over `limit` bytes with its end.
fn line(buf: &[u8], limit: usize, too_long: ProtocolError) -> Result<Option<Line>, ProtocolError> {
    let Some(lf) = memchr::memchr(b'\n', &buf[..buf.len().min(limit)]) else {
        return if buf.len() >= limit {
            Err(too_long)
        } else {
            Ok(None)
        };
    };
    let content = if lf > 0 && buf[lf - 1] == b'\r' {
        lf - 1
    } else {
        lf
    };
    Ok(Some(Line {
        len: lf + 1,
        content,
    }))
}

/// A chunk size line's size: hex digits, then optional whitespace and `;extensions`
/// (ignored).
fn chunk_size(line: &[u8]) -> Result<u64, ProtocolError> {
    let end = memchr::memchr(b';', line).unwrap_or(line.len());
    let digits = line[..end].trim_ascii_end();
    if digits.is_empty() {
        return Err(ProtocolError::ChunkSizeNotHex(quote(line)));
    }
    let mut size = 0u64;
    for &d in digits {
        let v = (d as char)
            .to_digit(16)
            .ok_or_else(|| ProtocolError::ChunkSizeNotHex(quote(line)))?;
        size = size * 16 + u64::from(v);
        if size > MAX_CHUNK {
            return Err(ProtocolError::ChunkTooLarge(quote(line)));
        }
    }
    Ok(size)
}

/// The first bytes of `bytes`, escaped, for an error message.
fn quote(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(QUOTE_BYTES)];
    let more = if bytes.len() > QUOTE_BYTES { "..." } else { "" };
    format!("{}{more}", shown.escape_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a response fed in `pieces` gave: its head, its body, how many `End`s, the bytes
    /// left after its end, and the decoder.
    struct Run {
        head: ResponseHead,
        body: Vec<u8>,
        ends: usize,
        rest: BytesMut,
        decoder: BodyDecoder,
    }

    fn run(pieces: &[&[u8]]) -> Result<Run, ProtocolError> {
        let mut buf = BytesMut::new();
        let (mut head, mut decoder, mut body, mut ends) = (None, None, Vec::new(), 0);
        for piece in pieces {
            buf.extend_from_slice(piece);
            if head.is_none() {
                head = parse_head(&mut buf, &mut 0)?;
                decoder = head.as_ref().map(|h| BodyDecoder::new(h.framing));
            }
            while let (Some(d), 0) = (decoder.as_mut(), ends) {
                match d.decode(&mut buf)? {
                    Decoded::Data(data) => {
                        assert!(!data.is_empty(), "empty data");
                        body.extend_from_slice(&data);
                    }
                    Decoded::NeedMore => break,
                    Decoded::End => ends += 1,
                }
            }
        }
        Ok(Run {
            head: head.expect("a complete head"),
            body,
            ends,
            rest: buf,
            decoder: decoder.expect("a decoder"),
        })
    }

    /// Feeds `input` whole, one byte at a time, and in two pieces split at every index: the
    /// body is always `body`, the head's framing `framing`, and `rest` is left after the end
    /// (an `UntilClose` body ends when the connection closes after the last piece).
    fn check_every_split(input: &[u8], framing: Framing, body: &[u8], rest: &[u8]) {
        let mut feeds: Vec<Vec<&[u8]>> = vec![vec![input], input.chunks(1).collect()];
        feeds.extend((0..=input.len()).map(|i| {
            let (a, b) = input.split_at(i);
            vec![a, b]
        }));
        for pieces in feeds {
            let lens: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
            let mut r = run(&pieces).unwrap_or_else(|e| panic!("{e} (pieces {lens:?})"));
            assert_eq!(r.head.framing, framing, "pieces {lens:?}");
            assert_eq!(r.body, body, "pieces {lens:?}");
            assert_eq!(r.decoder.data_bytes(), body.len() as u64);
            if framing == Framing::UntilClose {
                assert_eq!(r.ends, 0, "pieces {lens:?}");
                assert_eq!(r.decoder.closed(), Ok(()));
                assert_eq!(r.decoder.decode(&mut r.rest), Ok(Decoded::End));
            } else {
                assert_eq!(r.ends, 1, "pieces {lens:?}");
                assert_eq!(r.decoder.closed(), Ok(()), "an ended body is not cut");
            }
            assert_eq!(&r.rest[..], rest, "pieces {lens:?}");
        }
    }

    fn chunk(data: &str, ext: &str) -> String {
        format!("{:X}{ext}\r\n{data}\r\n", data.len())
    }

    const NEXT: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Le";

    #[test]
    fn chunked_sse_in_every_split() {
        let events = [
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
            ": keep-alive\n\n",
            "data: [DONE]\n\n",
        ];
        let mut input = String::from(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
             Transfer-Encoding: chunked\r\n\r\n",
        );
        input += &chunk(events[0], ";ext=1");
        input += &chunk(events[1], " ; a=\"b;c\"; d");
        input += &format!("{:x}\n{}\r\n", events[2].len(), events[2]); // bare LF
        input += &chunk(events[3], "");
        input += "0;last\r\nX-Trailer: 1\r\nX-Other: two\r\n\r\n";
        let mut input = input.into_bytes();
        input.extend_from_slice(NEXT);
        check_every_split(&input, Framing::Chunked, events.concat().as_bytes(), NEXT);
        let r = run(&[&input]).unwrap();
        assert!(r.head.keep_alive);
        assert_eq!(r.head.status, 200);
        assert_eq!(
            r.head.header("content-type"),
            Some(&b"text/event-stream"[..])
        );
    }

    #[test]
    fn content_length_in_every_split() {
        let body = b"{\"choices\":[{\"message\":{\"content\":\"Hi\"}}]}";
        let mut input =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        input.extend_from_slice(body);
        input.extend_from_slice(NEXT);
        check_every_split(&input, Framing::Length(body.len() as u64), body, NEXT);
        assert!(run(&[&input]).unwrap().head.keep_alive);
    }

    #[test]
    fn until_close_in_every_split() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: a\n\ndata: [DONE]\n\n";
        check_every_split(
            input,
            Framing::UntilClose,
            b"data: a\n\ndata: [DONE]\n\n",
            b"",
        );
        assert!(!run(&[input]).unwrap().head.keep_alive);
    }

    #[test]
    fn informational_heads_are_skipped_in_every_split() {
        let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
                      HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Id: 7\r\n\r\nok";
        check_every_split(input, Framing::Length(2), b"ok", b"");
        let r = run(&[input]).unwrap();
        assert_eq!((r.head.status, r.head.header("link")), (200, None));
        assert_eq!(r.head.header("X-ID"), Some(&b"7"[..]));
        // A 100 alone is consumed, and waits for the final head.
        let mut buf = BytesMut::from(&b"HTTP/1.1 100 Continue\r\n\r\n"[..]);
        assert!(parse_head(&mut buf, &mut 0).unwrap().is_none());
        assert!(buf.is_empty());
    }

    #[test]
    fn no_body_responses_end_at_once() {
        for head in [
            "HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
            "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            let input = [head.as_bytes(), NEXT].concat();
            check_every_split(&input, Framing::None, b"", NEXT);
            assert!(run(&[&input]).unwrap().head.keep_alive);
        }
        let input = [&b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"[..], NEXT].concat();
        check_every_split(&input, Framing::Length(0), b"", NEXT);
    }

    fn head(text: &str) -> Result<ResponseHead, ProtocolError> {
        let mut buf = BytesMut::from(format!("{text}\r\n\r\n").as_bytes());
        let head = parse_head(&mut buf, &mut 0).map(|h| h.expect("a complete head"));
        assert!(head.is_err() || buf.is_empty());
        head
    }

    #[test]
    fn framing_and_keep_alive() {
        use Framing::*;
        for (version, headers, framing, keep_alive) in [
            ("1.1", "Content-Length: 5", Length(5), true),
            (
                "1.1",
                "Connection: keep-alive, Close\r\nContent-Length: 5",
                Length(5),
                false,
            ),
            (
                "1.1",
                "Connection: close\r\nTransfer-Encoding: chunked",
                Chunked,
                false,
            ),
            ("1.0", "Content-Length: 5", Length(5), false),
            (
                "1.0",
                "Connection: Keep-Alive\r\nContent-Length: 5",
                Length(5),
                true,
            ),
            ("1.0", "Connection: keep-alive", UntilClose, false),
            (
                "1.0",
                "Connection: keep-alive\r\nTransfer-Encoding: chunked",
                Chunked,
                false,
            ),
            // Transfer-Encoding wins over Content-Length, and the connection closes after.
            (
                "1.1",
                "Content-Length: 5\r\nTransfer-Encoding: chunked",
                Chunked,
                false,
            ),
            (
                "1.1",
                "Transfer-Encoding: gzip\r\nTransfer-Encoding: CHUNKED",
                Chunked,
                true,
            ),
            (
                "1.1",
                "Transfer-Encoding: chunked, gzip\r\nContent-Length: 5",
                UntilClose,
                false,
            ),
            (
                "1.1",
                "Content-Length: 5, 5\r\nContent-Length: 5",
                Length(5),
                true,
            ),
        ] {
            let h = head(&format!("HTTP/{version} 200 OK\r\n{headers}")).unwrap();
            assert_eq!(
                (h.framing, h.keep_alive),
                (framing, keep_alive),
                "{version} {headers}"
            );
        }
        let h = head("HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nretry-after: 9").unwrap();
        assert_eq!((h.status, h.header("RETRY-AFTER")), (429, Some(&b"3"[..])));
    }

    #[test]
    fn a_tls_record_for_an_answer_names_the_tls_port() {
        let mut alert = BytesMut::from(&[21u8, 3, 3, 0, 2, 2, 50][..]);
        let err = parse_head(&mut alert, &mut 0).unwrap_err().to_string();
        assert!(err.contains("this port speaks TLS"), "{err}");
    }

    #[test]
    fn bad_heads_are_errors() {
        let err = |text: &str| head(text).unwrap_err().to_string();
        for lengths in ["5\r\nContent-Length: 6", "5,6", "5, 5, 6"] {
            let text = format!("HTTP/1.1 200 OK\r\nContent-Length: {lengths}");
            assert_eq!(err(&text), "conflicting Content-Length values 5 and 6");
        }
        for bad in ["+5", "0x5", "5 5", "", "5,", "-1", "99999999999999999999"] {
            let text = format!("HTTP/1.1 200 OK\r\nContent-Length: {bad}");
            assert_eq!(
                err(&text),
                format!("Content-Length `{bad}` is not a length")
            );
        }
        assert_eq!(
            err("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket"),
            "the server answered 101 Switching Protocols, but no upgrade was asked for"
        );
        assert_eq!(
            err("<html>oops</html>"),
            "the response head is not HTTP: invalid HTTP version; it starts `<html>oops</html>\\r\\n\\r\\n`"
        );
        assert!(
            err("HTTP/1.1 2x0 OK").starts_with("the response head is not HTTP: invalid response")
        );
        let many = |n: usize| format!("HTTP/1.1 200 OK{}", "\r\nX-H: v".repeat(n));
        assert!(head(&many(MAX_HEADERS)).is_ok());
        assert_eq!(
            err(&many(MAX_HEADERS + 1)),
            "the response head has more than 100 headers"
        );
        let big = format!("HTTP/1.1 200 OK\r\nX-Big: {}", "a".repeat(MAX_HEAD_BYTES));
        assert_eq!(err(&big), "the response head is over 65536 bytes");
        // Too big before its end came.
        let mut buf = BytesMut::from(big.as_bytes());
        assert_eq!(
            parse_head(&mut buf, &mut 0).unwrap_err(),
            ProtocolError::HeadTooLarge
        );
        buf.truncate(MAX_HEAD_BYTES);
        assert!(parse_head(&mut buf, &mut 0).unwrap().is_none());
    }

    /// Decodes `body` as `framing` until it needs more, then closes: the error.
    fn cut(framing: Framing, body: &str) -> String {
        let mut d = BodyDecoder::new(framing);
        let mut buf = BytesMut::from(body.as_bytes());
        while let Decoded::Data(_) = d.decode(&mut buf).unwrap() {}
        assert!(buf.len() < 4, "drained as far as decode goes");
        d.closed().unwrap_err().to_string()
    }

    #[test]
    fn a_cut_body_says_where() {
        use Framing::*;
        assert_eq!(
            cut(Length(500), &"a".repeat(380)),
            "the connection closed 120 bytes short of Content-Length 500"
        );
        assert_eq!(
            cut(Chunked, ""),
            "the connection closed before the end of a chunk size line (0 body bytes received)"
        );
        assert_eq!(
            cut(Chunked, "4\r\nabcd\r\n1"),
            "the connection closed before the end of a chunk size line (4 body bytes received)"
        );
        assert_eq!(
            cut(Chunked, "4\r\nabcd\r\n10;x\r\n0123"),
            "the connection closed in the middle of a chunk after 8 body bytes (12 more were announced)"
        );
        assert_eq!(
            cut(Chunked, "4\r\nabcd\r"),
            "the connection closed before the CRLF that ends a chunk (4 body bytes received)"
        );
        for after_last in ["0\r\n", "0\r\nX-T: 1\r\n", "0\r\nX-T: 1\r\n\r"] {
            assert_eq!(
                cut(Chunked, &format!("4\r\nabcd\r\n{after_last}")),
                "the connection closed after the last chunk, before the end of its trailers (4 body bytes received)"
            );
        }
    }

    /// Decodes a chunked `body` fed whole: the data handed out, then the error.
    fn chunked_error(body: &[u8]) -> (Vec<u8>, ProtocolError) {
        let mut d = BodyDecoder::new(Framing::Chunked);
        let mut buf = BytesMut::from(body);
        let mut data = Vec::new();
        loop {
            match d.decode(&mut buf) {
                Ok(Decoded::Data(bytes)) => data.extend_from_slice(&bytes),
                Ok(other) => panic!("{other:?} instead of an error"),
                Err(e) => return (data, e),
            }
        }
    }

    #[test]
    fn bad_chunked_bodies_are_errors() {
        let err = |body: &[u8]| chunked_error(body).1.to_string();
        assert_eq!(err(b"zz\r\n"), "chunk size line `zz` is not hex");
        assert_eq!(err(b"\r\n"), "chunk size line `` is not hex");
        assert_eq!(err(b";x=1\n"), "chunk size line `;x=1` is not hex");
        assert_eq!(err(b" 4\r\n"), "chunk size line ` 4` is not hex");
        assert_eq!(err(b"0x4\r\n"), "chunk size line `0x4` is not hex");
        assert_eq!(
            err(b"10000000001\r\n"),
            "chunk size line `10000000001` announces a chunk over 1099511627776 bytes"
        );
        assert_eq!(
            chunked_error(b"ffffffffffffffffffffff\r\n").1,
            ProtocolError::ChunkTooLarge("ffffffffffffffffffffff".into())
        );
        assert_eq!(
            chunked_error(&[b'1'; MAX_SIZE_LINE]).1,
            ProtocolError::SizeLineTooLong
        );
        let (data, e) = chunked_error(b"4\r\nabcdXY\r\n0\r\n\r\n");
        assert_eq!(
            (&data[..], e.to_string().as_str()),
            (
                &b"abcd"[..],
                "chunk data is followed by `XY` instead of CRLF, after 4 body bytes"
            )
        );
        assert_eq!(
            err(b"4\r\nabcd\rX"),
            "chunk data is followed by `\\rX` instead of CRLF, after 4 body bytes"
        );
        // Trailers are bounded, in many lines or in one without an end.
        let many = format!(
            "0\r\n{}\r\n",
            "X-Trailer: aaaaaaaaaaaaaaaa\r\n".repeat(MAX_TRAILER_BYTES / 20)
        );
        assert_eq!(
            chunked_error(many.as_bytes()).1,
            ProtocolError::TrailersTooLarge
        );
        let endless = format!("0\r\nX-Trailer: {}", "a".repeat(MAX_TRAILER_BYTES));
        assert_eq!(
            chunked_error(endless.as_bytes()).1,
            ProtocolError::TrailersTooLarge
        );
    }

    #[test]
    fn data_is_handed_out_without_copying() {
        let data = vec![b'x'; 1 << 16];
        for (head, size_line) in [
            ("Transfer-Encoding: chunked", "10000\r\n"),
            ("Content-Length: 65536", ""),
        ] {
            let input = [
                format!("HTTP/1.1 200 OK\r\n{head}\r\n\r\n{size_line}").as_bytes(),
                &data,
            ]
            .concat();
            let mut buf = BytesMut::from(&input[..]);
            let mut d = BodyDecoder::new(parse_head(&mut buf, &mut 0).unwrap().unwrap().framing);
            let start = buf.as_ptr() as usize + size_line.len();
            let Ok(Decoded::Data(got)) = d.decode(&mut buf) else {
                panic!("no data")
            };
            assert_eq!(
                (got.as_ptr() as usize, got.len()),
                (start, data.len()),
                "{head}"
            );
        }
    }
}
