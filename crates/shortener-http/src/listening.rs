//! The service's listening socket, and how it closes without resetting a connection.
//!
//! The kernel completes TCP handshakes on its own and queues the connections until the
//! server accepts them. Closing a listening socket resets every connection still in that
//! queue, and a balancer that already sent a request on one cannot know whether it was
//! processed: nginx does not retry a POST after a reset, it answers 502.
//! So a stopping node first stops taking part in new handshakes (on Linux, a socket
//! filter on the listener drops every SYN: the client's next attempt meets the closed
//! port and goes to another node, as a refused connection does), then accepts and serves
//! the connections already made: for [`SETTLE`] (handshakes under way complete), and then
//! until the kernel's queue is empty, for at most [`QUEUE_WAIT`] more (a node short of CPU,
//! or at `server.max_connections`, accepts late). Only then does it close the listener.
//! The queue's length is the listening socket's `rx_queue` in `/proc/net/tcp` (or
//! `tcp6`), found by the socket's inode; where that file cannot be read, `SETTLE` alone.
//! Elsewhere, and where the kernel refuses a socket filter to an unprivileged process
//! (recent kernels with `kernel.unprivileged_bpf_disabled`, as a container's non-root
//! user is), the listener simply closes: a balancer in front must retry a request whose
//! connection failed before any answer (see `deploy/compose/nginx.conf`).

use std::net::SocketAddr;
use std::time::Duration;

use poem::listener::TcpAcceptor;

/// How long a stopping listener keeps accepting the connections the kernel made before
/// it stopped their handshakes: those in its queue, and those whose handshake was under
/// way (a round trip on the balancer's network).
pub const SETTLE: Duration = Duration::from_millis(250);

/// How much longer, at most, a stopping listener waits for the server to accept what its
/// queue still holds after [`SETTLE`].
pub const QUEUE_WAIT: Duration = Duration::from_secs(1);

/// The longest [`Closer::refuse_new_connections`] takes.
pub const MOST: Duration = SETTLE.saturating_add(QUEUE_WAIT);

/// Stops the listener's new handshakes when told to: a duplicate of its socket, which
/// it drops once the filter is on (the listener closes with the acceptor).
pub struct Closer {
    #[cfg(target_os = "linux")]
    socket: Option<socket2::Socket>,
}

impl Closer {
    /// Stops new handshakes on the listener, then waits [`SETTLE`] while the server
    /// still accepts what is already under way, and then while the kernel's queue holds
    /// a connection, for at most [`QUEUE_WAIT`]. Returns when the listener may close, and
    /// whether new handshakes were stopped.
    pub async fn refuse_new_connections(self) -> bool {
        #[cfg(target_os = "linux")]
        let stopped = self.socket.as_ref().is_some_and(|socket| {
            // The filter stays on the socket, which the acceptor still holds.
            socket.attach_filter(&drop_syn()).map_or_else(
                |error| {
                    tracing::info!(%error, "the kernel refuses this process a socket filter: the listener closes without stopping handshakes first");
                    false
                },
                |()| true,
            )
        });
        #[cfg(not(target_os = "linux"))]
        let stopped = false;
        tokio::time::sleep(SETTLE).await;
        #[cfg(target_os = "linux")]
        if stopped && let Some(socket) = &self.socket {
            let waited = tokio::time::Instant::now();
            let inode = inode(socket);
            while (inode.as_deref())
                .and_then(queued)
                .is_some_and(|queued| queued > 0)
                && waited.elapsed() < QUEUE_WAIT
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        stopped
    }
}

/// Listens on `bind`, with the [`Closer`] of the socket.
///
/// # Errors
/// When the address cannot be bound.
pub async fn bind(bind: SocketAddr) -> std::io::Result<(TcpAcceptor, Closer)> {
    let listener = tokio::net::TcpListener::bind(bind).await?;
    #[cfg(target_os = "linux")]
    let closer = Closer {
        // Without a duplicate the listener still closes, only with a reset for what
        // its queue holds then.
        socket: socket2::SockRef::from(&listener).try_clone().ok(),
    };
    #[cfg(not(target_os = "linux"))]
    let closer = Closer {};
    Ok((TcpAcceptor::from_tokio(listener)?, closer))
}

/// The inode of `socket`, which names its line in `/proc/net/tcp`; `None` without `/proc`.
#[cfg(target_os = "linux")]
fn inode(socket: &socket2::Socket) -> Option<String> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::MetadataExt as _;
    let path = format!("/proc/self/fd/{}", socket.as_raw_fd());
    Some(std::fs::metadata(path).ok()?.ino().to_string())
}

/// How many connections the kernel has made on the listening socket of `inode` that the
/// server has not accepted yet: its `rx_queue` in `/proc/net/tcp` or `tcp6`
/// (hexadecimal). `None` when that cannot be read.
#[cfg(target_os = "linux")]
fn queued(inode: &str) -> Option<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let table = std::fs::read_to_string(table).ok()?;
            table.lines().skip(1).find_map(|line| {
                // sl, local, remote, state, tx_queue:rx_queue, tr:when, retransmits, uid,
                // timeout, inode.
                let fields: Vec<&str> = line.split_whitespace().collect();
                if fields.get(9) != Some(&inode) {
                    return None;
                }
                let (_, rx_queue) = fields.get(4)?.split_once(':')?;
                u64::from_str_radix(rx_queue, 16).ok()
            })
        })
}

/// A classic BPF program that drops a TCP segment with SYN set and ACK clear (a new
/// handshake) and keeps every other one, read at the TCP header as a socket filter is.
#[cfg(target_os = "linux")]
fn drop_syn() -> [socket2::SockFilter; 5] {
    use socket2::SockFilter;
    // Opcodes of linux/filter.h.
    const LOAD_BYTE_ABSOLUTE: u16 = 0x30; // BPF_LD | BPF_B | BPF_ABS
    const AND_CONSTANT: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
    const JUMP_IF_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RETURN_CONSTANT: u16 = 0x06; // BPF_RET | BPF_K
    const FLAGS_OFFSET: u32 = 13;
    const SYN: u32 = 0x02;
    const ACK: u32 = 0x10;
    [
        SockFilter::new(LOAD_BYTE_ABSOLUTE, 0, 0, FLAGS_OFFSET),
        SockFilter::new(AND_CONSTANT, 0, 0, SYN | ACK),
        // A SYN alone falls through to the drop; anything else jumps to the keep.
        SockFilter::new(JUMP_IF_EQUAL, 0, 1, SYN),
        SockFilter::new(RETURN_CONSTANT, 0, 0, 0),
        SockFilter::new(RETURN_CONSTANT, 0, 0, u32::MAX),
    ]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use poem::listener::Acceptor;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A connection that the server accepts only after [`SETTLE`] (short of CPU, or at
    /// its connection limit) is still in the queue when the settling ends: the listener
    /// waits for it rather than closing on it.
    #[tokio::test]
    async fn a_closing_listener_waits_for_a_late_accept() {
        let (mut acceptor, closer) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let address = acceptor.local_addr()[0].as_socket_addr().copied().unwrap();
        let queue_readable = (closer.socket.as_ref())
            .and_then(inode)
            .and_then(|inode| queued(&inode))
            .is_some();
        let mut queued_stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let late = SETTLE + Duration::from_millis(300);
        let started = tokio::time::Instant::now();
        let server = tokio::spawn(async move {
            tokio::time::sleep(late).await;
            let (mut accepted, ..) = acceptor.accept().await.unwrap();
            accepted.write_all(b"pong").await.unwrap();
            acceptor
        });
        let stopped = closer.refuse_new_connections().await;
        let returned = tokio::time::Instant::now();
        let acceptor = server.await.unwrap();
        drop(acceptor);
        let mut pong = [0; 4];
        let read = queued_stream.read_exact(&mut pong).await;
        if stopped && queue_readable {
            // Not before the server accepted, which it does no sooner than `late`.
            assert!(
                returned >= started + late,
                "returned before the late accept"
            );
            assert!(read.is_ok(), "{read:?}");
            assert_eq!(&pong, b"pong");
        }
    }

    /// A connection the kernel completed before the stop is accepted and answered; one
    /// attempted after it never completes, and is refused once the listener closes.
    #[tokio::test]
    async fn a_closing_listener_serves_its_queue_and_makes_no_new_connection() {
        let (mut acceptor, closer) = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let address = acceptor.local_addr()[0].as_socket_addr().copied().unwrap();
        // Completed by the kernel, not accepted yet.
        let mut queued = tokio::net::TcpStream::connect(address).await.unwrap();
        queued.write_all(b"ping").await.unwrap();
        let stopped = closer.refuse_new_connections().await;
        if stopped {
            let attempt = tokio::time::timeout(
                Duration::from_millis(300),
                tokio::net::TcpStream::connect(address),
            )
            .await;
            assert!(attempt.is_err(), "a handshake after the stop: {attempt:?}");
        } else {
            // Only an unprivileged process may be refused the filter.
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            let root = status.lines().any(|line| line.starts_with("Uid:\t0\t"));
            assert!(
                !(cfg!(target_os = "linux") && root),
                "root is refused the filter"
            );
        }
        let (mut accepted, ..) = acceptor.accept().await.unwrap();
        let mut ping = [0; 4];
        accepted.read_exact(&mut ping).await.unwrap();
        accepted.write_all(b"pong").await.unwrap();
        let mut pong = [0; 4];
        queued.read_exact(&mut pong).await.unwrap();
        assert_eq!(&pong, b"pong");
        drop(acceptor);
        let refused = tokio::net::TcpStream::connect(address).await;
        assert!(refused.is_err(), "connected to a closed listener");
    }
}
