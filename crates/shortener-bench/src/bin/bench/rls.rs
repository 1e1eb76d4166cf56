//! Benchmark 7: decisions of one descriptor through the gRPC of `shortener ratelimit-server`
//! against the same decision made in-process (`RedisRateLimiter::acquire_all`), where the
//! CPU goes (the service's, from `/proc`, and Redis's, from `INFO`: the callers, the service
//! and Redis share the cores), and what several clients at once admit beyond a limit.

use anyhow::ensure;
use redis::InfoDict;
use shortener_bench::cpu_seconds;
use shortener_testkit::{TempDir, TestRls, in_parallel};

use super::report::{Section, Unit};
use super::tools::{command_stat, connect, limiter_client, private_redis, redis_limiter};
use super::{Context, TASKS};

/// The limits of the services: `client` (their fixed window, the default) and `bucket` (a
/// token bucket) for `limiter_client --via grpc`, `exact` for exactness.
const RLS_LIMITS: &str = "domain: bench
descriptors:
  - { key: client, rate_limit: { unit: second, requests_per_unit: 100 } }
  - { key: bucket, algorithm: token_bucket, rate_limit: { unit: second, requests_per_unit: 100 } }
  - { key: exact, rate_limit: { unit: minute, requests_per_unit: 10 } }
";
const BUCKET: &str = "gRPC, token bucket";
/// The exactness row: processes x concurrent requests on one descriptor, and its limit.
const PROCESSES: usize = 8;
const REQUESTS: u64 = 25;
const LIMIT: u64 = 10;
const FREE: &str = "gRPC, a free service (bound)";

pub fn run(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    let server = private_redis(context, &[])?;
    let mut redis = connect(&server)?;
    let dir = TempDir::with_prefix("rls")?;
    std::fs::create_dir(dir.path().join("config"))?;
    std::fs::write(dir.path().join("config/bench.yaml"), RLS_LIMITS)?;
    std::fs::write(dir.path().join("config/large.yaml"), large_limits())?;
    let limiter = format!("{}timeout_ms = 2000\n", redis_limiter(server.url()));
    let shortener = context.binaries.join("shortener");
    let start = || TestRls::start_binary(&shortener, dir.path(), &limiter, "");
    let (first, second) = (start()?, start()?);
    let (one, two) = (&first.grpc, &second.grpc);
    context.step(&format!("two services at {one} and {two}"));
    let (ours, theirs) = ("gRPC ShouldRateLimit", "in-process acquire_all");
    let variants = [
        (ours, "grpc"),
        (BUCKET, "grpc --key bucket"),
        (theirs, "all"),
        ("", "exactness"),
    ];
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    context.alternate(&variants, |round, &(label, via)| {
        if via == "exactness" {
            // A fresh descriptor every round.
            let identity = format!("round-{round}-{}", std::process::id());
            let args = format!("--via grpc --grpc {one},{two} --identity {identity}");
            let args = format!("{args} --tasks {REQUESTS}");
            let binaries = &context.binaries;
            let reports = in_parallel(PROCESSES, |_| limiter_client(binaries, &args));
            let reports = reports.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
            let all_decided = reports.iter().all(|report| report.decisions == REQUESTS);
            ensure!(all_decided, "limiter_client: {reports:?}");
            let admitted: u64 = reports.iter().map(|report| report.allowed).sum();
            let over = admitted.saturating_sub(LIMIT) as f64;
            section.push("over-admission", Unit::Count, over);
            let what = format!("{PROCESSES} processes x {REQUESTS} at once, limit {LIMIT}");
            return Ok(format!("{what}: admitted {admitted}"));
        }
        redis::cmd("FLUSHALL").exec(&mut redis)?;
        let before = cpu(first.pid(), &mut redis)?;
        let timed = context.timed_client();
        let args = format!("--via {via} --url {} --grpc {one} {timed}", server.url());
        let report = limiter_client(&context.binaries, &args)?;
        let after = cpu(first.pid(), &mut redis)?;
        let line = section.figures(label, "decisions/s", report.figures);
        let [service, redis_cpu, calls] = [0, 1, 2].map(|i| after[i] - before[i]);
        if calls > 0.0 {
            let redis_us = redis_cpu * 1e6 / calls;
            section.push(&format!("{label} Redis CPU/decision"), Unit::Us, redis_us);
            let caller = report.cpu_seconds * 1e6 / report.decisions.max(1) as f64;
            section.push(&format!("{label} caller CPU/decision"), Unit::Us, caller);
            if label == ours {
                // Decisions/s if the service cost no CPU: the cores over what is left.
                let free = cores * 1e6 / (caller + redis_us);
                section.push(&format!("{FREE} decisions/s"), Unit::PerSecond, free);
                section.push("service CPU/decision", Unit::Us, service * 1e6 / calls);
            }
        }
        Ok(line)
    })?;
    let command = format!(
        "limiter_client --via grpc --grpc RLS --tasks {TASKS} vs limiter_client --via all --tasks {TASKS}"
    );
    let what = "their fixed window (the default) vs a token bucket, through gRPC: decisions/s";
    let pair = format!(
        "limiter_client --via grpc vs limiter_client --via grpc --key bucket --tasks {TASKS}"
    );
    section.versus(what, [ours, BUCKET, "decisions/s"], &pair);
    let what = "their fixed window vs a token bucket, through gRPC: p99 of a decision";
    section.versus(what, [ours, BUCKET, "p99"], &pair);
    let what =
        "gRPC service (fixed window) vs in-process: decisions/s, one descriptor, 64 concurrent";
    section.versus(what, [ours, theirs, "decisions/s"], &command);
    let what = "gRPC service vs in-process: p99 of a decision";
    section.versus(what, [ours, theirs, "p99"], &command);
    let what = "Redis CPU per decision (script calls: one per decision either way)";
    section.versus(what, [ours, theirs, "Redis CPU/decision"], &command);
    let what = "the caller's CPU per decision (limiter_client's own, while it measured)";
    section.versus(what, [ours, theirs, "caller CPU/decision"], &command);
    let what = "gRPC with a service costing no CPU, bound by the caller's and Redis's CPU per decision on these cores, vs in-process: decisions/s";
    section.versus(what, [FREE, theirs, "decisions/s"], &command);
    let what = "the service's own CPU per decision (gRPC, matching, metrics; /proc of the service)";
    section.compare(what, "service CPU/decision", None, &command);
    let what = "over-admission: 8 processes x 25 at once through 2 services, limit 10/min (goal 0)";
    let command = format!(
        "{PROCESSES} x limiter_client --via grpc --grpc RLS1,RLS2 --tasks {REQUESTS} --identity FRESH"
    );
    section.compare(what, "over-admission", None, &command);
    largest_request(context, section, &mut redis, one)?;
    let seconds = context.pick(3.0, 0.5);
    section.notes = vec![
        format!("Ours: two `shortener ratelimit-server` processes (release) on a private Redis, `limiter_client --via grpc` sending `ShouldRateLimit` of the descriptor `client=N` (N random out of 10 000; 100 per second in their fixed window, the default) in domain `bench`, {TASKS} tokio tasks over one HTTP/2 connection to the first service, {seconds} s measured after a warm-up. The token bucket row sends `bucket=N` (`algorithm: token_bucket`, 100 per second) the same way."),
        "Reference: `limiter_client --via all`, the same decision in-process: `RedisRateLimiter::acquire_all` of one demand with the policy the service builds (100 per second: capacity 100, one token every 10 ms), the same tasks and key space.".to_owned(),
        "Redis is flushed before each run. Every call must answer: a run with an error fails.".to_owned(),
        "The callers, the service and Redis share the machine's cores, so the ratio of decisions/s is bounded by the CPU each decision costs in all: through gRPC, the caller's, the service's and Redis's per decision; in-process, the caller's (which then includes the Redis client) and Redis's. The bound row divides the cores by the caller's and Redis's CPU per decision through gRPC: what no service, however cheap, could pass here.".to_owned(),
        format!("The largest request the service accepts: {} descriptors of {} entries, each entry's key and value {} bytes (`rls.max_descriptors`, `max_entries`, `max_entry_bytes` at their defaults), every descriptor matching a limit of the domain `large` (16 nested keys) with values of its own, so each is a Redis key of about 16 KiB; {LARGE_CALLS} calls one after another on a fresh Redis, Redis's `usec_per_call` of EVALSHA, against the same number of calls of one small descriptor.", LARGE.descriptors, LARGE.entries, LARGE.entry_bytes),
        format!("Over-admission: each round, {PROCESSES} `limiter_client` processes at once, each {REQUESTS} concurrent calls on one fresh descriptor `exact=...` (10 per minute) spread over both services; what was admitted beyond {LIMIT}."),
    ];
    Ok(())
}

/// The CPU seconds of the process `pid` and of Redis, and Redis's script calls so far.
fn cpu(pid: u32, redis: &mut redis::Connection) -> anyhow::Result<[f64; 3]> {
    let info: InfoDict = redis::cmd("INFO").arg("cpu").query(redis)?;
    let redis_cpu = |name| info.get::<f64>(name).unwrap_or(0.0);
    let calls = command_stat(redis, "EVALSHA", "calls").unwrap_or(0.0);
    let redis_cpu = redis_cpu("used_cpu_user") + redis_cpu("used_cpu_sys");
    Ok([cpu_seconds(&pid.to_string())?, redis_cpu, calls])
}

/// The largest request the service accepts by default.
const LARGE: shortener_rls::service::RequestBounds = shortener_rls::service::RequestBounds {
    descriptors: 64,
    entries: 16,
    entry_bytes: 1024,
};
const LARGE_CALLS: usize = 20;

/// The domain `large`: a limit at the end of 16 nested keys that match any value.
fn large_limits() -> String {
    let mut yaml = String::from("domain: large\ndescriptors:\n");
    for level in 0..LARGE.entries {
        let indent = "  ".repeat(2 * level + 1);
        yaml.push_str(&format!("{indent}- key: k{level:02}\n"));
        if level + 1 == LARGE.entries {
            yaml.push_str(&format!(
                "{indent}  rate_limit: {{ unit: hour, requests_per_unit: 1000000 }}\n"
            ));
        } else {
            yaml.push_str(&format!("{indent}  descriptors:\n"));
        }
    }
    yaml
}

/// Redis's time per script call of the largest request the service accepts, and of a
/// request of one small descriptor.
fn largest_request(
    context: &Context,
    section: &mut Section,
    redis: &mut redis::Connection,
    grpc: &str,
) -> anyhow::Result<()> {
    use shortener_rls::proto::rate_limit_service_client::RateLimitServiceClient;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let value = |descriptor: usize, entry: usize| {
        let head = format!("{descriptor:02}-{entry:02}-");
        head.clone() + &"v".repeat(LARGE.entry_bytes - "k00".len() - head.len())
    };
    let large = shortener_rls::proto::RateLimitRequest {
        domain: "large".into(),
        descriptors: (0..LARGE.descriptors)
            .map(|descriptor| {
                let entries: Vec<(String, String)> = (0..LARGE.entries)
                    .map(|entry| (format!("k{entry:02}"), value(descriptor, entry)))
                    .collect();
                let entries: Vec<(&str, &str)> = entries
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                shortener_rls::descriptor(&entries)
            })
            .collect(),
        hits_addend: 0,
    };
    let small = shortener_rls::request("bench", &[&[("client", "7")]]);
    for (label, request) in [("largest request", large), ("one descriptor", small)] {
        redis::cmd("FLUSHALL").exec(redis)?;
        redis::cmd("CONFIG").arg("RESETSTAT").exec(redis)?;
        runtime.block_on(async {
            let mut client = RateLimitServiceClient::connect(grpc.to_owned()).await?;
            for _ in 0..LARGE_CALLS {
                let answer = client
                    .should_rate_limit(request.clone())
                    .await?
                    .into_inner();
                ensure!(
                    answer.statuses.len() == request.descriptors.len(),
                    "{answer:?}"
                );
            }
            anyhow::Ok(())
        })?;
        let per_call = command_stat(redis, "EVALSHA", "usec_per_call").unwrap_or(0.0);
        let calls = command_stat(redis, "EVALSHA", "calls").unwrap_or(0.0);
        ensure!(calls > 0.0, "{label}: no script call reached Redis");
        section.push(&format!("{label} Redis time/call"), Unit::Us, per_call);
        context.step(&format!(
            "{label}: {per_call:.0} us of Redis per script call"
        ));
    }
    let what = "Redis time per script call: the largest request accepted (64 x 16 entries of 1 KiB) vs one small descriptor";
    let command = format!("{LARGE_CALLS} x ShouldRateLimit, INFO commandstats usec_per_call");
    section.versus(
        what,
        ["largest request", "one descriptor", "Redis time/call"],
        &command,
    );
    Ok(())
}
