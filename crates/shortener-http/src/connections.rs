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
//! - the idle timeout (`server.idle_timeout_ms`): a connection that reads and writes no
//!   byte that long is closed.
//!
//! Not the request timeout (an endpoint wrapper in `http`): a client that sends a byte a
//! second is never idle, and before its head is complete there is no request to time
//! out, so only the stream itself can see it.
//!
//! The head and keep-alive deadlines are HTTP/1's: they watch the bytes read for the blank
//! line ending a head and the bytes written for the answer. An HTTP/2 connection has no
//! heads to watch: only its age and the idle timeout bound it.
//!
//! The idle timeout was poem's `Server::idle_timeout`, which spawns a task per connection
//! that every read and write wakes, and that starts a new timer each time. That task and
//! its wake-up of another task per request showed in the redirect's profile. Here it is a
//! time noted at each read and write, on the stream's one timer ([`GuardedIo`]).
//! See `cargo xtask bench --only http` (one hot link) in docs/BENCHMARKS.md.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ipnet::IpNet;
use poem::http::uri::Scheme;
use poem::listener::Acceptor;
use poem::web::{LocalAddr, RemoteAddr};
use tokio::sync::Semaphore;

pub use guarded::GuardedIo;

mod guarded;
mod scan;

/// The limits of `[server]` that apply to each connection.
#[derive(Debug, Clone)]
pub struct ConnectionRules {
    pub max_connections: usize,
    pub max_per_client: usize,
    pub header_timeout: Duration,
    pub keep_alive: Duration,
    pub max_age: Duration,
    pub idle: Duration,
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
            let io = GuardedIo::new(io, slot, share, Arc::clone(&self.rules));
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

#[cfg(test)]
mod tests;
