//! Waiting for a due time finer than tokio's timer, whose wheel counts whole milliseconds
//! (a wait ends at the first tick after its deadline: up to a millisecond late, which
//! would be most of an open-loop schedule's gap at a thousand arrivals per second and would
//! change the shape of its short gaps).
//!
//! A wait longer than [`COARSE`] first sleeps on tokio's timer until `COARSE` before its
//! deadline, then hands the rest to one timer thread: a heap of deadlines and a condition
//! variable whose timed wait is a futex with an absolute-precision hrtimer, the thread's
//! timer slack set to 1 ns (Linux's default of 50 µs would be the error instead). The thread
//! wakes the waiting task at its deadline; the task then runs when a runtime worker picks
//! it up (microseconds on an idle worker), which the send lag records.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How long before its deadline a wait leaves tokio's timer for the timer thread.
const COARSE: Duration = Duration::from_millis(3);

/// Waits until `at`, within microseconds of it (never before it).
pub async fn sleep_until(at: Instant) {
    if let Some(coarse) = at.checked_sub(COARSE) {
        if coarse > Instant::now() {
            tokio::time::sleep_until(coarse.into()).await;
        }
    }
    Fine {
        at,
        registered: None,
    }
    .await;
}

/// The last part of a wait, on the timer thread.
struct Fine {
    at: Instant,
    /// The waker handed to the thread last (a new one is handed when the task's changes).
    registered: Option<Waker>,
}

impl Future for Fine {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.at {
            return Poll::Ready(());
        }
        if !self
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            timer().add(self.at, cx.waker().clone());
            self.registered = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// A deadline and whom to wake (ordered by deadline, then by arrival).
struct Entry {
    at: Instant,
    seq: u64,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Heap {
    entries: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

/// The timer thread's shared state.
struct Timer {
    heap: Mutex<Heap>,
    changed: Condvar,
}

impl Timer {
    fn add(&self, at: Instant, waker: Waker) {
        let mut heap = self.heap.lock().expect("timer lock");
        heap.seq += 1;
        let seq = heap.seq;
        let earliest = heap.entries.peek().is_none_or(|Reverse(e)| at < e.at);
        heap.entries.push(Reverse(Entry { at, seq, waker }));
        drop(heap);
        if earliest {
            self.changed.notify_one();
        }
    }

    fn run(&self) {
        set_fine_timer_slack();
        let mut due = Vec::new();
        let mut heap = self.heap.lock().expect("timer lock");
        loop {
            let now = Instant::now();
            while heap.entries.peek().is_some_and(|Reverse(e)| e.at <= now) {
                let Reverse(e) = heap.entries.pop().expect("peeked");
                due.push(e.waker);
            }
            if !due.is_empty() {
                drop(heap);
                for waker in due.drain(..) {
                    waker.wake();
                }
                heap = self.heap.lock().expect("timer lock");
                continue;
            }
            heap = match heap.entries.peek() {
                None => self.changed.wait(heap).expect("timer lock"),
                Some(Reverse(e)) => {
                    let left = e.at.saturating_duration_since(now);
                    self.changed.wait_timeout(heap, left).expect("timer lock").0
                }
            };
        }
    }
}

/// The one timer thread, started on first use.
fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static Timer = Box::leak(Box::new(Timer {
            heap: Mutex::default(),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("agentload-precise-timer".into())
            .spawn(move || timer.run())
            .expect("the timer thread starts");
        timer
    })
}

/// Whether this process runs at real-time priority (`SCHED_FIFO` or `SCHED_RR`, as
/// `agentload run --realtime` sets before any thread starts): only then does a task spin
/// for a due time. An ordinary thread that spins is a CPU hog to the scheduler, which on a
/// busy machine costs it the preference a sleeping thread gets at its wake-up, and its spin
/// takes CPU from the processes it shares the machine with.
pub fn realtime() -> bool {
    static REALTIME: OnceLock<bool> = OnceLock::new();
    *REALTIME.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: pid 0 is the calling thread; no memory is passed.
            let policy = unsafe { libc::sched_getscheduler(0) };
            policy == libc::SCHED_FIFO || policy == libc::SCHED_RR
        }
        #[cfg(not(target_os = "linux"))]
        false
    })
}

/// This thread's timer slack to 1 ns (Linux): its timed waits end at their deadline, not up
/// to 50 µs after it.
fn set_fine_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes only this thread's
    // slack; the unused arguments are ignored.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Correctness only: how close to its deadline a wait ends is measured by
    /// `agentload bench --sections arrivals`, not asserted here.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waits_end_at_their_deadline_never_before() {
        for i in 0..50u64 {
            let at = Instant::now() + Duration::from_micros(300 + 97 * i);
            sleep_until(at).await;
            assert!(Instant::now() >= at);
        }
        // Past deadlines return at once; long ones go through tokio's timer first.
        sleep_until(Instant::now() - Duration::from_millis(1)).await;
        let at = Instant::now() + Duration::from_millis(8);
        sleep_until(at).await;
        assert!(Instant::now() >= at);
    }

    #[tokio::test]
    async fn many_waiters_registered_out_of_order_each_wake_after_their_deadline() {
        let start = Instant::now() + Duration::from_millis(2);
        let tasks: Vec<_> = (0..20u64)
            .rev()
            .map(|i| {
                let at = start + Duration::from_micros(200 * i);
                tokio::spawn(async move {
                    sleep_until(at).await;
                    Instant::now() >= at
                })
            })
            .collect();
        for t in tasks {
            assert!(t.await.unwrap());
        }
    }
}
