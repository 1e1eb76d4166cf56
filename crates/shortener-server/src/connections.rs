//! Connection limits that poem 3.1's `Server` does not offer: at most
//! `server.max_connections` open connections, and a deadline for each request head
//! (`server.header_read_timeout_ms`, against slowloris clients that dribble headers).
//!
//! Not the idle timeout (poem's `Server::idle_timeout` closes connections without I/O)
//! and not the request timeout (an endpoint wrapper in `http.rs`): a client that sends a
//! byte a second is never idle, and before its head is complete there is no request to
//! time out, so only the stream itself can see it.
//!
//! HTTP/1 only: the head deadline watches the bytes read for the blank line ending a
//! head. A connection that opens with the HTTP/2 preface is exempt after it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use poem::http::uri::Scheme;
use poem::listener::Acceptor;
use poem::web::{LocalAddr, RemoteAddr};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;

/// Wraps an acceptor: waits for a free slot before accepting (so connections beyond the
/// limit wait in the listen backlog), and gives every stream a head deadline.
pub struct LimitedAcceptor<A> {
    inner: A,
    slots: Arc<Semaphore>,
    header_timeout: Duration,
}

impl<A> LimitedAcceptor<A> {
    pub fn new(inner: A, max_connections: usize, header_timeout: Duration) -> Self {
        Self {
            inner,
            slots: Arc::new(Semaphore::new(max_connections)),
            header_timeout,
        }
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
        let (io, local, remote, scheme) = self.inner.accept().await?;
        let io = GuardedIo {
            inner: io,
            _slot: slot,
            timeout: self.header_timeout,
            // A connection that sends nothing at all is held to the same deadline.
            head: Head::reading(self.header_timeout),
        };
        Ok((io, local, remote, scheme))
    }
}

/// A connection's stream: holds its slot until dropped, and fails the read of a request
/// head that is not complete by its deadline (hyper then closes the connection).
pub struct GuardedIo<T> {
    inner: T,
    _slot: OwnedSemaphorePermit,
    timeout: Duration,
    head: Head,
}

enum Head {
    /// A request head is being read and must be complete by `deadline`.
    Reading {
        deadline: Pin<Box<Sleep>>,
        scan: Scan,
    },
    /// Head complete: the body and the handler are the request timeout's business.
    InRequest,
    /// The response went out; the next byte read starts the next head. Waiting for it is
    /// the idle timeout's business.
    Idle,
    /// HTTP/2 prior knowledge: streams are multiplexed, there is no head to watch.
    Exempt,
}

impl Head {
    fn reading(timeout: Duration) -> Self {
        Self::Reading {
            deadline: Box::pin(tokio::time::sleep(timeout)),
            scan: Scan::default(),
        }
    }
}

const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\n";

/// Finds the end of a head: an empty line after at least one non-empty one (leading empty
/// lines, which RFC 9112 §2.2 lets a server ignore, must not end it). Bare `\n` line ends
/// count too, as hyper accepts them.
#[derive(Default)]
struct Scan {
    content: bool,
    /// The last byte other than `\r`.
    last: u8,
    /// How many leading bytes match the HTTP/2 preface.
    preface: usize,
    read: usize,
}

impl Scan {
    /// Takes one byte; true when it ends the head.
    fn push(&mut self, byte: u8) -> bool {
        if self.preface == self.read && H2_PREFACE.get(self.read) == Some(&byte) {
            self.preface += 1;
        }
        self.read += 1;
        if byte == b'\r' {
            return false;
        }
        let end = byte == b'\n' && self.last == b'\n' && self.content;
        if byte != b'\n' {
            self.content = true;
        }
        self.last = byte;
        end
    }
}

impl<T> GuardedIo<T> {
    fn observe_read(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match &mut self.head {
                Head::Idle => {
                    self.head = Head::reading(self.timeout);
                    if let Head::Reading { scan, .. } = &mut self.head {
                        scan.push(byte);
                    }
                }
                Head::Reading { scan, .. } => {
                    if scan.push(byte) {
                        self.head = if scan.preface == H2_PREFACE.len() {
                            Head::Exempt
                        } else {
                            Head::InRequest
                        };
                    }
                }
                // Body bytes (or a pipelined request, see `observe_write`).
                Head::InRequest | Head::Exempt => return,
            }
        }
    }

    fn observe_write(&mut self, bytes: &[u8]) {
        // A `100 Continue` comes before the body, not as the answer.
        if matches!(self.head, Head::InRequest) && !bytes.starts_with(b"HTTP/1.1 1") {
            self.head = Head::Idle;
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
        if let Head::Reading { deadline, .. } = &mut this.head
            && deadline.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "request head not complete within server.header_read_timeout_ms",
            )));
        }
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = result {
            this.observe_read(&buf.filled()[before..]);
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
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    const DEADLINE: Duration = Duration::from_millis(100);
    /// Far past `DEADLINE` however slow the machine: sleeping longer only makes a wrong
    /// state machine fail more surely, never a right one.
    const PAST_DEADLINE: Duration = Duration::from_millis(400);

    /// (server side wrapped, client side)
    fn pair() -> (GuardedIo<DuplexStream>, DuplexStream) {
        let (server, client) = tokio::io::duplex(4096);
        let slot = Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap();
        let io = GuardedIo {
            inner: server,
            _slot: slot,
            timeout: DEADLINE,
            head: Head::reading(DEADLINE),
        };
        (io, client)
    }

    async fn read(io: &mut GuardedIo<DuplexStream>) -> io::Result<usize> {
        let mut buffer = [0u8; 256];
        io.read(&mut buffer).await
    }

    #[tokio::test]
    async fn an_unfinished_head_fails_the_read_after_the_deadline() {
        let (mut io, mut client) = pair();
        client
            .write_all(b"GET / HTTP/1.1\r\nX-Slow: a")
            .await
            .unwrap();
        assert!(read(&mut io).await.is_ok());
        let error = read(&mut io).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn body_and_idle_time_are_not_the_heads_business() {
        let (mut io, mut client) = pair();
        client
            .write_all(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n")
            .await
            .unwrap();
        read(&mut io).await.unwrap();
        // An interim answer, then a body slower than the head deadline, piece by piece
        // (were its first byte taken for a new head, the second read would fail).
        io.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .unwrap();
        for piece in [&b"{"[..], b"}"] {
            tokio::time::sleep(PAST_DEADLINE).await;
            client.write_all(piece).await.unwrap();
            assert_eq!(read(&mut io).await.unwrap(), 1);
        }
        // The answer; then an idle keep-alive connection has no head deadline.
        io.write_all(b"HTTP/1.1 201 Created\r\n\r\n").await.unwrap();
        tokio::time::sleep(PAST_DEADLINE).await;
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        assert!(read(&mut io).await.is_ok());
        // The next head's first byte started its deadline.
        let error = tokio::time::timeout(Duration::from_secs(30), read(&mut io))
            .await
            .expect("the deadline fails the read")
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn an_http2_connection_is_exempt() {
        let (mut io, mut client) = pair();
        client.write_all(H2_PREFACE).await.unwrap();
        read(&mut io).await.unwrap();
        io.write_all(b"\0\0\0\x04\0\0\0\0\0").await.unwrap();
        // Frames, no blank line: a head deadline would start at the first and fail the
        // read of the second.
        for frame in [&b"\0\0\0\x04\0"[..], b"\0\0\0\x04\x01"] {
            tokio::time::sleep(PAST_DEADLINE).await;
            client.write_all(frame).await.unwrap();
            assert!(read(&mut io).await.is_ok());
        }
    }

    fn ends(input: &[u8]) -> Option<usize> {
        let mut scan = Scan::default();
        input.iter().position(|&byte| scan.push(byte))
    }

    #[test]
    fn a_head_ends_at_its_first_empty_line() {
        assert_eq!(ends(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nbody"), Some(26));
        assert_eq!(ends(b"GET / HTTP/1.1\nHost: a\n\n"), Some(23));
        // Leading empty lines do not end a head that has not begun.
        assert_eq!(ends(b"\r\n\r\n\n\nGET / HTTP/1.1\r\n"), None);
        assert_eq!(ends(b"GET / HTTP/1.1\r\nX-Slow: aaaa"), None);
        let mut scan = Scan::default();
        assert!(H2_PREFACE.iter().any(|&byte| scan.push(byte)));
        assert_eq!(scan.preface, H2_PREFACE.len());
    }
}
