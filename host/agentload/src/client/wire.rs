//! The socket as the client sees it: every read that returns bytes is stamped on the
//! monotonic clock right after the `read(2)` returns, in the task that made it, before a byte
//! is parsed. Response timestamps are these stamps, so neither HTTP/SSE parsing nor task
//! scheduling after the read can shift them.

use agentload_sim::hooked::{Hooked, IoHooks};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// The process's time anchor for stamps kept in an atomic.
fn anchor() -> Instant {
    static ANCHOR: OnceLock<Instant> = OnceLock::new();
    *ANCHOR.get_or_init(Instant::now)
}

/// When the connection's latest read returned bytes (shared by the socket and the exchange).
#[derive(Debug, Clone)]
pub(super) struct ReadStamp(Arc<AtomicU64>);

impl ReadStamp {
    fn new() -> Self {
        anchor();
        Self(Arc::new(AtomicU64::new(0)))
    }

    fn mark(&self) {
        let ns = anchor().elapsed().as_nanos() as u64;
        // 0 means "no read yet"; a read in the anchor's first nanosecond is 1.
        self.0.store(ns.max(1), Ordering::Release);
    }

    /// The latest read's stamp, or `now` when nothing was read yet.
    pub(super) fn last_or(&self, now: Instant) -> Instant {
        match self.0.load(Ordering::Acquire) {
            0 => now,
            ns => anchor() + Duration::from_nanos(ns),
        }
    }
}

/// A TCP stream whose reads are stamped (the simulator's socket wrapper, with the client's
/// hook).
pub(super) type Stamped = Hooked<ReadStamp>;

/// A connection's stream and the stamp of its latest read.
pub(super) fn stamped(tcp: TcpStream) -> (Stamped, ReadStamp) {
    let reads = ReadStamp::new();
    (Hooked::new(tcp, reads.clone()), reads)
}

impl IoHooks for ReadStamp {
    fn read_returned(&self) {
        self.mark();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_read_is_stamped_when_it_returns_bytes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let (mut stamped, reads) = stamped(client);
        let never = Instant::now() + Duration::from_secs(3600);
        assert_eq!(reads.last_or(never), never, "no read yet");
        server.write_all(b"abc").await.unwrap();
        let before = Instant::now();
        let mut buf = [0u8; 8];
        let n = stamped.read(&mut buf).await.unwrap();
        let after = Instant::now();
        assert_eq!(&buf[..n], b"abc");
        let at = reads.last_or(never);
        assert!(at >= before && at <= after, "stamped inside the read");
        // End of stream returns no bytes: the stamp stays.
        drop(server);
        assert_eq!(stamped.read(&mut buf).await.unwrap(), 0);
        assert_eq!(reads.last_or(never), at);
    }
}
