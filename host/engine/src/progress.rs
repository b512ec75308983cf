//! Live progress of a phase: a bar with ETA, turns/s, tokens/s, failures
//! and the phase name on a terminal; plain periodic lines otherwise (CI
//! logs).
//!
//! The turn path only counts ([`Progress::turn`]: atomics and one
//! uncontended lock, no I/O); a timer thread renders. A bar is drawn on
//! stderr; [`agentload_console::line`] prints other messages above it.

use crate::TurnStatus;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

/// How often a bar is redrawn.
const BAR_EVERY: Duration = Duration::from_millis(250);
/// How often a plain line is printed (`AGENTLOAD_PROGRESS_INTERVAL_S`
/// overrides it).
const LINE_EVERY: Duration = Duration::from_secs(10);
/// Rates are over about this much recent time.
const RATE_WINDOW: Duration = Duration::from_secs(10);

/// Where progress goes.
pub enum Output {
    /// Nowhere (counts are still kept).
    Quiet,
    /// An indicatif bar on stderr.
    Bar,
    /// A line every `every` to `to`, and a last one at the end.
    Lines {
        every: Duration,
        to: Box<dyn Write + Send>,
    },
}

impl Output {
    /// A bar when stderr is a terminal, else lines on stderr.
    pub fn detect(quiet: bool) -> Self {
        if quiet {
            Output::Quiet
        } else if std::io::stderr().is_terminal() {
            Output::Bar
        } else {
            let every = std::env::var("AGENTLOAD_PROGRESS_INTERVAL_S")
                .ok()
                .and_then(|s| s.parse::<f64>().ok())
                .filter(|s| *s > 0.0)
                .map_or(LINE_EVERY, Duration::from_secs_f64);
            Output::Lines {
                every,
                to: Box::new(std::io::stderr()),
            }
        }
    }
}

/// The counts so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub completed: u64,
    pub failed: u64,
    pub aborted: u64,
    pub output_tokens: u64,
}

impl Counts {
    pub fn turns(&self) -> u64 {
        self.completed + self.failed + self.aborted
    }
}

struct Inner {
    phase: String,
    planned: Option<u64>,
    started: Instant,
    completed: AtomicU64,
    failed: AtomicU64,
    aborted: AtomicU64,
    output_tokens: AtomicU64,
    /// TTFT in µs (HDR: O(1) per sample).
    ttft_us: Mutex<hdrhistogram::Histogram<u64>>,
    finished: AtomicBool,
    wake: (Mutex<bool>, Condvar),
    renderer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// A phase's progress; cheap to clone and to share between tasks.
#[derive(Clone)]
pub struct Progress {
    inner: Arc<Inner>,
}

impl Progress {
    /// Starts showing a phase (`planned_turns`: the turns it will take, when
    /// known); quiet shows nothing.
    pub fn start(phase: &str, planned_turns: Option<u64>, quiet: bool) -> Self {
        Self::with_output(phase, planned_turns, Output::detect(quiet))
    }

    /// Starts with an explicit output.
    pub fn with_output(phase: &str, planned_turns: Option<u64>, output: Output) -> Self {
        let inner = Arc::new(Inner {
            phase: phase.to_owned(),
            planned: planned_turns.filter(|&n| n > 0),
            started: Instant::now(),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            aborted: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            ttft_us: Mutex::new(
                hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3)
                    .expect("valid bounds"),
            ),
            finished: AtomicBool::new(false),
            wake: (Mutex::new(false), Condvar::new()),
            renderer: Mutex::new(None),
        });
        if !matches!(output, Output::Quiet) {
            let weak = Arc::downgrade(&inner);
            let handle = std::thread::Builder::new()
                .name("agentload-progress".into())
                .spawn(move || render(weak, output))
                .expect("cannot start the progress thread");
            *inner.renderer.lock().expect("renderer lock") = Some(handle);
        }
        Self { inner }
    }

    /// Counts one turn: how it ended, its output tokens, its TTFT.
    pub fn turn(&self, status: TurnStatus, output_tokens: u64, ttft: Option<Duration>) {
        let i = &self.inner;
        match status {
            TurnStatus::Completed => i.completed.fetch_add(1, Ordering::Relaxed),
            TurnStatus::Failed => i.failed.fetch_add(1, Ordering::Relaxed),
            TurnStatus::Aborted => i.aborted.fetch_add(1, Ordering::Relaxed),
            // Cut by a signal: neither done nor failed (resume sends it again).
            TurnStatus::Interrupted => return,
        };
        i.output_tokens.fetch_add(output_tokens, Ordering::Relaxed);
        if let Some(t) = ttft {
            i.ttft_us
                .lock()
                .expect("ttft lock")
                .saturating_record((t.as_micros() as u64).max(1));
        }
    }

    /// Counts one turn from its record (status, server or local output
    /// tokens, TTFT).
    pub fn record(&self, r: &crate::TurnRecord) {
        let tokens = r
            .server_osl()
            .or(r.local_tokens.map(|l| u64::from(l.osl)))
            .unwrap_or(0);
        let ttft = r
            .first_token_ns
            .zip(r.issued_ns)
            .and_then(|(f, i)| f.checked_sub(i))
            .map(Duration::from_nanos);
        self.turn(r.status, tokens, ttft);
    }

    /// The TTFT histogram so far (µs, 1 µs to 1 h, 3 significant digits).
    pub fn ttft_us(&self) -> hdrhistogram::Histogram<u64> {
        self.inner.ttft_us.lock().expect("ttft lock").clone()
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        let i = &self.inner;
        Counts {
            completed: i.completed.load(Ordering::Relaxed),
            failed: i.failed.load(Ordering::Relaxed),
            aborted: i.aborted.load(Ordering::Relaxed),
            output_tokens: i.output_tokens.load(Ordering::Relaxed),
        }
    }

    /// Stops rendering; a bar is cleared and a last line printed. Later
    /// calls do nothing.
    pub fn finish(&self) {
        let i = &self.inner;
        if i.finished.swap(true, Ordering::SeqCst) {
            return;
        }
        {
            let (lock, cv) = &i.wake;
            *lock.lock().expect("wake lock") = true;
            cv.notify_all();
        }
        if let Some(h) = i.renderer.lock().expect("renderer lock").take() {
            let _ = h.join();
        }
    }
}

/// What one rendering shows.
struct Snapshot {
    counts: Counts,
    elapsed: Duration,
    turns_per_s: f64,
    tokens_per_s: f64,
    live: String,
}

impl Inner {
    fn counts(&self) -> Counts {
        Counts {
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            aborted: self.aborted.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
        }
    }

    /// Waits up to `d`; true when the phase finished.
    fn wait(&self, d: Duration) -> bool {
        let (lock, cv) = &self.wake;
        let done = lock.lock().expect("wake lock");
        let (done, _) = cv
            .wait_timeout_while(done, d, |done| !*done)
            .expect("wake lock");
        *done
    }
}

/// Recent (time, turns, tokens) samples for the rates.
struct Rates(std::collections::VecDeque<(Instant, u64, u64)>);

impl Rates {
    /// Turns/s and tokens/s since the newest sample at least
    /// [`RATE_WINDOW`] old (the phase start while there is none).
    fn sample(&mut self, now: Instant, c: &Counts, started: Instant) -> (f64, f64) {
        let base = self
            .0
            .iter()
            .rev()
            .find(|s| now.duration_since(s.0) >= RATE_WINDOW)
            .copied()
            .unwrap_or((started, 0, 0));
        self.0.push_back((now, c.turns(), c.output_tokens));
        while self.0.len() > 1 && self.0[0].0 < base.0 {
            self.0.pop_front();
        }
        let dt = now.duration_since(base.0).as_secs_f64().max(1e-3);
        (
            c.turns().saturating_sub(base.1) as f64 / dt,
            c.output_tokens.saturating_sub(base.2) as f64 / dt,
        )
    }
}

/// The counts now; rates over the recent window, or over the whole phase
/// once it is `done`.
fn snapshot(inner: &Inner, rates: &mut Rates, done: bool) -> Snapshot {
    let now = Instant::now();
    let counts = inner.counts();
    let (mut turns_per_s, mut tokens_per_s) = rates.sample(now, &counts, inner.started);
    if done {
        let secs = now.duration_since(inner.started).as_secs_f64().max(1e-3);
        turns_per_s = counts.turns() as f64 / secs;
        tokens_per_s = counts.output_tokens as f64 / secs;
    }
    Snapshot {
        counts,
        elapsed: now.duration_since(inner.started),
        turns_per_s,
        tokens_per_s,
        live: ttft_text(&inner.ttft_us.lock().expect("ttft lock")),
    }
}

/// `TTFT p50 1.2 ms p99 3.4 ms` (empty before the first token).
fn ttft_text(h: &hdrhistogram::Histogram<u64>) -> String {
    if h.is_empty() {
        return String::new();
    }
    format!(
        "TTFT p50 {:.1} ms p99 {:.1} ms",
        h.value_at_quantile(0.5) as f64 / 1000.0,
        h.value_at_quantile(0.99) as f64 / 1000.0
    )
}

/// `1h02m`, `4m05s`, `12s`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// `3.2 turns/s, 450 tok/s, 1 failed, 2 aborted, TTFT p50 ...`.
fn rates_text(s: &Snapshot) -> String {
    let mut t = format!(
        "{:.1} turns/s, {:.0} tok/s, {} failed",
        s.turns_per_s, s.tokens_per_s, s.counts.failed
    );
    if s.counts.aborted > 0 {
        t.push_str(&format!(", {} aborted", s.counts.aborted));
    }
    if !s.live.is_empty() {
        t.push_str(", ");
        t.push_str(&s.live);
    }
    t
}

/// One plain line.
fn line(inner: &Inner, s: &Snapshot, done: bool) -> String {
    let n = s.counts.turns();
    let of = match inner.planned {
        Some(p) if n <= p => format!("{n}/{p} turns ({:.0} %)", n as f64 * 100.0 / p as f64),
        Some(p) => format!("{n} turns (at least {p} planned)"),
        None => format!("{n} turns"),
    };
    let time = if done {
        format!("done in {}", duration(s.elapsed))
    } else {
        let eta = inner
            .planned
            .filter(|&p| p > n && s.turns_per_s > 0.0)
            .map(|p| {
                format!(
                    ", ETA {}",
                    duration(Duration::from_secs_f64((p - n) as f64 / s.turns_per_s))
                )
            })
            .unwrap_or_default();
        format!("{} elapsed{eta}", duration(s.elapsed))
    };
    format!("[{}] {of}, {}, {time}", inner.phase, rates_text(s))
}

fn render(weak: Weak<Inner>, output: Output) {
    let mut rates = Rates(Default::default());
    match output {
        Output::Quiet => {}
        Output::Lines { every, mut to } => loop {
            let Some(inner) = weak.upgrade() else { return };
            let done = inner.wait(every);
            let s = snapshot(&inner, &mut rates, done);
            let _ = writeln!(to, "{}", line(&inner, &s, done));
            let _ = to.flush();
            if done {
                return;
            }
        },
        Output::Bar => {
            let Some(inner) = weak.upgrade() else { return };
            let bar = match inner.planned {
                Some(p) => indicatif::ProgressBar::new(p).with_style(
                    indicatif::ProgressStyle::with_template(
                        "{prefix:.bold} [{bar:30.cyan/blue}] {pos}/{len} turns  {msg}  {elapsed} elapsed, ETA {eta}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                ),
                None => indicatif::ProgressBar::new_spinner().with_style(
                    indicatif::ProgressStyle::with_template("{spinner} {prefix:.bold} {pos} turns  {msg}  {elapsed} elapsed")
                        .expect("valid template"),
                ),
            }
            .with_prefix(inner.phase.clone());
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
            agentload_console::show_bar(Some(bar.clone()));
            drop(inner);
            loop {
                let Some(inner) = weak.upgrade() else { break };
                let done = inner.wait(BAR_EVERY);
                let s = snapshot(&inner, &mut rates, done);
                if let Some(p) = inner.planned {
                    if s.counts.turns() > p {
                        bar.set_length(s.counts.turns());
                    }
                }
                bar.set_position(s.counts.turns());
                bar.set_message(rates_text(&s));
                bar.tick();
                if done {
                    agentload_console::show_bar(None);
                    bar.finish_and_clear();
                    let _ = writeln!(std::io::stderr().lock(), "{}", line(&inner, &s, true));
                    return;
                }
            }
            agentload_console::show_bar(None);
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shared buffer standing in for stderr.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// Waits until `done` holds: a loaded machine runs the printing thread late, so
    /// up to a minute.
    fn until(done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "not within a minute");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn lines(every_ms: u64, planned: Option<u64>) -> (Progress, Buffer) {
        let buf = Buffer::default();
        let p = Progress::with_output(
            "performance",
            planned,
            Output::Lines {
                every: Duration::from_millis(every_ms),
                to: Box::new(buf.clone()),
            },
        );
        (p, buf)
    }

    #[test]
    fn counts_every_turn_from_many_threads() {
        let (p, _) = lines(3_600_000, Some(8000));
        let threads: Vec<_> = (0..8)
            .map(|k| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for i in 0..1000u64 {
                        let status = match (i + k) % 10 {
                            0 => TurnStatus::Failed,
                            1 => TurnStatus::Aborted,
                            _ => TurnStatus::Completed,
                        };
                        p.turn(status, 3, Some(Duration::from_millis(2)));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let c = p.counts();
        assert_eq!((c.completed, c.failed, c.aborted), (6400, 800, 800));
        assert_eq!(c.output_tokens, 24_000);
        p.finish();
    }

    #[test]
    fn plain_lines_come_periodically_and_a_last_one_at_the_end() {
        let (p, buf) = lines(20, Some(10));
        for _ in 0..4 {
            p.turn(TurnStatus::Completed, 100, Some(Duration::from_millis(5)));
        }
        p.turn(TurnStatus::Failed, 0, None);
        // Two periodic lines (a loaded machine may print them late).
        until(|| buf.text().lines().count() >= 2);
        p.finish();
        let text = buf.text();
        let all: Vec<&str> = text.lines().collect();
        assert!(all.len() >= 3, "{text}");
        assert!(
            all[0].starts_with("[performance] 5/10 turns (50 %)"),
            "{text}"
        );
        assert!(all[0].contains("1 failed"), "{text}");
        assert!(all[0].contains("ETA"), "{text}");
        assert!(all[0].contains("TTFT p50 5."), "{text}");
        let last = all.last().unwrap();
        assert!(last.contains("done in"), "{last}");
        assert!(!last.contains("ETA"), "{last}");
        // Nothing after finish, and finish is idempotent.
        p.finish();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(buf.text(), text);
    }

    #[test]
    fn more_turns_than_planned_and_unknown_plans_read_sensibly() {
        let (p, buf) = lines(3_600_000, Some(2));
        for _ in 0..3 {
            p.turn(TurnStatus::Completed, 1, None);
        }
        p.finish();
        assert!(
            buf.text().contains("3 turns (at least 2 planned)"),
            "{}",
            buf.text()
        );
        let (p, buf) = lines(3_600_000, None);
        p.turn(TurnStatus::Aborted, 0, None);
        p.finish();
        let t = buf.text();
        assert!(t.starts_with("[performance] 1 turns, "), "{t}");
        assert!(t.contains("1 aborted"), "{t}");
    }

    #[test]
    fn quiet_prints_nothing_but_counts() {
        let p = Progress::with_output("x", Some(1), Output::Quiet);
        p.turn(TurnStatus::Completed, 7, None);
        p.finish();
        assert_eq!(p.counts().output_tokens, 7);
    }

    #[test]
    fn a_dropped_progress_stops_its_thread() {
        let (p, buf) = lines(5, None);
        let weak = Arc::downgrade(&p.inner);
        drop(p);
        until(|| weak.upgrade().is_none());
        let before = buf.text();
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(buf.text(), before);
    }

    #[test]
    fn rates_are_over_the_last_ten_seconds() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let c = |turns: u64, tokens: u64| Counts {
            completed: turns,
            output_tokens: tokens,
            ..Counts::default()
        };
        let mut r = Rates(Default::default());
        // The first sample, 10 s in: over the whole phase.
        assert_eq!(r.sample(at(10), &c(100, 1000), t0), (10.0, 100.0));
        // 10 s later, 50 more turns: over those 10 s only.
        assert_eq!(r.sample(at(20), &c(150, 1500), t0), (5.0, 50.0));
        // Frequent samples keep the base about 10 s back and stay bounded.
        for s in 21..200 {
            r.sample(at(s), &c(150 + (s - 20) * 2, 0), t0);
        }
        let (turns, _) = r.sample(at(200), &c(150 + 180 * 2, 0), t0);
        assert_eq!(turns, 2.0);
        assert!(r.0.len() <= 12, "{}", r.0.len());
    }

    #[test]
    fn durations_are_short() {
        assert_eq!(duration(Duration::from_secs(12)), "12s");
        assert_eq!(duration(Duration::from_secs(245)), "4m05s");
        assert_eq!(duration(Duration::from_secs(3720)), "1h02m");
    }
}
