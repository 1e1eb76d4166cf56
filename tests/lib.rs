//! Black-box test support: real `shortener` processes on port 0, each in its own
//! directory (its SQLite file lives there), stopped when dropped.
//!
//! Not a test double of anything: the processes are the release artefact's code, built
//! by `cargo build -p shortener-server` and talked to over HTTP.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A directory removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "shortener-it-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Default for TempDir {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `shortener` binary, built once per test process.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "shortener-server", "--bin", "shortener"])
            .current_dir(workspace)
            .status()
            .expect("cargo build runs");
        assert!(status.success(), "cargo build -p shortener-server failed");
        // The test binary is target/<profile>/deps/it-<hash>; the server sits in target/<profile>.
        let exe = std::env::current_exe().expect("test executable path");
        exe.parent().and_then(Path::parent).expect("target profile dir").join("shortener")
    })
}

/// A running `shortener` process.
#[derive(Debug)]
pub struct TestApp {
    /// `http://127.0.0.1:<port>`
    pub base: String,
    pub dir: PathBuf,
    child: Child,
}

/// The config every test starts from: port 0, SQLite in the app's directory.
pub const BASE_CONFIG: &str = r#"
[server]
bind = "127.0.0.1:0"
[storage]
kind = "sqlite"
url = "sqlite://shortener.db"
"#;

impl TestApp {
    /// Starts a server in `dir` with `BASE_CONFIG` followed by `extra_toml`; sections in
    /// `extra_toml` must not repeat those of the base (use `[server]` keys via `server_toml`).
    pub fn start(dir: &Path, config_toml: &str) -> Self {
        Self::start_with_env(dir, config_toml, &[])
    }

    pub fn start_with_env(dir: &Path, config_toml: &str, env: &[(&str, &str)]) -> Self {
        std::fs::write(dir.join("shortener.toml"), config_toml).expect("write config");
        let mut child = Command::new(binary())
            .args(["serve", "--config", "shortener.toml"])
            .current_dir(dir)
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn shortener");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(base) = line.strip_prefix("shortener listening on ") {
                    let _ = sender.send(base.trim().to_owned());
                }
            }
        });
        let base = match receiver.recv_timeout(Duration::from_secs(30)) {
            Ok(base) => base,
            Err(_) => {
                let _ = child.kill();
                panic!("shortener did not start within 30 s (see its stderr above)");
            }
        };
        Self { base, dir: dir.to_path_buf(), child }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends SIGTERM and waits for a graceful exit; returns whether it exited with success.
    pub fn stop(mut self) -> bool {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        for _ in 0..200 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP client that does not follow redirects.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// Runs a config check of the binary: (exit code, stderr).
pub fn check_config(dir: &Path, config_toml: &str) -> (Option<i32>, String) {
    std::fs::write(dir.join("bad.toml"), config_toml).expect("write config");
    let output = Command::new(binary())
        .args(["--config", "bad.toml"])
        .current_dir(dir)
        .output()
        .expect("run shortener");
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}
