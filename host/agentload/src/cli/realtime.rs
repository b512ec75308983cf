//! `--realtime`: the process's threads at real-time priority.
//!
//! On a host whose CPUs are busy with other work, a thread that wakes for a due time waits
//! for the scheduler to give it a CPU: up to a time slice of whatever runs there (milliseconds
//! on a loaded machine), which would show as send lag and bunch an open-loop schedule's
//! arrivals. A `SCHED_FIFO` thread preempts every ordinary thread at once. Priority 1, the
//! lowest real-time one, is enough for that; the kernel's real-time throttling still leaves
//! the other processes 5 % of each CPU, should agentload itself keep a CPU busy.

use std::io;

/// Sets the calling thread's policy to `SCHED_FIFO`, priority 1. Call it before any thread
/// starts: threads inherit the policy of the thread that starts them (and child processes,
/// local shards, that of their parent).
///
/// # Errors
/// Where the system refuses it (no root or CAP_SYS_NICE, a container without it, a kernel
/// without real-time scheduling), or off Linux.
pub(super) fn fifo() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: `param` is initialised; pid 0 is the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::other(format!(
                "cannot run at real-time priority (SCHED_FIFO): {e} (it needs root or \
                 CAP_SYS_NICE)"
            )));
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    Err(io::Error::other(
        "real-time priority (SCHED_FIFO) is set on Linux only",
    ))
}
