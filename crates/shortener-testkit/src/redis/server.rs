//! A standalone `redis-server` that a test can kill, pause and restart.

use std::io;

use super::{Process, REDIS_URL_ENV};
use crate::{TempDir, free_port};

/// A standalone Redis for tests: a private `redis-server` on a free loopback port, killed
/// on drop, or the server named by `SHORTENER_TEST_REDIS_URL`.
#[derive(Debug)]
pub struct RedisServer {
    url: String,
    private: Option<Private>,
}

#[derive(Debug)]
struct Private {
    // Killed before its directory is removed: fields drop in order.
    process: Option<Process>,
    port: u16,
    dir: TempDir,
}

impl RedisServer {
    /// The server of `SHORTENER_TEST_REDIS_URL` when it is set, else a private one.
    ///
    /// # Panics
    /// With one clear line when `redis-server` is missing or does not start.
    pub fn start() -> Self {
        Self::try_start().unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`RedisServer::start`].
    ///
    /// # Errors
    /// When `redis-server` is missing or does not answer PING in time.
    pub fn try_start() -> io::Result<Self> {
        match std::env::var(REDIS_URL_ENV) {
            Ok(url) if !url.is_empty() => Ok(Self { url, private: None }),
            _ => Self::try_start_private(),
        }
    }

    /// Always a private server, whatever the environment says: for tests that kill,
    /// pause or flush it.
    ///
    /// # Panics
    /// As [`RedisServer::start`].
    pub fn start_private() -> Self {
        Self::try_start_private().unwrap_or_else(|error| panic!("{error}"))
    }

    /// As [`RedisServer::start_private`].
    ///
    /// # Errors
    /// As [`RedisServer::try_start`].
    pub fn try_start_private() -> io::Result<Self> {
        let port = free_port()?;
        let dir = TempDir::with_prefix("redis")?;
        let process = Process::spawn(port, dir.path(), &[])?;
        Ok(Self {
            url: format!("redis://127.0.0.1:{port}"),
            private: Some(Private {
                port,
                dir,
                process: Some(process),
            }),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port of a private server; `None` for the one of `SHORTENER_TEST_REDIS_URL`.
    pub fn port(&self) -> Option<u16> {
        self.private.as_ref().map(|private| private.port)
    }

    /// Kills the server (SIGKILL): connections drop, new ones are refused.
    pub fn kill(&mut self) {
        self.private_mut().process = None;
    }

    /// SIGSTOP: the server keeps its connections but answers nothing, like a hung host.
    pub fn pause(&self) {
        self.running().signal("STOP");
    }

    /// SIGCONT after [`RedisServer::pause`].
    pub fn resume(&self) {
        self.running().signal("CONT");
    }

    /// Kills the server if it runs and starts a new, empty one on the same port.
    ///
    /// # Panics
    /// When the new server does not start.
    pub fn restart(&mut self) {
        let private = self.private_mut();
        private.process = None;
        let process = Process::spawn(private.port, private.dir.path(), &[])
            .unwrap_or_else(|error| panic!("{error}"));
        private.process = Some(process);
    }

    fn private_mut(&mut self) -> &mut Private {
        self.private
            .as_mut()
            .expect("fault injection needs a private server: use RedisServer::start_private")
    }

    fn running(&self) -> &Process {
        self.private
            .as_ref()
            .expect("fault injection needs a private server: use RedisServer::start_private")
            .process
            .as_ref()
            .expect("the server was killed")
    }
}
