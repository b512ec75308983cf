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

/// How many of the bytes waiting (at most `buf.len()`) arrived with the oldest of them: the
/// length of a read whose stamp is the oldest packet's. Peeks only (`buf` is scratch): the
/// waiting bytes, the oldest byte's stamp, and where they differ a binary search for the last
/// byte stamped like the oldest (a peek of `n` bytes is stamped with the packet holding the
/// `n`-th). `WouldBlock` when nothing waits; 1 at the end of the stream (the read then
/// returns 0).
pub(super) fn first_arrival_len(tcp: &TcpStream, buf: &mut [MaybeUninit<u8>]) -> io::Result<usize> {
    let (waiting, newest) = recv(tcp, buf, libc::MSG_PEEK)?;
    if waiting <= 1 {
        return Ok(waiting.max(1).min(buf.len()));
    }
    let stamp = |n: usize, buf: &mut [MaybeUninit<u8>]| {
        recv(tcp, &mut buf[..n], libc::MSG_PEEK).map(|(_, at)| at)
    };
    let oldest = stamp(1, buf)?;
    if oldest == newest {
        return Ok(waiting);
    }
    // stamp(lo) == oldest, stamp(hi) != oldest.
    let (mut lo, mut hi) = (1, waiting);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if stamp(mid, buf)? == oldest {
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
