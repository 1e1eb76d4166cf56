//! Real `shortener ratelimit-server` processes: a config of the test's own (port 0 for
//! gRPC and HTTP), limits files read from a runtime root the test writes, ready when the
//! process says where it listens, killed on drop.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::app::binary;
use crate::launch::Launch;
use crate::process::Guard;

/// A running rate limit service.
#[derive(Debug)]
pub struct TestRls {
    /// `http://127.0.0.1:<port>` of the gRPC service.
    pub grpc: String,
    /// `http://127.0.0.1:<port>` of `/healthcheck` and `/metrics`.
    pub http: String,
    guard: Guard,
}

impl TestRls {
    /// Starts a service whose limits files are under `runtime_root/config`, with
    /// `config_toml` (the `[limiter]` section, and more) before its `[rls]` section and
    /// `rls_toml` inside it. Its config file is written in `runtime_root`, beside `config/`
    /// (so the service does not read it as a limits file).
    ///
    /// # Panics
    /// When it does not start within 30 s (its stderr is the test's).
    pub fn start(runtime_root: &Path, config_toml: &str, rls_toml: &str) -> Self {
        Self::start_binary(binary(), runtime_root, config_toml, rls_toml)
            .unwrap_or_else(|error| panic!("{error} (see its stderr above)"))
    }

    /// As [`TestRls::start`], with the `shortener` binary at `shortener` (a benchmark's
    /// release build).
    ///
    /// # Errors
    /// When it cannot be started or does not say where it listens within 30 s.
    pub fn start_binary(
        shortener: &Path,
        runtime_root: &Path,
        config_toml: &str,
        rls_toml: &str,
    ) -> std::io::Result<Self> {
        let config = format!(
            "{config_toml}\n[rls]\ngrpc_bind = \"127.0.0.1:0\"\nhttp_bind = \"127.0.0.1:0\"\n\
             runtime_root = \"{}\"\n{rls_toml}\n",
            runtime_root.display()
        );
        Self::launch(shortener, runtime_root, &config, |launch| launch)
    }

    /// Starts a service set up as envoyproxy/ratelimit's deployments set up theirs: by
    /// their environment variables `vars` (`RUNTIME_ROOT`, `REDIS_URL`, `LOG_LEVEL`...,
    /// without the kit's `RUST_LOG`, so that `LOG_LEVEL` speaks). Its config file, written
    /// in `dir`, holds only its two listeners, on loopback port 0.
    ///
    /// # Panics
    /// As [`TestRls::start`].
    pub fn start_with_env(dir: &Path, vars: &[(&str, &str)]) -> Self {
        let config = "[rls]\ngrpc_bind = \"127.0.0.1:0\"\nhttp_bind = \"127.0.0.1:0\"\n";
        Self::launch(binary(), dir, config, |launch| {
            (vars.iter()).fold(launch.env_remove("RUST_LOG"), |launch, (key, value)| {
                launch.env(key, value)
            })
        })
        .unwrap_or_else(|error| panic!("{error} (see its stderr above)"))
    }

    /// Writes `config` in `dir` and starts the service on it, its [`Launch`] set up by `setup`.
    fn launch(
        shortener: &Path,
        dir: &Path,
        config: &str,
        setup: impl FnOnce(Launch) -> Launch,
    ) -> std::io::Result<Self> {
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let file = dir.join(format!(
            "rls-{}.toml",
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&file, config)?;
        let (guard, addresses) = setup(Launch::new(shortener, "ratelimit-server", dir, &file))
            .listening(Duration::from_secs(30))?;
        let (grpc, http) = addresses
            .split_once(' ')
            .ok_or_else(|| std::io::Error::other(format!("not two addresses: {addresses}")))?;
        Ok(Self {
            grpc: grpc.to_owned(),
            http: http.to_owned(),
            guard,
        })
    }

    /// `127.0.0.1:<port>` of the gRPC service.
    pub fn grpc_address(&self) -> &str {
        self.grpc.trim_start_matches("http://")
    }

    /// The process id (a benchmark reads its CPU time in `/proc`).
    pub fn pid(&self) -> u32 {
        self.guard.id()
    }

    /// Sends `signal` (`STOP`, `CONT`, ...) to the process.
    pub fn signal(&self, signal: &str) {
        self.guard.signal(signal);
    }

    /// Kills the process with SIGKILL and waits for it.
    pub fn kill(self) {
        drop(self);
    }
}
