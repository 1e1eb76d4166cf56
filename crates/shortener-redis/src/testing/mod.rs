//! Throwaway `redis-server` processes for tests (the `testing` feature): a standalone
//! [`RedisServer`] that a test may kill, pause or restart, and a three-master
//! [`RedisCluster`]; [`TlsRedisServer`] and [`TlsRedisCluster`] speak TLS only, with
//! certificates of a [`TestPki`].
//! All listen on free loopback ports and are killed on drop; a small
//! watchdog also kills them if the test process dies without dropping them (a server in a
//! `static` is never dropped).
//!
//! `SHORTENER_TEST_REDIS_URL` makes [`RedisServer::start`] use an existing server instead.
//! A missing `redis-server` binary is one clear line, not a hang.

mod cluster;
mod server;
mod tls;
mod tls_cluster;

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use cluster::RedisCluster;
pub use server::RedisServer;
pub use tls::{TestPki, TlsRedisServer};
pub use tls_cluster::TlsRedisCluster;

/// Names the Redis that [`RedisServer::start`] uses instead of starting one.
pub const REDIS_URL_ENV: &str = "SHORTENER_TEST_REDIS_URL";

const STARTUP: Duration = Duration::from_secs(20);

/// One `redis-server` child and the watchdog that kills it if this process dies first.
#[derive(Debug)]
struct Process {
    child: Child,
    watchdog: Child,
}

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
        require_binary("redis-server")?;
        let log = dir.join(format!("redis-{port}.log"));
        let mut child = Command::new("redis-server")
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
            .stderr(Stdio::null())
            .spawn()?;
        // Kills the server and removes its files once this process is gone, whatever way
        // it went (a server in a static is never dropped).
        let watchdog = Command::new("sh")
            .arg("-c")
            .arg(r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done; kill -9 "$2"; rm -rf "$3""#)
            .arg("watchdog")
            .arg(std::process::id().to_string())
            .arg(child.id().to_string())
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let watchdog = match watchdog {
            Ok(watchdog) => watchdog,
            Err(error) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(error);
            }
        };
        let mut process = Self { child, watchdog };
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
            if let Some(status) = self.child.try_wait()? {
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

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status();
        assert!(
            status.is_ok_and(|status| status.success()),
            "kill -{signal} {} failed",
            self.pid()
        );
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // SIGKILL also ends a server stopped with SIGSTOP.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = self.watchdog.kill();
        let _ = self.watchdog.wait();
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

/// Fails with one clear line when a binary is not on PATH.
fn require_binary(name: &str) -> io::Result<()> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|dir| dir.join(name).is_file()) {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!(
            "{name} not found on PATH: install the Debian package {}",
            debian_package(name)
        ),
    ))
}

fn debian_package(binary: &str) -> &'static str {
    match binary {
        // redis-cli comes with redis-tools, which redis-server depends on.
        "redis-cli" => "redis-tools",
        "openssl" => "openssl",
        _ => "redis-server",
    }
}

/// A loopback port that was free a moment ago.
fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A fresh directory under the system temp dir, for one server's or cluster's files.
fn temp_dir(kind: &str) -> io::Result<PathBuf> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let dir = std::env::temp_dir().join(format!("shortener-{kind}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_is_one_clear_line() {
        let error = require_binary("redis-server-gone").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            error.to_string(),
            "redis-server-gone not found on PATH: install the Debian package redis-server"
        );
    }

    #[test]
    fn each_binary_names_its_debian_package() {
        assert_eq!(debian_package("redis-server"), "redis-server");
        assert_eq!(debian_package("redis-cli"), "redis-tools");
        assert_eq!(debian_package("openssl"), "openssl");
    }
}
