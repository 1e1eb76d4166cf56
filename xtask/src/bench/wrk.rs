//! wrk runs and what they print.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

use super::process::{Guard, require};

/// The POST body of the creates benchmarks (`X-API-Key` from `BENCH_API_KEY`, when set).
pub const CREATE_SCRIPT: &str = include_str!("create.lua");

/// Settings of one wrk run.
#[derive(Debug, Clone, Copy)]
pub struct Wrk<'a> {
    pub threads: u32,
    pub connections: u32,
    pub seconds: u32,
    pub script: Option<&'a Path>,
    pub api_key: Option<&'a str>,
}

impl Wrk<'_> {
    /// `-t2 -c64`: two load threads, as many as the machine has cores.
    pub fn standard(seconds: u32) -> Self {
        Wrk {
            threads: 2,
            connections: 64,
            seconds,
            script: None,
            api_key: None,
        }
    }

    fn command(&self, url: &str) -> Command {
        let mut command = Command::new("wrk");
        command
            .arg(format!("-t{}", self.threads))
            .arg(format!("-c{}", self.connections))
            .arg(format!("-d{}s", self.seconds))
            .arg("--latency");
        if let Some(script) = self.script {
            command.arg("-s").arg(script);
        }
        if let Some(key) = self.api_key {
            command.env("BENCH_API_KEY", key);
        }
        command
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// The command line, for the report.
    pub fn describe(&self, what: &str) -> String {
        let script = if self.script.is_some() {
            " -s create.lua"
        } else {
            ""
        };
        format!(
            "wrk -t{} -c{} -d{}s --latency{script} {what}",
            self.threads, self.connections, self.seconds
        )
    }

    pub fn run(&self, url: &str) -> anyhow::Result<WrkRun> {
        self.spawn(url)?.wait()
    }

    /// Starts wrk without waiting, so that several can load several servers at once.
    pub fn spawn(&self, url: &str) -> anyhow::Result<Running> {
        require("wrk")?;
        let guard = Guard::spawn("wrk", &mut self.command(url))?;
        Ok(Running {
            guard,
            url: url.to_owned(),
        })
    }
}

/// A wrk process started by [`Wrk::spawn`]; killed if dropped before [`Running::wait`].
#[derive(Debug)]
pub struct Running {
    guard: Guard,
    url: String,
}

impl Running {
    pub fn wait(self) -> anyhow::Result<WrkRun> {
        let output = self.guard.wait_with_output()?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            bail!(
                "wrk {} failed: {} {}",
                self.url,
                stdout.trim(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        parse(&stdout)
            .with_context(|| format!("cannot read wrk's output for {}: {stdout}", self.url))
    }
}

/// What wrk reported.
#[derive(Debug, Clone, Copy, Default)]
pub struct WrkRun {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub requests: f64,
    pub seconds: f64,
    /// Responses whose status was not 2xx or 3xx (a 429, a 404, a 500).
    pub bad_statuses: f64,
    /// Connect, read, write and timeout errors, added up.
    pub socket_errors: f64,
}

fn parse(output: &str) -> Option<WrkRun> {
    let mut run = WrkRun::default();
    for line in output.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("Requests/sec:") {
            run.rps = rest.trim().parse().ok()?;
        } else if let Some(rest) = line.strip_prefix("50%") {
            run.p50_ms = millis(rest.trim())?;
        } else if let Some(rest) = line.strip_prefix("99%") {
            run.p99_ms = millis(rest.trim())?;
        } else if let Some((requests, rest)) = line.split_once(" requests in ") {
            run.requests = requests.trim().parse().ok()?;
            run.seconds = millis(rest.split(',').next()?.trim())? / 1000.0;
        } else if let Some(rest) = line.strip_prefix("Non-2xx or 3xx responses:") {
            run.bad_statuses = rest.trim().parse().ok()?;
        } else if let Some(rest) = line.strip_prefix("Socket errors:") {
            // connect 0, read 0, write 0, timeout 0
            run.socket_errors = rest
                .split(',')
                .filter_map(|part| part.split_whitespace().nth(1)?.parse::<f64>().ok())
                .sum();
        }
    }
    (run.rps > 0.0 && run.seconds > 0.0).then_some(run)
}

/// `518.00us`, `2.80ms`, `1.02s`, `1.00m` in milliseconds.
fn millis(text: &str) -> Option<f64> {
    let split = text.find(|character: char| character.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    Some(match unit {
        "us" => number / 1000.0,
        "ms" => number,
        "s" => number * 1000.0,
        "m" => number * 60_000.0,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_wrk_prints() {
        let output = "Running 5s test @ http://127.0.0.1:1/abc
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   700.00us  300.00us   9.00ms   80.00%
    Req/Sec    40.00k     2.00k   45.00k    70.00%
  Latency Distribution
     50%  518.00us
     75%  800.00us
     90%    1.20ms
     99%    2.80ms
  400000 requests in 5.00s, 50.00MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 7
Requests/sec:  80000.00
Transfer/sec:     10.00MB
";
        let run = parse(output).unwrap();
        assert!((run.rps - 80_000.0).abs() < 1e-9);
        assert!((run.p50_ms - 0.518).abs() < 1e-9);
        assert!((run.p99_ms - 2.8).abs() < 1e-9);
        assert!((run.requests - 400_000.0).abs() < 1e-9);
        assert!((run.seconds - 5.0).abs() < 1e-9);
        assert!((run.bad_statuses - 7.0).abs() < 1e-9);
        assert!((run.socket_errors - 3.0).abs() < 1e-9);
        assert!(parse("nonsense").is_none());
    }
}
