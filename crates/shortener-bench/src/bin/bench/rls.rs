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

use std::process::Command;

use anyhow::{Context as _, ensure};
use redis::InfoDict;
use shortener_bench::RLS_LIMITS;
use shortener_testkit::{TempDir, TestRls};

use super::Context;
use super::report::{Section, Unit};
use super::servers::private_redis;
use super::tools::{at_once, command_stat, connect, limiter_client};

const TASKS: u32 = 64;
/// The exactness row: processes x concurrent requests, and the limit.
const PROCESSES: usize = 8;
const REQUESTS: u32 = 25;
const LIMIT: u64 = 10;

pub fn run(context: &Context) -> anyhow::Result<Section> {
    let server = private_redis(&[])?;
    let mut redis = connect(&server)?;
    let dir = TempDir::with_prefix("rls")?;
    std::fs::create_dir(dir.path().join("config"))?;
    std::fs::write(dir.path().join("config/bench.yaml"), RLS_LIMITS)?;
    let url = server.url();
    let limiter =
        format!("[limiter]\nkind = \"redis\"\nredis_url = \"{url}\"\ntimeout_ms = 2000\n");
    let shortener = context.binaries.join("shortener");
    let first = TestRls::start_binary(&shortener, dir.path(), &limiter, "")?;
    let second = TestRls::start_binary(&shortener, dir.path(), &limiter, "")?;
    let (one, two) = (&first.grpc, &second.grpc);
    context.step(&format!("two services at {one} and {two}"));
    let seconds = context.seconds(3.0, 0.5);
    let binary = context.binaries.join("limiter_client");
    let client = |args: &[&str]| {
        let mut command = Command::new(&binary);
        command.args(args);
        command
    };
    let (ours, theirs) = ("gRPC ShouldRateLimit", "in-process acquire_all");
    let warmup = context.seconds(0.5, 0.2);
    let timing = format!("--tasks {TASKS} --seconds {seconds} --warmup {warmup}");
    let mut section = Section::default();
    let variants = [(ours, "grpc"), (theirs, "all"), ("", "exactness")];
    context.alternate(&variants, |round, &(label, via)| {
        if via == "exactness" {
            let admitted = exactness(&client, &[&first, &second], round)?;
            #[allow(clippy::cast_precision_loss)] // counts far below 2^52
            let over = admitted.saturating_sub(LIMIT) as f64;
            section.push("over-admission", Unit::Count, over);
            let what = format!("{PROCESSES} processes x {REQUESTS} at once, limit {LIMIT}");
            return Ok(format!("{what}: admitted {admitted}"));
        }
        redis::cmd("FLUSHALL").exec(&mut redis)?;
        let before = (cpu_seconds(first.pid())?, redis_cpu(&mut redis)?);
        let mut command = client(&["--via", via, "--url", url, "--grpc", &first.grpc]);
        let report = limiter_client(command.args(timing.split(' ')))?;
        let after = (cpu_seconds(first.pid())?, redis_cpu(&mut redis)?);
        let line = section.figures(label, "decisions/s", report.figures);
        let calls = after.1.1 - before.1.1;
        if calls > 0.0 {
            let per_call = |seconds: f64| seconds * 1e6 / calls;
            let (redis_cpu, service_cpu) = (after.1.0 - before.1.0, after.0 - before.0);
            let redis_label = format!("{label} Redis CPU/decision");
            section.push(&redis_label, Unit::Micros, per_call(redis_cpu));
            if via == "grpc" {
                section.push("service CPU/decision", Unit::Micros, per_call(service_cpu));
            }
        }
        Ok(line)
    })?;
    let command = format!(
        "limiter_client --via grpc --grpc RLS --tasks {TASKS} vs limiter_client --via all --tasks {TASKS}"
    );
    let what = "gRPC service vs in-process: decisions/s, one descriptor, 64 concurrent";
    section.versus(what, [ours, theirs, "decisions/s"], &command);
    let what = "gRPC service vs in-process: p99 of a decision";
    section.versus(what, [ours, theirs, "p99"], &command);
    let what = "Redis CPU per decision (script calls: one per decision either way)";
    section.versus(what, [ours, theirs, "Redis CPU/decision"], &command);
    let what = "the service's own CPU per decision (gRPC, matching, metrics; /proc of the service)";
    section.compare(what, "service CPU/decision", None, &command);
    let what = "over-admission: 8 processes x 25 at once through 2 services, limit 10/min (goal 0)";
    let command = format!(
        "{PROCESSES} x limiter_client --via grpc --grpc RLS1,RLS2 --tasks {REQUESTS} --identity FRESH"
    );
    section.compare(what, "over-admission", None, &command);
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
    let per_second = *TICKS.get_or_init(|| {
        let output = Command::new("getconf").arg("CLK_TCK").output();
        let text = output.map(|output| output.stdout).unwrap_or_default();
        String::from_utf8_lossy(&text)
            .trim()
            .parse()
            .unwrap_or(100.0)
    });
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // utime and stime, fields 14 and 15 of the line, 12 and 13 after the command name
    // (which is in parentheses and may hold spaces).
    let fields = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let mut fields = fields.split_whitespace().skip(11).map(str::parse::<f64>);
    let (utime, stime) = (fields.next(), fields.next());
    let ticks = utime.zip(stime).context("short /proc stat")?;
    Ok((ticks.0? + ticks.1?) / per_second)
}

/// Redis's CPU seconds (user and system) and its script calls so far (`INFO`).
fn redis_cpu(redis: &mut redis::Connection) -> anyhow::Result<(f64, f64)> {
    let info: InfoDict = redis::cmd("INFO").arg("cpu").query(redis)?;
    let cpu = |name| info.get::<f64>(name).unwrap_or(0.0);
    let calls = command_stat(redis, "EVALSHA", "calls").unwrap_or(0.0);
    Ok((cpu("used_cpu_user") + cpu("used_cpu_sys"), calls))
}

/// What 8 processes x 25 concurrent calls on a fresh descriptor admitted in all.
fn exactness(
    client: &(impl Fn(&[&str]) -> Command + Sync),
    services: &[&TestRls],
    round: usize,
) -> anyhow::Result<u64> {
    let addresses: Vec<&str> = services.iter().map(|rls| rls.grpc.as_str()).collect();
    let identity = format!("round-{round}-{}", std::process::id());
    let args = [
        "--via",
        "grpc",
        "--grpc",
        &addresses.join(","),
        "--identity",
        &identity,
    ];
    let reports = at_once(PROCESSES, |_| {
        limiter_client(client(&args).args(["--tasks", &REQUESTS.to_string()]))
    })?;
    let mut admitted = 0;
    for report in reports {
        ensure!(
            report.decisions == u64::from(REQUESTS),
            "limiter_client: {report:?}"
        );
        admitted += report.allowed;
    }
    Ok(admitted)
}
