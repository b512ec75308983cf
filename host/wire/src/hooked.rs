//! A TCP stream that calls hooks the moment a read or a write returns bytes, in the task that
//! made the syscall, before anything parses them: the one socket wrapper both ends of the wire
//! stamp with (the simulator's request and first-token stamps, the client's read stamps).
//!
//! A stream made with [`Hooked::with_arrival_stamps`] also asks the kernel to stamp every
//! packet it receives (`SO_TIMESTAMPNS`) and reads with `recvmsg(2)`, so each read says when
//! its bytes reached the machine, not only when the reader got to them: a reader that is busy
//! elsewhere (a thousand streams on two cores) still stamps bytes at the wire.

use serde::{Deserialize, Serialize};
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

mod arrival;

/// Which moment of a read stamps the bytes it returned (`endpoint.timestamps`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Timestamps {
    /// When the bytes reached the machine: the kernel's receive stamp (`SO_TIMESTAMPNS`), where
    /// the kernel gives one (Linux); the read's return otherwise.
    #[default]
    Arrival,
    /// When the read returned them to agentload (what a user-space client without kernel stamps
    /// sees, e.g. the reference's).
    Read,
}

/// When a read that returned bytes happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadAt {
    /// Right after the syscall returned.
    pub returned: Instant,
    /// When the kernel received the packet carrying the read's last bytes (never after
    /// `returned`); `None` without kernel stamps.
    pub arrived: Option<Instant>,
}

impl ReadAt {
    /// When the bytes arrived, as far as known: the kernel's stamp, else the read's return.
    pub fn stamp(&self) -> Instant {
        self.arrived.unwrap_or(self.returned)
    }
}

/// What a [`Hooked`] stream calls right after a syscall returned bytes.
pub trait IoHooks: Unpin {
    /// A read returned at least one byte.
    fn read_returned(&self, at: ReadAt);
    /// A write returned, `bytes` (at least one) written.
    fn write_returned(&self, _bytes: usize) {}
    /// Whether the next read is to return only the bytes that arrived first (those of the
    /// oldest packet waiting, with any that came in the same nanosecond), so that its arrival
    /// stamp is theirs exactly rather than the newest packet's it would also take. Asked only
    /// with kernel stamps; it costs two or more `MSG_PEEK` reads, so ask for it only where the
    /// moment matters (a request's first bytes, a response's first token).
    fn split_at_arrivals(&self) -> bool {
        false
    }
}

/// Hooks shared with the code that reads their stamps.
impl<H: IoHooks + ?Sized> IoHooks for std::sync::Arc<H> {
    fn read_returned(&self, at: ReadAt) {
        (**self).read_returned(at);
    }

    fn write_returned(&self, bytes: usize) {
        (**self).write_returned(bytes);
    }

    fn split_at_arrivals(&self) -> bool {
        (**self).split_at_arrivals()
    }
}

/// A TCP stream whose reads and writes that move bytes call `H`.
#[derive(Debug)]
pub struct Hooked<H> {
    tcp: TcpStream,
    hooks: H,
    /// Reads go through `recvmsg(2)` and carry the kernel's receive stamp.
    arrival: bool,
}

impl<H: IoHooks> Hooked<H> {
    /// A stream whose reads are stamped when they return.
    pub fn new(tcp: TcpStream, hooks: H) -> Self {
        Self {
            tcp,
            hooks,
            arrival: false,
        }
    }

    /// A stream whose reads also carry the kernel's receive stamp of their bytes; where the
    /// kernel refuses the socket option (not Linux), reads are stamped when they return.
    pub fn with_arrival_stamps(tcp: TcpStream, hooks: H) -> Self {
        let arrival = arrival::enable(&tcp).is_ok();
        Self {
            tcp,
            hooks,
            arrival,
        }
    }

    /// Whether reads carry the kernel's receive stamps.
    pub fn stamps_arrival(&self) -> bool {
        self.arrival
    }

    /// The socket, for what goes around the hooks (a probe that reads no data).
    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    fn wrote(&self, polled: &Poll<io::Result<usize>>) {
        if let Poll::Ready(Ok(n)) = polled {
            if *n > 0 {
                self.hooks.write_returned(*n);
            }
        }
    }

    /// A read through `recvmsg(2)` that also takes the kernel's receive stamp.
    fn poll_read_stamped(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            ready!(self.tcp.poll_read_ready(cx))?;
            // SAFETY: `recv` only writes into the slice, and `assume_init` below covers exactly
            // the bytes it says it wrote.
            let unfilled = unsafe { buf.unfilled_mut() };
            let split = self.hooks.split_at_arrivals();
            let mut got = None;
            let read = || {
                let len = if split {
                    arrival::first_arrival_len(&self.tcp, unfilled)?
                } else {
                    unfilled.len()
                };
                let (n, kernel) = arrival::recv(&self.tcp, &mut unfilled[..len], 0)?;
                got = Some((n, kernel));
                // A read that did not fill what it asked for emptied the socket's queue: the
                // socket is not readable until its next readiness event. Answering
                // `WouldBlock` makes `try_io` clear the readiness it saw before this read (a
                // newer event is kept), as tokio's own reads do; without it the next poll
                // would spend a `recvmsg` on learning that nothing waits.
                if 0 < n && n < len {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(())
            };
            let polled = self.tcp.try_io(Interest::READABLE, read);
            let Some((n, kernel)) = got else {
                match polled {
                    Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Poll::Ready(Err(e)),
                    _ => continue,
                }
            };
            if n > 0 {
                // SAFETY: the kernel initialised the first `n` bytes of the unfilled part.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                self.hooks.read_returned(arrival::read_at(kernel));
            }
            return Poll::Ready(Ok(()));
        }
    }
}

impl<H: IoHooks> AsyncRead for Hooked<H> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.arrival {
            return this.poll_read_stamped(cx, buf);
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.tcp).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.hooks.read_returned(ReadAt {
                returned: Instant::now(),
                arrived: None,
            });
        }
        polled
    }
}

impl<H: IoHooks> AsyncWrite for Hooked<H> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_write(cx, buf);
        this.wrote(&polled);
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.tcp).poll_write_vectored(cx, bufs);
        this.wrote(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}
