//! TLS between the stamped socket and the connection's read buffer, keeping every stamp's
//! meaning: rustls' buffered sans-IO API is fed from agentload's own stamped reads.
//!
//! **Stamps.** One stamped `recvmsg` of ciphertext goes to rustls (`read_tls`), which then
//! decrypts every record it completed (`process_new_packets`), and the plaintext is drained
//! whole into the connection's buffer before anything reads the socket again. So each
//! plaintext byte drained belongs to a record whose last byte came in that read, and the
//! read's stamp (the kernel's arrival stamp of its last packet, [`super::wire`]) is the
//! plaintext's, as it is without TLS: decryption runs after the stamp and adds nothing to a
//! TTFT. A record split across reads (a `MSG_PEEK` split at packet arrivals included) yields
//! its plaintext at the read that completed it, whose stamp is right: every byte of it was
//! there by then. Reads that complete no record (handshake messages, session tickets, a
//! partial record) yield no plaintext, and the next read follows.
//!
//! **Writes.** A request's head and body slices are encrypted whole first (rustls takes them
//! as one stream of records), then `issued` is stamped and the records are written.
//!
//! **Failures.** A TLS alert, a record that does not decrypt, a connection closed inside a
//! record, or an answer that is not TLS at all (an `https://` URL on a plain HTTP port) are
//! errors that say so ([`super::tls::explain`]).

use super::tls::{explain, Tls, TlsSession};
use super::wire::Stamped;
use bytes::BytesMut;
use rustls::ClientConnection;
use std::future::poll_fn;
use std::io::{self, BufRead, IoSlice, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One connection's TLS session.
pub(super) struct TlsLayer {
    conn: ClientConnection,
    /// The server's bytes, by record.
    records: Records,
    /// The name the certificate is checked against (for messages).
    name: String,
    /// A client certificate is offered.
    identity: bool,
    /// The server sent `close_notify`.
    closed: bool,
    /// A failure found while the plaintext decrypted before it was still to be handed out
    /// (an alert in the same read as the answer's last records): reported after it.
    failed: Option<io::Error>,
}

impl std::fmt::Debug for TlsLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsLayer")
            .field("name", &self.name)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

/// A TLS failure as an I/O error (its text says what happened).
fn failure(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

impl TlsLayer {
    /// Runs the handshake with `host` on `io` (a fresh connection): the connection's TLS
    /// session, and what it negotiated.
    ///
    /// # Errors
    /// The handshake failed; the error says why (an untrusted or expired certificate, a name
    /// mismatch, a server that wants a client certificate, a plain HTTP port).
    pub(super) async fn handshake(
        io: &mut Stamped,
        tls: &Tls,
        host: &str,
    ) -> io::Result<(Self, TlsSession)> {
        let started = Instant::now();
        let name = tls.server_name(host).map_err(failure)?;
        let shown = name.to_str().into_owned();
        let mut conn = ClientConnection::new(tls.config().clone(), name)
            .map_err(|e| failure(format!("cannot start TLS: {e}")))?;
        // A request's body is encrypted whole before its first byte is written.
        conn.set_buffer_limit(None);
        let mut layer = Self {
            conn,
            records: Records::default(),
            name: shown,
            identity: tls.describe().client_certificate,
            closed: false,
            failed: None,
        };
        loop {
            layer.flush(io).await?;
            if !layer.conn.is_handshaking() {
                break;
            }
            if layer.read(io).await? == 0 {
                return Err(failure(layer.closed_in_handshake()));
            }
            layer.process(io)?;
        }
        let session = TlsSession::of(&layer.conn, started.elapsed().as_secs_f64() * 1e6);
        Ok((layer, session))
    }

    /// Why the server closed the connection during the handshake, as far as its bytes tell.
    fn closed_in_handshake(&self) -> String {
        match self.records.received {
            0 => "the server closed the connection without answering the TLS handshake \
                  (does this port speak TLS? an http:// URL reaches a plain one)"
                .to_owned(),
            n => format!(
                "the server closed the connection during the TLS handshake ({n} bytes received)"
            ),
        }
    }

    /// Reads until plaintext came (appended to `buf`); how many bytes, 0 at the end of the
    /// stream (`close_notify`, or the connection closed between records).
    pub(super) async fn fill(&mut self, io: &mut Stamped, buf: &mut BytesMut) -> io::Result<usize> {
        loop {
            let n = self.drain(buf);
            if n > 0 {
                return Ok(n);
            }
            if let Some(failed) = self.failed.take() {
                return Err(failed);
            }
            if self.closed {
                return Ok(0);
            }
            if self.read(io).await? == 0 {
                return match self.records.inside() {
                    Some((got, len)) => Err(failure(format!(
                        "the connection closed inside a TLS record ({got} of its {len} bytes \
                         received)"
                    ))),
                    None => Ok(0),
                };
            }
            // The records before a failure were decrypted: they are handed out first.
            if let Err(failed) = self.process(io) {
                self.failed = Some(failed);
                continue;
            }
            // What rustls answers by itself (a key update) goes out now.
            if self.conn.wants_write() {
                self.flush(io).await?;
            }
        }
    }

    /// Encrypts `slices` whole, stamps `issued`, then writes the records.
    pub(super) async fn write(
        &mut self,
        io: &mut Stamped,
        slices: &[IoSlice<'_>],
        issued: &mut Instant,
    ) -> io::Result<()> {
        let total: usize = slices.iter().map(|s| s.len()).sum();
        let taken = self.conn.writer().write_vectored(slices)?;
        if taken != total {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("TLS took {taken} of the request's {total} bytes"),
            ));
        }
        *issued = Instant::now();
        self.flush(io).await
    }

    /// Whether the server closed the TLS session or the connection while it was idle (or sent
    /// application data nobody asked for): it cannot take a request. What came while idle is
    /// read without waiting and handed to rustls, so a session ticket or a key update is no
    /// reason to drop the connection; `close_notify` is.
    pub(super) fn closed_while_idle(&mut self, io: &mut Stamped) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if self.closed || self.has_plaintext() {
                return true;
            }
            match self.poll_read(io, &mut cx) {
                Poll::Pending => return false,
                Poll::Ready(Ok(0) | Err(_)) => return true,
                Poll::Ready(Ok(_)) => {
                    if self.process_quietly().is_err() {
                        return true;
                    }
                }
            }
        }
    }

    /// Says `close_notify` to the server, without waiting (a connection let go).
    pub(super) fn close(&mut self, io: &mut Stamped) {
        self.conn.send_close_notify();
        self.send_without_waiting(io);
    }

    /// Writes what rustls has to send as far as the socket takes it now.
    fn send_without_waiting(&mut self, io: &mut Stamped) {
        let mut cx = Context::from_waker(Waker::noop());
        while self.conn.wants_write() {
            let mut socket = SocketWrites { io, cx: &mut cx };
            if !matches!(self.conn.write_tls(&mut socket), Ok(n) if n > 0) {
                break;
            }
        }
    }

    /// Whether decrypted bytes wait to be read.
    fn has_plaintext(&mut self) -> bool {
        matches!(self.conn.reader().fill_buf(), Ok(chunk) if !chunk.is_empty())
    }

    /// Moves every decrypted byte into `buf`; how many.
    fn drain(&mut self, buf: &mut BytesMut) -> usize {
        let mut reader = self.conn.reader();
        let mut n = 0;
        loop {
            let taken = match reader.fill_buf() {
                Ok(chunk) if !chunk.is_empty() => {
                    buf.extend_from_slice(chunk);
                    chunk.len()
                }
                _ => return n,
            };
            reader.consume(taken);
            n += taken;
        }
    }

    /// One stamped read of ciphertext into rustls; how many bytes (0: the connection ended).
    async fn read(&mut self, io: &mut Stamped) -> io::Result<usize> {
        poll_fn(|cx| self.poll_read(io, cx)).await
    }

    fn poll_read(&mut self, io: &mut Stamped, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let mut socket = SocketReads {
            io,
            cx,
            records: &mut self.records,
        };
        match self.conn.read_tls(&mut socket) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Poll::Pending,
            done => Poll::Ready(done),
        }
    }

    /// Decrypts what the reads completed; a failure is explained, and rustls' alert to the
    /// server is sent without waiting.
    fn process(&mut self, io: &mut Stamped) -> io::Result<()> {
        self.process_quietly()
            .inspect_err(|_| self.send_without_waiting(io))
    }

    fn process_quietly(&mut self) -> io::Result<()> {
        match self.conn.process_new_packets() {
            Ok(state) => {
                self.closed |= state.peer_has_closed();
                Ok(())
            }
            Err(e) => Err(failure(match self.records.not_tls() {
                Some(start) => format!(
                    "the server answered in plain text, not TLS (it starts `{start}`): this \
                     port speaks plain HTTP (use an http:// URL)"
                ),
                None => explain(&e, &self.name, self.identity),
            })),
        }
    }

    /// Writes every record rustls has to send.
    async fn flush(&mut self, io: &mut Stamped) -> io::Result<()> {
        poll_fn(|cx| {
            while self.conn.wants_write() {
                let mut socket = SocketWrites { io, cx };
                match self.conn.write_tls(&mut socket) {
                    Ok(0) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Poll::Pending,
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            Poll::Ready(Ok(()))
        })
        .await
    }
}

/// The stamped socket as rustls reads it: one `poll_read` per `read` (`WouldBlock` when
/// nothing waits), every byte shown to [`Records`].
struct SocketReads<'a, 'b> {
    io: &'a mut Stamped,
    cx: &'a mut Context<'b>,
    records: &'a mut Records,
}

impl Read for SocketReads<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut read = ReadBuf::new(buf);
        match Pin::new(&mut *self.io).poll_read(self.cx, &mut read) {
            Poll::Ready(Ok(())) => {
                let got = read.filled();
                self.records.saw(got);
                Ok(got.len())
            }
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

/// The socket as rustls writes to it (vectored; `WouldBlock` when it is full).
struct SocketWrites<'a, 'b> {
    io: &'a mut Stamped,
    cx: &'a mut Context<'b>,
}

impl Write for SocketWrites<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match Pin::new(&mut *self.io).poll_write(self.cx, buf) {
            Poll::Ready(done) => done,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match Pin::new(&mut *self.io).poll_write_vectored(self.cx, bufs) {
            Poll::Ready(done) => done,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where the server's byte stream stands among TLS records (a 5-byte header: type, version,
/// length; then the record), so that an end inside one is named, and the first bytes, so that
/// an answer that is no TLS at all is recognised.
#[derive(Debug, Default)]
struct Records {
    /// Bytes received in all.
    received: u64,
    /// The header being read, and how much of it came.
    header: [u8; 5],
    header_got: usize,
    /// The current record's length, and how much of its body is still due.
    len: usize,
    left: usize,
    /// The stream's first bytes.
    start: [u8; 8],
}

impl Records {
    fn saw(&mut self, mut bytes: &[u8]) {
        for (i, b) in bytes.iter().take(8).enumerate() {
            let at = self.received as usize + i;
            if at < self.start.len() {
                self.start[at] = *b;
            }
        }
        self.received += bytes.len() as u64;
        while !bytes.is_empty() {
            if self.left > 0 {
                let k = self.left.min(bytes.len());
                self.left -= k;
                bytes = &bytes[k..];
                continue;
            }
            let k = (5 - self.header_got).min(bytes.len());
            self.header[self.header_got..self.header_got + k].copy_from_slice(&bytes[..k]);
            self.header_got += k;
            bytes = &bytes[k..];
            if self.header_got == 5 {
                self.header_got = 0;
                self.len = u16::from_be_bytes([self.header[3], self.header[4]]) as usize;
                self.left = self.len;
            }
        }
    }

    /// Inside a record: (its bytes received, header included; its size).
    fn inside(&self) -> Option<(usize, usize)> {
        if self.header_got > 0 {
            Some((self.header_got, 5))
        } else if self.left > 0 {
            Some((5 + self.len - self.left, 5 + self.len))
        } else {
            None
        }
    }

    /// The stream's start, quoted, when it is no TLS record (a TLS stream opens with a
    /// handshake or alert record: type 21 or 22, version 3.x).
    fn not_tls(&self) -> Option<String> {
        let got = (self.received as usize).min(self.start.len());
        let start = &self.start[..got];
        let tls = match start {
            [] => true,
            [t] => matches!(t, 20..=24),
            [t, major, ..] => matches!(t, 20..=24) && *major == 3,
        };
        (!tls).then(|| {
            start
                .iter()
                .map(|&b| {
                    if b.is_ascii_graphic() || b == b' ' {
                        char::from(b).to_string()
                    } else {
                        format!("\\x{b:02x}")
                    }
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Records;

    #[test]
    fn records_say_where_the_stream_stands_in_any_split() {
        // Two records: 3 and 2 body bytes.
        let stream = [23u8, 3, 3, 0, 3, 1, 2, 3, 23, 3, 3, 0, 2, 9, 9];
        for cut in 0..=stream.len() {
            for split in 0..=cut {
                let mut r = Records::default();
                r.saw(&stream[..split]);
                r.saw(&stream[split..cut]);
                let want = match cut {
                    0 | 8 | 15 => None,
                    1..=4 => Some((cut, 5)),
                    5..=7 => Some((cut, 8)),
                    9..=12 => Some((cut - 8, 5)),
                    _ => Some((cut - 8, 7)),
                };
                assert_eq!(r.inside(), want, "cut {cut} split {split}");
                assert!(r.not_tls().is_none());
            }
        }
    }

    #[test]
    fn a_plain_http_answer_is_recognised() {
        let mut r = Records::default();
        r.saw(b"HTTP/1.1 400 Bad Request\r\n");
        assert_eq!(r.not_tls().as_deref(), Some("HTTP/1.1"));
        let mut alert = Records::default();
        alert.saw(&[21, 3, 3, 0, 2, 2, 40]);
        assert!(alert.not_tls().is_none());
    }
}
