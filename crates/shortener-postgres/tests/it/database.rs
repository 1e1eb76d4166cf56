//! One database per test process: created on first use, dropped when the process exits.
//!
//! A libtest binary has no hook at exit, so the first use also starts a small reaper
//! process (this binary again, running only [`drop_the_test_database_when_the_parent_exits`])
//! whose stdin is a pipe from this process: when this process exits, however it exits,
//! the pipe closes and the reaper drops the database. As a backstop for reapers that
//! never ran, every run also drops test databases more than an hour old.

use std::env;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shortener_core::{AlphabetCodeGenerator, CodeGenerator};
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use tokio::sync::OnceCell;
use url::Url;

const URL_VARIABLE: &str = "SHORTENER_TEST_PG_URL";
const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// Set for the reaper process: the name of the database it drops.
const REAP_VARIABLE: &str = "SHORTENER_TEST_PG_REAP";
/// Test databases are `shortener_test_<unix seconds, hex>_<16 random hex digits>`.
const PREFIX: &str = "shortener_test_";
const STALE_AFTER_SECS: u64 = 3600;

static DATABASE: OnceCell<Result<Url, String>> = OnceCell::const_new();
/// The write end of the reaper's stdin, held until this process exits.
static REAPER_PIPE: OnceLock<ChildStdin> = OnceLock::new();

/// The URL of this process's test database, created on the first call.
///
/// # Panics
/// With one line naming `SHORTENER_TEST_PG_URL` when PostgreSQL does not answer.
pub async fn url() -> Url {
    match DATABASE.get_or_init(create).await {
        Ok(url) => url.clone(),
        Err(line) => panic!("{line}"),
    }
}

/// The server's maintenance database, from `SHORTENER_TEST_PG_URL`.
pub fn admin_url() -> String {
    env::var(URL_VARIABLE).unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// A random lowercase hex string of `length` digits.
pub fn random_hex(length: usize) -> String {
    AlphabetCodeGenerator::new("0123456789abcdef", length)
        .expect("a valid alphabet")
        .generate()
        .to_string()
}

async fn create() -> Result<Url, String> {
    let admin = admin_url();
    let mut url = Url::parse(&admin).map_err(|e| unreachable_line(&admin, &e.to_string()))?;
    let connect = PgConnection::connect(&admin);
    let mut connection = match tokio::time::timeout(Duration::from_secs(5), connect).await {
        Ok(Ok(connection)) => connection,
        Ok(Err(error)) => return Err(unreachable_line(&admin, &error.to_string())),
        Err(_) => return Err(unreachable_line(&admin, "no answer within 5s")),
    };
    drop_stale_databases(&mut connection).await;
    let name = format!("{PREFIX}{:x}_{}", unix_seconds(), random_hex(16));
    connection
        .execute(AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .map_err(|e| format!("cannot create the test database {name}: {e}"))?;
    let _ = connection.close().await;
    spawn_reaper(&name);
    url.set_path(&name);
    Ok(url)
}

fn unreachable_line(admin_url: &str, detail: &str) -> String {
    let mut shown = Url::parse(admin_url).map_or_else(
        |_| "an invalid url".into(),
        |mut url| {
            let _ = url.set_password(None);
            url.to_string()
        },
    );
    shown.truncate(200);
    format!(
        "postgresql does not answer at {URL_VARIABLE}={shown} ({detail}): start it, or set \
         {URL_VARIABLE} to a server where this user may create databases"
    )
}

/// Drops test databases whose name says they are more than an hour old. A database in
/// use is not dropped (no FORCE), so a long run elsewhere keeps its own.
async fn drop_stale_databases(connection: &mut PgConnection) {
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
            .bind(PREFIX)
            .fetch_all(&mut *connection)
            .await
            .unwrap_or_default();
    for name in names {
        if created_at(&name).is_some_and(|at| unix_seconds().saturating_sub(at) > STALE_AFTER_SECS)
        {
            let _ = connection
                .execute(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}")))
                .await;
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

fn spawn_reaper(name: &str) {
    let Ok(executable) = env::current_exe() else {
        return;
    };
    let reaper = Command::new(executable)
        .args([
            "--exact",
            "database::drop_the_test_database_when_the_parent_exits",
            "--ignored",
        ])
        .env(REAP_VARIABLE, name)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a Ctrl-C on the test run must not stop the cleanup.
        .process_group(0)
        .spawn();
    if let Some(pipe) = reaper.ok().and_then(|mut reaper| reaper.stdin.take()) {
        let _ = REAPER_PIPE.set(pipe);
    }
}

/// Not a test: the reaper's entry point (see the module documentation). Without
/// `SHORTENER_TEST_PG_REAP` it does nothing.
#[tokio::test]
#[ignore = "the entry point of the process that drops this run's database"]
async fn drop_the_test_database_when_the_parent_exits() {
    let Some(name) = env::var(REAP_VARIABLE)
        .ok()
        .filter(|n| created_at(n).is_some())
    else {
        return;
    };
    // Returns at end of file, when the parent, the only writer, has exited.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let Ok(mut connection) = PgConnection::connect(&admin_url()).await else {
        return;
    };
    // FORCE ends sessions the exited parent left behind (PostgreSQL 13 and later).
    let forced = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
    if connection.execute(AssertSqlSafe(forced)).await.is_err() {
        let plain = format!("DROP DATABASE IF EXISTS {name}");
        let _ = connection.execute(AssertSqlSafe(plain)).await;
    }
}

#[test]
fn only_test_database_names_are_dropped() {
    assert_eq!(
        created_at("shortener_test_65f0a1b2_0123456789abcdef"),
        Some(0x65f0_a1b2)
    );
    for other in [
        "shortener",
        "shortener_test_65f0a1b2",
        "shortener_test_65f0a1b2_0123",
        "shortener_test_65f0a1b2_0123456789abcdeF",
        "shortener_test_65f0a1b2_0123456789abcde;",
        "shortener_test__0123456789abcdef",
        "other_test_65f0a1b2_0123456789abcdef",
    ] {
        assert_eq!(created_at(other), None, "{other}");
    }
}
