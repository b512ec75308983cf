//! The socket as the client sees it: every read that returns bytes is stamped on the
//! monotonic clock right after the `read(2)` returns, in the task that made it, before a byte
//! is parsed. With kernel stamps on ([`Timestamps::Arrival`], the default), each read also
//! carries the moment its bytes reached the machine (the kernel's receive stamp of their last
//! packet), and that is the response's timestamp: neither parsing, nor task scheduling, nor a
//! reader busy with other streams can shift it.

use agentload_wire::hooked::{Hooked, IoHooks, ReadAt};
pub use agentload_wire::Timestamps;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// The process's time anchor for stamps kept in an atomic.
fn anchor() -> Instant {
    static ANCHOR: OnceLock<Instant> = OnceLock::new();
    *ANCHOR.get_or_init(Instant::now)
}

/// One instant in an atomic: ns after the anchor, 0 for none.
#[derive(Debug, Default)]
struct AtomicInstant(AtomicU64);

impl AtomicInstant {
    fn store(&self, at: Option<Instant>) {
        // 0 means "none"; an instant in the anchor's first nanosecond is 1.
        let ns = at.map_or(0, |at| {
            (at.saturating_duration_since(anchor()).as_nanos() as u64).max(1)
        });
        self.0.store(ns, Ordering::Release);
    }

    fn load(&self) -> Option<Instant> {
        match self.0.load(Ordering::Acquire) {
            0 => None,
            ns => Some(anchor() + Duration::from_nanos(ns)),
        }
    }
}

/// The connection's latest read that returned bytes (shared by the socket and the exchange).
#[derive(Debug, Clone, Default)]
pub(super) struct ReadStamp(Arc<Reads>);

#[derive(Debug, Default)]
struct Reads {
    returned: AtomicInstant,
    arrived: AtomicInstant,
    /// A streamed answer's first token is awaited: reads stop at packet boundaries, so the
    /// token's stamp is its own packet's.
    first_token_due: AtomicBool,
}

impl ReadStamp {
    fn new() -> Self {
        anchor();
        Self::default()
    }

    /// The latest read, or `None` when nothing was read yet.
    pub(super) fn latest(&self) -> Option<ReadAt> {
        Some(ReadAt {
            returned: self.0.returned.load()?,
            arrived: self.0.arrived.load(),
        })
    }

    /// Whether a streamed answer's first token is awaited (set when its request goes out,
    /// cleared when the token came): until then, each read returns one packet's bytes.
    pub(super) fn first_token_due(&self, due: bool) {
        self.0.first_token_due.store(due, Ordering::Relaxed);
    }

    /// When the latest read returned, if the kernel stamped its bytes' arrival.
    pub(super) fn read_of_arrival(&self) -> Option<Instant> {
        self.latest()
            .filter(|at| at.arrived.is_some())
            .map(|at| at.returned)
    }

    /// When the latest read's bytes arrived (as far as known), or `now` when nothing was read
    /// yet.
    pub(super) fn last_or(&self, now: Instant) -> Instant {
        self.latest().map_or(now, |at| at.stamp())
    }
}

/// A TCP stream whose reads are stamped (the simulator's socket wrapper, with the client's
/// hook).
pub(super) type Stamped = Hooked<ReadStamp>;

/// A connection's stream and the stamp of its latest read.
pub(super) fn stamped(tcp: TcpStream, timestamps: Timestamps) -> (Stamped, ReadStamp) {
    let reads = ReadStamp::new();
    let io = match timestamps {
        Timestamps::Arrival => Hooked::with_arrival_stamps(tcp, reads.clone()),
        Timestamps::Read => Hooked::new(tcp, reads.clone()),
    };
    (io, reads)
}

impl IoHooks for ReadStamp {
    fn read_returned(&self, at: ReadAt) {
        self.0.arrived.store(at.arrived);
        self.0.returned.store(Some(at.returned));
    }

    fn split_at_arrivals(&self) -> bool {
        self.0.first_token_due.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair(timestamps: Timestamps) -> (Stamped, ReadStamp, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let (mut stamped, reads) = stamped(client, timestamps);
        if stamped.stamps_arrival() {
            kernel_stamps_flowing(&mut stamped, &reads, &mut server).await;
        }
        (stamped, reads, server)
    }

    /// Waits until the kernel stamps received packets: the first socket of the machine to ask
    /// turns stamping on through deferred work, so the first packets may come unstamped.
    async fn kernel_stamps_flowing(
        stamped: &mut Stamped,
        reads: &ReadStamp,
        server: &mut TcpStream,
    ) {
        for _ in 0..1000 {
            server.write_all(b"?").await.unwrap();
            stamped.read_exact(&mut [0u8; 1]).await.unwrap();
            if reads.latest().unwrap().arrived.is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("the kernel never stamped a packet");
    }

    #[tokio::test]
    async fn a_read_is_stamped_when_it_returns_bytes() {
        let (mut stamped, reads, mut server) = pair(Timestamps::Read).await;
        assert!(!stamped.stamps_arrival());
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
        assert_eq!(reads.latest().unwrap().arrived, None);
        // End of stream returns no bytes: the stamp stays.
        drop(server);
        assert_eq!(stamped.read(&mut buf).await.unwrap(), 0);
        assert_eq!(reads.last_or(never), at);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn kernel_stamps_say_when_bytes_arrived_not_when_they_were_read() {
        let (mut stamped, reads, mut server) = pair(Timestamps::Arrival).await;
        assert!(stamped.stamps_arrival());
        let before_write = Instant::now();
        server.write_all(b"first token").await.unwrap();
        let after_write = Instant::now();
        // The reader is busy elsewhere for a while before it reads.
        std::thread::sleep(Duration::from_millis(40));
        let mut buf = [0u8; 64];
        let n = stamped.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"first token");
        let at = reads.latest().unwrap();
        let arrived = at.arrived.expect("the kernel stamped the packet");
        // Loopback delivers inside the sender's write; the wall-to-monotonic conversion may
        // err by a few µs.
        let slack = Duration::from_millis(2);
        assert!(
            arrived + slack >= before_write,
            "{arrived:?} < {before_write:?}"
        );
        assert!(
            arrived <= after_write + slack,
            "{arrived:?} > {after_write:?}"
        );
        assert!(at.returned >= after_write + Duration::from_millis(40));
        assert!(at.returned.duration_since(arrived) >= Duration::from_millis(38));
        assert_eq!(reads.last_or(Instant::now()), arrived);
    }

    /// While a first token is due, reads stop where the kernel kept a packet boundary: each
    /// read is stamped no earlier than its last byte was sent, and every byte comes, in order.
    /// (Whether a boundary survives is the kernel's: packets that wait in a socket's queue
    /// are merged once the sender's copy is freed, keeping the newer stamp; the streams bench
    /// measures what the split gains.)
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn while_a_first_token_is_due_reads_are_never_stamped_before_their_bytes() {
        let (mut stamped, reads, mut server) = pair(Timestamps::Arrival).await;
        server.set_nodelay(true).unwrap();
        reads.first_token_due(true);
        let mut sent = Vec::new();
        for (i, len) in [300usize, 200, 900, 40].into_iter().enumerate() {
            // Its bytes cannot arrive before their write began (a loaded machine may run
            // this thread again long after the write returned).
            sent.push((len, Instant::now()));
            server.write_all(&vec![i as u8; len]).await.unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_millis(20));
        let (mut got, mut total) = (Vec::new(), 0);
        let mut buf = [0u8; 4096];
        while total < 1440 {
            let n = stamped.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
            total += n;
            // Stamped no earlier than the write of the packet holding the read's last byte began
            // (3 ms: conversion).
            let mut end = 0;
            let sent_by = sent
                .iter()
                .find(|(len, _)| {
                    end += len;
                    end >= total
                })
                .unwrap()
                .1;
            let stamp = reads.last_or(Instant::now());
            assert!(
                stamp + Duration::from_millis(3) >= sent_by,
                "read ending at {total}"
            );
        }
        let want: Vec<u8> = [300usize, 200, 900, 40]
            .into_iter()
            .enumerate()
            .flat_map(|(i, len)| vec![i as u8; len])
            .collect();
        assert!(got == want, "bytes differ");
    }

    #[tokio::test]
    async fn kernel_stamped_reads_carry_every_byte_in_order() {
        let (mut stamped, _reads, mut server) = pair(Timestamps::Arrival).await;
        let sent: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
        let writer = {
            let sent = sent.clone();
            tokio::spawn(async move {
                for piece in sent.chunks(7_001) {
                    server.write_all(piece).await.unwrap();
                }
            })
        };
        let mut got = Vec::new();
        let mut buf = vec![0u8; 3_000];
        loop {
            match stamped.read(&mut buf).await.unwrap() {
                0 => break,
                n => got.extend_from_slice(&buf[..n]),
            }
        }
        writer.await.unwrap();
        assert_eq!(got.len(), sent.len());
        assert!(got == sent, "bytes differ");
    }
}
