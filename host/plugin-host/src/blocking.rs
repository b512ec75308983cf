//! Driving a plugin call from code that is not async (loading and
//! configuring before a run, `plugin check`, benches).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

/// Wakes the thread that polls.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to its end on this thread, blocking it. Plugin calls need
/// no reactor: the only suspension in them is the guest yielding at an
/// epoch tick, which wakes itself at once. For set-up and tools only: a
/// session's calls are awaited on the runtime instead.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            Poll::Pending => std::thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::block_on;

    #[test]
    fn a_future_that_wakes_itself_runs_to_its_end() {
        let mut polls = 0;
        let out = block_on(std::future::poll_fn(|cx| {
            polls += 1;
            if polls < 3 {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            } else {
                std::task::Poll::Ready(polls)
            }
        }));
        assert_eq!(out, 3);
    }

    #[test]
    fn a_future_woken_from_another_thread_runs_to_its_end() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tx.send(7).unwrap();
        });
        assert_eq!(block_on(rx).unwrap(), 7);
        sender.join().unwrap();
    }
}
