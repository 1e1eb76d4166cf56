//! The connection rules on in-memory streams: header deadlines, keep-alive, the idle
//! timeout, h2c, and the per-client shares.

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::scan::{H2_PREFACE, Scan};
use super::*;

const DEADLINE: Duration = Duration::from_millis(100);
/// Far past `DEADLINE` however slow the machine: sleeping longer only makes a wrong
/// state machine fail more surely, never a right one.
const PAST_DEADLINE: Duration = Duration::from_millis(400);

/// (server side wrapped, client side)
fn pair() -> (GuardedIo<DuplexStream>, DuplexStream) {
    pair_with(|_| {})
}

fn pair_with(edit: impl FnOnce(&mut ConnectionRules)) -> (GuardedIo<DuplexStream>, DuplexStream) {
    let mut rules = ConnectionRules {
        max_connections: 1,
        max_per_client: 1,
        header_timeout: DEADLINE,
        keep_alive: Duration::from_secs(3600),
        max_age: Duration::from_secs(3600),
        idle: Duration::from_secs(3600),
        http2: true,
        exempt: Vec::new(),
        ipv4_prefix: 32,
        ipv6_prefix: 64,
    };
    edit(&mut rules);
    let (server, client) = tokio::io::duplex(4096);
    let slot = Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap();
    (GuardedIo::new(server, slot, None, Arc::new(rules)), client)
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

/// The idle timeout alone (every other deadline an hour away) ends a connection that
/// stalls in each state: in its first head, in a body, after an answer, and in an
/// answer the client does not read.
#[tokio::test]
async fn a_connection_without_io_is_closed_after_the_idle_timeout_in_every_state() {
    let idle = |rules: &mut ConnectionRules| {
        rules.header_timeout = Duration::from_secs(3600);
        rules.idle = DEADLINE;
    };
    let is_idle = |error: io::Error| {
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(error.to_string().contains("idle_timeout_ms"), "{error}");
    };
    let stalled = async |io: &mut GuardedIo<DuplexStream>| {
        (tokio::time::timeout(Duration::from_secs(30), read(io)).await)
            .expect("the idle deadline fails the read")
            .unwrap_err()
    };
    // In a head.
    let (mut io, mut client) = pair_with(idle);
    client
        .write_all(b"GET / HTTP/1.1\r\nX-Slow: a")
        .await
        .unwrap();
    read(&mut io).await.unwrap();
    is_idle(stalled(&mut io).await);
    // In a body.
    let (mut io, mut client) = pair_with(idle);
    let head = b"POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n{";
    client.write_all(head).await.unwrap();
    read(&mut io).await.unwrap();
    is_idle(stalled(&mut io).await);
    // After an answer, with the keep-alive deadline an hour away.
    let (mut io, mut client) = pair_with(|rules| {
        idle(rules);
        rules.keep_alive = Duration::from_secs(3600);
    });
    client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    read(&mut io).await.unwrap();
    io.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
    is_idle(stalled(&mut io).await);
    // An answer larger than the stream holds, to a client that reads none of it.
    let (mut io, mut client) = pair_with(idle);
    client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    read(&mut io).await.unwrap();
    let answer = vec![b'a'; 64 * 1024];
    let written = tokio::time::timeout(Duration::from_secs(30), io.write_all(&answer))
        .await
        .expect("the idle deadline fails the write");
    is_idle(written.unwrap_err());
}

/// Bytes keep a connection alive: a body sent a piece at a time, each well within the
/// idle timeout, takes longer than it in all and is read to the end.
#[tokio::test]
async fn each_byte_moves_the_idle_deadline() {
    const IDLE: Duration = Duration::from_secs(2);
    let (mut io, mut client) = pair_with(|rules| {
        rules.header_timeout = Duration::from_secs(3600);
        rules.idle = IDLE;
    });
    client
        .write_all(b"POST / HTTP/1.1\r\nContent-Length: 25\r\n\r\n")
        .await
        .unwrap();
    read(&mut io).await.unwrap();
    let started = tokio::time::Instant::now();
    for _ in 0..25 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        client.write_all(b"a").await.unwrap();
        assert_eq!(read(&mut io).await.unwrap(), 1);
    }
    assert!(
        started.elapsed() > IDLE,
        "the body outlasted the idle timeout"
    );
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

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_keep_alive_timeout() {
    let (mut io, mut client) = pair_with(|rules| rules.keep_alive = DEADLINE);
    client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    read(&mut io).await.unwrap();
    io.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(30), read(&mut io))
        .await
        .expect("the keep-alive deadline fails the read")
        .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
}

/// The timer is moved only when it would ring too late, so under a stream of requests it
/// rings before the current deadline: that must re-arm it, never close the connection.
#[tokio::test]
async fn requests_that_keep_moving_the_deadline_keep_the_connection() {
    let keep_alive = Duration::from_secs(1);
    let (mut io, mut client) = pair_with(|rules| {
        (rules.header_timeout, rules.keep_alive) = (keep_alive, keep_alive);
    });
    // 8 requests 200 ms apart: past the first deadlines, each met by the next request.
    for _ in 0..8 {
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        read(&mut io).await.unwrap();
        io.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        tokio::time::sleep(keep_alive / 5).await;
    }
    let error = tokio::time::timeout(Duration::from_secs(30), read(&mut io))
        .await
        .expect("the keep-alive deadline fails the read")
        .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
}

#[tokio::test]
async fn http2_is_refused_when_off_and_aged_out_when_on() {
    let (mut io, mut client) = pair_with(|rules| rules.http2 = false);
    client.write_all(H2_PREFACE).await.unwrap();
    let error = read(&mut io).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::ConnectionRefused);

    let (mut io, mut client) = pair_with(|rules| rules.max_age = DEADLINE * 2);
    client.write_all(H2_PREFACE).await.unwrap();
    read(&mut io).await.unwrap();
    let error = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            client.write_all(b"\0\0\0\x04\0").await?;
            read(&mut io).await?;
            tokio::time::sleep(DEADLINE / 4).await;
        }
        #[allow(unreachable_code)]
        Ok::<(), io::Error>(())
    })
    .await
    .expect("the age fails a read")
    .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::TimedOut);
}

#[test]
fn a_client_network_gets_its_share_and_no_more() {
    let clients = Arc::default();
    let client: IpAddr = "192.0.2.7".parse().unwrap();
    let first = ClientShare::take(&clients, client, 2).unwrap();
    let second = ClientShare::take(&clients, client, 2).unwrap();
    assert!(ClientShare::take(&clients, client, 2).is_none());
    drop(first);
    let third = ClientShare::take(&clients, client, 2).unwrap();
    drop((second, third));
    assert!(clients.lock().unwrap().is_empty());
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

proptest::proptest! {
    /// Taken in chunks, a line at a time, a head ends at the byte where taking it one byte
    /// at a time ends it, with the same count of the HTTP/2 preface's bytes, however the
    /// bytes are cut.
    #[test]
    fn a_head_ends_at_the_same_byte_however_it_is_cut(
        preface in 0..=H2_PREFACE.len(),
        bytes in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(b'\r'),
                proptest::strategy::Just(b'\n'),
                proptest::strategy::Just(b'P'),
                proptest::prelude::any::<u8>(),
            ],
            0..48,
        ),
        cuts in proptest::collection::vec(0..80usize, 0..6),
    ) {
        let input = [&H2_PREFACE[..preface], &bytes].concat();
        let mut bytewise = Scan::default();
        let expected = input.iter().position(|&byte| bytewise.push(byte));
        let mut cuts: Vec<usize> = cuts.into_iter().filter(|&cut| cut < input.len()).collect();
        cuts.extend([0, input.len()]);
        cuts.sort_unstable();
        let mut chunked = Scan::default();
        let mut ended = None;
        for pair in cuts.windows(2) {
            if let Some(end) = chunked.push_all(&input[pair[0]..pair[1]]) {
                ended = Some(pair[0] + end);
                break;
            }
        }
        proptest::prop_assert_eq!(ended, expected);
        proptest::prop_assert_eq!(chunked.preface, bytewise.preface);
        proptest::prop_assert_eq!(chunked.read, bytewise.read);
    }
}
