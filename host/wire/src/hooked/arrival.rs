//! Kernel receive stamps: `SO_TIMESTAMPNS` on the socket, `recvmsg(2)` to read the bytes with
//! the stamp of the last packet they came in, and the stamp (wall clock) turned into an
//! [`Instant`] by its age at the read.
//!
//! The kernel stamps a packet when its network stack receives it. When packets wait in the
//! socket's queue, TCP merges them and keeps the later stamp, and a read that takes several
//! gets the last one's: the stamp never precedes the bytes' true arrival and never follows the
//! read. The wall clock is read again right after the read, so its age does not depend on the
//! wall clock's offset from the monotonic one; a wall-clock step between arrival and read
//! shortens the age to zero (backwards) or, forwards, is cut at the read's own lower bound by
//! the caller (the request's send time).

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::net::TcpStream;

use super::ReadAt;

/// Asks the kernel to stamp the packets this socket receives.
#[cfg(target_os = "linux")]
pub(super) fn enable(tcp: &TcpStream) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: the option value is a live c_int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Kernel receive stamps are a Linux socket option.
#[cfg(not(target_os = "linux"))]
pub(super) fn enable(_tcp: &TcpStream) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// Reads into `buf` (`flags`: `recvmsg`'s, e.g. `MSG_PEEK`); the bytes read and the kernel's
/// stamp of the last packet they came in (time since the Unix epoch), when it gave one.
pub(super) fn recv(
    tcp: &TcpStream,
    buf: &mut [MaybeUninit<u8>],
    flags: libc::c_int,
) -> io::Result<(usize, Option<Duration>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one timespec message, 8-byte aligned as control messages must be.
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid (no name, no buffers) until filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at live buffers of the sizes it states, for the call's duration.
    let n = unsafe { libc::recvmsg(tcp.as_raw_fd(), &mut msg, flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, stamp(&msg)))
}

/// Bytes peeked first when looking for the oldest packet's end: more than an SSE frame or a
/// request head, little to copy.
const FIRST_PROBE: usize = 4096;

/// How many of the bytes waiting (at most `buf.len()`) arrived with the oldest of them: the
/// length of a read whose stamp is the oldest packet's. Peeks only (`buf` is scratch): the
/// oldest byte's stamp, then growing windows until one ends in a differently stamped packet
/// (a peek of `n` bytes is stamped with the packet holding the `n`-th), then a binary search
/// inside it; each peek copies about the oldest packet's size, not the whole backlog. A
/// packet merged into the oldest one between two peeks only shortens the read (whose stamp is
/// then the merged one's: never early). `WouldBlock` when nothing waits; 1 at the end of the
/// stream (the read then returns 0).
pub(super) fn first_arrival_len(tcp: &TcpStream, buf: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
    let cap = buf.len();
    let mut peek = |n: usize| recv(tcp, &mut buf[..n], libc::MSG_PEEK);
    let (waiting, oldest) = peek(1)?;
    if waiting == 0 || cap == 1 {
        return Ok(1);
    }
    // peek(lo) is stamped like the oldest byte; peek(hi) is not.
    let (mut lo, mut window) = (1, FIRST_PROBE.min(cap));
    let mut hi = loop {
        let (got, at) = peek(window)?;
        if at != oldest {
            break got;
        }
        if got < window || got == cap {
            return Ok(got); // everything waiting (or all that fits) came with the oldest
        }
        lo = got;
        window = (window * 4).min(cap);
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if peek(mid)?.1 == oldest {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The `SCM_TIMESTAMPNS` control message of a `recvmsg` answer.
#[cfg(target_os = "linux")]
fn stamp(msg: &libc::msghdr) -> Option<Duration> {
    // SAFETY: `msg` was filled by recvmsg; the CMSG macros walk only the control length it
    // reports, and the timestamp's data is read unaligned from inside its message.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                return Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

#[cfg(not(target_os = "linux"))]
fn stamp(_msg: &libc::msghdr) -> Option<Duration> {
    None
}

/// A read that returned now, with its bytes' kernel stamp as an [`Instant`].
pub(super) fn read_at(kernel: Option<Duration>) -> ReadAt {
    // The wall clock first: its age then errs (by the nanoseconds between the two readings)
    // towards a later arrival, never an earlier one.
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).ok();
    let returned = Instant::now();
    let arrived = kernel.zip(wall).map(|(stamp, wall)| {
        let age = wall.saturating_sub(stamp);
        returned.checked_sub(age).unwrap_or(returned)
    });
    ReadAt { returned, arrived }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A connected pair whose client side asks for kernel stamps.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        enable(&client).unwrap();
        (client, server)
    }

    async fn waiting(client: &TcpStream, n: usize) {
        let mut buf = vec![MaybeUninit::uninit(); n + 1];
        for _ in 0..1000 {
            if recv(client, &mut buf, libc::MSG_PEEK).map_or(0, |r| r.0) >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("{n} bytes never came");
    }

    #[tokio::test]
    async fn one_arrival_is_read_whole_past_the_first_window_and_cut_at_the_buffer() {
        let (client, mut server) = pair().await;
        server.set_nodelay(true).unwrap();
        server.write_all(&[7u8; 3 * FIRST_PROBE]).await.unwrap();
        waiting(&client, 3 * FIRST_PROBE).await;
        let mut small = vec![MaybeUninit::uninit(); 1000];
        assert_eq!(first_arrival_len(&client, &mut small).unwrap(), 1000);
        let mut big = vec![MaybeUninit::uninit(); 64 << 10];
        assert_eq!(
            first_arrival_len(&client, &mut big).unwrap(),
            3 * FIRST_PROBE
        );
        // Peeks only: every byte is still there.
        let (n, _) = recv(&client, &mut big, 0).unwrap();
        assert_eq!(n, 3 * FIRST_PROBE);
    }

    #[tokio::test]
    async fn nothing_waiting_would_block_and_the_end_reads_as_one_byte() {
        let (client, server) = pair().await;
        let mut buf = vec![MaybeUninit::uninit(); 64];
        let err = first_arrival_len(&client, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        drop(server);
        for _ in 0..1000 {
            match first_arrival_len(&client, &mut buf) {
                Ok(n) => {
                    assert_eq!(n, 1);
                    assert_eq!(recv(&client, &mut buf[..n], 0).unwrap().0, 0, "end");
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    tokio::time::sleep(Duration::from_millis(1)).await
                }
                Err(e) => panic!("{e}"),
            }
        }
        panic!("the end never came");
    }
}
