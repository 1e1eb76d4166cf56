//! The service in this process (feature `in-process`): the server's own `app::serve` on a
//! runtime of its own, for tests that drive the HTTP API and need nothing of a process
//! (signals, stdout, the environment, a crash). Started in milliseconds, with no binary
//! to build first, and talked to over loopback HTTP like a process would be.
//!
//! Each service records its metrics into a recorder of its own, entered by every thread
//! of its runtime, so a test may assert the counters of its own traffic. What it shares
//! with the test process: the environment, stdout and the fate of a crash.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use figment::Figment;
use figment::providers::{Format as _, Toml};
use shortener_http::app::LISTENING;
use shortener_http::metrics::NodeRecorder;
use shortener_server::app;
use shortener_server::config::Config;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;

use crate::TempDir;
use crate::config::TestConfig;

/// A service running in this process, stopped (gracefully: visits flushed, storage
/// closed) on drop.
#[derive(Debug)]
pub struct InProcessApp {
    /// `http://127.0.0.1:<port>`
    pub base: String,
    /// Its directory: its own SQLite file lives here.
    pub dir: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<JoinHandle<bool>>,
    _dir: Option<TempDir>,
}

/// Starts the service with `config` in a directory of its own. The environment is not
/// read: only the defaults and `config`.
///
/// # Panics
/// When the configuration is refused, or the service does not answer within 30 s.
pub fn spawn_in_process(config: &TestConfig) -> InProcessApp {
    let dir = TempDir::new();
    let mut app = InProcessApp::start(dir.path(), config);
    app._dir = Some(dir);
    app
}

impl InProcessApp {
    /// Starts the service in `dir` (its SQLite file lives there unless `config` keeps the
    /// links elsewhere), as [`crate::TestApp::start`] starts a process: several nodes may
    /// share a database. It reads the file a process would read
    /// ([`TestConfig::file_text`]), and its metrics are its own, not those of the other
    /// services of this process.
    ///
    /// # Panics
    /// As [`spawn_in_process`].
    pub fn start(dir: &Path, config: &TestConfig) -> Self {
        let figment = Figment::from(Toml::string(&config.file_text(dir)));
        let settings = Config::from_figment(figment)
            .unwrap_or_else(|error| panic!("in-process config refused: {error}"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (server, said) = on_a_runtime("in-process", &[], move || async move {
            let stopped = async move {
                let _ = stopped.await;
            };
            app::serve(settings, stopped).await
        });
        let base = listening(&said, "shortener listening on ", &server);
        InProcessApp {
            base,
            dir: dir.to_path_buf(),
            stop: Some(stop),
            server: Some(server),
            _dir: None,
        }
    }

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

    /// Stops the service as SIGTERM stops a process (requests drained, visits flushed,
    /// storage closed) and returns whether it stopped without an error.
    pub fn stop(mut self) -> bool {
        self.shut_down()
    }

    fn shut_down(&mut self) -> bool {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.server
            .take()
            .is_none_or(|server| server.join().unwrap_or(false))
    }
}

/// Runs `serve` on a new thread named `name`, on a runtime of its own whose every thread
/// records metrics into a recorder of its own (with `limiter_calls` histograms), logs
/// warnings to the test's output, and sends the lines that say where it listens (target
/// `shortener::listening`) to the receiver.
/// The thread's result is whether `serve` ended without an error (which it prints).
pub(crate) fn on_a_runtime<F, Fut>(
    name: &str,
    limiter_calls: &'static [&'static str],
    serve: F,
) -> (JoinHandle<bool>, Receiver<String>)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let recorder = NodeRecorder::new(limiter_calls);
    let (sender, said) = std::sync::mpsc::channel();
    // Warnings and errors go to the test's captured output, as a process's stderr would
    // (`RUST_LOG=warn`): a failing test shows what its node said.
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(tracing_subscriber::fmt::TestWriter::new())
        .with_target(false)
        .with_filter(tracing_subscriber::filter::LevelFilter::WARN);
    let dispatch = tracing::Dispatch::new(
        tracing_subscriber::registry()
            .with(
                Said(Mutex::new(sender)).with_filter(tracing_subscriber::filter::filter_fn(
                    |meta| meta.target() == LISTENING,
                )),
            )
            .with(logs),
    );
    let enter = move || {
        recorder.enter();
        std::mem::forget(tracing::dispatcher::set_default(&dispatch));
    };
    let name = name.to_owned();
    let server = std::thread::Builder::new()
        .name(name.clone())
        .spawn(move || {
            enter();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .on_thread_start(enter.clone())
                .build()
                .expect("a runtime");
            let served = runtime.block_on(serve());
            runtime.shutdown_timeout(Duration::from_millis(200));
            served
                .inspect_err(|error| eprintln!("{name} stopped: {error:#}"))
                .is_ok()
        })
        .expect("a thread for the service");
    (server, said)
}

/// Sends each event's message to the test that started the service.
struct Said(Mutex<Sender<String>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Said {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let _ = self.0.lock().map(|sender| sender.send(message.0));
    }
}

/// What follows `prefix` in the first line `said` that starts with it: where the service
/// listens.
///
/// # Panics
/// When `server` ends first, or no such line comes within 30 s.
pub(crate) fn listening(
    said: &Receiver<String>,
    prefix: &str,
    server: &JoinHandle<bool>,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match said.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => {
                if let Some(address) = line.strip_prefix(prefix) {
                    return address.trim().to_owned();
                }
            }
            Err(_) => {
                assert!(
                    !server.is_finished(),
                    "the in-process service stopped before it listened"
                );
                assert!(
                    Instant::now() < deadline,
                    "the in-process service did not listen within 30 s"
                );
            }
        }
    }
}

impl crate::app::Served for InProcessApp {
    fn base(&self) -> &str {
        &self.base
    }
}

impl Drop for InProcessApp {
    fn drop(&mut self) {
        self.shut_down();
    }
}
