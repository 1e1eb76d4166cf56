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

/// The rate limit service in this process (feature `in-process`): the server's own
/// `ratelimit_server::serve` on a runtime of its own, with metrics of its own. For tests
/// of what the service answers; a test of the process itself (its stdout, its signals,
/// its start-up) uses [`TestRls`].
#[cfg(feature = "in-process")]
#[derive(Debug)]
pub struct InProcessRls {
    /// `http://127.0.0.1:<port>` of the gRPC service.
    pub grpc: String,
    /// `http://127.0.0.1:<port>` of `/healthcheck` and `/metrics`.
    pub http: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<std::thread::JoinHandle<bool>>,
}

#[cfg(feature = "in-process")]
impl InProcessRls {
    /// As [`TestRls::start`]: limits files under `runtime_root/config`, `config_toml`
    /// before the `[rls]` section and `rls_toml` inside it. The config file is written in
    /// `runtime_root`, beside `config/`.
    ///
    /// # Panics
    /// When the configuration is refused or the service does not listen within 30 s.
    pub fn start(runtime_root: &Path, config_toml: &str, rls_toml: &str) -> Self {
        let rls_toml = format!("runtime_root = \"{}\"\n{rls_toml}", runtime_root.display());
        Self::serve(runtime_root, config_toml, &rls_toml, &[])
    }

    /// As [`TestRls::start_with_env`]: set up by envoyproxy/ratelimit's variables `vars`
    /// (`RUNTIME_ROOT`, `REDIS_URL`...), its config file in `dir` holding its listeners.
    ///
    /// # Panics
    /// As [`InProcessRls::start`].
    pub fn start_with_env(dir: &Path, vars: &[(&str, &str)]) -> Self {
        Self::serve(dir, "", "", vars)
    }

    fn serve(dir: &Path, config_toml: &str, rls_toml: &str, vars: &[(&str, &str)]) -> Self {
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let file = dir.join(format!(
            "rls-{}.toml",
            STARTED.fetch_add(1, Ordering::Relaxed)
        ));
        let config = format!(
            "{config_toml}\n[rls]\ngrpc_bind = \"127.0.0.1:0\"\n\
             http_bind = \"127.0.0.1:0\"\n{rls_toml}\n"
        );
        std::fs::write(&file, config).expect("write the config");
        let vars = (vars.iter()).map(|(key, value)| ((*key).to_owned(), (*value).to_owned()));
        let settings = shortener_server::config::Config::load_for_rls(Some(&file), vars)
            .unwrap_or_else(|error| panic!("in-process rls config refused: {error}"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (server, said) = crate::in_process::on_a_runtime(
            "in-process-rls",
            &[shortener_rls::service::DECISION_SECONDS],
            move || async move {
                let stopped = async move {
                    let _ = stopped.await;
                };
                shortener_server::ratelimit_server::serve(settings, stopped).await
            },
        );
        let addresses = crate::in_process::listening(
            &said,
            "shortener ratelimit-server listening on ",
            &server,
        );
        let (grpc, http) = addresses.split_once(' ').expect("two addresses");
        Self {
            grpc: grpc.to_owned(),
            http: http.to_owned(),
            stop: Some(stop),
            server: Some(server),
        }
    }

    /// `127.0.0.1:<port>` of the gRPC service.
    pub fn grpc_address(&self) -> &str {
        self.grpc.trim_start_matches("http://")
    }

    /// Stops the service: it no longer answers (the test's "service is gone").
    pub fn kill(self) {
        drop(self);
    }
}

#[cfg(feature = "in-process")]
impl Drop for InProcessRls {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}
