//! A connection that wakes itself while it is polled is polled again at once, not through the scheduler.
//!
//! hyper 1.12's request body wakes the connection's task whenever the service takes a chunk of it (its
//! body channel wakes the sender's waker), and the service runs inside that task. tokio reschedules a
//! task woken during its own poll as a yield, and wakes a parked worker to take it: on a lightly loaded
//! server, a futex call or two and often the connection moved to the other worker, on every request.
//! [`Repoll`] catches such a wake and polls the connection again in the same turn, a few times at most,
//! and passes every wake that comes while it is not polling to the task as usual.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// How many times in a row a future that woke itself is polled again before it yields to the scheduler,
/// so that one busy connection cannot keep its worker from the others.
const MAX_REPOLLS: usize = 3;

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const WOKEN_WHILE_POLLING: u8 = 2;

pin_project_lite::pin_project! {
    /// `future`, polled again at once when it wakes itself during a poll.
    pub(crate) struct Repoll<F> {
        #[pin]
        future: F,
        signal: Arc<Signal>,
        waker: Waker,
    }
}

/// The waker `Repoll` polls its future with: a wake during the poll is noted, any other goes to the task.
struct Signal {
    state: AtomicU8,
    task: AtomicWaker,
}

impl<F: Future> Repoll<F> {
    pub(crate) fn new(future: F) -> Self {
        let signal = Arc::new(Signal {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
        });
        let waker = Waker::from(Arc::clone(&signal));
        Repoll {
            future,
            signal,
            waker,
        }
    }
}

impl<F: Future> Future for Repoll<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        this.signal.task.register(cx.waker());
        let mut inner = Context::from_waker(this.waker);
        for _ in 0..=MAX_REPOLLS {
            this.signal.state.store(POLLING, Ordering::Release);
            let poll = this.future.as_mut().poll(&mut inner);
            let state = this.signal.state.swap(IDLE, Ordering::AcqRel);
            if poll.is_ready() || state != WOKEN_WHILE_POLLING {
                return poll;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let noted = self.state.compare_exchange(
            POLLING,
            WOKEN_WHILE_POLLING,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if let Err(IDLE) = noted {
            self.task.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Counts the wakes of the task that polls a `Repoll`.
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn task() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        (count, waker)
    }

    /// Polls `future` wrapped in a `Repoll` once, as the task of `waker`, and drops it.
    fn poll_once<F: Future>(future: F, waker: &Waker) -> Poll<F::Output> {
        Box::pin(Repoll::new(future))
            .as_mut()
            .poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_future_that_wakes_itself_is_polled_again_at_once_without_waking_the_task() {
        let mut polls = 0;
        let future = std::future::poll_fn(|cx| {
            polls += 1;
            if polls < 3 {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(polls)
            }
        });
        let (count, waker) = task();
        assert_eq!(poll_once(future, &waker), Poll::Ready(3));
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_to_the_scheduler() {
        let mut polls = 0;
        let future = std::future::poll_fn(|cx| {
            polls += 1;
            cx.waker().wake_by_ref();
            Poll::<()>::Pending
        });
        let (count, waker) = task();
        assert!(poll_once(future, &waker).is_pending());
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(polls, MAX_REPOLLS + 1);
    }

    #[test]
    fn a_wake_after_the_poll_reaches_the_task() {
        let mut stored: Option<Waker> = None;
        let future = std::future::poll_fn(|cx| {
            stored = Some(cx.waker().clone());
            Poll::<()>::Pending
        });
        let (count, waker) = task();
        assert!(poll_once(future, &waker).is_pending());
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        let stored = stored.expect("the future took its waker");
        std::thread::spawn(move || stored.wake())
            .join()
            .expect("woken");
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
    }
}
