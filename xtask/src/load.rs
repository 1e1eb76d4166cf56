//! `cargo xtask load [--terminals T] [--seconds S] [--url U] [--gateway nginx|envoy]`: the
//! experiment the project exists for. T `hey` processes, as from T terminals, create links
//! through the balancer as one client for S seconds; then it prints what was admitted,
//! what was refused, and the bound that admissions must stay under: `capacity + rate *
//! elapsed`, with capacity and rate read from the service's own `RateLimit-Policy` header,
//! or, with `--gateway envoy`, from the `X-RateLimit-Limit` that Envoy builds from the
//! rate limit service's answer (`20, 20;w=60`: 20 at once, 20 a minute). However many terminals
//! pound the service, the admitted count stays at the bound and only the refusals grow.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// Concurrent requests of each `hey` process.
const WORKERS_PER_TERMINAL: u32 = 4;

/// `cargo xtask load`.
#[derive(Debug, clap::Args)]
pub struct Options {
    /// `hey` processes, as from as many terminals.
    #[arg(long, value_name = "T", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    terminals: u32,
    /// How long they create.
    #[arg(long, value_name = "S", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=600))]
    seconds: u32,
    /// The gateway.
    #[arg(long, value_name = "U", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// Which gateway answers there: its limit is read from the service's `RateLimit-Policy`
    /// (nginx) or from Envoy's `X-RateLimit-Limit`.
    #[arg(long, value_enum, default_value_t = crate::up::GatewayMode::Nginx)]
    gateway: crate::up::GatewayMode,
}

pub fn run(options: &Options) -> anyhow::Result<()> {
    let (terminals, seconds) = (options.terminals, options.seconds);
    let url = options.url.trim_end_matches('/');
    let envoy = options.gateway == crate::up::GatewayMode::Envoy;
    crate::services::require_binary("hey")?;
    let create = format!("{url}/api/v1/links");
    let body = r#"{"url": "https://example.com/load"}"#;

    // One create first, for the policy in force; it counts like the others.
    let started = Instant::now();
    let probe = probe(&create, body, envoy)?;
    let Some((capacity, window)) = probe.policy else {
        let header = if envoy {
            "an X-RateLimit-Limit header: Envoy's rate limit service sent no status"
        } else {
            "a RateLimit-Policy header: no create policy is configured"
        };
        bail!("{create} answered {} without {header}", probe.status);
    };
    let rate = capacity as f64 / window as f64;
    eprintln!(
        "xtask load: {terminals} terminals of hey ({WORKERS_PER_TERMINAL} workers each) for {seconds} s \
         against {create}; policy: {capacity} at once, {rate:.2}/s"
    );
    let outputs = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..terminals)
            .map(|_| {
                scope.spawn(|| {
                    Command::new("hey")
                        .args([
                            "-z",
                            &format!("{seconds}s"),
                            "-c",
                            &WORKERS_PER_TERMINAL.to_string(),
                        ])
                        .args([
                            "-m",
                            "POST",
                            "-T",
                            "application/json",
                            "-d",
                            body,
                            "-o",
                            "csv",
                        ])
                        .arg(&create)
                        .output()
                })
            })
            .collect();
        runs.into_iter()
            .map(|run| run.join().expect("a hey thread panicked"))
            .collect::<Result<Vec<_>, _>>()
    })
    .context("cannot run hey")?;
    let elapsed = started.elapsed();

    let mut tally = Tally::default();
    tally.add(probe.status);
    for output in &outputs {
        if !output.status.success() {
            bail!(
                "hey failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        for status in statuses(&String::from_utf8_lossy(&output.stdout))? {
            tally.add(status);
        }
    }
    let bound = capacity as f64 + rate * elapsed.as_secs_f64();
    println!("terminals   {terminals}");
    println!(
        "requests    {}",
        tally.admitted + tally.refused + tally.other
    );
    println!("admitted    {} (201)", tally.admitted);
    println!("refused     {} (429)", tally.refused);
    if tally.other > 0 {
        println!("other       {} (neither 201 nor 429)", tally.other);
    }
    println!("elapsed     {:.2} s", elapsed.as_secs_f64());
    println!(
        "bound       {bound:.1} = {capacity} + {rate:.2}/s * {:.2} s",
        elapsed.as_secs_f64()
    );
    println!("admitted / bound  {:.3}", tally.admitted as f64 / bound);
    if tally.admitted as f64 > bound {
        bail!(
            "over-admission: {} admitted, bound {bound:.1}",
            tally.admitted
        );
    }
    Ok(())
}

#[derive(Debug, Default)]
struct Tally {
    admitted: u64,
    refused: u64,
    other: u64,
}

impl Tally {
    fn add(&mut self, status: u16) {
        match status {
            201 => self.admitted += 1,
            429 => self.refused += 1,
            _ => self.other += 1,
        }
    }
}

/// The status codes of hey's `-o csv` output, by the `status-code` column of its header.
fn statuses(csv: &str) -> anyhow::Result<Vec<u16>> {
    let mut lines = csv.lines();
    let header = lines.next().context("hey printed nothing")?;
    let column = header
        .split(',')
        .position(|name| name.trim() == "status-code")
        .with_context(|| format!("no status-code column in hey's header `{header}`"))?;
    lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            line.split(',')
                .nth(column)
                .and_then(|field| field.trim().parse().ok())
                .with_context(|| format!("hey line without a status: `{line}`"))
        })
        .collect()
}

struct Probe {
    status: u16,
    /// (q, w) of `RateLimit-Policy: "create";q=50;w=5`, or of Envoy's
    /// `X-RateLimit-Limit: 20, 20;w=60`.
    policy: Option<(u64, u64)>,
}

fn probe(url: &str, body: &'static str, envoy: bool) -> anyhow::Result<Probe> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let response = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()?
            .post(url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .with_context(|| format!("{url} does not answer: is `cargo xtask up` running?"))?;
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
        };
        let policy = if envoy {
            header("x-ratelimit-limit").and_then(parse_envoy_limit)
        } else {
            header("ratelimit-policy").and_then(parse_policy)
        };
        Ok(Probe {
            status: response.status().as_u16(),
            policy,
        })
    })
}

fn parse_policy(header: &str) -> Option<(u64, u64)> {
    let mut capacity = None;
    let mut window = None;
    for part in header.split(';').skip(1) {
        match part.trim().split_once('=')? {
            ("q", q) => capacity = q.parse().ok(),
            ("w", w) => window = w.parse().ok(),
            _ => {}
        }
    }
    Some((capacity?, window.filter(|w| *w > 0)?))
}

/// `20, 20;w=60` (Envoy's `DRAFT_VERSION_03` header): the limit, and its window.
fn parse_envoy_limit(header: &str) -> Option<(u64, u64)> {
    let (limit, policy) = header.split_once(',')?;
    let window = policy
        .split(';')
        .find_map(|part| part.trim().strip_prefix("w="))?;
    Some((
        limit.trim().parse().ok()?,
        window.parse().ok().filter(|w| *w > 0)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hey_csv_and_the_policy_header_are_read() {
        let csv = "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,status-code,offset\n\
                   0.0013,0.0004,0,0,0.0009,0,201,0.0002\n0.0011,0,0,0,0.001,0,429,0.0019\n";
        assert_eq!(statuses(csv).unwrap(), [201, 429]);
        assert!(statuses("no,status\n1,2\n").is_err());
        assert_eq!(parse_policy("\"create\";q=50;w=5"), Some((50, 5)));
        assert_eq!(parse_policy("\"create\";q=50"), None);
        assert_eq!(parse_envoy_limit("20, 20;w=60"), Some((20, 60)));
        assert_eq!(parse_envoy_limit("20"), None);
    }
}
