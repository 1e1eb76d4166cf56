//! `limiter_client [--url redis://127.0.0.1:PORT] [--algorithm token_bucket|gcra]
//! [--tasks 64] [--seconds 3] [--warmup 0.5] [--via direct|all|grpc] [--grpc URL,...]
//! [--identity NAME]`
//!
//! Decisions per second and latency of the limiter alone (not a load test of the
//! service): `--tasks` tokio tasks on the default multi-threaded runtime, each deciding on
//! random keys out of 10 000, `--warmup` seconds unmeasured and then `--seconds` measured.
//! Prints one JSON line, a [`ClientReport`], for the harness. Without `--url` it starts a
//! private `redis-server` of its own.
//!
//! - `--via direct` (the default): `RedisRateLimiter::acquire` with the [`policy`] of the
//!   limiter benchmarks.
//! - `--via all`: `RedisRateLimiter::acquire_all` of one demand with `rls_policy()`, the
//!   decision the rate limit service makes for one descriptor, in-process.
//! - `--via grpc`: `ShouldRateLimit` of the descriptor `client=<key>` in domain `bench`
//!   (limits file `shortener_bench::RLS_LIMITS`), spread over the services at `--grpc`.
//! - `--identity NAME`: every task decides once, on that one key, and nothing is timed:
//!   the harness's exactness row counts what was admitted (through gRPC, the descriptor
//!   `exact=NAME`, 10 per minute).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use clap::Parser;
use shortener_bench::{ClientReport, Figures, IDENTITIES, Rng, identities, policy, rls_policy};
use shortener_core::{Algorithm, Demand, MultiRateLimiter as _, Policy, RateLimiter as _};
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_rls::proto::rate_limit_response::Code;
use shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient;
use shortener_testkit::RedisServer;
use tonic::transport::Channel;

/// Decisions per second and latency of the limiter alone (see the module doc).
#[derive(Debug, Parser)]
struct Args {
    /// The Redis to decide on; without it, a private `redis-server` of its own.
    #[arg(long)]
    url: Option<String>,
    #[arg(long, default_value = "token_bucket", value_parser = ["token_bucket", "gcra"])]
    algorithm: String,
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    tasks: u64,
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    #[arg(long, default_value = "direct", value_parser = ["direct", "all", "grpc"])]
    via: String,
    /// The rate limit services of `--via grpc`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    grpc: Vec<String>,
    /// Decide once per task on this one key, untimed (the exactness row).
    #[arg(long)]
    identity: Option<String>,
}

/// How one decision is made.
enum Decider {
    Direct(RedisRateLimiter, Policy),
    All(RedisRateLimiter, Policy),
    /// The services, and the descriptor key sent.
    Grpc(Vec<RateLimitServiceClient<Channel>>, &'static str),
}

impl Decider {
    /// Whether `identity` is admitted; `None` for an error.
    async fn decide(&self, task: u64, identity: &str) -> Option<bool> {
        match self {
            Self::Direct(limiter, policy) => {
                let decision = limiter.acquire(identity, policy, 1).await;
                decision.ok().map(|decision| decision.allowed)
            }
            Self::All(limiter, policy) => {
                let demand = Demand {
                    identity: identity.to_owned(),
                    policy: policy.clone(),
                    cost: 1,
                    debt: 0,
                    algorithm: Algorithm::TokenBucket,
                };
                let decision = limiter.acquire_all("bench", &[demand]).await;
                decision.ok().map(|decision| decision.allowed)
            }
            Self::Grpc(clients, key) => {
                #[allow(clippy::cast_possible_truncation)] // an index below the length
                let mut client = clients[task as usize % clients.len()].clone();
                let request = shortener_rls::request("bench", &[&[(key, identity)]]);
                let answer = client.should_rate_limit(request).await.ok()?;
                Some(answer.into_inner().overall_code() == Code::Ok)
            }
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let seconds = Duration::try_from_secs_f64(args.seconds)?;
    let warmup = Duration::try_from_secs_f64(args.warmup)?;
    ensure!(!seconds.is_zero(), "--seconds must be above 0");
    // Kept alive until the run ends; dropping it kills the server.
    let private_server;
    let decider = if args.via == "grpc" {
        if args.grpc.is_empty() {
            bail!("--via grpc needs --grpc URL,...");
        }
        let mut clients = Vec::new();
        for address in &args.grpc {
            clients.push(RateLimitServiceClient::connect(address.clone()).await?);
        }
        let key = if args.identity.is_some() {
            "exact"
        } else {
            "client"
        };
        Decider::Grpc(clients, key)
    } else {
        let url = match args.url {
            Some(url) => url,
            None => {
                private_server = RedisServer::try_start_private()?;
                private_server.url().to_owned()
            }
        };
        let config = RedisConfig {
            url: url.into(),
            algorithm: match args.algorithm.as_str() {
                "gcra" => Algorithm::Gcra,
                _ => Algorithm::TokenBucket,
            },
            // Generous: a slow call should show in p99, not turn into an error.
            timeout: Duration::from_secs(2),
            ..RedisConfig::default()
        };
        let limiter = RedisRateLimiter::connect(config).await?;
        if args.via == "all" {
            Decider::All(limiter, rls_policy())
        } else {
            Decider::Direct(limiter, policy())
        }
    };
    let (decider, identities) = (Arc::new(decider), Arc::new(identities(IDENTITIES)));
    let measure_from = Instant::now() + warmup;
    let until = measure_from + seconds;
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..args.tasks {
        let (decider, identities) = (decider.clone(), identities.clone());
        let once = args.identity.clone();
        tasks.spawn(async move {
            // (latency, allowed) of each measured decision; `None` for an error.
            let mut decisions = Vec::new();
            if let Some(identity) = once {
                decisions.push((Duration::ZERO, decider.decide(task, &identity).await));
                return decisions;
            }
            let mut rng = Rng::new(0x5EED ^ (task << 32));
            loop {
                let started = Instant::now();
                if started >= until {
                    return decisions;
                }
                let identity = &identities[rng.below(identities.len())];
                let result = decider.decide(task, identity).await;
                if started >= measure_from {
                    decisions.push((started.elapsed(), result));
                }
            }
        });
    }
    let mut decisions: Vec<_> = tasks.join_all().await.into_iter().flatten().collect();
    decisions.sort_unstable_by_key(|(latency, _)| *latency);
    // Nearest rank; counts far below 2^52, so the casts are exact.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let quantile_ms = |quantile: f64| {
        let rank = ((decisions.len().max(1) - 1) as f64 * quantile).round() as usize;
        (decisions.get(rank)).map_or(0.0, |(latency, _)| latency.as_secs_f64() * 1e3)
    };
    let count = |wanted| decisions.iter().filter(|(_, d)| *d == wanted).count() as u64;
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let figures = Figures {
        rate: decisions.len() as f64 / seconds.as_secs_f64(),
        p50_ms: quantile_ms(0.50),
        p99_ms: quantile_ms(0.99),
    };
    let report = ClientReport {
        // Nothing is timed with --identity.
        figures: if args.identity.is_some() {
            Figures::default()
        } else {
            figures
        },
        decisions: decisions.len() as u64,
        allowed: count(Some(true)),
        errors: count(None),
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
