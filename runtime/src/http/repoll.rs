//! A connection that wakes itself while it is polled is polled again at once, not through the scheduler.
//!
//! hyper 1.12's request body wakes the connection's task whenever the service takes a chunk of it (its
//! body channel wakes the sender's waker), and the service runs inside that task. tokio reschedules a
//! task woken during its own poll as a yield, and wakes a parked worker to take it: on a lightly loaded
//! server, a futex call or two and often the connection moved to the other worker, on every request.
//! [`Repoll`] catches such a wake and polls the connection again in the same turn, a few times at most,
//! and passes every wake that comes while it is not polling to the task as usual.
//!
//! After a wake from outside (a request's bytes, the client reading), the connection lingers for its
//! server's `HttpOptions::linger` ([`LINGER`] unless set): it yields to the scheduler rather than
//! waiting on its socket, so that the worker polls the reactor again without sleeping. A client that
//! sends its next request at once finds the worker awake: on a virtual machine, waking a halted CPU costs
//! more than a call. A connection lingers only while it is its server's one open connection: with more,
//! the others' requests wake the worker. It lingers only for a client that has lately come back within
//! that time ([`Returns`]): one that takes longer, across a network or between a person's turns, would
//! find the worker asleep anyway, and its connection waits at once.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;

/// How many times in a row a future that woke itself is polled again before it yields to the scheduler,
/// so that one busy connection cannot keep its worker from the others.
const MAX_REPOLLS: usize = 3;

/// How long a connection keeps its worker polling after a wake from outside, before it waits, unless
/// its server sets another.
pub(crate) const LINGER: Duration = Duration::from_micros(300);

/// A lingering connection polled again this long after it yielded found its worker busy with other
/// tasks: it stops lingering, since the worker is not going to sleep.
const BUSY: Duration = Duration::from_micros(20);

const IDLE: u8 = 0;
const POLLING: u8 = 1;
const WOKEN_WHILE_POLLING: u8 = 2;

pin_project_lite::pin_project! {
    /// `future`, polled again at once when it wakes itself during a poll.
    pub(crate) struct Repoll<F> {
        #[pin]
        future: F,
        signal: Arc<Wakeup>,
        waker: Waker,
        linger: BusyWait,
    }
}

/// How many connections of a server are open, shared by all of them: one lingers only when it is alone,
/// for `linger`.
#[derive(Clone)]
pub(crate) struct OpenConnections {
    count: Arc<AtomicUsize>,
    linger: Duration,
}

impl OpenConnections {
    /// No connection yet; a lone one lingers for `linger` (zero: never).
    pub(crate) fn new(linger: Duration) -> Self {
        OpenConnections {
            count: Arc::default(),
            linger,
        }
    }
}

/// A connection's linger: its server's count of connections, until when it lingers, when it last
/// yielded, since when it has waited for its client, and how long its client takes to come back.
struct BusyWait {
    open: OpenConnections,
    until: Option<Instant>,
    yielded: Option<Instant>,
    waiting: Option<Instant>,
    returns: Returns,
}

impl BusyWait {
    /// The linger of a connection that `open` now counts.
    fn joining(open: OpenConnections) -> Self {
        open.count.fetch_add(1, Ordering::AcqRel);
        BusyWait {
            open,
            until: None,
            yielded: None,
            waiting: None,
            returns: Returns::default(),
        }
    }

    /// At the start of a poll: a worker that took long to come back has other work, and stays awake;
    /// a wake from outside (`outside`) ends the connection's wait for its client.
    fn resume(&mut self, outside: bool) {
        let waited = if outside { self.waiting.take() } else { None };
        if self.yielded.is_none() && waited.is_none() {
            return;
        }
        let now = Instant::now();
        if let Some(yielded) = self.yielded.take()
            && now.saturating_duration_since(yielded) > BUSY
        {
            self.until = None;
        }
        if let Some(waited) = waited {
            let returned = now.saturating_duration_since(waited);
            self.returns.observe(returned, self.open.linger);
        }
    }

    /// Whether to yield rather than wait, after a poll that left the connection waiting; `outside` when
    /// a wake from outside started the poll. A connection among many, or of a server that sets no
    /// linger, reads no clock.
    fn lingers(&mut self, outside: bool) -> bool {
        let now;
        if outside {
            let OpenConnections { count, linger } = &self.open;
            if linger.is_zero() || count.load(Ordering::Acquire) != 1 {
                (self.until, self.waiting) = (None, None);
                return false;
            }
            now = Instant::now();
            self.waiting = Some(now);
            self.until = self.returns.within(*linger).then(|| now + *linger);
        } else if self.until.is_some() {
            now = Instant::now();
        } else {
            return false;
        }
        match self.until {
            Some(until) if now < until => {
                self.yielded = Some(now);
                true
            }
            _ => {
                self.until = None;
                false
            }
        }
    }
}

/// How long a connection's client has lately taken to come back after the connection began to wait: a
/// running average that weighs the last return by a quarter, each counted as at most twice the linger,
/// so that one long pause (a person's turn) does not outweigh the quick returns around it.
#[derive(Debug, Default, Clone, Copy)]
struct Returns(Duration);

impl Returns {
    fn observe(&mut self, returned: Duration, linger: Duration) {
        self.0 = (self.0 * 3 + returned.min(linger * 2)) / 4;
    }

    /// Whether the client has lately come back within `linger`, so that lingering finds it.
    fn within(self, linger: Duration) -> bool {
        self.0 <= linger
    }
}

impl Drop for BusyWait {
    fn drop(&mut self) {
        self.open.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The waker `Repoll` polls its future with: a wake during the poll is noted, any other goes to the task.
struct Wakeup {
    state: AtomicU8,
    task: AtomicWaker,
    /// Set by a wake that reaches the task from outside, taken by the next poll.
    outside: AtomicBool,
}

impl<F: Future> Repoll<F> {
    /// `future`, one of the connections `open` counts.
    pub(crate) fn new(future: F, open: OpenConnections) -> Self {
        let signal = Arc::new(Wakeup {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
            outside: AtomicBool::new(false),
        });
        let waker = Waker::from(Arc::clone(&signal));
        Repoll {
            future,
            signal,
            waker,
            linger: BusyWait::joining(open),
        }
    }
}

impl<F: Future> Future for Repoll<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        this.signal.task.register(cx.waker());
        let mut inner = Context::from_waker(this.waker);
        let outside = this.signal.outside.swap(false, Ordering::AcqRel);
        this.linger.resume(outside);
        for _ in 0..=MAX_REPOLLS {
            this.signal.state.store(POLLING, Ordering::Release);
            let poll = this.future.as_mut().poll(&mut inner);
            let state = this.signal.state.swap(IDLE, Ordering::AcqRel);
            if poll.is_ready() {
                return poll;
            }
            if state != WOKEN_WHILE_POLLING {
                if this.linger.lingers(outside) {
                    // Woken again once the worker has polled the reactor, with no sleep between.
                    let _ = std::pin::pin!(tokio::task::yield_now()).poll(cx);
                }
                return poll;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Wake for Wakeup {
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
            self.outside.store(true, Ordering::Release);
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
        Box::pin(Repoll::new(future, OpenConnections::new(LINGER)))
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

    /// What a connection's socket holds: the waker it was last polled with.
    type Socket = Arc<std::sync::Mutex<Option<Waker>>>;

    /// One of a server's connections: a future that is always pending, polled through a `Repoll` as a
    /// task whose wakes are counted, and woken as its socket would wake it.
    struct Connection {
        task: (Arc<Count>, Waker),
        socket: Socket,
        repoll: Pin<Box<Repoll<futures_util::future::BoxFuture<'static, ()>>>>,
    }

    impl Connection {
        fn open(open: &OpenConnections) -> Connection {
            let socket = Socket::default();
            let taken = Arc::clone(&socket);
            let future = std::future::poll_fn(move |cx| {
                *taken.lock().expect("unpoisoned") = Some(cx.waker().clone());
                Poll::Pending
            });
            Connection {
                task: task(),
                socket,
                repoll: Box::pin(Repoll::new(Box::pin(future), open.clone())),
            }
        }

        /// Polls it as its task, which it leaves waiting.
        fn poll(&mut self) {
            let mut cx = Context::from_waker(&self.task.1);
            assert!(self.repoll.as_mut().poll(&mut cx).is_pending());
        }

        /// Wakes it from outside, as its socket would.
        fn wake(&self) {
            let socket = self.socket.lock().expect("unpoisoned").take();
            socket.expect("polled").wake();
        }

        /// How many times its task has been woken.
        fn task_wakes(&self) -> usize {
            self.task.0.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn after_a_wake_from_outside_a_lone_connection_yields_rather_than_waits() {
        let open = OpenConnections::new(LINGER);
        let mut first = Connection::open(&open);
        // Polled before anything woke it (a new connection): it waits.
        first.poll();
        assert_eq!(first.task_wakes(), 0);
        // Its socket wakes it: the task is woken, and its poll yields (outside a runtime, a yield wakes
        // the task at once).
        first.wake();
        assert_eq!(first.task_wakes(), 1);
        first.poll();
        assert_eq!(first.task_wakes(), 2);

        // With a second connection open, neither lingers after a wake.
        let mut second = Connection::open(&open);
        second.poll();
        second.wake();
        second.poll();
        assert_eq!(second.task_wakes(), 1);
        first.wake();
        first.poll();
        assert_eq!(first.task_wakes(), 3);

        // Once the first is gone, the second lingers after its next wake.
        drop(first);
        second.wake();
        second.poll();
        assert_eq!(second.task_wakes(), 3);
    }

    #[test]
    fn a_lone_connection_lingers_only_for_a_client_that_comes_back_within_the_linger() {
        // Long enough that a test thread's pause between a wake and its poll never reaches it.
        let linger = Duration::from_millis(10);
        let mut lone = Connection::open(&OpenConnections::new(linger));
        lone.poll();
        let mut wakes = 0;
        let mut turn = |lone: &mut Connection, pause: Duration| {
            std::thread::sleep(pause);
            lone.wake();
            lone.poll();
            wakes += 1;
            lone.task_wakes() - wakes
        };
        // A client that pauses for longer than the linger. The first wake from outside starts the
        // connection's wait, and it lingers; it lingers after the next two pauses too (the average is
        // still within the linger), and waits at once after the third.
        let slow = linger * 3;
        assert_eq!(
            [slow, slow, slow, slow].map(|pause| turn(&mut lone, pause)),
            [1, 2, 3, 3]
        );
        // Back at once: it lingers again.
        assert_eq!(turn(&mut lone, Duration::ZERO), 4);
    }

    #[test]
    fn a_server_that_sets_no_linger_has_its_lone_connection_wait() {
        let mut lone = Connection::open(&OpenConnections::new(Duration::ZERO));
        lone.poll();
        lone.wake();
        lone.poll();
        assert_eq!(lone.task_wakes(), 1);
    }
}
