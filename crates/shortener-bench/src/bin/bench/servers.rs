//! The servers the HTTP benchmarks load: `shortener` nodes (release builds, each in a
//! directory of its own with its own config) and the poem ceiling, started with the test
//! kit's `Launch` and `spawn_listening`; and a throwaway PostgreSQL database for the nodes.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};
use shortener_testkit::postgres::admin_url;
use shortener_testkit::{
    Guard, Launch, PostgresCluster, RedisServer, TempDir, TestDatabase, require_binary,
    spawn_listening,
};

use super::Context;

/// The target of every link the benchmarks create (the ceiling redirects there too).
pub const TARGET: &str = "https://example.com/bench";
/// `[storage]` of the embedded default: SQLite in the node's directory.
pub const SQLITE: &str = "[storage]\nkind = \"sqlite\"\nurl = \"sqlite://shortener.db\"\n";
/// A policy that a benchmark never exhausts: the largest rate a policy accepts, and a
/// burst of a billion.
pub const UNLIMITED: &str = "capacity = 1000000000\nrefill_per_sec = 50000.0\n";
const STARTUP: Duration = Duration::from_secs(60);

/// `[storage]` on a PostgreSQL database.
pub fn postgres(url: &str) -> String {
    format!("[storage]\nkind = \"postgres\"\nurl = \"{url}\"\n")
}

/// `[limiter]`: the Redis limiter on the server of `url` (the memory limiter without it).
pub fn redis_limiter(url: &str) -> String {
    format!("[limiter]\nkind = \"redis\"\nredis_url = \"{url}\"\n")
}

/// A private `redis-server`, once `redis-server` and the `tools` are known to be installed.
pub fn private_redis(tools: &[&str]) -> anyhow::Result<RedisServer> {
    for tool in tools.iter().chain(&["redis-server"]) {
        require_binary(tool)?;
    }
    Ok(RedisServer::try_start_private()?)
}

/// A running `shortener` (release build) in its own directory; stopped on drop.
#[derive(Debug)]
pub struct Node {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// For the harness's few requests (a link to load, `/metrics`): the harness is
    /// synchronous. Redirects are not followed.
    http: (tokio::runtime::Runtime, reqwest::Client),
    // Declared before `dir`: the process stops before its directory is removed.
    _process: Guard,
    _dir: TempDir,
}

impl Node {
    /// A node listening on a free loopback port, with `config` (TOML: everything but
    /// `[server]`; what it leaves out is the built-in default).
    pub fn start(context: &Context, config: &str) -> anyhow::Result<Self> {
        let dir = TempDir::with_prefix("node")?;
        // The load generator is one client on loopback standing for many: the per-client
        // connection cap would close what wrk opens beyond it (or beside it: a probe).
        let server = "[server]\nbind = \"127.0.0.1:0\"\nmax_connections_per_client = 100000\n";
        let toml = format!("{server}{config}");
        std::fs::write(dir.path().join("shortener.toml"), &toml)?;
        let log = dir.path().join("stderr.log");
        let binary = context.binaries.join("shortener");
        let launch = Launch::new(&binary, "serve", dir.path(), Path::new("shortener.toml"));
        let (_process, base) = (launch.stderr(std::fs::File::create(&log)?))
            .listening(STARTUP)
            .with_context(|| {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                format!("stderr:\n{log}\nconfig:\n{toml}")
            })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let http = (runtime, shortener_testkit::client());
        Ok(Self {
            base,
            http,
            _process,
            _dir: dir,
        })
    }

    /// Creates a link to [`TARGET`] and returns its URL, `http://ADDRESS/CODE`.
    pub fn create_link(&self) -> anyhow::Result<String> {
        let link = self.request("/api/v1/links", Some(json!({ "url": TARGET })), 201)?;
        let link: Value = serde_json::from_str(&link)?;
        let code = link["code"]
            .as_str()
            .with_context(|| format!("no code in {link}"))?;
        self.request(&format!("/{code}"), None, 302)?;
        Ok(format!("{}/{code}", self.base))
    }

    /// Creates `count` links to [`TARGET`] through the bulk endpoint (the node needs a
    /// `create` policy that allows them) and follows each once, so that all are cached;
    /// returns their codes.
    pub fn create_cached_links(&self, count: usize) -> anyhow::Result<Vec<String>> {
        let mut codes = Vec::with_capacity(count);
        while codes.len() < count {
            let links = vec![json!({ "url": TARGET }); (count - codes.len()).min(1000)];
            let body = Some(json!({ "links": links }));
            let answer = self.request("/api/v1/links/bulk", body, 200)?;
            let answer: Value = serde_json::from_str(&answer)?;
            for result in answer["results"].as_array().into_iter().flatten() {
                let code = result["link"]["code"].as_str();
                let code =
                    code.with_context(|| format!("a bulk item was not created: {result}"))?;
                codes.push(code.to_owned());
            }
        }
        for code in &codes {
            self.request(&format!("/{code}"), None, 302)?;
        }
        Ok(codes)
    }

    /// The value of one counter of `/metrics` (summed over its label sets), 0 when absent.
    pub fn counter(&self, name: &str) -> anyhow::Result<f64> {
        let text = self.request("/metrics", None, 200)?;
        let values = text.lines().filter_map(|line| {
            let rest = line
                .strip_prefix(name)
                .filter(|rest| rest.starts_with([' ', '{']))?;
            rest.rsplit(' ').next()?.parse::<f64>().ok()
        });
        Ok(values.sum())
    }

    /// One request to the node (a POST of `body`, else a GET), which must answer `status`;
    /// returns the body.
    fn request(&self, path: &str, body: Option<Value>, status: u16) -> anyhow::Result<String> {
        let (url, (runtime, http)) = (format!("{}{path}", self.base), &self.http);
        let (answer, text) = runtime.block_on(async {
            let request = match body {
                Some(body) => http.post(&url).json(&body),
                None => http.get(&url),
            };
            let response = request
                .send()
                .await
                .with_context(|| format!("no answer from {url}"))?;
            anyhow::Ok((response.status(), response.text().await?))
        })?;
        ensure!(answer == status, "{url} answered {answer}: {text}");
        Ok(text)
    }
}

/// The poem ceiling, and its `http://ADDRESS`.
pub fn ceiling(context: &Context) -> anyhow::Result<(Guard, String)> {
    let mut command = Command::new(context.binaries.join("ceiling"));
    let prefix = "ceiling listening on ";
    Ok(spawn_listening("ceiling", &mut command, prefix, STARTUP)?)
}

/// A throwaway database (dropped last, after the nodes that use it) on the PostgreSQL of
/// the tests (`SHORTENER_TEST_PG_URL`, else 127.0.0.1:5432), else on a throwaway cluster;
/// the cluster, if any, outlives the database (fields drop in order).
pub type Database = (TestDatabase, Option<PostgresCluster>);

/// [`Database`], or `None` (said in the progress) when no PostgreSQL can be had: the
/// benchmarks then measure without it.
pub fn database(context: &Context) -> Option<Database> {
    let database = TestDatabase::create_on(&admin_url()).map(|database| (database, None));
    let database = database.or_else(|_| {
        let cluster = PostgresCluster::start()?;
        Ok::<_, std::io::Error>((TestDatabase::create_on(&cluster.url(""))?, Some(cluster)))
    });
    let error = |error: &std::io::Error| {
        context.step(&format!("no PostgreSQL, so none of its figures: {error}"));
    };
    database.inspect_err(error).ok()
}
