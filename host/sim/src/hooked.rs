//! A TCP stream that calls hooks the moment a read or a write returns bytes, in the task that
//! made the syscall, before anything parses them: the one socket wrapper both ends of the wire
//! stamp with (the simulator's request and first-token stamps, the client's read stamps).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// What a [`Hooked`] stream calls right after a syscall returned bytes.
pub trait IoHooks: Unpin {
    /// A read returned at least one byte.
    fn read_returned(&self);
    /// A write returned at least one byte written.
    fn write_returned(&self) {}
}

/// A TCP stream whose reads and writes that move bytes call `H`.
#[derive(Debug)]
pub struct Hooked<H> {
    tcp: TcpStream,
    hooks: H,
}

impl<H: IoHooks> Hooked<H> {
    pub fn new(tcp: TcpStream, hooks: H) -> Self {
        Self { tcp, hooks }
    }

    fn wrote(&self, polled: &Poll<io::Result<usize>>) {
        if matches!(polled, Poll::Ready(Ok(n)) if *n > 0) {
            self.hooks.write_returned();
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
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.tcp).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.hooks.read_returned();
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
