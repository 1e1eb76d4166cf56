//! Benchmark 7: the rate limit service. Decisions of one descriptor through
//! `shortener ratelimit-server`'s gRPC from 64 concurrent callers (`limiter_client --via
//! grpc`), against the same all-or-nothing decision made in-process by
//! `RedisRateLimiter::acquire_all` (`--via all`), on the same private Redis: the cost of
//! the service as a ratio of decisions/s, and p99. Then the exactness row: 8 client
//! processes x 25 concurrent requests through two instances on a fresh descriptor limited
//! to 10 per minute, and what was admitted beyond 10. Beside the ratio, where the CPU
//! goes: the service's CPU time per decision (`/proc`), and Redis's (`INFO`), so that a
//! ratio on a machine where the callers, the service and Redis share the cores can be
//! read for what it is.

use std::process::{Command, Stdio};

use anyhow::{Context as _, ensure};
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
            let before = (cpu_seconds(first.pid())?, redis_cpu(&mut redis)?);
            let report = limiter_client(&mut client(via))?;
            let after = (cpu_seconds(first.pid())?, redis_cpu(&mut redis)?);
            context.round("rls", round, &format!("{label}: {}", report.figures));
            section.figures(label, "decisions/s", report.figures);
            let calls = (after.1).1 - (before.1).1;
            if calls > 0.0 {
                let per_call = |seconds: f64| seconds * 1e6 / calls;
                section.push(
                    &format!("{label} Redis CPU/decision"),
                    Unit::Micros,
                    per_call((after.1).0 - (before.1).0),
                );
                if via == "grpc" {
                    section.push(
                        "service CPU/decision",
                        Unit::Micros,
                        per_call(after.0 - before.0),
                    );
                }
            }
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
        "Redis CPU per decision (script calls: one per decision either way)",
        &format!("{ours} Redis CPU/decision"),
        Some(&format!("{theirs} Redis CPU/decision")),
        &command,
    );
    section.compare(
        "the service's own CPU per decision (gRPC, matching, metrics; /proc of the service)",
        "service CPU/decision",
        None,
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

/// The CPU time a process has used, user and system, in seconds (`/proc/<pid>/stat`).
fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |index: usize| -> anyhow::Result<f64> {
        Ok(fields
            .get(index)
            .context("short /proc stat")?
            .parse::<f64>()?)
    };
    let per_second = *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|output| String::from_utf8(output.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    });
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Ok((ticks(11)? + ticks(12)?) / per_second)
}

/// Redis's CPU seconds (user and system) and its script calls so far (`INFO`).
fn redis_cpu(redis: &mut redis::Connection) -> anyhow::Result<(f64, f64)> {
    let info: String = redis::cmd("INFO").arg("all").query(redis)?;
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|value| value.trim().parse::<f64>().ok())
    };
    let cpu = field("used_cpu_user:").unwrap_or(0.0) + field("used_cpu_sys:").unwrap_or(0.0);
    let calls = info
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse::<f64>().ok())
        .unwrap_or(0.0);
    Ok((cpu, calls))
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
