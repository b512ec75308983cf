//! CPU pinning for `agentload bench --sim-cpus` and `agentload sim --cpus`: the simulator on
//! cores of its own, the client on the others, so neither's scheduling noise lands in the
//! other's timestamps. `sched_setaffinity(2)` through libc (already a dependency): it pins
//! every thread of the process (`/proc/self/task`), where a per-thread pinning crate would
//! leave the async runtime's worker threads where they were.

use std::io;

/// A CPU list given on the command line (`--cpus`, `--sim-cpus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

impl std::str::FromStr for CpuList {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        parse_cpus(text).map(Self)
    }
}

/// Parses a CPU list: `1`, `0,2`, `2-3`, `0-1,4`.
///
/// # Errors
/// A part that is not a number or a range, or an empty list; the message names it.
pub fn parse_cpus(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim) {
        let bad = || format!("CPU list `{text}`: `{part}` is not a CPU number or a range A-B");
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let (a, b): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if a > b || b >= libc::CPU_SETSIZE as usize {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The CPUs this process may run on now.
///
/// # Errors
/// When the kernel refuses `sched_getaffinity`.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size is the set's own; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: the index is below CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// The CPUs this process may run on, less `taken` (the simulator's).
///
/// # Errors
/// When `taken` leaves none, or the kernel refuses `sched_getaffinity`.
pub fn others(taken: &[usize]) -> io::Result<Vec<usize>> {
    let rest: Vec<usize> = allowed_cpus()?
        .into_iter()
        .filter(|c| !taken.contains(c))
        .collect();
    if rest.is_empty() {
        return Err(io::Error::other(format!(
            "{taken:?} leaves no CPU for the client"
        )));
    }
    Ok(rest)
}

/// Pins every thread of this process (and the threads they start later) to `cpus`.
///
/// # Errors
/// An empty list, or one the kernel refuses (a CPU that is not online); the message names the
/// list.
pub fn pin_process(cpus: &[usize]) -> io::Result<()> {
    if cpus.is_empty() {
        return Err(io::Error::other("no CPU to pin to"));
    }
    // SAFETY: as in `allowed_cpus`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c < libc::CPU_SETSIZE as usize {
            // SAFETY: `c` is below CPU_SETSIZE (larger ones are skipped), inside `set`.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
    }
    let tids: Vec<libc::pid_t> = std::fs::read_dir("/proc/self/task")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    for tid in tids {
        // SAFETY: the set is initialised and sized; a thread that ended meanwhile fails with
        // ESRCH, which is ignored.
        let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ESRCH) {
                return Err(io::Error::other(format!(
                    "cannot pin to CPUs {cpus:?}: {e}"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("1").unwrap(), vec![1]);
        assert_eq!(parse_cpus("0-1,4, 2").unwrap(), vec![0, 1, 2, 4]);
        assert_eq!(parse_cpus("3-3,3").unwrap(), vec![3]);
        for bad in ["", "a", "2-1", "1-", "-1", "99999"] {
            let err = parse_cpus(bad).unwrap_err();
            assert!(err.contains(&format!("`{bad}`")), "{bad}: {err}");
        }
    }

    #[test]
    fn pinning_to_the_allowed_cpus_keeps_them() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        pin_process(&cpus).unwrap();
        assert_eq!(allowed_cpus().unwrap(), cpus);
        assert!(pin_process(&[]).is_err());
    }
}
