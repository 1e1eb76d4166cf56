//! The load generators, run through the test kit's `output_within` so that none can hang
//! the run: redis-benchmark ([`Load`]), every run checked inside Redis; and those that
//! print their figures as one JSON line ([`json_line`]): wrk (the `done` hook of
//! `wrk.lua`, [`Wrk`]) and `limiter_client`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use redis::InfoDict;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use shortener_bench::{ClientReport, Figures};
use shortener_testkit::{RedisServer, in_parallel, output_within};

/// The key of the limiter benchmarks, `__rand_int__` replaced by redis-benchmark with a
/// random number below 10 000 (`-r 10000`).
pub const KEY: &str = "rl:{__rand_int__}:bench";

/// A connection to a private Redis of the test kit.
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
    let [stdout, stderr] =
        [output.stdout, output.stderr].map(|out| String::from_utf8_lossy(&out).into_owned());
    let (out, err) = (stdout.trim(), stderr.trim());
    ensure!(output.status.success(), "{command:?} failed: {out} {err}");
    Ok(stdout)
}

/// The last line of `stdout` that starts with `{`, parsed: how the load generators of this
/// crate report.
pub fn json_line<T: DeserializeOwned>(stdout: &str) -> anyhow::Result<T> {
    let line = stdout.lines().rev().find(|line| line.starts_with('{'));
    serde_json::from_str(line.unwrap_or_default()).with_context(|| format!("no figures: {stdout}"))
}

/// Runs `limiter_client` (2 minutes at most) and reads its report, which must count
/// decisions and no error.
pub fn limiter_client(command: &mut Command) -> anyhow::Result<ClientReport> {
    let report: ClientReport = json_line(&stdout(command, 120)?)?;
    let (errors, decisions) = (report.errors, report.decisions);
    ensure!(errors == 0 && decisions > 0, "limiter_client: {report:?}");
    Ok(report)
}

/// `call(0)`, ..., `call(count - 1)` at the same time, each on a thread of its own.
pub fn at_once<T: Send>(
    count: usize,
    call: impl Fn(usize) -> anyhow::Result<T> + Sync,
) -> anyhow::Result<Vec<T>> {
    in_parallel(count, call).into_iter().collect()
}

/// One redis-benchmark run of `command` (with [`KEY`] in it), `name` standing for a
/// script's SHA-1 in [`Load::describe`].
#[derive(Debug, Clone, Copy)]
pub struct Load<'a> {
    pub clients: u32,
    pub pipeline: u32,
    pub requests: u64,
    pub name: &'a str,
    pub command: &'a [String],
}

impl Load<'_> {
    /// The command line, for the report.
    pub fn describe(&self) -> String {
        let words = (self.command.iter().enumerate()).map(|(index, word)| match word.as_str() {
            _ if index == 1 && self.command[0] == "EVALSHA" => format!("<sha of {}>", self.name),
            "" => "\"\"".to_owned(),
            _ => word.clone(),
        });
        let (clients, pipeline) = (self.clients, self.pipeline);
        let words = words.collect::<Vec<_>>().join(" ");
        format!("redis-benchmark -c {clients} -P {pipeline} -r 10000 -n N {words}")
    }

    /// Runs redis-benchmark on a flushed server with fresh statistics, and returns its
    /// figures and Redis's `usec_per_call`. Every call must have succeeded (an error reply
    /// is fast and would fake a great figure), which Redis tells: keys left behind (checked
    /// at once: a script given wrong arguments can write keys that expire at once), no
    /// `errorstats`, no failed or rejected calls, at least as many calls as requests.
    pub fn run(&self, server: &RedisServer) -> anyhow::Result<(Figures, f64)> {
        let mut redis = connect(server)?;
        redis::cmd("FLUSHALL").exec(&mut redis)?;
        redis::cmd("CONFIG").arg("RESETSTAT").exec(&mut redis)?;
        let port = server.port().context("a private server")?.to_string();
        let mut command = Command::new("redis-benchmark");
        command.args(["-h", "127.0.0.1", "-p", &port, "-r", "10000", "--csv"]);
        command.arg("-c").arg(self.clients.to_string());
        command.arg("-P").arg(self.pipeline.to_string());
        command.arg("-n").arg(self.requests.to_string());
        let stdout = stdout(command.args(self.command), 300)?;
        // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
        let last = stdout.lines().last().unwrap_or_default();
        let fields = (last.rsplitn(8, ',').take(7)).map(|field| field.trim_matches('"').parse());
        let fields: Vec<f64> = fields.map(|field| field.unwrap_or(f64::NAN)).collect();
        let &[_, p99_ms, _, p50_ms, _, _, rate] = fields.as_slice() else {
            bail!("cannot read redis-benchmark's output: {stdout}");
        };
        ensure!(rate > 0.0, "cannot read redis-benchmark's output: {stdout}");

        let command = self.command.join(" ");
        let keys: u64 = redis::cmd("DBSIZE").query(&mut redis)?;
        ensure!(keys > 0, "no key left after `{command}`");
        let errors: InfoDict = redis::cmd("INFO").arg("errorstats").query(&mut redis)?;
        ensure!(errors.is_empty(), "`{command}` failed in Redis: {errors:?}");
        let mut stat = |field| {
            let stat = command_stat(&mut redis, &self.command[0], field);
            stat.with_context(|| format!("no {field} of `{command}` in INFO commandstats"))
        };
        let (failed, rejected, calls) = (
            stat("failed_calls")?,
            stat("rejected_calls")?,
            stat("calls")?,
        );
        ensure!(
            failed + rejected == 0.0,
            "`{command}`: {failed} failed, {rejected} rejected calls"
        );
        #[allow(clippy::cast_precision_loss)] // exact: request counts are far below 2^52
        let requests = self.requests as f64;
        ensure!(
            calls >= requests,
            "`{command}`: {calls} calls for {requests} requests"
        );
        Ok((
            Figures {
                rate,
                p50_ms,
                p99_ms,
            },
            stat("usec_per_call")?,
        ))
    }

    /// The number of requests that makes one run last about `seconds` (at least 10 000),
    /// from a run of `self.requests`, which doubles as a warm-up.
    pub fn calibrate(&self, server: &RedisServer, seconds: f64) -> anyhow::Result<u64> {
        let rate = self.run(server)?.0.rate;
        // Positive, and far inside u64.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(((rate * seconds).round() as u64).max(10_000))
    }
}

/// One wrk run with `wrk.lua` (in `scripts`), whose `done` hook prints its figures.
#[derive(Debug, Clone, Copy)]
pub struct Wrk<'a> {
    pub scripts: &'a Path,
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

impl Wrk<'_> {
    /// The command line, for the report.
    pub fn describe(&self, what: &str) -> String {
        let create = if self.create { "BENCH_CREATE=1 " } else { "" };
        let codes = self.codes.map_or("", |_| "BENCH_CODES=codes.txt ");
        let agent = self
            .user_agent
            .map_or("", |_| "BENCH_USER_AGENT=<a browser's> ");
        let (threads, connections, seconds) = (self.threads, self.connections, self.seconds);
        let wrk = format!("wrk -t{threads} -c{connections} -d{seconds}s -s wrk.lua {what}");
        format!("{create}{codes}{agent}{wrk}")
    }

    pub fn run(&self, url: &str) -> anyhow::Result<WrkRun> {
        let mut command = Command::new("wrk");
        command
            .arg(format!("-t{}", self.threads))
            .arg(format!("-c{}", self.connections));
        command.arg(format!("-d{}s", self.seconds)).arg("-s");
        command.arg(self.scripts.join("wrk.lua")).arg(url);
        command.env("BENCH_CREATE", if self.create { "1" } else { "0" });
        command.env("BENCH_API_KEY", self.api_key.unwrap_or_default());
        command.env(
            "BENCH_CODES",
            self.codes.map(Path::as_os_str).unwrap_or_default(),
        );
        command.env("BENCH_USER_AGENT", self.user_agent.unwrap_or_default());
        json_line(&stdout(&mut command, u64::from(self.seconds) + 60)?)
    }

    /// One run per URL, all at the same time.
    pub fn run_at_once(&self, urls: &[String]) -> anyhow::Result<Vec<WrkRun>> {
        at_once(urls.len(), |index| self.run(&urls[index]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_the_last_json_line() {
        let figures =
            r#"{"rate":2.0,"p50_ms":1.0,"p99_ms":3.0,"decisions":1,"allowed":1,"errors":0}"#;
        let stdout = format!("Running 1s test\n{{\"rate\":1}}\n{figures}\nbye\n");
        let report: ClientReport = json_line(&stdout).unwrap();
        assert!((report.figures.rate - 2.0).abs() < f64::EPSILON);
        assert!(json_line::<ClientReport>("Running 1s test\n").is_err());
    }
}
