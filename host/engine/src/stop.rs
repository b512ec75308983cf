//! When to stop issuing turns, and when to give up on in-flight ones.
//!
//! A [`Stop`] is *soft* first (no new turn is issued; in-flight turns run
//! to their end) and may become *hard* (in-flight turns are cut and recorded
//! as interrupted). A phase's stop is a child of the run's: a signal stops
//! every phase, a phase's own end rules stop only that phase.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Why issuing stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// SIGINT or SIGTERM: the run is incomplete and can be resumed.
    Interrupted(&'static str),
    /// `load.max_duration_ms` elapsed.
    Deadline,
    /// The schedule had enough (a sweep's end rules, a check's budget).
    Done(String),
    /// Something that must end the run: a result file could not be written.
    Fatal(String),
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Interrupted(signal) => write!(f, "interrupted ({signal})"),
            Self::Deadline => write!(f, "max_duration reached: remaining turns not issued"),
            Self::Done(why) => write!(f, "{why}"),
            Self::Fatal(why) => write!(f, "stopped: {why}"),
        }
    }
}

#[derive(Default)]
struct Inner {
    reason: Mutex<Option<(StopReason, Instant)>>,
    soft: AtomicBool,
    hard: AtomicBool,
    notify: Notify,
}

/// A stop signal shared by a phase's sessions (cheap to clone).
#[derive(Clone, Default)]
pub struct Stop {
    own: Arc<Inner>,
    parent: Option<Arc<Inner>>,
}

impl Stop {
    /// A stop of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// A stop that also stops when `self` does.
    pub fn child(&self) -> Self {
        Self {
            own: Arc::default(),
            parent: Some(self.own.clone()),
        }
    }

    fn levels(&self) -> impl Iterator<Item = &Arc<Inner>> {
        std::iter::once(&self.own).chain(self.parent.as_ref())
    }

    /// Stops issuing (the first reason wins).
    pub fn stop(&self, reason: StopReason) {
        let mut slot = self.own.reason.lock().expect("stop lock");
        if slot.is_none() {
            *slot = Some((reason, Instant::now()));
            self.own.soft.store(true, Ordering::SeqCst);
            self.own.notify.notify_waiters();
        }
    }

    /// Cuts in-flight turns too.
    pub fn harden(&self) {
        self.own.soft.store(true, Ordering::SeqCst);
        self.own.hard.store(true, Ordering::SeqCst);
        self.own.notify.notify_waiters();
    }

    /// Whether issuing has stopped.
    pub fn stopped(&self) -> bool {
        self.levels().any(|l| l.soft.load(Ordering::SeqCst))
    }

    /// Whether in-flight turns are to be cut.
    pub fn hard(&self) -> bool {
        self.levels().any(|l| l.hard.load(Ordering::SeqCst))
    }

    /// Why it stopped (the parent's reason first), and when.
    pub fn reason(&self) -> Option<(StopReason, Instant)> {
        let parent = self
            .parent
            .as_ref()
            .and_then(|p| p.reason.lock().expect("stop lock").clone());
        parent.or_else(|| self.own.reason.lock().expect("stop lock").clone())
    }

    /// Waits until `t`; false when issuing stopped first. A `t` already past returns at once:
    /// the timer would wait for its next millisecond tick (up to 1 ms of send lag between
    /// turns that are due immediately).
    pub async fn wait_until(&self, t: Instant) -> bool {
        if t <= Instant::now() {
            return !self.stopped();
        }
        tokio::select! {
            () = tokio::time::sleep_until(t.into()) => !self.stopped(),
            () = self.until(Self::stopped) => false,
        }
    }

    /// Resolves once issuing has stopped (a signal, a deadline, an end rule).
    pub async fn halted(&self) {
        self.until(Self::stopped).await;
    }

    /// Resolves once in-flight turns are to be cut.
    pub async fn hardened(&self) {
        self.until(Self::hard).await;
    }

    /// Runs `work` to its end (`Some` of its output), unless in-flight turns are cut
    /// first (`None`). The cut is polled only when its own wake-up came, not on each of
    /// `work`'s, as `tokio::select!` would: a waiting `Notified` takes its `Notify`'s lock
    /// on every poll, and every session of a phase shares that lock (one per read of every
    /// stream, at thousands of streams).
    pub async fn unless_hardened<F: Future>(&self, work: F) -> Option<F::Output> {
        unless(work, self.hardened()).await
    }

    /// Resolves once `done` holds, re-checked on every notification of
    /// this stop or its parent (registered before each check, so none is
    /// missed).
    async fn until(&self, done: fn(&Self) -> bool) {
        loop {
            let own = self.own.notify.notified();
            tokio::pin!(own);
            own.as_mut().enable();
            let mut parent = self.parent.as_ref().map(|p| Box::pin(p.notify.notified()));
            if let Some(p) = parent.as_mut() {
                p.as_mut().enable();
            }
            if done(self) {
                return;
            }
            let parent_fired = async {
                match parent.as_mut() {
                    Some(p) => p.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = own => {}
                () = parent_fired => {}
            }
        }
    }

    /// Stops on SIGINT or SIGTERM: issuing ends at once, in-flight turns get
    /// `grace` to finish, a second signal cuts them at once.
    pub fn on_signals(&self, grace: Duration) {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            agentload_console::line(
                "note: cannot watch for SIGINT/SIGTERM; a signal will end the run at once",
            );
            return;
        };
        let stop = self.clone();
        tokio::spawn(async move {
            let mut signals = 0;
            loop {
                let name = tokio::select! {
                    _ = int.recv() => "SIGINT",
                    _ = term.recv() => "SIGTERM",
                };
                signals += 1;
                if signals == 1 {
                    agentload_console::line(&format!(
                        "\n{name}: no new turns; in-flight turns have {:.0} s to finish \
                         (again to stop them now); results so far are being written",
                        grace.as_secs_f64()
                    ));
                    stop.stop(StopReason::Interrupted(name));
                    let hard = stop.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(grace).await;
                        hard.harden();
                    });
                } else {
                    agentload_console::line(&format!("{name}: cutting in-flight turns"));
                    stop.harden();
                }
            }
        });
    }

    /// Stops with [`StopReason::Deadline`] after `after` (a background task).
    pub fn deadline(&self, after: Duration) {
        let stop = self.clone();
        tokio::spawn(async move {
            if stop.wait_until(Instant::now() + after).await {
                stop.stop(StopReason::Deadline);
            }
        });
    }
}

/// `work`'s output, or `None` once `cut` resolves first; `cut` is polled once, then only
/// after its own waker fired (or the task's waker changed).
async fn unless<F: Future>(work: F, cut: impl Future<Output = ()>) -> Option<F::Output> {
    let (mut work, mut cut) = (pin!(work), pin!(cut));
    let mut watch: Option<(Arc<CutWake>, Waker)> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        let due = match &watch {
            Some((flag, _)) if flag.task.will_wake(cx.waker()) => {
                flag.fired.swap(false, Ordering::AcqRel)
            }
            _ => {
                let flag = Arc::new(CutWake {
                    fired: AtomicBool::new(false),
                    task: cx.waker().clone(),
                });
                watch = Some((flag.clone(), Waker::from(flag)));
                true
            }
        };
        if due {
            let (_, waker) = watch.as_ref().expect("set above");
            if cut
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_ready()
            {
                return Poll::Ready(None);
            }
        }
        Poll::Pending
    })
    .await
}

/// The cut's waker in [`unless`]: notes that the cut is to be polled, and wakes the task.
struct CutWake {
    fired: AtomicBool,
    task: Waker,
}

impl Wake for CutWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        self.task.wake_by_ref();
    }
}

impl std::fmt::Debug for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stop")
            .field("reason", &self.reason().map(|(r, _)| r))
            .field("hard", &self.hard())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_already_due_does_not_wait_for_a_timer_tick() {
        let stop = Stop::new();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let past = Instant::now() - Duration::from_millis(1);
        let mut due = std::pin::pin!(stop.wait_until(past));
        assert_eq!(due.as_mut().poll(&mut cx), std::task::Poll::Ready(true));
        // A future deadline does wait.
        let later = Instant::now() + Duration::from_secs(60);
        let mut later = std::pin::pin!(stop.wait_until(later));
        assert!(later.as_mut().poll(&mut cx).is_pending());
        stop.stop(StopReason::Done("over".into()));
        let mut over = std::pin::pin!(stop.wait_until(past));
        assert_eq!(over.as_mut().poll(&mut cx), std::task::Poll::Ready(false));
    }

    #[tokio::test]
    async fn a_child_stops_with_its_parent_and_not_the_other_way() {
        let run = Stop::new();
        let phase = run.child();
        phase.stop(StopReason::Done("end rules".into()));
        assert!(phase.stopped() && !run.stopped());
        let other = run.child();
        let waiting = tokio::spawn({
            let other = other.clone();
            async move {
                other
                    .wait_until(Instant::now() + Duration::from_secs(60))
                    .await
            }
        });
        tokio::task::yield_now().await;
        run.stop(StopReason::Interrupted("SIGINT"));
        assert!(!waiting.await.unwrap(), "the wait ends early");
        assert_eq!(other.reason().unwrap().0, StopReason::Interrupted("SIGINT"));
        assert!(!other.hard());
        run.harden();
        tokio::time::timeout(Duration::from_secs(5), other.hardened())
            .await
            .expect("hardened resolves");
    }

    /// Work woken many times polls the cut once; the cut's own wake-up is not missed, even
    /// after a soft stop's notification woke it first.
    #[tokio::test]
    async fn the_cut_is_polled_on_its_own_wake_ups_only() {
        use std::sync::atomic::AtomicU32;
        let polls = AtomicU32::new(0);
        let stop = Stop::new();
        let counted = async {
            let mut hardened = pin!(stop.hardened());
            std::future::poll_fn(|cx| {
                polls.fetch_add(1, Ordering::SeqCst);
                hardened.as_mut().poll(cx)
            })
            .await
        };
        let mut wakes = 0;
        let work = std::future::poll_fn(|cx| {
            wakes += 1;
            if wakes == 100 {
                return Poll::Ready("done");
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        });
        assert_eq!(unless(work, counted).await, Some("done"));
        assert_eq!(polls.load(Ordering::SeqCst), 1, "polled once in 100 wakes");

        // A soft stop wakes the cut (it does not resolve), then a hard one cuts.
        let never = std::future::pending::<()>();
        let cut = tokio::spawn({
            let stop = stop.clone();
            async move { stop.unless_hardened(never).await }
        });
        tokio::task::yield_now().await;
        stop.stop(StopReason::Done("end rules".into()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!cut.is_finished(), "a soft stop does not cut");
        stop.harden();
        let out = tokio::time::timeout(Duration::from_secs(5), cut)
            .await
            .expect("the hard stop cuts the work")
            .unwrap();
        assert_eq!(out, None);
    }

    #[tokio::test]
    async fn the_first_reason_wins_and_waits_run_to_their_time() {
        let stop = Stop::new();
        assert!(stop.wait_until(Instant::now()).await);
        stop.deadline(Duration::from_millis(10));
        assert!(
            !stop
                .wait_until(Instant::now() + Duration::from_secs(60))
                .await
        );
        stop.stop(StopReason::Fatal("later".into()));
        assert_eq!(stop.reason().unwrap().0, StopReason::Deadline);
    }
}
