//! PostgreSQL for tests, one way: [`TestDatabase`], a database of a test's own on the
//! server of `SHORTENER_TEST_PG_URL`, and [`PostgresCluster`], a throwaway server (for
//! xtask when none runs, and for the TLS tests). Both talk SQL through `psql`, so that no
//! test needs a driver of its own to prepare or inspect a database.

mod cluster;

use std::io::{self, BufRead, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Once, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use cluster::PostgresCluster;

use crate::process::{MissingBinary, Watchdog, output_within, which};

/// Names the server the test databases are made on (a URL of its maintenance database).
pub const PG_URL_ENV: &str = "SHORTENER_TEST_PG_URL";
/// The server when [`PG_URL_ENV`] is not set.
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Test databases are `shortener_test_<unix seconds, hex>_<16 hex digits>`.
const PREFIX: &str = "shortener_test_";
/// Test databases left behind (by a run whose watchdog never ran) are dropped after this.
const STALE_AFTER_SECS: u64 = 3600;
const PSQL_TIMEOUT: Duration = Duration::from_secs(60);

/// The server's maintenance database: `SHORTENER_TEST_PG_URL`, else [`DEFAULT_PG_URL`].
pub fn admin_url() -> String {
    std::env::var(PG_URL_ENV).unwrap_or_else(|_| DEFAULT_PG_URL.to_owned())
}

/// A PostgreSQL database of its own on the server of [`admin_url`], dropped on drop
/// together with the sessions left on it, and by a [`Watchdog`] once this process has
/// exited if it was never dropped (as [`TestDatabase::shared`]'s).
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
    _watchdog: Option<Watchdog>,
}

impl TestDatabase {
    /// Creates an empty database with a fresh name on the server of [`admin_url`].
    ///
    /// # Panics
    /// With one line naming `SHORTENER_TEST_PG_URL` when the server does not answer.
    pub fn create() -> Self {
        let admin_url = admin_url();
        Self::create_on(&admin_url).unwrap_or_else(|error| {
            panic!(
                "postgresql does not answer at {PG_URL_ENV}={} ({error}): start it, or set \
                 {PG_URL_ENV} to a server where this user may create databases",
                redacted(&admin_url)
            )
        })
    }

    /// Creates an empty database with a fresh name on the server of `admin_url`.
    ///
    /// # Errors
    /// When `psql` is missing or the database cannot be created.
    pub fn create_on(admin_url: &str) -> io::Result<Self> {
        static SWEEP: Once = Once::new();
        SWEEP.call_once(|| drop_stale_databases(admin_url));
        let name = format!("{PREFIX}{:x}_{}", unix_seconds(), random_hex());
        psql(admin_url, &format!("CREATE DATABASE {name}")).map_err(io::Error::other)?;
        let drop_sql = drop_statement(&name);
        let watchdog = psql_binary().ok().and_then(|psql| {
            Watchdog::after_exit(
                r#""$1" -X -q -d "$2" -c "$3""#,
                &[psql.as_os_str(), admin_url.as_ref(), drop_sql.as_ref()],
            )
            .ok()
        });
        Ok(Self {
            admin_url: admin_url.to_owned(),
            url: with_database(admin_url, &name),
            name,
            _watchdog: watchdog,
        })
    }

    /// One database for the whole test process, created on first use and dropped once the
    /// process has exited: for tests that need only a database, not an empty one.
    pub fn shared() -> &'static Self {
        static SHARED: OnceLock<TestDatabase> = OnceLock::new();
        SHARED.get_or_init(Self::create)
    }

    /// `postgres://...` of this database, for `storage.url`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `sql` on this database; returns the rows, one a line, columns split by `|`.
    ///
    /// # Panics
    /// When `psql` reports an error.
    pub fn query(&self, sql: &str) -> String {
        psql(&self.url, sql).unwrap_or_else(|error| panic!("{error}"))
    }

    /// Every row of this database as `pg_dump --data-only` writes it.
    ///
    /// # Panics
    /// When `pg_dump` is missing or fails.
    pub fn dump(&self) -> String {
        let pg_dump = tool("pg_dump").unwrap_or_else(|missing| panic!("{missing}"));
        let mut command = Command::new(pg_dump);
        command.args(["--data-only", "--no-owner", "-d", &self.url]);
        let output = output_within(&mut command, PSQL_TIMEOUT).expect("pg_dump runs");
        assert!(
            output.status.success(),
            "pg_dump failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Terminates every session on this database (the services' pooled connections)
    /// every `interval` for `duration`, from one admin session; returns how many
    /// sessions were ended, and in how many rounds.
    ///
    /// # Panics
    /// When `psql` fails.
    pub fn terminate_sessions_for(&self, duration: Duration, interval: Duration) -> (u64, u64) {
        let sql = format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = '{}' AND pid <> pg_backend_pid();",
            self.name
        );
        // One psql fed statement by statement: starting one per round would take longer
        // than a round on a loaded machine.
        let mut session = psql_session(&self.admin_url);
        let mut stdin = session.stdin.take().expect("psql stdin");
        let until = Instant::now() + duration;
        let mut rounds = 0;
        while Instant::now() < until {
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

    /// Locks `table` and returns once the lock is held: every statement on it waits.
    ///
    /// # Panics
    /// When the lock is not taken.
    pub fn lock_table(&self, table: &str) -> TableLock {
        let mut session = psql_session(&self.url);
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

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if psql(&self.admin_url, &drop_statement(&self.name)).is_err() {
            // Before PostgreSQL 13 there is no FORCE.
            let _ = psql(
                &self.admin_url,
                &format!("DROP DATABASE IF EXISTS {}", self.name),
            );
        }
    }
}

/// An `ACCESS EXCLUSIVE` lock on a table, held by an open transaction of its own `psql`
/// session until dropped.
#[derive(Debug)]
pub struct TableLock {
    session: Child,
    /// Kept open: psql ends the transaction (and the lock) only at EOF or when killed.
    _stdin: ChildStdin,
}

impl Drop for TableLock {
    fn drop(&mut self) {
        let _ = self.session.kill();
        let _ = self.session.wait();
    }
}

/// FORCE ends the sessions of services still running (PostgreSQL 13 and later).
fn drop_statement(name: &str) -> String {
    format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")
}

/// Drops test databases whose name says they are more than an hour old. A database in
/// use is not dropped (no FORCE), so a long run elsewhere keeps its own.
fn drop_stale_databases(admin_url: &str) {
    let Ok(names) = psql(
        admin_url,
        &format!("SELECT datname FROM pg_database WHERE starts_with(datname, '{PREFIX}')"),
    ) else {
        return;
    };
    for name in names.lines().map(str::trim) {
        if created_at(name).is_some_and(|at| unix_seconds().saturating_sub(at) > STALE_AFTER_SECS) {
            let _ = psql(admin_url, &format!("DROP DATABASE IF EXISTS {name}"));
        }
    }
}

/// The creation time in a test database's name; `None` for any other name, so only
/// names of this exact shape (and only hex digits) ever reach a `DROP`.
fn created_at(name: &str) -> Option<u64> {
    let (seconds, random) = name.strip_prefix(PREFIX)?.split_once('_')?;
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !(hex(seconds) && hex(random) && random.len() == 16) {
        return None;
    }
    u64::from_str_radix(seconds, 16).ok()
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// 16 hex digits, different for every call (process id, time and a counter, mixed).
fn random_hex() -> String {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let seed = (
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed),
    );
    format!("{:016x}", RandomState::new().hash_one(seed))
}

/// `url` with its database (the path) replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_path(database);
            parsed.to_string()
        }
        Err(_) => format!("{}/{database}", url.trim_end_matches('/')),
    }
}

/// `url` without its password, cut to 200 characters, for messages.
fn redacted(url: &str) -> String {
    let mut shown = url::Url::parse(url).map_or_else(
        |_| "an invalid url".into(),
        |mut url| {
            let _ = url.set_password(None);
            url.to_string()
        },
    );
    shown.truncate(200);
    shown
}

/// A PostgreSQL client or server tool: on PATH, else in the newest
/// `/usr/lib/postgresql/<version>/bin`, where Debian keeps the server tools.
pub fn tool(name: &str) -> Result<PathBuf, MissingBinary> {
    if let Some(on_path) = which(name) {
        return Ok(on_path);
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin").join(name))
        .filter(|tool| tool.is_file())
        .collect();
    versions.sort();
    versions.pop().ok_or_else(|| MissingBinary::new(name))
}

fn psql_binary() -> Result<&'static PathBuf, MissingBinary> {
    static PSQL: OnceLock<Result<PathBuf, MissingBinary>> = OnceLock::new();
    PSQL.get_or_init(|| tool("psql"))
        .as_ref()
        .map_err(Clone::clone)
}

fn psql_command(url: &str) -> Command {
    let psql = psql_binary().unwrap_or_else(|missing| panic!("{missing}"));
    let mut command = Command::new(psql);
    command
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url])
        .env("PGCONNECT_TIMEOUT", "5");
    command
}

/// A `psql` session that reads its statements from stdin.
fn psql_session(url: &str) -> Child {
    psql_command(url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("psql starts")
}

/// Runs one statement with `psql`; returns its unaligned, tuples-only output, or the error
/// it printed.
fn psql(url: &str, sql: &str) -> Result<String, String> {
    let mut command = psql_binary()
        .map(|_| psql_command(url))
        .map_err(|missing| missing.to_string())?;
    let output = output_within(command.args(["-c", sql]), PSQL_TIMEOUT)
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

#[cfg(test)]
mod tests;
