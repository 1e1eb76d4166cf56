//! Benchmark 7: the rate limit service. Decisions of one descriptor through
//! `shortener ratelimit-server`'s gRPC from 64 concurrent callers (`limiter_client --via
//! grpc`), against the same all-or-nothing decision made in-process by
//! `RedisRateLimiter::acquire_all` (`--via all`), on the same private Redis: the cost of
//! the service as a ratio of decisions/s, and p99. Then the exactness row: 8 client
//! processes x 25 concurrent requests through two instances on a fresh descriptor limited
//! to 10 per minute, and what was admitted beyond 10.

use std::process::{Command, Stdio};

use anyhow::ensure;
use shortener_bench::RLS_LIMITS;
use shortener_testkit::{RedisServer, TempDir, TestRls, require_binary};

use super::Context;
use super::client::{limiter_client, read_report};
use super::report::{Section, Unit};
use super::tools::connect;

const TASKS: u32 = 64;
/// The exactness row: processes x concurrent requests, and the limit.
const PROCESSES: usize = 8;
const REQUESTS: u32 = 25;
const LIMIT: u64 = 10;

pub fn run(context: &Context) -> anyhow::Result<Section> {
    require_binary("redis-server")?;
    let server = RedisServer::try_start_private()?;
    let mut redis = connect(&server)?;
    let dir = TempDir::with_prefix("rls")?;
    std::fs::create_dir(dir.path().join("config"))?;
    std::fs::write(dir.path().join("config/bench.yaml"), RLS_LIMITS)?;
    let limiter = format!(
        "[limiter]\nkind = \"redis\"\nredis_url = \"{}\"\ntimeout_ms = 2000\n",
        server.url()
    );
    let shortener = context.binary("shortener");
    let first = TestRls::start_binary(&shortener, dir.path(), &limiter, "")?;
    let second = TestRls::start_binary(&shortener, dir.path(), &limiter, "")?;
    context.step(
        "rls",
        &format!("two services at {} and {}", first.grpc, second.grpc),
    );
    let seconds = context.seconds(3.0, 0.5);
    let client = |via: &str| {
        let mut command = Command::new(context.binary("limiter_client"));
        command
            .args(["--via", via, "--url", server.url(), "--grpc", &first.grpc])
            .args(["--tasks", &TASKS.to_string()])
            .args(["--seconds", &seconds.to_string()])
            .args(["--warmup", &context.seconds(0.5, 0.2).to_string()]);
        command
    };
    let (ours, theirs) = ("gRPC ShouldRateLimit", "in-process acquire_all");
    let mut section = Section::default();
    for round in 1..=context.rounds {
        for (label, via) in [(ours, "grpc"), (theirs, "all")] {
            redis::cmd("FLUSHALL").exec(&mut redis)?;
            let report = limiter_client(&mut client(via))?;
            context.round("rls", round, &format!("{label}: {}", report.figures));
            section.figures(label, "decisions/s", report.figures);
        }
        let admitted = exactness(context, &[&first, &second], round)?;
        context.round(
            "rls",
            round,
            &format!(
                "{PROCESSES} processes x {REQUESTS} at once, limit {LIMIT}: admitted {admitted}"
            ),
        );
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        section.push(
            "over-admission",
            Unit::Count,
            admitted.saturating_sub(LIMIT) as f64,
        );
    }
    let command = format!(
        "limiter_client --via grpc --grpc RLS --tasks {TASKS} vs limiter_client --via all --tasks {TASKS}"
    );
    section.compare(
        "gRPC service vs in-process: decisions/s, one descriptor, 64 concurrent",
        &format!("{ours} decisions/s"),
        Some(&format!("{theirs} decisions/s")),
        &command,
    );
    section.compare(
        "gRPC service vs in-process: p99 of a decision",
        &format!("{ours} p99"),
        Some(&format!("{theirs} p99")),
        &command,
    );
    section.compare(
        "over-admission: 8 processes x 25 at once through 2 services, limit 10/min (goal 0)",
        "over-admission",
        None,
        &format!(
            "{PROCESSES} x limiter_client --via grpc --grpc RLS1,RLS2 --tasks {REQUESTS} --identity FRESH"
        ),
    );
    section.notes = vec![
        format!("Ours: two `shortener ratelimit-server` processes (release) on a private Redis, `limiter_client --via grpc` sending `ShouldRateLimit` of the descriptor `client=N` (N random out of 10 000) in domain `bench`, {TASKS} tokio tasks over one HTTP/2 connection to the first service, {seconds} s measured after a warm-up."),
        "Reference: `limiter_client --via all`, the same decision in-process: `RedisRateLimiter::acquire_all` of one demand with the policy the service builds (100 per second: capacity 100, one token every 10 ms), the same tasks and key space.".to_owned(),
        "Redis is flushed before each run. Every call must answer: a run with an error fails.".to_owned(),
        format!("Over-admission: each round, {PROCESSES} `limiter_client` processes at once, each {REQUESTS} concurrent calls on one fresh descriptor `exact=...` (10 per minute) spread over both services; what was admitted beyond {LIMIT}."),
    ];
    Ok(section)
}

/// What 8 processes x 25 concurrent calls on a fresh descriptor admitted in all.
fn exactness(context: &Context, services: &[&TestRls], round: usize) -> anyhow::Result<u64> {
    let addresses: Vec<&str> = services.iter().map(|rls| rls.grpc.as_str()).collect();
    let identity = format!("round-{round}-{}", std::process::id());
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            Command::new(context.binary("limiter_client"))
                .args(["--via", "grpc", "--grpc", &addresses.join(",")])
                .args(["--tasks", &REQUESTS.to_string(), "--identity", &identity])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut admitted = 0;
    for child in children {
        let report = read_report(&child.wait_with_output()?)?;
        ensure!(
            report.decisions == u64::from(REQUESTS),
            "limiter_client: {report:?}"
        );
        admitted += report.allowed;
    }
    Ok(admitted)
}
