//! [`TlsRedisServer`], a `redis-server` that only speaks TLS, with the certificate of a
//! [`TestPki`].

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Process, STARTUP};
use crate::process::{output_within, require_binary, which};
use crate::{TempDir, TestPki, free_port};

/// The `redis-server` arguments that make it speak TLS only, on `port`, with the
/// certificate of `pki` and no client certificates.
pub(super) fn server_args(pki: &TestPki, port: u16) -> Vec<String> {
    let path = |file: PathBuf| file.to_string_lossy().into_owned();
    vec![
        "--port".into(),
        "0".into(),
        "--tls-port".into(),
        port.to_string(),
        "--tls-cert-file".into(),
        path(pki.cert_file()),
        "--tls-key-file".into(),
        path(pki.key_file()),
        "--tls-ca-cert-file".into(),
        path(pki.ca_file()),
        "--tls-auth-clients".into(),
        "no".into(),
    ]
}

/// `redis-cli` over TLS, trusting the CA of `pki`.
pub(super) fn redis_cli(pki: &TestPki) -> Command {
    let mut command = Command::new(which("redis-cli").unwrap_or_else(|| "redis-cli".into()));
    command.arg("--tls").arg("--cacert").arg(pki.ca_file());
    command
}

/// PING over TLS with `redis-cli`, for servers that refuse plain connections.
pub(super) fn tls_ping(pki: &TestPki, port: u16) -> io::Result<()> {
    let output = output_within(
        redis_cli(pki).args(["-h", "127.0.0.1", "-p", &port.to_string(), "PING"]),
        STARTUP,
    )?;
    if output.status.success() && output.stdout.starts_with(b"PONG") {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "TLS PING answered {:?}",
            String::from_utf8_lossy(&output.stdout).trim()
        )))
    }
}

/// A standalone `redis-server` on a free loopback port that accepts TLS connections only
/// (`rediss://127.0.0.1:<port>`), with the server certificate of a [`TestPki`]; killed on
/// drop.
#[derive(Debug)]
pub struct TlsRedisServer {
    // Killed before its directory is removed: fields drop in order.
    _process: Process,
    port: u16,
    dir: TempDir,
}

impl TlsRedisServer {
    /// # Panics
    /// With one clear line when `redis-server` or `redis-cli` is missing or the server
    /// does not start.
    pub fn start(pki: &TestPki) -> Self {
        Self::try_start(pki).unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`TlsRedisServer::start`].
    ///
    /// # Errors
    /// When a binary is missing or the server does not answer a TLS PING in time.
    pub fn try_start(pki: &TestPki) -> io::Result<Self> {
        require_binary("redis-cli")?;
        let port = free_port()?;
        let dir = TempDir::with_prefix("redis-tls")?;
        let args = server_args(pki, port);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let process = Process::spawn_checked(port, dir.path(), &args, |port| tls_ping(pki, port))?;
        Ok(Self {
            _process: process,
            port,
            dir,
        })
    }

    /// `rediss://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}
