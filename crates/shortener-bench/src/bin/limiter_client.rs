//! `limiter_client [--url redis://127.0.0.1:PORT] [--algorithm token_bucket|gcra]
//! [--tasks 64] [--seconds 3] [--warmup 0.5] [--via direct|all|grpc] [--grpc URL,...]
//! [--identity NAME]`
//!
//! Decisions per second and latency: `--tasks` tokio tasks on the default multi-threaded
//! runtime, each deciding on random keys out of 10 000, for `--warmup` seconds unmeasured
//! and then `--seconds` measured. Prints one JSON line, a [`ClientReport`], for the
//! harness. Without `--url` it starts a private `redis-server` of its own. Not a load
//! test of the service: the limiter alone.
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

use anyhow::bail;
use clap::{Parser, ValueEnum};
use shortener_bench::{ClientReport, Figures, IDENTITIES, Rng, identities, policy, rls_policy};
use shortener_core::{Algorithm, Demand, MultiRateLimiter as _, Policy, RateLimiter as _};
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_rls::proto::rate_limit_response::Code;
use shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient;
use shortener_testkit::RedisServer;
use tonic::transport::Channel;

/// How one decision is made.
enum Decider {
    Direct(RedisRateLimiter, Policy),
    All(RedisRateLimiter, Policy),
    /// The services, and the descriptor key sent.
    Grpc(Vec<RateLimitServiceClient<Channel>>, String),
}

impl Decider {
    /// Whether `identity` is admitted; `None` for an error.
    async fn decide(&self, task: u64, identity: &str) -> Option<bool> {
        match self {
            Self::Direct(limiter, policy) => limiter
                .acquire(identity, policy, 1)
                .await
                .ok()
                .map(|decision| decision.allowed),
            Self::All(limiter, policy) => {
                let demand = Demand {
                    identity: identity.to_owned(),
                    policy: policy.clone(),
                    cost: 1,
                    debt: 0,
                    algorithm: Algorithm::TokenBucket,
                };
                limiter
                    .acquire_all("bench", std::slice::from_ref(&demand))
                    .await
                    .ok()
                    .map(|decision| decision.allowed)
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

/// `tasks` decisions at once on `identity`: the report counts what was admitted.
async fn once(decider: &Arc<Decider>, tasks: usize, identity: &str) -> anyhow::Result<()> {
    let calls: Vec<_> = (0..tasks as u64)
        .map(|task| {
            let (decider, identity) = (decider.clone(), identity.to_owned());
            tokio::spawn(async move { decider.decide(task, &identity).await })
        })
        .collect();
    let mut answers = Vec::new();
    for call in calls {
        answers.push(call.await?);
    }
    let report = ClientReport {
        figures: Figures {
            rate: 0.0,
            p50_ms: 0.0,
            p99_ms: 0.0,
        },
        decisions: answers.len() as u64,
        allowed: answers
            .iter()
            .filter(|answer| **answer == Some(true))
            .count() as u64,
        errors: answers.iter().filter(|answer| answer.is_none()).count() as u64,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// Decisions per second and latency of the limiter alone (see the module doc).
#[derive(Debug, Parser)]
struct Args {
    /// The Redis to decide on; without it, a private `redis-server` of its own.
    #[arg(long)]
    url: Option<String>,
    #[arg(long, value_enum, default_value = "token_bucket")]
    algorithm: AlgorithmArg,
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    tasks: u64,
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    #[arg(long, value_enum, default_value = "direct")]
    via: Via,
    /// The rate limit services of `--via grpc`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    grpc: Vec<String>,
    /// Decide once per task on this one key, untimed (the exactness row).
    #[arg(long)]
    identity: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
enum AlgorithmArg {
    TokenBucket,
    Gcra,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Via {
    Direct,
    All,
    Grpc,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let algorithm = match args.algorithm {
        AlgorithmArg::TokenBucket => Algorithm::TokenBucket,
        AlgorithmArg::Gcra => Algorithm::Gcra,
    };
    // A task count far below usize::MAX.
    #[allow(clippy::cast_possible_truncation)]
    let tasks = args.tasks as usize;
    let seconds = Duration::try_from_secs_f64(args.seconds)?;
    let warmup = Duration::try_from_secs_f64(args.warmup)?;
    if seconds.is_zero() {
        bail!("--seconds must be above 0");
    }
    // Kept alive until the run ends; dropping it kills the server.
    let private_server;
    let decider = if args.via == Via::Grpc {
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
        Decider::Grpc(clients, key.to_owned())
    } else {
        let url = match &args.url {
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
        let limiter = RedisRateLimiter::connect(config).await?;
        if args.via == Via::All {
            Decider::All(limiter, rls_policy())
        } else {
            Decider::Direct(limiter, policy())
        }
    };
    let decider = Arc::new(decider);
    if let Some(identity) = &args.identity {
        return once(&decider, tasks, identity).await;
    }
    let identities = Arc::new(identities(IDENTITIES));
    let measure_from = Instant::now() + warmup;
    let until = measure_from + seconds;
    let tasks: Vec<_> = (0..tasks as u64)
        .map(|task| {
            let (decider, identities) = (decider.clone(), identities.clone());
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
                    let result = decider.decide(task, identity).await;
                    if started >= measure_from {
                        decisions.push((started.elapsed(), result));
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
