//! `limiter_client`: decisions per second and latency of the limiter alone (not a load test
//! of the service): `--tasks` tokio tasks on the default multi-threaded runtime, each
//! deciding on random keys out of 10 000, `--warmup` seconds unmeasured, then `--seconds`
//! measured. Prints one JSON line, a [`ClientReport`], for the harness.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use shortener_bench::{ClientReport, Figures, IDENTITIES, Rng, cpu_seconds, identities, policy};
use shortener_core::{Algorithm, Demand, MultiRateLimiter as _, Policy, RateLimiter as _};
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_rls::limits::{Unit, policy_for};
use shortener_rls::proto::rate_limit_response::Code;
use shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient;
use tonic::transport::Channel;

/// Decisions per second and latency of the limiter alone.
#[derive(Debug, Parser)]
struct Args {
    /// The Redis to decide on (`--via direct` and `all`).
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
    /// `direct`: `RedisRateLimiter::acquire` with the policy of the limiter benchmarks.
    /// `all`: `RedisRateLimiter::acquire_all` of one demand with the policy the rate limit
    /// service builds for `client`: its decision for one descriptor, in-process.
    /// `grpc`: `ShouldRateLimit` of the descriptor `client=<key>` in domain `bench`
    /// (the limits file of the harness's `rls.rs`), spread over the services at `--grpc`.
    #[arg(long, default_value = "direct", value_parser = ["direct", "all", "grpc"])]
    via: String,
    /// The rate limit services of `--via grpc`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    grpc: Vec<String>,
    /// Every task decides once, on this one key, and nothing is timed: the harness's
    /// exactness row counts what was admitted (through gRPC, `exact=NAME`, 10 per minute).
    #[arg(long)]
    identity: Option<String>,
    /// The descriptor key `--via grpc` sends (default: `client`, or `exact` with
    /// `--identity`): the harness's limits file has `client` as a fixed window and
    /// `bucket` as a token bucket, both 100 per second.
    #[arg(long)]
    key: Option<String>,
}

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
            Self::Direct(limiter, policy) => {
                Some(limiter.acquire(identity, policy, 1).await.ok()?.allowed)
            }
            Self::All(limiter, policy) => {
                let demand = Demand {
                    identity: identity.to_owned(),
                    policy: policy.clone(),
                    cost: 1,
                    debt: 0,
                    algorithm: Algorithm::TokenBucket,
                };
                Some(limiter.acquire_all("bench", &[demand]).await.ok()?.allowed)
            }
            Self::Grpc(clients, key) => {
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
    let decider = if args.via == "grpc" {
        ensure!(!args.grpc.is_empty(), "--via grpc needs --grpc URL,...");
        let mut clients = Vec::new();
        for address in &args.grpc {
            clients.push(RateLimitServiceClient::connect(address.clone()).await?);
        }
        let once = args.identity.is_some();
        let key = args
            .key
            .clone()
            .unwrap_or_else(|| if once { "exact" } else { "client" }.to_owned());
        Decider::Grpc(clients, key)
    } else {
        let config = RedisConfig {
            url: args.url.context("--via direct and all need --url")?.into(),
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
            // What the service builds for `client` (`RLS_LIMITS` in bench/rls.rs): capacity
            // 100, one token every 10 ms.
            let policy = policy_for("client", 100, Unit::Second, Algorithm::TokenBucket);
            Decider::All(limiter, policy.ok().flatten().context("a valid policy")?)
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
        // (latency, allowed) of each measured decision; `None` for an error.
        tasks.spawn(async move {
            if let Some(identity) = once {
                return vec![(Duration::ZERO, decider.decide(task, &identity).await)];
            }
            let (mut decisions, mut rng) = (Vec::new(), Rng(0x5EED ^ (task << 32)));
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
    tokio::time::sleep_until(measure_from.into()).await;
    let cpu_before = cpu_seconds("self")?;
    let mut decisions: Vec<_> = tasks.join_all().await.into_iter().flatten().collect();
    let cpu_seconds = cpu_seconds("self")? - cpu_before;
    decisions.sort_unstable_by_key(|(latency, _)| *latency);
    // Nearest rank.
    let quantile_ms = |quantile: f64| {
        let rank = ((decisions.len().max(1) - 1) as f64 * quantile).round() as usize;
        (decisions.get(rank)).map_or(0.0, |(latency, _)| latency.as_secs_f64() * 1e3)
    };
    let count = |wanted| decisions.iter().filter(|(_, d)| *d == wanted).count() as u64;
    // Nothing is timed with --identity.
    let figures = match args.identity {
        Some(_) => Figures::default(),
        None => Figures {
            rate: decisions.len() as f64 / seconds.as_secs_f64(),
            p50_ms: quantile_ms(0.50),
            p99_ms: quantile_ms(0.99),
        },
    };
    let report = ClientReport {
        figures,
        decisions: decisions.len() as u64,
        allowed: count(Some(true)),
        errors: count(None),
        cpu_seconds,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
