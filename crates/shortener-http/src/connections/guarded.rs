//! [`GuardedIo`]: a connection's stream with its deadlines, each a read (or a write)
//! that fails with `TimedOut` once passed, which makes hyper close the connection:
//! - the request head's (`server.header_read_timeout_ms`), from the connection's start
//!   or, on a kept-alive one, from the next head's first byte;
//! - the keep-alive's (`server.keep_alive_timeout_ms`), from the end of an answer;
//! - the age's (`server.max_connection_age_ms`), at the first moment no HTTP/1 request
//!   is in flight (for HTTP/2, its only deadline besides the idle one);
//! - the idle one (`server.idle_timeout_ms`): no byte read or written that long, in any
//!   state. A handler at work without I/O is the request timeout's business: hyper
//!   does not read while it waits for one, so only a read or a write can fail here.
//!
//! One timer serves them all, armed lazily: a deadline that moves later (every read
//! moves the idle one) is only noted, and checked when the timer rings.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};

use super::scan::{H2_PREFACE, Scan};
use super::{ClientShare, ConnectionRules};

/// A connection's stream: holds its slot until dropped, and fails a read (or a stalled
/// write) past the deadline of its state or its idle deadline.
pub struct GuardedIo<T> {
    inner: T,
    // Fields drop in this order: the client's share before the slot, so that the
    // acceptor, woken by the slot, never meets the client's count still holding this
    // connection and closes the next one (a reset of a request already sent).
    _share: Option<ClientShare>,
    _slot: OwnedSemaphorePermit,
    rules: Arc<ConnectionRules>,
    /// The timer of the earliest deadline, armed lazily: it may ring before that
    /// deadline (one moved later without resetting it) but never after.
    deadline: Pin<Box<Sleep>>,
    /// The deadline of the current state: the head's while reading one, the keep-alive's
    /// while idle, the age's for HTTP/2 (never later than the age's); none while a
    /// request is in flight.
    state_due: Option<Instant>,
    /// The last byte read or written, plus `server.idle_timeout_ms`.
    idle_due: Instant,
    born: Instant,
    head: Head,
}

enum Head {
    /// A request head is being read and must be complete by the deadline.
    Reading(Scan),
    /// Head complete: the body and the handler are the request timeout's business.
    InRequest,
    /// The response went out; the next request's first byte must come by the deadline.
    Idle,
    /// HTTP/2 prior knowledge: streams are multiplexed, there is no head to watch.
    Exempt,
    /// HTTP/2 prior knowledge while `server.http2 = false`.
    Refused,
}

impl<T> GuardedIo<T> {
    /// `inner`, accepted now, holding its `slot` (and its client's `share`).
    pub(super) fn new(
        inner: T,
        slot: OwnedSemaphorePermit,
        share: Option<ClientShare>,
        rules: Arc<ConnectionRules>,
    ) -> Self {
        let born = Instant::now();
        // A connection that sends nothing at all is held to the head deadline.
        let due = born + rules.header_timeout.min(rules.idle);
        Self {
            inner,
            _share: share,
            _slot: slot,
            deadline: Box::pin(tokio::time::sleep_until(due)),
            state_due: Some(born + rules.header_timeout),
            idle_due: born + rules.idle,
            born,
            rules,
            head: Head::Reading(Scan::default()),
        }
    }

    /// The earliest deadline.
    fn due(&self) -> Instant {
        self.state_due
            .map_or(self.idle_due, |due| due.min(self.idle_due))
    }

    /// Resets the timer when the earliest deadline is sooner than it rings.
    ///
    /// A timer is not reset for a deadline that moved later: each reset takes it out of
    /// tokio's wheel and puts it back, and a keep-alive request moves the deadlines
    /// three times. Those resets showed in a hot link's profile.
    /// See `cargo xtask bench --only http` (one hot link) in docs/BENCHMARKS.md.
    /// Such a deadline is checked, and the timer re-armed, when the timer rings
    /// ([`Self::expired`]), so once per timeout at most instead of every request.
    fn rearm(&mut self) {
        let due = self.due();
        if due < self.deadline.deadline() {
            self.deadline.as_mut().reset(due);
        }
    }

    /// The current state's deadline `after` from `now`, or the connection's end of life.
    fn state_deadline(&mut self, now: Instant, after: Duration) {
        let end_of_life = self.born + self.rules.max_age;
        self.state_due = Some((now + after).min(end_of_life));
    }

    /// Why the connection is closed if its earliest deadline has passed; if none has, the
    /// timer is armed for it and wakes `cx` then.
    fn expired(&mut self, cx: &mut Context<'_>) -> Option<&'static str> {
        while self.deadline.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            if now >= self.idle_due {
                return Some("no byte read or written within server.idle_timeout_ms");
            }
            if self.state_due.is_some_and(|due| now >= due) {
                return Some(match self.head {
                    Head::Reading(_) => {
                        "request head not complete within server.header_read_timeout_ms"
                    }
                    Head::Idle => "no next request within server.keep_alive_timeout_ms",
                    _ => "connection older than server.max_connection_age_ms",
                });
            }
            let due = self.due();
            self.deadline.as_mut().reset(due);
        }
        None
    }

    fn observe_read(&mut self, mut bytes: &[u8]) {
        let now = Instant::now();
        self.idle_due = now + self.rules.idle;
        while !bytes.is_empty() {
            match &mut self.head {
                Head::Idle => {
                    self.head = Head::Reading(Scan::default());
                    self.state_deadline(now, self.rules.header_timeout);
                }
                Head::Reading(scan) => {
                    let Some(end) = scan.push_all(bytes) else {
                        break;
                    };
                    if scan.preface == H2_PREFACE.len() {
                        self.head = if self.rules.http2 {
                            Head::Exempt
                        } else {
                            Head::Refused
                        };
                        self.state_deadline(now, self.rules.max_age);
                    } else {
                        self.head = Head::InRequest;
                        self.state_due = None;
                    }
                    bytes = &bytes[end + 1..];
                }
                // Body bytes (or a pipelined request, see `observe_write`).
                Head::InRequest | Head::Exempt | Head::Refused => break,
            }
        }
        self.rearm();
    }

    fn observe_write(&mut self, bytes: &[u8]) {
        let now = Instant::now();
        self.idle_due = now + self.rules.idle;
        match self.head {
            // A `100 Continue` comes before the body, not as the answer.
            Head::InRequest if !bytes.starts_with(b"HTTP/1.1 1") => {
                self.head = Head::Idle;
                self.state_deadline(now, self.rules.keep_alive);
            }
            // The rest of a long answer: idle time starts once it is written.
            Head::Idle => self.state_deadline(now, self.rules.keep_alive),
            _ => {}
        }
        self.rearm();
    }

    /// `result` of a write, noting what it wrote; a write that waits past a deadline
    /// (a client that does not read) fails.
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<usize>>,
        first: Option<&[u8]>,
    ) -> Poll<io::Result<usize>> {
        match result {
            Poll::Ready(Ok(written)) if written > 0 => {
                if let Some(first) = first {
                    self.observe_write(first);
                }
            }
            Poll::Pending => {
                if let Some(why) = self.expired(cx) {
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)));
                }
            }
            _ => {}
        }
        result
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GuardedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if let Some(why) = this.expired(cx) {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)));
        }
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = result
            && buf.filled().len() > before
        {
            this.observe_read(&buf.filled()[before..]);
            if matches!(this.head, Head::Refused) {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    "HTTP/2 is off (server.http2 = false)",
                )));
            }
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GuardedIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.wrote(cx, result, Some(buf))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        let first = bufs.iter().find(|buf| !buf.is_empty()).map(|buf| &buf[..]);
        this.wrote(cx, result, first)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
