//! Real `shortener` processes for black-box tests, in the style of zero2prod's
//! `spawn_app`: port 0, a directory of their own (their SQLite file lives there), ready
//! when they say where they listen, killed on drop.
//! A process reads its `TestConfig` (feature `config`) as the TOML file that a node in
//! this process reads too; [`TestApp::start_with_file_text`] is for the tests of the
//! file itself (the shipped examples, what `shortener keys new` prints).
//!
//! Not a test double of anything: the processes are the release artefact's code, built
//! by `cargo build -p shortener-server` and talked to over HTTP.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::TempDir;
use crate::launch::Launch;
use crate::process::Guard;

/// How long a server may take to say it listens.
const STARTUP: Duration = Duration::from_secs(30);

/// Starts a server with `config` in a temp dir of its own, removed with the app.
#[cfg(feature = "config")]
pub fn spawn_app(config: &crate::TestConfig) -> TestApp {
    let dir = TempDir::new();
    let mut app = TestApp::start(dir.path(), config);
    app.own_dir = Some(dir);
    app
}

/// The `shortener` binary, built once per test process.
///
/// # Panics
/// When the build fails.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let status = crate::cargo::cargo_command()
            .args([
                "build",
                "--quiet",
                "-p",
                "shortener-server",
                "--bin",
                "shortener",
            ])
            .current_dir(crate::cargo::workspace())
            .status()
            .expect("cargo build runs");
        assert!(status.success(), "cargo build -p shortener-server failed");
        // A test binary is target/<profile>/deps/<name>-<hash>; the server sits in
        // target/<profile>.
        let exe = std::env::current_exe().expect("test executable path");
        exe.parent()
            .and_then(Path::parent)
            .expect("target profile dir")
            .join("shortener")
    })
}

/// A service a test talks to over HTTP, whether a process ([`TestApp`]) or in this
/// process (`InProcessApp`): what helpers shared by both take.
pub trait Served {
    /// `http://127.0.0.1:<port>`
    fn base(&self) -> &str;

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }
}

impl Served for TestApp {
    fn base(&self) -> &str {
        &self.base
    }
}

/// A running `shortener` process.
#[derive(Debug)]
pub struct TestApp {
    /// `http://127.0.0.1:<port>`
    pub base: String,
    pub dir: PathBuf,
    guard: Guard,
    /// The directory made by [`spawn_app`]; removed after the process is killed.
    own_dir: Option<TempDir>,
}

impl TestApp {
    /// Starts a server in `dir` with `config` and returns once it listens.
    ///
    /// # Panics
    /// When it does not start within 30 s (its stderr is the test's).
    #[cfg(feature = "config")]
    pub fn start(dir: &Path, config: &crate::TestConfig) -> Self {
        Self::start_with_env(dir, config, &[])
    }

    /// As [`TestApp::start`], with environment variables (`SSL_CERT_FILE`, `SHORTENER_...`
    /// overrides).
    ///
    /// # Panics
    /// As [`TestApp::start`].
    #[cfg(feature = "config")]
    pub fn start_with_env(dir: &Path, config: &crate::TestConfig, env: &[(&str, &str)]) -> Self {
        Self::start_with_file_text(dir, &config.file_text(dir), env)
    }

    /// Starts a server in `dir` whose config file is `text` as it is, with environment
    /// variables: for the tests of the file itself (the shipped examples, a block that
    /// `shortener keys new` prints). Any other test states a `TestConfig`.
    ///
    /// # Panics
    /// As [`TestApp::start`].
    pub fn start_with_file_text(dir: &Path, text: &str, env: &[(&str, &str)]) -> Self {
        std::fs::write(dir.join("shortener.toml"), text).expect("write config");
        let launch = Launch::new(binary(), "serve", dir, Path::new("shortener.toml"));
        let (guard, base) = env
            .iter()
            .fold(launch, |launch, (key, value)| launch.env(key, value))
            .listening(STARTUP)
            .unwrap_or_else(|error| panic!("{error} (see its stderr above)"));
        Self {
            base,
            dir: dir.to_path_buf(),
            guard,
            own_dir: None,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The process id, to read what the kernel says of it (`/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        self.guard.id()
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
        create(http, &self.base, body).await
    }

    /// Kills the process with SIGKILL (no shutdown of any kind) and waits for it.
    pub fn kill(self) {
        drop(self);
    }

    /// Sends SIGTERM and waits (10 s at most) for a graceful exit; returns whether it
    /// exited with success.
    pub fn stop(mut self) -> bool {
        self.guard.signal("TERM");
        matches!(
            self.guard.wait_timeout(Duration::from_secs(10)),
            Ok(Some(status)) if status.success()
        )
    }
}

/// Creates a link on the service at `base` and returns its JSON, asserting the 201.
///
/// # Panics
/// When the answer is not a 201 with a link.
pub async fn create(
    http: &reqwest::Client,
    base: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    (crate::Api::at(base)
        .with_client(http.clone())
        .create(&body)
        .await)
        .expect(reqwest::StatusCode::CREATED)
}

/// The Prometheus text of `base`'s `/metrics`.
///
/// # Panics
/// When `/metrics` does not answer.
pub async fn scrape(base: &str) -> String {
    client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("/metrics answers")
        .text()
        .await
        .expect("/metrics has a body")
}

/// The sum of a metric's samples (every label set) in the `/metrics` of the server at
/// `base` (`http://ADDRESS`); 0 when it has none.
///
/// # Panics
/// When `/metrics` does not answer.
pub async fn metric(base: &str, name: &str) -> f64 {
    scrape(base)
        .await
        .lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with([' ', '{']))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Asks `GET url` every 50 ms until it answers 200, for at most `within`: whether it did.
pub async fn answers_ok(http: &reqwest::Client, url: &str, within: Duration) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < within {
        if let Ok(answer) = http.get(url).send().await
            && answer.status() == reqwest::StatusCode::OK
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// An HTTP client that does not follow redirects, with a 30 s timeout.
///
/// # Panics
/// When the TLS backend cannot be set up.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// Runs a config check of the binary on the file `text` (`TestConfig::file_text` of a
/// config, or the text of a test of the file itself): (exit code, stderr).
///
/// # Panics
/// When the binary cannot run.
pub fn check_config(dir: &Path, text: &str) -> (Option<i32>, String) {
    std::fs::write(dir.join("bad.toml"), text).expect("write config");
    let output = crate::output_within(
        Launch::one_shot(binary(), dir).args(["--config", "bad.toml"]),
        STARTUP,
    )
    .expect("run shortener");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
