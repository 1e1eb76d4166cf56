//! The servers the HTTP benchmarks load: `shortener` nodes (release builds, each in a
//! directory of its own with its own config) and the poem ceiling, started with the test
//! kit's `Launch` and `spawn_listening`; and a throwaway PostgreSQL database for the nodes.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use reqwest::Method;
use shortener_testkit::postgres::admin_url;
use shortener_testkit::{Guard, Launch, PostgresCluster, TempDir, TestDatabase, spawn_listening};

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

/// A running `shortener` (release build) in its own directory; stopped on drop.
#[derive(Debug)]
pub struct Node {
    /// `http://127.0.0.1:PORT`
    pub base: String,
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
        let toml = format!(
            "[server]\nbind = \"127.0.0.1:0\"\nmax_connections_per_client = 100000\n{config}"
        );
        std::fs::write(dir.path().join("shortener.toml"), &toml)?;
        let log = dir.path().join("stderr.log");
        let (process, base) = Launch::new(
            &context.binary("shortener"),
            "serve",
            dir.path(),
            Path::new("shortener.toml"),
        )
        .stderr(std::fs::File::create(&log)?)
        .listening(STARTUP)
        .with_context(|| {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            format!("stderr:\n{log}\nconfig:\n{toml}")
        })?;
        Ok(Self {
            base,
            _process: process,
            _dir: dir,
        })
    }

    /// Creates a link to [`TARGET`] and returns its URL, `http://ADDRESS/CODE`.
    pub fn create_link(&self) -> anyhow::Result<String> {
        let body = serde_json::json!({ "url": TARGET });
        let (status, answer) = request(
            Method::POST,
            &format!("{}/api/v1/links", self.base),
            Some(body),
        )?;
        ensure!(status == 201, "creating a link answered {status}: {answer}");
        let link: serde_json::Value = serde_json::from_str(&answer)?;
        let code = link["code"]
            .as_str()
            .with_context(|| format!("no code in {answer}"))?;
        let url = format!("{}/{code}", self.base);
        let (status, _) = request(Method::GET, &url, None)?;
        ensure!(status == 302, "the new link answered {status}, not 302");
        Ok(url)
    }

    /// Creates `count` links to [`TARGET`] through the bulk endpoint (the node needs a
    /// `create` policy that allows them) and follows each once, so that all are cached;
    /// returns their codes.
    pub fn create_cached_links(&self, count: usize) -> anyhow::Result<Vec<String>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let http = shortener_testkit::client();
            let mut codes = Vec::with_capacity(count);
            while codes.len() < count {
                let batch = (count - codes.len()).min(1000);
                let links = vec![serde_json::json!({ "url": TARGET }); batch];
                let response = http
                    .post(format!("{}/api/v1/links/bulk", self.base))
                    .json(&serde_json::json!({ "links": links }))
                    .send()
                    .await?;
                ensure!(
                    response.status() == 200,
                    "a bulk create answered {}",
                    response.status()
                );
                let answer: serde_json::Value = response.json().await?;
                for result in answer["results"].as_array().into_iter().flatten() {
                    let code = result["link"]["code"]
                        .as_str()
                        .with_context(|| format!("a bulk item was not created: {result}"))?;
                    codes.push(code.to_owned());
                }
            }
            for code in &codes {
                let response = http.get(format!("{}/{code}", self.base)).send().await?;
                ensure!(
                    response.status() == 302,
                    "{code} answered {}",
                    response.status()
                );
            }
            Ok(codes)
        })
    }

    /// The value of one counter of `/metrics` (summed over its label sets), 0 when absent.
    pub fn counter(&self, name: &str) -> anyhow::Result<f64> {
        let (status, text) = request(Method::GET, &format!("{}/metrics", self.base), None)?;
        ensure!(status == 200, "/metrics answered {status}");
        Ok((text.lines())
            .filter(|line| {
                line.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with([' ', '{']))
            })
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }
}

/// One request, on a runtime of its own: the harness is synchronous, and the few requests
/// it makes (a link to load, `/metrics`) need no shared one. Redirects are not followed.
fn request(
    method: Method,
    url: &str,
    body: Option<serde_json::Value>,
) -> anyhow::Result<(u16, String)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut request = shortener_testkit::client().request(method, url);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("no answer from {url}"))?;
        Ok((response.status().as_u16(), response.text().await?))
    })
}

/// The poem ceiling, and its `http://ADDRESS`.
pub fn ceiling(context: &Context) -> anyhow::Result<(Guard, String)> {
    let mut command = Command::new(context.binary("ceiling"));
    Ok(spawn_listening(
        "ceiling",
        &mut command,
        "ceiling listening on ",
        STARTUP,
    )?)
}

/// A throwaway database (dropped last, after the nodes that use it) on the PostgreSQL of
/// the tests (`SHORTENER_TEST_PG_URL`, else 127.0.0.1:5432), else on a throwaway cluster;
/// the cluster, if any, outlives the database (fields drop in order).
pub type Database = (TestDatabase, Option<PostgresCluster>);

/// [`Database`], or `None` (said in the progress) when no PostgreSQL can be had: the
/// benchmarks then measure without it.
pub fn database(context: &Context, bench: &str) -> Option<Database> {
    let database = TestDatabase::create_on(&admin_url())
        .map(|database| (database, None))
        .or_else(|_| {
            let cluster = PostgresCluster::start()?;
            Ok::<_, std::io::Error>((TestDatabase::create_on(&cluster.url(""))?, Some(cluster)))
        });
    match database {
        Ok(database) => Some(database),
        Err(error) => {
            context.step(
                bench,
                &format!("no PostgreSQL, so none of its figures: {error}"),
            );
            None
        }
    }
}
