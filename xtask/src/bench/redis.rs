//! A private `redis-server` for the benchmarks (never the shared one on 6379), a minimal
//! RESP client to drive it, and redis-benchmark with its result checked.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};

use super::process::require;

/// The test kit's private `redis-server` on a free loopback port, with nothing kept on
/// disk; killed on drop.
#[derive(Debug)]
pub struct RedisServer(shortener_testkit::RedisServer);

impl RedisServer {
    pub fn start() -> anyhow::Result<Self> {
        require("redis-server")?;
        Ok(Self(shortener_testkit::RedisServer::try_start_private()?))
    }

    pub fn port(&self) -> u16 {
        self.0.port().expect("a private server has a port")
    }

    pub fn url(&self) -> String {
        self.0.url().to_owned()
    }

    pub fn connect(&self) -> anyhow::Result<Connection> {
        let stream = TcpStream::connect(("127.0.0.1", self.port()))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Connection {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }
}

/// One RESP2 connection.
#[derive(Debug)]
pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Integer(i64),
    Bulk(Option<String>),
    Array(Option<Vec<Reply>>),
}

impl Connection {
    /// Sends one command and reads its reply (an error reply is a reply, not an `Err`).
    pub fn call(&mut self, args: &[&str]) -> anyhow::Result<Reply> {
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        self.writer.write_all(request.as_bytes())?;
        self.read_reply()
    }

    /// As [`Connection::call`], with an error reply turned into an `Err` naming the command.
    pub fn ok(&mut self, args: &[&str]) -> anyhow::Result<Reply> {
        match self.call(args)? {
            Reply::Error(error) => bail!(
                "redis answered `{}` with an error: {error}",
                args.first().unwrap_or(&"")
            ),
            reply => Ok(reply),
        }
    }

    /// A bulk string reply (`INFO`, `SCRIPT LOAD`).
    pub fn text(&mut self, args: &[&str]) -> anyhow::Result<String> {
        match self.ok(args)? {
            Reply::Bulk(Some(text)) | Reply::Simple(text) => Ok(text),
            other => bail!("redis answered `{}` with {other:?}", args.join(" ")),
        }
    }

    pub fn integer(&mut self, args: &[&str]) -> anyhow::Result<i64> {
        match self.ok(args)? {
            Reply::Integer(value) => Ok(value),
            other => bail!("redis answered `{}` with {other:?}", args.join(" ")),
        }
    }

    fn read_reply(&mut self) -> anyhow::Result<Reply> {
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        let line = line
            .strip_suffix("\r\n")
            .with_context(|| format!("truncated RESP line {line:?}"))?;
        let (kind, rest) = line.split_at_checked(1).context("empty RESP line")?;
        Ok(match kind {
            "+" => Reply::Simple(rest.to_owned()),
            "-" => Reply::Error(rest.to_owned()),
            ":" => Reply::Integer(rest.parse()?),
            "$" => {
                let Ok(length) = usize::try_from(rest.parse::<i64>()?) else {
                    return Ok(Reply::Bulk(None));
                };
                let mut bytes = vec![0; length + 2];
                self.reader.read_exact(&mut bytes)?;
                bytes.truncate(length);
                Reply::Bulk(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
            "*" => {
                let Ok(count) = usize::try_from(rest.parse::<i64>()?) else {
                    return Ok(Reply::Array(None));
                };
                Reply::Array(Some(
                    (0..count)
                        .map(|_| self.read_reply())
                        .collect::<anyhow::Result<_>>()?,
                ))
            }
            _ => bail!("unknown RESP reply {line:?}"),
        })
    }
}

/// The `key=value` fields of one `INFO` line such as
/// `cmdstat_evalsha:calls=10,usec=52,usec_per_call=5.20,rejected_calls=0,failed_calls=0`.
pub fn info_fields(info: &str, name: &str) -> Option<Vec<(String, String)>> {
    let line = info
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))?;
    Some(
        line.trim()
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect(),
    )
}

/// One field of [`info_fields`], as a number.
pub fn info_number(info: &str, name: &str, field: &str) -> Option<f64> {
    info_fields(info, name)?
        .into_iter()
        .find(|(key, _)| key == field)?
        .1
        .parse()
        .ok()
}

/// What redis-benchmark reports for one test (`--csv`), and Redis's own view of the run.
#[derive(Debug, Clone, Copy)]
pub struct BenchmarkRun {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// `usec_per_call` of the command in `INFO commandstats`.
    pub usec_per_call: f64,
}

/// Settings of one redis-benchmark run.
#[derive(Debug, Clone, Copy)]
pub struct Load<'a> {
    pub clients: u32,
    pub pipeline: u32,
    pub requests: u64,
    /// The command, `__rand_int__` in a key being replaced by a random number below 10 000.
    pub command: &'a [&'a str],
    /// The command leaves keys behind: checked right after the run, since a script that got
    /// the wrong arguments (say an empty one dropped) can write keys that expire at once.
    pub leaves_keys: bool,
}

impl Load<'_> {
    /// The command line, for the report (with the script's SHA-1 named `sha`).
    pub fn describe(&self, sha: Option<(&str, &str)>) -> String {
        let words: Vec<String> = self
            .command
            .iter()
            .map(|word| match sha {
                Some((hash, name)) if *word == hash => format!("<sha of {name}>"),
                _ if word.is_empty() => "\"\"".to_owned(),
                _ => (*word).to_owned(),
            })
            .collect();
        format!(
            "redis-benchmark -c {} -P {} -r 10000 -n N {}",
            self.clients,
            self.pipeline,
            words.join(" ")
        )
    }
}

/// Runs redis-benchmark on a flushed server with fresh statistics, then checks with Redis
/// that every call succeeded (an error reply is fast and would fake a great figure): no
/// `errorstats`, no failed or rejected calls, and at least as many calls as requests.
pub fn benchmark(server: &RedisServer, load: &Load<'_>) -> anyhow::Result<BenchmarkRun> {
    require("redis-benchmark")?;
    let mut connection = server.connect()?;
    connection.ok(&["FLUSHALL"])?;
    connection.ok(&["CONFIG", "RESETSTAT"])?;
    let output = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args([
            "-c",
            &load.clients.to_string(),
            "-P",
            &load.pipeline.to_string(),
        ])
        .args(["-r", "10000", "-n", &load.requests.to_string(), "--csv"])
        .args(load.command)
        .stdin(Stdio::null())
        .output()
        .context("cannot run redis-benchmark")?;
    ensure!(
        output.status.success(),
        "redis-benchmark failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let fields: Vec<f64> = stdout
        .lines()
        .last()
        .unwrap_or_default()
        .rsplitn(8, ',')
        .take(7)
        .map(|field| field.trim_matches('"').parse().unwrap_or(f64::NAN))
        .collect();
    // Reversed: max, p99, p95, p50, min, avg, rps.
    let &[_, p99_ms, _, p50_ms, _, _, rps] = fields.as_slice() else {
        bail!("cannot read redis-benchmark's output: {stdout}");
    };
    ensure!(
        rps.is_finite() && rps > 0.0,
        "cannot read redis-benchmark's output: {stdout}"
    );

    if load.leaves_keys {
        ensure!(
            connection.integer(&["DBSIZE"])? > 0,
            "no key left after `{}`",
            load.command.join(" ")
        );
    }
    let errors = connection.text(&["INFO", "errorstats"])?;
    let errors: Vec<&str> = errors
        .lines()
        .filter(|line| line.starts_with("errorstat_"))
        .collect();
    ensure!(
        errors.is_empty(),
        "the benchmarked command failed in Redis: {}",
        errors.join(", ")
    );
    let name = format!("cmdstat_{}", load.command[0].to_lowercase());
    let stats = connection.text(&["INFO", "commandstats"])?;
    let number = |field: &str| {
        info_number(&stats, &name, field).with_context(|| format!("no {name}.{field} in INFO"))
    };
    let calls = number("calls")?;
    ensure!(
        number("failed_calls")? == 0.0 && number("rejected_calls")? == 0.0,
        "{name}: failed or rejected calls"
    );
    // Exact: request counts are far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let requests = load.requests as f64;
    ensure!(
        calls >= requests,
        "{name}: {calls} calls for {requests} requests"
    );
    Ok(BenchmarkRun {
        rps,
        p50_ms,
        p99_ms,
        usec_per_call: number("usec_per_call")?,
    })
}

/// The number of requests that makes one run last about `seconds`, from a short run
/// (which doubles as a warm-up): at least 10 000.
pub fn calibrate(server: &RedisServer, load: &Load<'_>, seconds: f64) -> anyhow::Result<u64> {
    let probe = benchmark(server, load)?;
    // A positive, finite product well inside u64.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let requests = (probe.rps * seconds).round() as u64;
    Ok(requests.max(10_000))
}
