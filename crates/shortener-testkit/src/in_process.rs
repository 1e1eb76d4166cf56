//! The service in this process (feature `in-process`): the server's own `app::serve` on a
//! runtime of its own, for tests that drive the HTTP API and need nothing of a process
//! (signals, stdout, the environment, a crash). Started in milliseconds, with no binary
//! to build first, and talked to over loopback HTTP like a process would be.
//!
//! What it shares with other apps of the test process: the metrics recorder is global, so
//! a test that asserts a counter of its own traffic belongs on a real process
//! ([`crate::spawn_app`]).

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use figment::Figment;
use figment::providers::{Format as _, Toml};
use shortener_server::app;
use shortener_server::config::Config;

use crate::TempDir;

/// A service running in this process, stopped (gracefully: visits flushed, storage
/// closed) on drop.
#[derive(Debug)]
pub struct InProcessApp {
    /// `http://127.0.0.1:<port>`
    pub base: String,
    /// Its directory: a relative SQLite file of the config lives here.
    pub dir: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<JoinHandle<()>>,
    _dir: TempDir,
}

/// Starts the service with `config_toml` (as [`crate::spawn_app`] takes it, with
/// `server.bind` replaced by a free loopback port) in a directory of its own. The
/// environment is not read: only the defaults and `config_toml`.
///
/// # Panics
/// When the configuration is refused, or the service does not answer within 30 s.
pub fn spawn_in_process(config_toml: &str) -> InProcessApp {
    let dir = TempDir::new();
    let port = crate::free_port().expect("a free port");
    // The relative SQLite file of BASE_CONFIG, where a process started in `dir` keeps it.
    let text = config_toml.replace(
        "sqlite://shortener.db",
        &format!("sqlite://{}/shortener.db", dir.path().display()),
    );
    let figment =
        Figment::from(Toml::string(&text)).merge(("server.bind", format!("127.0.0.1:{port}")));
    let settings = Config::from_figment(figment)
        .unwrap_or_else(|error| panic!("in-process config refused: {error}"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::Builder::new()
        .name(format!("in-process-{port}"))
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            let stopped = async move {
                let _ = stopped.await;
            };
            if let Err(error) = runtime.block_on(app::serve(settings, stopped)) {
                panic!("in-process service failed: {error:#}");
            }
        })
        .expect("a thread for the service");
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            !server.is_finished(),
            "the in-process service stopped before it listened"
        );
        assert!(
            Instant::now() < deadline,
            "no listener on {base} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    InProcessApp {
        base,
        dir: dir.path().to_path_buf(),
        stop: Some(stop),
        server: Some(server),
        _dir: dir,
    }
}

impl InProcessApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Creates a link and returns its JSON, asserting the 201.
    ///
    /// # Panics
    /// When the answer is not a 201 with a link.
    pub async fn create(
        &self,
        http: &reqwest::Client,
        body: serde_json::Value,
    ) -> serde_json::Value {
        crate::app::create(http, &self.base, body).await
    }
}

impl crate::app::Served for InProcessApp {
    fn base(&self) -> &str {
        &self.base
    }
}

impl Drop for InProcessApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}
