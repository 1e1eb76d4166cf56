//! The processes of the harness, through the test kit so that none outlives or hangs the
//! run: the servers it loads ([`Node`], Redis, PostgreSQL) and the tools
//! it runs ([`stdout`]), wrk and `limiter_client` printing their figures as a JSON line.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use redis::InfoDict;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use shortener_bench::{ClientReport, Figures, TARGET};
use shortener_testkit::postgres::admin_url;
use shortener_testkit::{
    Guard, Launch, PostgresCluster, RedisServer, TempDir, TestDatabase, in_parallel, output_within,
    require_binary,
};

use super::Context;

/// `[storage]` of the embedded default: SQLite in the node's directory.
pub const SQLITE: &str = "[storage]\nkind = \"sqlite\"\nurl = \"sqlite://shortener.db\"\n";
/// A policy no benchmark exhausts: the largest rate a policy accepts, a burst of a billion.
pub const UNLIMITED: &str = "capacity = 1000000000\nrefill_per_sec = 50000.0\n";
pub const STARTUP: Duration = Duration::from_secs(60);

/// Runs `shortener ARGS` (the release build), with none of the shell's `SHORTENER_*`
/// variables; an error, with its standard error, unless it succeeds.
pub fn shortener(context: &Context, args: &[&str]) -> anyhow::Result<()> {
    let mut command = Command::new(context.binaries.join("shortener"));
    stdout(command.args(args).env_clear(), 1800).map(drop)
}

/// `[storage]` of `kind` (`sqlite`, `postgres`) at `url`.
pub fn storage(kind: &str, url: &str) -> String {
    format!("[storage]\nkind = \"{kind}\"\nurl = \"{url}\"\n")
}

pub fn redis_limiter(url: &str) -> String {
    format!("[limiter]\nkind = \"redis\"\nredis_url = \"{url}\"\n")
}

/// A private `redis-server`, once `redis-server` and the `tools` are known to be installed.
pub fn private_redis(context: &Context, tools: &[&str]) -> anyhow::Result<RedisServer> {
    for tool in tools.iter().chain(&["redis-server"]) {
        require_binary(tool)?;
    }
    let server = RedisServer::try_start_private()?;
    context.step(&format!("private redis-server at {}", server.url()));
    Ok(server)
}

pub fn connect(server: &RedisServer) -> anyhow::Result<redis::Connection> {
    Ok(redis::Client::open(server.url())?.get_connection()?)
}

/// A field of `command`'s line in `INFO commandstats`, such as `calls` in
/// `cmdstat_evalsha:calls=10,usec=52,usec_per_call=5.20,rejected_calls=0,failed_calls=0`.
pub fn command_stat(redis: &mut redis::Connection, command: &str, field: &str) -> Option<f64> {
    let stats: InfoDict = redis::cmd("INFO").arg("commandstats").query(redis).ok()?;
    let stats: String = stats.get(&format!("cmdstat_{}", command.to_lowercase()))?;
    let mut pairs = stats.split(',').filter_map(|pair| pair.split_once('='));
    pairs.find(|(name, _)| *name == field)?.1.parse().ok()
}

/// Runs `command` to its end (`seconds` at most), which must succeed; its stdout.
pub fn stdout(command: &mut Command, seconds: u64) -> anyhow::Result<String> {
    let output = output_within(command, Duration::from_secs(seconds))?;
    let [out, err] = [&output.stdout, &output.stderr].map(|out| String::from_utf8_lossy(out));
    let (success, stdout, stderr) = (output.status.success(), out.trim(), err.trim());
    ensure!(success, "{command:?} failed: {stdout} {stderr}");
    Ok(out.into_owned())
}

/// The last line of `stdout` that starts with `{`, parsed.
pub fn json_line<T: DeserializeOwned>(stdout: &str) -> anyhow::Result<T> {
    let line = stdout.lines().rev().find(|line| line.starts_with('{'));
    serde_json::from_str(line.unwrap_or_default()).with_context(|| format!("no figures: {stdout}"))
}

/// The report of `binaries/limiter_client ARGS` (2 minutes at most): decisions, no error.
pub fn limiter_client(binaries: &Path, args: &str) -> anyhow::Result<ClientReport> {
    let mut command = Command::new(binaries.join("limiter_client"));
    let report: ClientReport = json_line(&stdout(command.args(args.split(' ')), 120)?)?;
    let (errors, decisions) = (report.errors, report.decisions);
    ensure!(errors == 0 && decisions > 0, "limiter_client: {report:?}");
    Ok(report)
}

/// Writes the NDJSON file of `shortener import --from ndjson` of `links` (code, target).
pub fn ndjson(file: &Path, links: impl Iterator<Item = (String, String)>) -> anyhow::Result<()> {
    let created_at = "2025-06-01T12:00:00Z";
    let line = |(code, url)| json!({ "code": code, "url": url, "created_at": created_at });
    let text: String = links.map(|link| format!("{}\n", line(link))).collect();
    Ok(std::fs::write(file, text)?)
}

/// A variable of `wrk.lua` that a run sets: (name, value, as the report shows it).
pub type Var<'a> = (&'a str, &'a str, &'a str);
/// POST /api/v1/links instead of a GET of the URL (`wrk.lua` describes the others).
pub const CREATE: Var = ("BENCH_CREATE", "1", "1");

/// One wrk run with `wrk.lua` (in `scripts`) and the variables `env` (the others empty).
#[derive(Debug, Clone, Copy)]
pub struct Wrk<'a> {
    pub scripts: &'a Path,
    pub threads: u32,
    pub connections: u32,
    pub seconds: u32,
    pub env: &'a [Var<'a>],
}

/// What `wrk.lua` printed.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct WrkRun {
    #[serde(flatten)]
    pub figures: Figures,
    pub requests: f64,
    /// Responses whose status was not 2xx or 3xx (a 429, a 404, a 500).
    pub bad_statuses: f64,
    /// Connect, read, write and timeout errors, added up.
    pub socket_errors: f64,
}

impl Wrk<'_> {
    /// The command line, for the report.
    pub fn describe(&self, what: &str) -> String {
        let env = self.env.iter().map(|v| format!("{}={} ", v.0, v.2));
        let (env, options) = (env.collect::<String>(), self.options());
        format!("{env}wrk {options} -s wrk.lua {what}")
    }

    fn options(&self) -> String {
        let (threads, connections, seconds) = (self.threads, self.connections, self.seconds);
        format!("-t{threads} -c{connections} -d{seconds}s")
    }

    pub fn run(&self, url: &str) -> anyhow::Result<WrkRun> {
        let mut command = Command::new("wrk");
        command.args(self.options().split(' ')).arg("-s");
        command.arg(self.scripts.join("wrk.lua")).arg(url);
        for name in ["CREATE", "API_KEY", "CODES", "SEQUENTIAL", "USER_AGENT"] {
            command.env(format!("BENCH_{name}"), "");
        }
        command.envs(self.env.iter().map(|(name, value, _)| (name, value)));
        json_line(&stdout(&mut command, u64::from(self.seconds) + 60)?)
    }

    /// 1 s of it on each URL in turn.
    pub fn warm_up<'u>(mut self, urls: impl IntoIterator<Item = &'u String>) -> anyhow::Result<()> {
        self.seconds = 1;
        urls.into_iter().try_for_each(|url| self.run(url).map(drop))
    }

    /// One run per URL, all at the same time.
    pub fn run_at_once(&self, urls: &[String]) -> anyhow::Result<Vec<WrkRun>> {
        let runs = in_parallel(urls.len(), |index| self.run(&urls[index]));
        runs.into_iter().collect()
    }
}

/// A running `shortener` (release build) in its own directory; stopped on drop.
#[derive(Debug)]
pub struct Node {
    pub base: String,
    /// For the harness's few requests (links, `/metrics`); redirects are not followed.
    http: reqwest::blocking::Client,
    /// The process and its directory, removed once it has stopped (a tuple drops in order).
    process: (Guard, TempDir),
}

impl Node {
    /// A node listening on a free loopback port, with `config` (TOML: everything but
    /// `[server]`; what it leaves out is the built-in default).
    pub fn start(context: &Context, config: &str) -> anyhow::Result<Self> {
        Self::start_binary(&context.binaries.join("shortener"), config)
    }

    /// As [`Node::start`], running `binary` (another build of the server).
    pub fn start_binary(binary: &Path, config: &str) -> anyhow::Result<Self> {
        let dir = TempDir::with_prefix("node")?;
        // The load generator is one client on loopback standing for many: the per-client
        // connection cap would close what wrk opens beyond it (or beside it: a probe).
        let server = "[server]\nbind = \"127.0.0.1:0\"\nmax_connections_per_client = 100000\n";
        let toml = format!("{server}{config}");
        std::fs::write(dir.path().join("shortener.toml"), &toml)?;
        let log = dir.path().join("stderr.log");
        let launch = Launch::new(binary, "serve", dir.path(), Path::new("shortener.toml"));
        let listening = launch
            .stderr(std::fs::File::create(&log)?)
            .listening(STARTUP);
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        let (process, base) = listening.with_context(|| format!("{log}\nconfig:\n{toml}"))?;
        let http = reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none());
        let http = http.timeout(Duration::from_secs(30)).build()?;
        let process = (process, dir);
        Ok(Self {
            base,
            http,
            process,
        })
    }

    /// One link to [`TARGET`], followed once: its URL, `http://ADDRESS/CODE`.
    pub fn create_link(&self) -> anyhow::Result<String> {
        Ok(format!("{}/{}", self.base, self.create_cached_links(1)?[0]))
    }

    /// The code of the link `body` creates (`POST /api/v1/links`), followed once so that
    /// it is cached.
    pub fn create(&self, body: Value) -> anyhow::Result<String> {
        let answer: Value =
            serde_json::from_str(&self.request("/api/v1/links", Some(body), 201)?)?;
        let code = answer["code"]
            .as_str()
            .with_context(|| format!("not created: {answer}"))?;
        self.request(&format!("/{code}"), None, 302)?;
        Ok(code.to_owned())
    }

    /// The codes of `count` links to [`TARGET`], made through the bulk endpoint (the node
    /// needs a `create` policy that allows them) and each followed once, so all are cached.
    pub fn create_cached_links(&self, count: usize) -> anyhow::Result<Vec<String>> {
        let mut codes = Vec::with_capacity(count);
        while codes.len() < count {
            let links = vec![json!({ "url": TARGET }); (count - codes.len()).min(1000)];
            codes.extend(self.bulk(links)?);
        }
        for code in &codes {
            self.request(&format!("/{code}"), None, 302)?;
        }
        Ok(codes)
    }

    /// The codes of the links one `POST /api/v1/links/bulk` of `links` created, all or an error.
    pub fn bulk(&self, links: Vec<Value>) -> anyhow::Result<Vec<String>> {
        let answer = self.request("/api/v1/links/bulk", Some(json!({ "links": links })), 200)?;
        let answer: Value = serde_json::from_str(&answer)?;
        let code = |result: &Value| {
            let code = result["link"]["code"].as_str().map(str::to_owned);
            code.with_context(|| format!("not created: {result}"))
        };
        let results = answer["results"].as_array().into_iter().flatten();
        results.map(code).collect()
    }

    /// The node's resident set (`VmRSS`), in bytes.
    pub fn rss_bytes(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.0.id()))?;
        let line = status.lines().find_map(|line| line.strip_prefix("VmRSS:"));
        let kib = line.and_then(|line| line.trim().strip_suffix(" kB")?.trim().parse::<u64>().ok());
        Ok(kib.context("no VmRSS in /proc/PID/status")? * 1024)
    }

    /// The value of one counter of `/metrics` (summed over its label sets), 0 when absent.
    pub fn counter(&self, name: &str) -> anyhow::Result<f64> {
        let text = self.request("/metrics", None, 200)?;
        let values = text.lines().filter_map(|line| {
            let (metric, _) = line.split_once([' ', '{'])?;
            let value = line.rsplit(' ').next()?.parse::<f64>().ok();
            value.filter(|_| metric == name)
        });
        Ok(values.sum())
    }

    /// The body of a POST of `body` (else a GET), which must answer `status`.
    fn request(&self, path: &str, body: Option<Value>, status: u16) -> anyhow::Result<String> {
        let url = format!("{}{path}", self.base);
        let request = match body {
            Some(body) => self.http.post(&url).json(&body),
            None => self.http.get(&url),
        };
        let response = request
            .send()
            .with_context(|| format!("no answer from {url}"))?;
        let (answer, text) = (response.status(), response.text()?);
        ensure!(answer == status, "{url} answered {answer}: {text}");
        Ok(text)
    }
}

/// A throwaway database on the tests' PostgreSQL (`SHORTENER_TEST_PG_URL`, else 127.0.0.1:5432)
/// or a throwaway cluster, which outlives it (fields drop in order); else `None`, said.
pub fn database(context: &Context) -> Option<(TestDatabase, Option<PostgresCluster>)> {
    let database = TestDatabase::create_on(&admin_url()).map(|database| (database, None));
    let database = database.or_else(|_| {
        let cluster = PostgresCluster::start()?;
        Ok::<_, std::io::Error>((TestDatabase::create_on(&cluster.url(""))?, Some(cluster)))
    });
    let error = |error: &_| context.step(&format!("no PostgreSQL, none of its figures: {error}"));
    database.inspect_err(error).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_report_is_the_last_json_line_one_flat_object() {
        let figures =
            r#"{"rate":2.0,"p50_ms":1.0,"p99_ms":3.0,"decisions":4,"allowed":1,"errors":0}"#;
        let stdout = format!("Running 1s test\n{{\"rate\":1}}\n{figures}\nbye\n");
        let report: ClientReport = json_line(&stdout).unwrap();
        assert!((report.figures.p99_ms - 3.0).abs() < f64::EPSILON);
        assert_eq!((report.decisions, report.allowed), (4, 1));
        assert!(json_line::<ClientReport>("Running 1s test\n").is_err());
    }
}
