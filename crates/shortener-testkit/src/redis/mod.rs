//! Throwaway `redis-server` processes: a standalone [`RedisServer`] that a test may kill,
//! pause or restart, and a three-master [`RedisCluster`]; [`TlsRedisServer`] and
//! [`TlsRedisCluster`] speak TLS only, with certificates of a [`TestPki`](crate::TestPki).
//! All listen on free loopback ports, keep their files in a [`TempDir`](crate::TempDir), and are killed on
//! drop, or by the [`Guard`]'s watchdog if the test process dies first (a server in a
//! `static` is never dropped).
//!
//! `SHORTENER_TEST_REDIS_URL` makes [`RedisServer::start`] use an existing server instead.
//! A missing `redis-server` binary is one clear line, not a hang.

mod cluster;
mod server;
mod tls;
mod tls_cluster;

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use cluster::RedisCluster;
pub use server::RedisServer;
pub use tls::TlsRedisServer;
pub use tls_cluster::TlsRedisCluster;

use crate::process::{Guard, require_binary};

/// Names the Redis that [`RedisServer::start`] uses instead of starting one.
pub const REDIS_URL_ENV: &str = "SHORTENER_TEST_REDIS_URL";

const STARTUP: Duration = Duration::from_secs(20);

/// One `redis-server` child, guarded.
#[derive(Debug)]
struct Process(Guard);

impl Process {
    /// Starts `redis-server` on `port` with its files in `dir`, and waits for PING.
    fn spawn(port: u16, dir: &Path, extra: &[&str]) -> io::Result<Self> {
        Self::spawn_checked(port, dir, extra, ping)
    }

    /// As [`Process::spawn`], waiting until `ready(port)` succeeds (`extra` may move the
    /// server to another port or protocol: later arguments win).
    fn spawn_checked(
        port: u16,
        dir: &Path,
        extra: &[&str],
        ready: impl Fn(u16) -> io::Result<()>,
    ) -> io::Result<Self> {
        let redis_server = require_binary("redis-server")?;
        let log = dir.join(format!("redis-{port}.log"));
        let guard = Guard::spawn(
            "redis-server",
            Command::new(redis_server)
                .arg("--port")
                .arg(port.to_string())
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir)
                .arg("--logfile")
                .arg(&log)
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )?;
        let mut process = Self(guard);
        if let Err(error) = process.wait_until_ready(port, ready) {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(5).collect();
            return Err(io::Error::other(format!(
                "redis-server on port {port} did not start: {error}; log: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )));
        }
        Ok(process)
    }

    fn wait_until_ready(
        &mut self,
        port: u16,
        ready: impl Fn(u16) -> io::Result<()>,
    ) -> io::Result<()> {
        let deadline = Instant::now() + STARTUP;
        loop {
            if let Some(status) = self.0.child().try_wait()? {
                return Err(io::Error::other(format!("it exited with {status}")));
            }
            if ready(port).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::other("no answer to PING within 20 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, signal: &str) {
        self.0.signal(signal);
    }
}

/// Sends an inline PING and expects `+PONG`.
fn ping(port: u16) -> io::Result<()> {
    use std::io::{Read, Write};
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_millis(200))?;
    stream.set_read_timeout(Some(Duration::from_millis(500)))?;
    stream.write_all(b"PING\r\n")?;
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply)?;
    if &reply == b"+PONG\r\n" {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "PING answered {:?}",
            String::from_utf8_lossy(&reply)
        )))
    }
}
