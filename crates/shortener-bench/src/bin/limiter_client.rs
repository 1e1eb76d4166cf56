//! `limiter_client [--url redis://127.0.0.1:PORT] [--algorithm token_bucket|gcra]
//! [--tasks 64] [--keys 10000] [--seconds 3] [--warmup 0.5] [--pool 16] [--workers N]`
//!
//! Decisions per second and latency through `RedisRateLimiter::acquire`: `--tasks` tokio
//! tasks in one process, each deciding on random keys out of `--keys` (policy: capacity
//! 100, one token per 100 000 us), for `--warmup` unmeasured and then `--seconds` measured.
//! Prints one line, `decisions=.. rps=.. p50_ms=.. p99_ms=.. allowed=.. errors=..`, for
//! `cargo xtask bench`. Without `--url` it starts a private `redis-server` of its own.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shortener_bench::{Args, IDENTITIES, Latencies, Rng, identities};
use shortener_core::{Algorithm, Policy, RateLimiter as _};
use shortener_redis::{RedisConfig, RedisRateLimiter};
use shortener_testkit::RedisServer;

const FLAGS: &[&str] = &[
    "url",
    "algorithm",
    "tasks",
    "keys",
    "seconds",
    "warmup",
    "pool",
    "workers",
];

/// What one task counted in the measured window.
#[derive(Debug, Default)]
struct Tally {
    decisions: u64,
    allowed: u64,
    errors: u64,
    latencies: Latencies,
}

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("limiter_client: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<String, String> {
    let args = Args::from_env()?;
    if let Some(flag) = args.unknown(FLAGS).first() {
        return Err(format!("unknown flag --{flag}"));
    }
    let algorithm = match args.get("algorithm").unwrap_or("token_bucket") {
        "token_bucket" => Algorithm::TokenBucket,
        "gcra" => Algorithm::Gcra,
        other => return Err(format!("unknown algorithm `{other}`: token_bucket or gcra")),
    };
    let tasks: usize = args.parsed("tasks", 64)?;
    let keys: usize = args.parsed("keys", IDENTITIES)?;
    let seconds = args.seconds("seconds", Duration::from_secs(3))?;
    let warmup = args.seconds("warmup", Duration::from_millis(500))?;
    let pool_size: usize = args.parsed("pool", RedisConfig::default().pool_size)?;
    if tasks == 0 || keys == 0 || pool_size == 0 || seconds.is_zero() {
        return Err("--tasks, --keys, --pool and --seconds must be above 0".to_owned());
    }
    // Kept alive until the run ends; dropping it kills the server.
    let private_server;
    let url = match args.get("url") {
        Some(url) => url.to_owned(),
        None => {
            private_server = RedisServer::try_start_private().map_err(|error| error.to_string())?;
            private_server.url().to_owned()
        }
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = args.get("workers") {
        let workers = workers
            .parse()
            .map_err(|_| format!("bad value `{workers}` for --workers"))?;
        runtime.worker_threads(workers);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start tokio: {error}"))?;
    let config = RedisConfig {
        url: url.into(),
        algorithm,
        pool_size,
        // Generous: a slow call should show in p99, not turn into an error.
        timeout: Duration::from_secs(2),
        ..RedisConfig::default()
    };
    let tally = runtime.block_on(drive(config, tasks, keys, warmup, seconds))?;
    Ok(line(tally, seconds))
}

async fn drive(
    config: RedisConfig,
    tasks: usize,
    keys: usize,
    warmup: Duration,
    seconds: Duration,
) -> Result<Tally, String> {
    let limiter = Arc::new(
        RedisRateLimiter::connect(config)
            .await
            .map_err(|error| error.to_string())?,
    );
    let policy =
        Arc::new(Policy::from_interval("bench", 100, 100_000).map_err(|error| error.to_string())?);
    let identities = Arc::new(identities(keys));
    let measure_from = Instant::now() + warmup;
    let until = measure_from + seconds;
    let mut handles = Vec::with_capacity(tasks);
    for task in 0..tasks {
        let (limiter, policy, identities) = (limiter.clone(), policy.clone(), identities.clone());
        handles.push(tokio::spawn(async move {
            let mut rng = Rng::new(0x5EED ^ ((task as u64) << 32));
            let mut tally = Tally::default();
            loop {
                let started = Instant::now();
                if started >= until {
                    return tally;
                }
                let identity = &identities[rng.below(identities.len())];
                let result = limiter.acquire(identity, &policy, 1).await;
                if started < measure_from {
                    continue;
                }
                tally.latencies.record(started.elapsed());
                tally.decisions += 1;
                match result {
                    Ok(decision) => tally.allowed += u64::from(decision.allowed),
                    Err(_) => tally.errors += 1,
                }
            }
        }));
    }
    let mut total = Tally::default();
    for handle in handles {
        let tally = handle
            .await
            .map_err(|error| format!("a task failed: {error}"))?;
        total.decisions += tally.decisions;
        total.allowed += tally.allowed;
        total.errors += tally.errors;
        total.latencies.merge(tally.latencies);
    }
    Ok(total)
}

fn line(mut tally: Tally, seconds: Duration) -> String {
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let rps = tally.decisions as f64 / seconds.as_secs_f64();
    format!(
        "decisions={} rps={rps:.0} p50_ms={:.3} p99_ms={:.3} allowed={} errors={}",
        tally.decisions,
        tally.latencies.quantile_ms(0.50),
        tally.latencies.quantile_ms(0.99),
        tally.allowed,
        tally.errors,
    )
}
