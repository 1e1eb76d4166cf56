//! What the scenarios share: API keys for a [`TestConfig`] and their secrets, waiting for the
//! visit values' flush, waiting for a key to be taken or refused, running another
//! project's client script, and the lock of the tests that load the machine. Scenario
//! files hold tests only.

use std::time::{Duration, Instant};

use serde_json::Value;
use shortener_tests::TestConfig;
use shortener_tests::config::OnErrorConfig;

/// API keys of a [`TestConfig`] by name and scopes (`"create,read"`; empty: none), each
/// with the secret [`secret`] of its name: the config gets their digests.
pub trait Keys {
    #[must_use]
    fn keys(self, keys: &[(&str, &str)]) -> Self;
}

impl Keys for TestConfig {
    fn keys(self, keys: &[(&str, &str)]) -> Self {
        keys.iter().fold(self, |config, (name, scopes)| {
            let scopes: Vec<&str> = (scopes.split(',').filter(|scope| !scope.is_empty())).collect();
            config.api_key(name, &sha256_hex(&secret(name)), Some(&scopes))
        })
    }
}

/// A node on a shared PostgreSQL database and Redis, with the key `alice` and a cache
/// that would keep a stale link for an hour if nothing told it otherwise.
pub fn shared_node(database: &str, redis: &str) -> TestConfig {
    TestConfig::default()
        .postgres(database)
        .redis_limiter(redis, OnErrorConfig::Local)
        .with(|c| {
            c.cache.ttl_secs = 3600;
            c.limiter.timeout_ms = 500;
        })
        .keys(&[("alice", "create,read,update,delete")])
}

/// The `create` policy of [`redis_node`].
pub const REDIS_NODE_CAPACITY: u64 = 20;
pub const REDIS_NODE_RATE: f64 = 20.0;

/// A node in memory, limited by the Redis at `redis_url` with a 50 ms timeout, and an
/// `admin` key named `ops`, whose `/readyz` shows the limiter's error (anonymous callers
/// get the states only).
pub fn redis_node(redis_url: &str, on_error: OnErrorConfig) -> TestConfig {
    TestConfig::default()
        .in_memory()
        .redis_limiter(redis_url, on_error)
        .with(|c| c.limiter.timeout_ms = 50)
        .policy("create", REDIS_NODE_CAPACITY, REDIS_NODE_RATE)
        .keys(&[("ops", "admin")])
}

/// The secret of the `ops` key of [`postgres_node`].
pub const POSTGRES_NODE_KEY: &str = "postgres-nodes-key";
/// `cache.ttl_secs` of [`postgres_node`]: how stale another node's view of a link may be.
pub const POSTGRES_NODE_CACHE_TTL: Duration = Duration::from_secs(1);

/// A node on `database_url`: a small pool (three nodes per test, tests in parallel, and
/// the server's 100 connections), a short cache ttl, creates not limited in practice.
pub fn postgres_node(database_url: &str) -> TestConfig {
    TestConfig::default()
        .postgres(database_url)
        .with(|c| {
            // The tests are one client sending 200 requests at once: about 67 connections
            // per node, past the per-client cap of 64, which would close the extra ones.
            c.server.max_connections_per_client = 1000;
            c.storage.max_connections = 4;
            c.cache.ttl_secs = POSTGRES_NODE_CACHE_TTL.as_secs();
        })
        .policy("create", 1_000_000, 10_000.0)
        // sha256("postgres-nodes-key")
        .api_key(
            "ops",
            "3fc8d5cbfafc32e2179252b13ef3a6260ed067430b6ce29e24e62f4c0c6a7d1e",
            None,
        )
}

/// SQLite in the node's directory with no refusal by the limiter and no cache: every
/// read goes to SQLite and holds a read snapshot there, which is what starves
/// checkpoints. Look-ups are unlimited in practice, for tests that read back every link.
pub fn loaded_sqlite() -> TestConfig {
    TestConfig::default()
        .with(|c| c.cache.capacity = 0)
        .policy("create", 1_000_000_000, 50_000.0)
        .policy("lookup", 1_000_000, 50_000.0)
}

pub fn secret(name: &str) -> String {
    format!("{name}-secret")
}

/// SHA-256 by the `sha256sum` program, as an operator would compute it.
pub fn sha256_hex(text: &str) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum (coreutils)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8(output.stdout).unwrap()[..64].to_owned()
}

pub fn values(body: &Value) -> Vec<(String, u64)> {
    (body["values"].as_array().unwrap().iter())
        .map(|value| {
            let name = value["value"].as_str().unwrap().to_owned();
            (name, value["visits"].as_u64().unwrap())
        })
        .collect()
}

/// The body of `GET url` with alice's key once its values sum to `visits` or more
/// (values are written every second in these tests), or as it is after 10 s.
pub async fn once_flushed(http: &reqwest::Client, url: String, visits: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body: Value = (http.get(&url).header("x-api-key", secret("alice")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let counted: u64 = values(&body).iter().map(|(_, visits)| visits).sum();
        if counted >= visits || Instant::now() > deadline {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How long until `GET url` with the API key `key` answers `status` (polled every
/// 20 ms; a failure after 5 s).
pub async fn until_status(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    status: reqwest::StatusCode,
) -> Duration {
    let started = Instant::now();
    loop {
        let answer = http.get(url).header("x-api-key", key).send().await.unwrap();
        if answer.status() == status {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still {} after 5 s, not {status}",
            answer.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Held by the tests that load the machine with many thousands of requests and by those
/// whose lower bounds need the CPU they ask for (leases left unused in a starved node
/// expire), so that no two of them run at once: the test binary runs two tests at a
/// time on this machine's two cores.
pub static LOAD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs another project's client script (Node or Python) with `args` to its end, within
/// two minutes, and prints its stdout. Panics with both outputs when it fails, or when it
/// does not end saying that every call was answered as the client expects.
pub fn run_client(program: &std::path::Path, args: &[&std::ffi::OsStr]) {
    let run = shortener_testkit::output_within(
        std::process::Command::new(program).args(args),
        Duration::from_secs(120),
    )
    .unwrap_or_else(|error| panic!("{} runs: {error}", program.display()));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert!(
        run.status.success(),
        "the client script failed:\n{stdout}\n{stderr}"
    );
    eprintln!("{}", stdout.trim());
    assert!(stdout.contains("answered as the"), "{stdout}");
}

/// Asks the rate limit service at `address` (`http://...`) whether `request` is limited.
///
/// # Panics
/// When the service does not take the connection.
pub async fn ask_rls(
    address: &str,
    request: shortener_rls::proto::RateLimitRequest,
) -> Result<shortener_rls::proto::RateLimitResponse, tonic::Status> {
    let client = shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient::connect(
        address.to_owned(),
    );
    client
        .await
        .unwrap()
        .should_rate_limit(request)
        .await
        .map(tonic::Response::into_inner)
}

/// A connection to the SQLite database a server left at `database`.
///
/// # Panics
/// When it cannot be opened.
pub async fn open_sqlite(database: &std::path::Path) -> sqlx::SqliteConnection {
    use sqlx::Connection as _;
    sqlx::SqliteConnection::connect(&format!("sqlite://{}", database.display()))
        .await
        .expect("open the database the server left")
}
