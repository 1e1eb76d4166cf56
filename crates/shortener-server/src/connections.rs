//! Connection limits that poem 3.1's `Server` does not offer:
//! - at most `server.max_connections` open connections (more wait in the listen backlog),
//!   and at most `server.max_connections_per_client` from one client network (more are
//!   closed at once; trusted proxies are exempt, as they carry many clients);
//! - a deadline for each request head (`server.header_read_timeout_ms`, against slowloris
//!   clients that dribble headers);
//! - a keep-alive timeout (`server.keep_alive_timeout_ms`): a connection that has answered
//!   and sends no next request within it is closed, so idle clients cannot keep the slots;
//! - a maximum age (`server.max_connection_age_ms`): a connection is closed once it is that
//!   old, at the first moment it has no HTTP/1 request in flight;
//! - HTTP/2 cleartext only when `server.http2 = true`; otherwise a connection that opens
//!   with the HTTP/2 preface is closed.
//!
//! Not the idle timeout (poem's `Server::idle_timeout` closes connections without I/O)
//! and not the request timeout (an endpoint wrapper in `http.rs`): a client that sends a
//! byte a second is never idle, and before its head is complete there is no request to
//! time out, so only the stream itself can see it.
//!
//! The head and keep-alive deadlines are HTTP/1's: they watch the bytes read for the blank
//! line ending a head and the bytes written for the answer. An HTTP/2 connection has no
//! heads to watch: only its age bounds it.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use ipnet::IpNet;
use poem::http::uri::Scheme;
use poem::listener::Acceptor;
use poem::web::{LocalAddr, RemoteAddr};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use scan::{H2_PREFACE, Scan};

mod scan;

/// The limits of `[server]` that apply to each connection.
#[derive(Debug, Clone)]
pub struct ConnectionRules {
    pub max_connections: usize,
    pub max_per_client: usize,
    pub header_timeout: Duration,
    pub keep_alive: Duration,
    pub max_age: Duration,
    pub http2: bool,
    /// Peers not held to `max_per_client` (the trusted proxies).
    pub exempt: Vec<IpNet>,
    /// Clients are counted per network of this many leading bits.
    pub ipv4_prefix: u8,
    pub ipv6_prefix: u8,
}

/// Wraps an acceptor: waits for a free slot before accepting (so connections beyond the
/// limit wait in the listen backlog), closes a client's connections beyond its share, and
/// gives every stream its deadlines.
pub struct LimitedAcceptor<A> {
    inner: A,
    slots: Arc<Semaphore>,
    clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    rules: Arc<ConnectionRules>,
}

impl<A> LimitedAcceptor<A> {
    pub fn new(inner: A, rules: ConnectionRules) -> Self {
        Self {
            inner,
            slots: Arc::new(Semaphore::new(rules.max_connections)),
            clients: Arc::default(),
            rules: Arc::new(rules),
        }
    }

    /// The network `peer` counts in, or `None` when it is exempt.
    fn client_of(&self, peer: IpAddr) -> Option<IpAddr> {
        let rules = &self.rules;
        if rules.exempt.iter().any(|net| net.contains(&peer)) {
            return None;
        }
        let prefix = match peer {
            IpAddr::V4(_) => rules.ipv4_prefix,
            IpAddr::V6(_) => rules.ipv6_prefix,
        };
        IpNet::new(peer, prefix).ok().map(|net| net.network())
    }
}

impl<A: Acceptor> Acceptor for LimitedAcceptor<A> {
    type Io = GuardedIo<A::Io>;

    fn local_addr(&self) -> Vec<LocalAddr> {
        self.inner.local_addr()
    }

    async fn accept(&mut self) -> io::Result<(Self::Io, LocalAddr, RemoteAddr, Scheme)> {
        // Cancel-safe: dropped while waiting, the permit is returned with the future.
        let slot = Arc::clone(&self.slots)
            .acquire_owned()
            .await
            .map_err(io::Error::other)?;
        loop {
            let (io, local, remote, scheme) = self.inner.accept().await?;
            let client = remote
                .as_socket_addr()
                .and_then(|peer| self.client_of(peer.ip()));
            let share = match client {
                Some(client) => {
                    match ClientShare::take(&self.clients, client, self.rules.max_per_client) {
                        Some(share) => Some(share),
                        None => {
                            // Closed at once (the stream is dropped), and the slot stays free
                            // for the next connection.
                            metrics::counter!("shortener_connections_refused_total", "reason" => "per_client").increment(1);
                            tracing::debug!(%client, "connection closed: server.max_connections_per_client reached");
                            continue;
                        }
                    }
                }
                None => None,
            };
            let io = GuardedIo {
                inner: io,
                _slot: slot,
                _share: share,
                // A connection that sends nothing at all is held to the head deadline.
                deadline: Box::pin(tokio::time::sleep(self.rules.header_timeout)),
                due: Instant::now() + self.rules.header_timeout,
                born: Instant::now(),
                rules: Arc::clone(&self.rules),
                head: Head::Reading(Scan::default()),
            };
            return Ok((io, local, remote, scheme));
        }
    }
}

/// One connection of a client network, counted until dropped.
struct ClientShare {
    clients: Arc<Mutex<HashMap<IpAddr, usize>>>,
    client: IpAddr,
}

impl ClientShare {
    fn take(
        clients: &Arc<Mutex<HashMap<IpAddr, usize>>>,
        client: IpAddr,
        max: usize,
    ) -> Option<Self> {
        let mut counts = clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = counts.entry(client).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Self {
            clients: Arc::clone(clients),
            client,
        })
    }
}

impl Drop for ClientShare {
    fn drop(&mut self) {
        let mut counts = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

/// A connection's stream: holds its slot until dropped, and fails a read past the
/// deadline of its state (hyper then closes the connection).
pub struct GuardedIo<T> {
    inner: T,
    _slot: OwnedSemaphorePermit,
    _share: Option<ClientShare>,
    rules: Arc<ConnectionRules>,
    /// The timer of [`Self::due`], armed lazily: it may ring before `due` (a state moved
    /// the deadline later without resetting it) but never after.
    deadline: Pin<Box<Sleep>>,
    /// The deadline of the current state: the head's while reading one, the keep-alive's
    /// while idle, the age's for HTTP/2; never later than the age's.
    due: Instant,
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
    /// Moves the deadline to `after` from now, or to the connection's end of life.
    ///
    /// The timer is reset only when it would ring too late. A keep-alive request moves
    /// the deadline twice, and each reset of a timer takes it out of tokio's wheel and
    /// puts it back: profiled under one hot link, about 5 % of a node's CPU. A deadline
    /// moved later is checked, and the timer re-armed, when the timer rings
    /// ([`Self::expired`]), so once per timeout at most instead of twice per request.
    fn deadline_in(&mut self, after: Duration) {
        let end_of_life = self.born + self.rules.max_age;
        self.due = (Instant::now() + after).min(end_of_life);
        if self.due < self.deadline.deadline() {
            self.deadline.as_mut().reset(self.due);
        }
    }

    /// Whether the current state's deadline has passed; if not, the timer is armed for
    /// it and wakes `cx` then.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        while self.deadline.as_mut().poll(cx).is_ready() {
            if Instant::now() >= self.due {
                return true;
            }
            self.deadline.as_mut().reset(self.due);
        }
        false
    }

    fn observe_read(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match &mut self.head {
                Head::Idle => {
                    self.head = Head::Reading(Scan::default());
                    self.deadline_in(self.rules.header_timeout);
                }
                Head::Reading(scan) => {
                    let Some(end) = scan.push_all(bytes) else {
                        return;
                    };
                    if scan.preface == H2_PREFACE.len() {
                        self.head = if self.rules.http2 {
                            Head::Exempt
                        } else {
                            Head::Refused
                        };
                        self.deadline_in(self.rules.max_age);
                    } else {
                        self.head = Head::InRequest;
                    }
                    bytes = &bytes[end + 1..];
                }
                // Body bytes (or a pipelined request, see `observe_write`).
                Head::InRequest | Head::Exempt | Head::Refused => return,
            }
        }
    }

    fn observe_write(&mut self, bytes: &[u8]) {
        match self.head {
            // A `100 Continue` comes before the body, not as the answer.
            Head::InRequest if !bytes.starts_with(b"HTTP/1.1 1") => {
                self.head = Head::Idle;
                self.deadline_in(self.rules.keep_alive);
            }
            // The rest of a long answer: idle time starts once it is written.
            Head::Idle => self.deadline_in(self.rules.keep_alive),
            _ => {}
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GuardedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let why = match this.head {
            Head::Reading(_) => "request head not complete within server.header_read_timeout_ms",
            Head::Idle => "no next request within server.keep_alive_timeout_ms",
            Head::Exempt => "connection older than server.max_connection_age_ms",
            Head::InRequest | Head::Refused => "",
        };
        if !why.is_empty() && this.expired(cx) {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)));
        }
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = result {
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
        if let Poll::Ready(Ok(written)) = result
            && written > 0
        {
            this.observe_write(buf);
        }
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(written)) = result
            && written > 0
            && let Some(first) = bufs.iter().find(|buf| !buf.is_empty())
        {
            this.observe_write(first);
        }
        result
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

#[cfg(test)]
mod tests;
