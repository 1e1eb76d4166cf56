//! Black-box test support: real `shortener` processes on port 0, each in its own
//! directory (its SQLite file lives there), stopped when dropped.
//!
//! Not a test double of anything: the processes are the release artefact's code, built
//! by `cargo build -p shortener-server` and talked to over HTTP.

use std::io::{BufRead, BufReader, Write as _};
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
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace root");
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "-p",
                "shortener-server",
                "--bin",
                "shortener",
            ])
            .current_dir(workspace)
            .status()
            .expect("cargo build runs");
        assert!(status.success(), "cargo build -p shortener-server failed");
        // The test binary is target/<profile>/deps/it-<hash>; the server sits in target/<profile>.
        let exe = std::env::current_exe().expect("test executable path");
        exe.parent()
            .and_then(Path::parent)
            .expect("target profile dir")
            .join("shortener")
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
        Self {
            base,
            dir: dir.to_path_buf(),
            child,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Creates a link and returns its JSON, asserting the 201.
    pub async fn create(
        &self,
        http: &reqwest::Client,
        body: serde_json::Value,
    ) -> serde_json::Value {
        let response = http
            .post(self.url("/api/v1/links"))
            .json(&body)
            .send()
            .await
            .expect("create");
        assert_eq!(
            response.status(),
            reqwest::StatusCode::CREATED,
            "create {body}"
        );
        response.json().await.expect("a link")
    }

    /// Kills the process with SIGKILL (no shutdown of any kind) and waits for it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits for a graceful exit; returns whether it exited with success.
    pub fn stop(mut self) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
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
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A PostgreSQL database of one test's own, on the server of `SHORTENER_TEST_PG_URL`
/// (default `postgres://postgres@127.0.0.1:5432/postgres`), dropped on drop together
/// with the sessions left on it. It talks to the server with `psql`, so that the tests
/// need no database driver of their own.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TestDatabase {
    /// Creates an empty database with a fresh name.
    ///
    /// # Panics
    /// With one line naming `SHORTENER_TEST_PG_URL` when the server does not answer.
    pub fn create() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let admin_url = std::env::var("SHORTENER_TEST_PG_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_secs());
        let name = format!(
            "shortener_it_{seconds:x}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        if let Err(error) = psql(&admin_url, &format!("CREATE DATABASE {name}")) {
            panic!(
                "cannot create a test database with SHORTENER_TEST_PG_URL (default \
                 postgres://postgres@127.0.0.1:5432/postgres): {error}"
            );
        }
        let url = with_database(&admin_url, &name);
        Self {
            admin_url,
            name,
            url,
        }
    }

    /// `postgres://...` of this database, for `storage.url`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `sql` on this database; returns the rows, one a line, columns split by `|`.
    pub fn query(&self, sql: &str) -> String {
        psql(&self.url, sql).unwrap_or_else(|error| panic!("{error}"))
    }

    /// Terminates every session on this database (the services' pooled connections)
    /// every `interval` for `duration`, from one admin session; returns how many
    /// sessions were ended, and in how many rounds.
    pub fn terminate_sessions_for(&self, duration: Duration, interval: Duration) -> (u64, u64) {
        let sql = format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = '{}' AND pid <> pg_backend_pid();",
            self.name
        );
        // One psql fed statement by statement: starting one per round would take longer
        // than a round on a loaded machine.
        let mut session = Command::new(psql_binary())
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.admin_url,
            ])
            .env("PGCONNECT_TIMEOUT", "5")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("psql starts");
        let mut stdin = session.stdin.take().expect("psql stdin");
        let until = std::time::Instant::now() + duration;
        let mut rounds = 0;
        while std::time::Instant::now() < until {
            writeln!(stdin, "{sql}").expect("psql reads its statements");
            rounds += 1;
            std::thread::sleep(interval);
        }
        drop(stdin);
        let output = session.wait_with_output().expect("psql ends");
        assert!(
            output.status.success(),
            "psql failed while terminating sessions"
        );
        let counts = String::from_utf8_lossy(&output.stdout);
        let terminated = counts
            .lines()
            .map(|line| line.trim().parse::<u64>().expect("a count"))
            .sum();
        (terminated, rounds)
    }
}

/// An `ACCESS EXCLUSIVE` lock on a table, held by an open transaction of its own `psql`
/// session until dropped.
#[derive(Debug)]
pub struct TableLock {
    session: Child,
    /// Kept open: psql ends the transaction (and the lock) only at EOF or when killed.
    _stdin: std::process::ChildStdin,
}

impl TestDatabase {
    /// Locks `table` and returns once the lock is held: every statement on it waits.
    pub fn lock_table(&self, table: &str) -> TableLock {
        let mut session = Command::new(psql_binary())
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.url,
            ])
            .env("PGCONNECT_TIMEOUT", "5")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("psql starts");
        let mut stdin = session.stdin.take().expect("psql stdin");
        writeln!(
            stdin,
            "BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE; SELECT 'locked';"
        )
        .expect("psql reads its statements");
        let mut line = String::new();
        BufReader::new(session.stdout.take().expect("psql stdout"))
            .read_line(&mut line)
            .expect("psql answers");
        assert_eq!(line.trim(), "locked", "LOCK TABLE {table} failed");
        TableLock {
            session,
            _stdin: stdin,
        }
    }
}

impl Drop for TableLock {
    fn drop(&mut self) {
        let _ = self.session.kill();
        let _ = self.session.wait();
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // FORCE ends the sessions of services still running (PostgreSQL 13 and later).
        let forced = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        if psql(&self.admin_url, &forced).is_err() {
            let _ = psql(
                &self.admin_url,
                &format!("DROP DATABASE IF EXISTS {}", self.name),
            );
        }
    }
}

/// `url` with its database (the path) replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let server = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

/// Runs one statement with `psql` (found on PATH, or where Debian keeps it); returns
/// its unaligned, tuples-only output, or the error it printed.
fn psql(url: &str, sql: &str) -> Result<String, String> {
    let output = Command::new(psql_binary())
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            url,
            "-c",
            sql,
        ])
        .env("PGCONNECT_TIMEOUT", "5")
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("cannot run psql: {error}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "psql failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn psql_binary() -> &'static Path {
    static PSQL: OnceLock<PathBuf> = OnceLock::new();
    PSQL.get_or_init(|| {
        let on_path: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join("psql"))
                    .collect()
            })
            .unwrap_or_default();
        let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path().join("bin/psql"))
            .collect();
        debian.sort();
        on_path
            .into_iter()
            .chain(debian.into_iter().rev())
            .find(|candidate| candidate.is_file())
            .expect("`psql` not found: install the Debian package postgresql-client")
    })
}
