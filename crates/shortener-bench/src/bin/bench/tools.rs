//! The load generators: redis-benchmark, with every run checked inside Redis (the `redis`
//! crate), and wrk, whose figures come from the `done` hook of `wrk.lua` as one JSON line.
//! Both run through the test kit's `output_within`, so that neither can hang the run.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use redis::InfoDict;
use serde::Deserialize;
use shortener_bench::Figures;
use shortener_testkit::{RedisServer, output_within};

/// The key of the limiter benchmarks, `__rand_int__` replaced by redis-benchmark with a
/// random number below 10 000 (`-r 10000`).
pub const KEY: &str = "rl:{__rand_int__}:bench";

/// A connection to a private Redis of the test kit.
pub fn connect(server: &RedisServer) -> anyhow::Result<redis::Connection> {
    Ok(redis::Client::open(server.url())?.get_connection()?)
}

/// Settings of one redis-benchmark run.
#[derive(Debug, Clone, Copy)]
pub struct Load<'a> {
    pub clients: u32,
    pub pipeline: u32,
    pub requests: u64,
    /// The command, with [`KEY`] in it.
    pub command: &'a [String],
}

/// What redis-benchmark reports (`--csv`), and Redis's own view of the run.
#[derive(Debug, Clone, Copy)]
pub struct RedisRun {
    pub figures: Figures,
    /// `usec_per_call` of the command in `INFO commandstats`.
    pub usec_per_call: f64,
}

impl Load<'_> {
    /// The command line, for the report (the script's SHA-1 as `<sha of FILE>`).
    pub fn describe(&self, script: Option<(&str, &str)>) -> String {
        let words: Vec<String> = (self.command.iter())
            .map(|word| match script {
                Some((sha, file)) if word == sha => format!("<sha of {file}>"),
                _ if word.is_empty() => "\"\"".to_owned(),
                _ => word.clone(),
            })
            .collect();
        format!(
            "redis-benchmark -c {} -P {} -r 10000 -n N {}",
            self.clients,
            self.pipeline,
            words.join(" ")
        )
    }

    /// Runs redis-benchmark on a flushed server with fresh statistics, then checks with
    /// Redis that every call succeeded (an error reply is fast and would fake a great
    /// figure): keys left behind (checked at once, since a script given wrong arguments can
    /// write keys that expire at once), no `errorstats`, no failed or rejected calls, and
    /// at least as many calls as requests.
    pub fn run(&self, server: &RedisServer) -> anyhow::Result<RedisRun> {
        let mut redis = connect(server)?;
        redis::cmd("FLUSHALL").exec(&mut redis)?;
        redis::cmd("CONFIG").arg("RESETSTAT").exec(&mut redis)?;
        let port = server.port().context("a private server")?.to_string();
        let output = output_within(
            Command::new("redis-benchmark")
                .args(["-h", "127.0.0.1", "-p", &port, "-r", "10000", "--csv"])
                .args([
                    "-c",
                    &self.clients.to_string(),
                    "-P",
                    &self.pipeline.to_string(),
                ])
                .args(["-n", &self.requests.to_string()])
                .args(self.command),
            Duration::from_secs(300),
        )?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        ensure!(
            output.status.success(),
            "redis-benchmark failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
        let fields: Vec<f64> = (stdout.lines().last().unwrap_or_default().rsplitn(8, ','))
            .take(7)
            .map(|field| field.trim_matches('"').parse().unwrap_or(f64::NAN))
            .collect();
        let &[_, p99_ms, _, p50_ms, _, _, rate] = fields.as_slice() else {
            bail!("cannot read redis-benchmark's output: {stdout}");
        };
        ensure!(rate > 0.0, "cannot read redis-benchmark's output: {stdout}");

        let command = self.command.join(" ");
        let keys: u64 = redis::cmd("DBSIZE").query(&mut redis)?;
        ensure!(keys > 0, "no key left after `{command}`");
        let errors: InfoDict = redis::cmd("INFO").arg("errorstats").query(&mut redis)?;
        let errors: Vec<&String> = errors
            .keys()
            .filter(|key| key.starts_with("errorstat_"))
            .collect();
        ensure!(errors.is_empty(), "`{command}` failed in Redis: {errors:?}");
        let name = format!("cmdstat_{}", self.command[0].to_lowercase());
        let stats: InfoDict = redis::cmd("INFO").arg("commandstats").query(&mut redis)?;
        // calls=10,usec=52,usec_per_call=5.20,rejected_calls=0,failed_calls=0
        let stats: String = stats
            .get(&name)
            .with_context(|| format!("no {name} in INFO"))?;
        let number = |field: &str| -> anyhow::Result<f64> {
            (stats.split(','))
                .find_map(|pair| pair.strip_prefix(field)?.strip_prefix('=')?.parse().ok())
                .with_context(|| format!("no {field} in {name}:{stats}"))
        };
        ensure!(
            number("failed_calls")? == 0.0 && number("rejected_calls")? == 0.0,
            "{name}: failed or rejected calls: {stats}"
        );
        // Exact: request counts are far below 2^52.
        #[allow(clippy::cast_precision_loss)]
        let requests = self.requests as f64;
        ensure!(
            number("calls")? >= requests,
            "{name}: {stats} for {requests} requests"
        );
        Ok(RedisRun {
            figures: Figures {
                rate,
                p50_ms,
                p99_ms,
            },
            usec_per_call: number("usec_per_call")?,
        })
    }

    /// The number of requests that makes one run last about `seconds`, from a run of
    /// `self.requests` (which doubles as a warm-up): at least 10 000.
    pub fn calibrate(&self, server: &RedisServer, seconds: f64) -> anyhow::Result<u64> {
        let probe = self.run(server)?;
        // A positive, finite product well inside u64.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let requests = (probe.figures.rate * seconds).round() as u64;
        Ok(requests.max(10_000))
    }
}

/// Settings of one wrk run; every run uses `wrk.lua` (`script`), for its `done` hook.
#[derive(Debug, Clone, Copy)]
pub struct Wrk<'a> {
    pub script: &'a Path,
    pub threads: u32,
    pub connections: u32,
    pub seconds: u32,
    /// POST /api/v1/links instead of GET of the URL.
    pub create: bool,
    /// Sent as `X-API-Key`.
    pub api_key: Option<&'a str>,
    /// A file of codes, one per line: every request is a GET of a random one of them.
    pub codes: Option<&'a Path>,
    /// Sent as `User-Agent` (wrk sends none of its own).
    pub user_agent: Option<&'a str>,
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

impl<'a> Wrk<'a> {
    /// `-t2 -c64`: two load threads, as many as the machine has cores.
    pub fn standard(script: &'a Path, seconds: u32) -> Self {
        Wrk {
            script,
            threads: 2,
            connections: 64,
            seconds,
            create: false,
            api_key: None,
            codes: None,
            user_agent: None,
        }
    }

    /// The command line, for the report.
    pub fn describe(&self, what: &str) -> String {
        let create = if self.create { "BENCH_CREATE=1 " } else { "" };
        let codes = if self.codes.is_some() {
            "BENCH_CODES=codes.txt "
        } else {
            ""
        };
        let agent = if self.user_agent.is_some() {
            "BENCH_USER_AGENT=<a browser's> "
        } else {
            ""
        };
        format!(
            "{create}{codes}{agent}wrk -t{} -c{} -d{}s -s wrk.lua {what}",
            self.threads, self.connections, self.seconds
        )
    }

    pub fn run(&self, url: &str) -> anyhow::Result<WrkRun> {
        let mut command = Command::new("wrk");
        command
            .args([
                format!("-t{}", self.threads),
                format!("-c{}", self.connections),
            ])
            .args([format!("-d{}s", self.seconds), "-s".to_owned()])
            .arg(self.script)
            .arg(url)
            .env("BENCH_CREATE", if self.create { "1" } else { "0" })
            .env("BENCH_API_KEY", self.api_key.unwrap_or_default())
            .env(
                "BENCH_CODES",
                self.codes.map(Path::as_os_str).unwrap_or_default(),
            )
            .env("BENCH_USER_AGENT", self.user_agent.unwrap_or_default());
        let output = output_within(
            &mut command,
            Duration::from_secs(u64::from(self.seconds) + 60),
        )?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        ensure!(
            output.status.success(),
            "wrk {url} failed: {} {}",
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
        let line = stdout.lines().rev().find(|line| line.starts_with('{'));
        serde_json::from_str(line.unwrap_or_default())
            .with_context(|| format!("no figures from wrk.lua for {url}: {stdout}"))
    }

    /// One run per URL, all at the same time.
    pub fn run_at_once(&self, urls: &[String]) -> anyhow::Result<Vec<WrkRun>> {
        std::thread::scope(|scope| {
            let runs: Vec<_> = urls
                .iter()
                .map(|url| scope.spawn(move || self.run(url)))
                .collect();
            runs.into_iter()
                .map(|run| {
                    run.join()
                        .unwrap_or_else(|_| bail!("a wrk thread panicked"))
                })
                .collect()
        })
    }
}
