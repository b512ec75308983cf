//! The connection's socket, stamped at the wire: a request is received when its first bytes
//! reached the machine (the kernel's receive stamp of the first read that returns them, or that
//! read's return where the kernel gives no stamp), and its first token is out when the first
//! write of its response (the head goes out with the first token) returns. These stamps, not
//! the scheduler's, are the simulator's `agentload_sim` timestamps, so neither the simulator's
//! own hops (a busy reader, scheduler to writer, head encoding, the write) count against the
//! client it measures.
//!
//! One request at a time per connection (HTTP/1.1 without pipelining): the first read that
//! returns bytes after the previous response started writing begins the next request.
//!
//! Over TLS ([`TlsWire`]) the same moments are taken at the ciphertext: a request begins with
//! the socket read that completed its first record (the read whose bytes rustls turned into
//! its first plaintext), its answer with the return of the socket write that carried the
//! first write's records. Handshake records and session tickets move no stamp.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use agentload_wire::hooked::{Hooked, IoHooks, ReadAt};

#[derive(Debug, Default)]
struct State {
    /// A request's bytes are being read and its response has not started.
    reading: bool,
    request_at: Option<Instant>,
    first_write: Option<Instant>,
    /// Waits for the first write ([`WireStamps::poll_first_write`]).
    waiter: Option<Waker>,
}

/// The current request's stamps on one connection.
#[derive(Debug, Default)]
pub(crate) struct WireStamps(Mutex<State>);

impl WireStamps {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().expect("wire stamps lock")
    }

    fn read_returned(&self, at: Instant) {
        let mut s = self.lock();
        if !s.reading {
            s.reading = true;
            s.request_at = Some(at);
            s.first_write = None;
        }
    }

    fn write_returned(&self, at: Instant) {
        let mut s = self.lock();
        if s.reading {
            s.reading = false;
            s.first_write = Some(at);
            if let Some(w) = s.waiter.take() {
                w.wake();
            }
        }
    }

    /// When the current request's first bytes arrived.
    pub(crate) fn request_at(&self) -> Option<Instant> {
        self.lock().request_at
    }

    /// When the first write of the current request's response returned; pending until then.
    pub(crate) fn poll_first_write(&self, cx: &mut Context<'_>) -> Poll<Instant> {
        let mut s = self.lock();
        match s.first_write {
            Some(at) => Poll::Ready(at),
            None => {
                s.waiter = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A server-side TCP stream whose reads and writes are stamped.
pub(crate) type WireIo = Hooked<Arc<WireStamps>>;

/// A connection's stream and the stamps its syscalls leave.
pub(crate) fn wire_io(tcp: TcpStream) -> (WireIo, Arc<WireStamps>) {
    let stamps = Arc::new(WireStamps::default());
    (Hooked::with_arrival_stamps(tcp, stamps.clone()), stamps)
}

impl IoHooks for WireStamps {
    fn read_returned(&self, at: ReadAt) {
        WireStamps::read_returned(self, at.stamp());
    }

    fn write_returned(&self, _bytes: usize) {
        WireStamps::write_returned(self, Instant::now());
    }

    /// The first read of a request returns its first packet alone: stamped with its arrival,
    /// not a later packet's.
    fn split_at_arrivals(&self) -> bool {
        !self.lock().reading
    }
}

/// A TLS connection's socket side: the stamps of its latest read and write, kept for the
/// plaintext that read yields or that write carried ([`TlsWire`]).
#[derive(Debug)]
pub(crate) struct CipherStamps {
    wire: Arc<WireStamps>,
    read: Mutex<Option<Instant>>,
    wrote: Mutex<Option<Instant>>,
}

impl IoHooks for CipherStamps {
    fn read_returned(&self, at: ReadAt) {
        *self.read.lock().expect("cipher stamps lock") = Some(at.stamp());
    }

    fn write_returned(&self, _bytes: usize) {
        *self.wrote.lock().expect("cipher stamps lock") = Some(Instant::now());
    }

    /// Until a request's first record came, reads stop at packet arrivals, as without TLS.
    fn split_at_arrivals(&self) -> bool {
        !self.wire.lock().reading
    }
}

/// A server-side TCP stream stamped for TLS: rustls reads and writes through it.
pub(crate) type CipherIo = Hooked<Arc<CipherStamps>>;

/// A connection's socket for TLS, and the stamps the plaintext side ([`TlsWire`]) takes.
pub(crate) fn cipher_io(tcp: TcpStream) -> (CipherIo, Arc<CipherStamps>, Arc<WireStamps>) {
    let wire = Arc::new(WireStamps::default());
    let cipher = Arc::new(CipherStamps {
        wire: wire.clone(),
        read: Mutex::new(None),
        wrote: Mutex::new(None),
    });
    (
        Hooked::with_arrival_stamps(tcp, cipher.clone()),
        cipher,
        wire,
    )
}

/// The plaintext side of a TLS stream (`S`, rustls over a [`CipherIo`]): a read that returns
/// plaintext is stamped with the socket read that completed its record; a write with the
/// socket write that carried it.
pub(crate) struct TlsWire<S> {
    inner: S,
    cipher: Arc<CipherStamps>,
}

impl<S> TlsWire<S> {
    pub(crate) fn new(inner: S, cipher: Arc<CipherStamps>) -> Self {
        Self { inner, cipher }
    }

    fn wrote(&self, polled: &Poll<io::Result<usize>>) {
        if matches!(polled, Poll::Ready(Ok(n)) if *n > 0) {
            let at = *self.cipher.wrote.lock().expect("cipher stamps lock");
            WireStamps::write_returned(&self.cipher.wire, at.unwrap_or_else(Instant::now));
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for TlsWire<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let at = *this.cipher.read.lock().expect("cipher stamps lock");
            WireStamps::read_returned(&this.cipher.wire, at.unwrap_or_else(Instant::now));
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TlsWire<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.wrote(&polled);
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.wrote(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_request_starts_when_its_first_bytes_arrive_and_its_answer_at_its_first_write() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let (mut io, stamps) = wire_io(tcp);
        assert!(stamps.request_at().is_none());
        let mut buf = [0u8; 4];
        // The first socket of the machine to ask for kernel stamps turns them on through
        // deferred work: exchanges until they flow (their reads are stamped on return).
        for _ in 0..1000 {
            let before = Instant::now();
            client.write_all(b"?").await.unwrap();
            std::thread::sleep(Duration::from_millis(2));
            io.read_exact(&mut buf[..1]).await.unwrap();
            let stamped_early = stamps.request_at().unwrap() < before + Duration::from_millis(1);
            io.write_all(b"!").await.unwrap();
            client.read_exact(&mut buf[..1]).await.unwrap();
            if stamped_early || !cfg!(target_os = "linux") {
                break;
            }
        }
        for round in 0..2 {
            let sent = Instant::now();
            client.write_all(b"ab").await.unwrap();
            // The simulator is busy elsewhere before it reads: its stamp says when the bytes
            // came, not when it got to them.
            std::thread::sleep(Duration::from_millis(30));
            io.read_exact(&mut buf[..2]).await.unwrap();
            let read_back = Instant::now();
            let first = stamps.request_at().unwrap();
            // Not before the bytes were sent (the kernel's wall-clock stamp, turned into an
            // instant, may err by some µs).
            assert!(first + Duration::from_millis(1) >= sent, "round {round}");
            // More bytes of the same request do not move its stamp.
            client.write_all(b"cd").await.unwrap();
            io.read_exact(&mut buf[..2]).await.unwrap();
            assert_eq!(stamps.request_at(), Some(first));
            let waker = futures_noop_waker();
            let mut cx = Context::from_waker(&waker);
            assert!(stamps.poll_first_write(&mut cx).is_pending());
            io.write_all(b"x").await.unwrap();
            let Poll::Ready(written) = stamps.poll_first_write(&mut cx) else {
                panic!("the write returned");
            };
            assert!(written >= first);
            assert!(first <= read_back, "round {round}");
            if cfg!(target_os = "linux") {
                let waited = read_back.duration_since(first);
                assert!(
                    waited >= Duration::from_millis(25),
                    "round {round}: {waited:?}"
                );
            }
            // Later writes of the same answer keep the first one's stamp.
            io.write_all(b"y").await.unwrap();
            assert_eq!(stamps.poll_first_write(&mut cx), Poll::Ready(written));
            client.read_exact(&mut buf[..2]).await.unwrap();
        }
    }

    fn futures_noop_waker() -> Waker {
        Waker::noop().clone()
    }
}
