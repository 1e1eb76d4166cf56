//! `limiter_client [--url redis://127.0.0.1:PORT] [--algorithm token_bucket|gcra]
//! [--tasks 64] [--seconds 3] [--warmup 0.5]`
//!
//! Decisions per second and latency through `RedisRateLimiter::acquire`: `--tasks` tokio
//! tasks on the default multi-threaded runtime, each deciding on random keys out of 10 000
//! (the [`policy`] of the limiter benchmarks), for `--warmup` seconds unmeasured and then
//! `--seconds` measured. Prints one JSON line, a [`ClientReport`], for the harness. Without
//! `--url` it starts a private `redis-server` of its own. Not a load test of the service:
//! the limiter alone, through our client.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use shortener_bench::{ClientReport, Figures, IDENTITIES, Rng, flags, identities, policy};
use shortener_core::{Algorithm, RateLimiter as _};
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_testkit::RedisServer;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let flags = flags(
        std::env::args().skip(1),
        &["url", "algorithm", "tasks", "seconds", "warmup"],
    )
    .map_err(anyhow::Error::msg)?;
    let number = |name: &str, default: f64| -> anyhow::Result<f64> {
        flags.get(name).map_or(Ok(default), |value| {
            value
                .parse()
                .with_context(|| format!("bad --{name} {value}"))
        })
    };
    let algorithm = match flags
        .get("algorithm")
        .map_or("token_bucket", String::as_str)
    {
        "token_bucket" => Algorithm::TokenBucket,
        "gcra" => Algorithm::Gcra,
        other => bail!("unknown algorithm `{other}`: token_bucket or gcra"),
    };
    // Whole tasks, and seconds that Duration takes: the checks below make the casts exact.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let tasks = number("tasks", 64.0)? as usize;
    let seconds = Duration::try_from_secs_f64(number("seconds", 3.0)?)?;
    let warmup = Duration::try_from_secs_f64(number("warmup", 0.5)?)?;
    if tasks == 0 || seconds.is_zero() {
        bail!("--tasks and --seconds must be above 0");
    }
    // Kept alive until the run ends; dropping it kills the server.
    let private_server;
    let url = match flags.get("url") {
        Some(url) => url.clone(),
        None => {
            private_server = RedisServer::try_start_private()?;
            private_server.url().to_owned()
        }
    };
    let config = RedisConfig {
        url: url.into(),
        algorithm,
        // Generous: a slow call should show in p99, not turn into an error.
        timeout: Duration::from_secs(2),
        ..RedisConfig::default()
    };
    let limiter = Arc::new(RedisRateLimiter::connect(config).await?);
    let (policy, identities) = (Arc::new(policy()), Arc::new(identities(IDENTITIES)));
    let measure_from = Instant::now() + warmup;
    let until = measure_from + seconds;
    let tasks: Vec<_> = (0..tasks as u64)
        .map(|task| {
            let (limiter, policy, identities) =
                (limiter.clone(), policy.clone(), identities.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(0x5EED ^ (task << 32));
                // (latency, allowed) of each measured decision; `None` for an error.
                let mut decisions = Vec::new();
                loop {
                    let started = Instant::now();
                    if started >= until {
                        return decisions;
                    }
                    let identity = &identities[rng.below(identities.len())];
                    let result = limiter.acquire(identity, &policy, 1).await;
                    if started >= measure_from {
                        decisions.push((started.elapsed(), result.ok().map(|d| d.allowed)));
                    }
                }
            })
        })
        .collect();
    let mut decisions = Vec::new();
    for task in tasks {
        decisions.extend(task.await?);
    }
    decisions.sort_unstable_by_key(|(latency, _)| *latency);
    // Nearest rank; counts far below 2^52, so the casts are exact.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let quantile_ms = |quantile: f64| {
        let rank = ((decisions.len().max(1) - 1) as f64 * quantile).round() as usize;
        decisions
            .get(rank)
            .map_or(0.0, |(latency, _)| latency.as_secs_f64() * 1e3)
    };
    let count =
        |wanted: Option<bool>| decisions.iter().filter(|(_, d)| *d == wanted).count() as u64;
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let report = ClientReport {
        figures: Figures {
            rate: decisions.len() as f64 / seconds.as_secs_f64(),
            p50_ms: quantile_ms(0.50),
            p99_ms: quantile_ms(0.99),
        },
        decisions: decisions.len() as u64,
        allowed: count(Some(true)),
        errors: count(None),
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
