//! Benchmark 2: decisions through our client, `RedisRateLimiter` from 64 tokio tasks in one
//! process (`limiter_client`), against redis-benchmark of the same script with 64 clients
//! and no pipelining, on the same private Redis.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use shortener_bench::ClientReport;
use shortener_testkit::{RedisServer, output_within, require_binary};

use super::Context;
use super::report::Section;
use super::tools::{KEY, Load, connect};

const SCRIPTS: [(&str, &str, &str); 2] = [
    (
        "token_bucket",
        "token_bucket.lua",
        include_str!("../../../../../lua/token_bucket.lua"),
    ),
    (
        "gcra",
        "gcra.lua",
        include_str!("../../../../../lua/gcra.lua"),
    ),
];
const TASKS: u32 = 64;

/// Runs `limiter_client` to its end (2 minutes at most) and reads its report, which must
/// count decisions and no error.
pub fn limiter_client(command: &mut Command) -> anyhow::Result<ClientReport> {
    let output = output_within(command, Duration::from_secs(120))?;
    read_report(&output)
}

/// The report of a finished `limiter_client`, which must count decisions and no error.
pub fn read_report(output: &std::process::Output) -> anyhow::Result<ClientReport> {
    let report: ClientReport = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "limiter_client failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )
    })?;
    ensure!(
        report.errors == 0 && report.decisions > 0,
        "limiter_client: {report:?}"
    );
    Ok(report)
}

pub fn run(context: &Context) -> anyhow::Result<Section> {
    require_binary("redis-server")?;
    require_binary("redis-benchmark")?;
    let server = RedisServer::try_start_private()?;
    let mut redis = connect(&server)?;
    context.step(
        "client",
        &format!("private redis-server at {}", server.url()),
    );
    let seconds = context.seconds(3.0, 0.5);
    let mut section = Section::default();
    for (algorithm, file, source) in SCRIPTS {
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(source)
            .query(&mut redis)?;
        // The key RedisRateLimiter writes for identity N and policy `bench`.
        let words = ["EVALSHA", &sha, "1", KEY, "100", "100000", "1", "", "0"].map(str::to_owned);
        let load = |requests| Load {
            clients: TASKS,
            pipeline: 1,
            requests,
            command: &words,
        };
        let requests = load(20_000).calibrate(&server, seconds)?;
        let mut client = Command::new(context.binary("limiter_client"));
        client
            .args(["--url", server.url(), "--algorithm", algorithm])
            .args([
                "--tasks",
                &TASKS.to_string(),
                "--seconds",
                &seconds.to_string(),
            ])
            .args(["--warmup", &context.seconds(0.5, 0.2).to_string()]);
        let (ours, theirs) = (
            format!("RedisRateLimiter {file}"),
            format!("redis-benchmark {file}"),
        );
        for round in 1..=context.rounds {
            redis::cmd("FLUSHALL").exec(&mut redis)?;
            let report = limiter_client(&mut client)?;
            context.round("client", round, &format!("{ours}: {}", report.figures));
            section.figures(&ours, "decisions/s", report.figures);

            let run = load(requests).run(&server)?;
            context.round("client", round, &format!("{theirs}: {}", run.figures));
            section.figures(&theirs, "decisions/s", run.figures);
        }
        let command = format!(
            "limiter_client --algorithm {algorithm} --tasks {TASKS} vs {}",
            load(0).describe(Some((&sha, file)))
        );
        section.compare(
            &format!(
                "our client vs redis-benchmark: decisions/s, {file}, 64 concurrent, no pipelining"
            ),
            &format!("{ours} decisions/s"),
            Some(&format!("{theirs} decisions/s")),
            &command,
        );
        section.compare(
            &format!("our client vs redis-benchmark: p99, {file}"),
            &format!("{ours} p99"),
            Some(&format!("{theirs} p99")),
            &command,
        );
    }
    section.notes = vec![
        format!("Ours: `limiter_client` (crates/shortener-bench), {TASKS} tokio tasks on the default multi-threaded runtime in one process, each calling `RedisRateLimiter::acquire` on random keys out of 10 000 through the default pool of multiplexed connections, {seconds} s measured after a warm-up."),
        format!("Reference: redis-benchmark -c {TASKS} -P 1 of the same EVALSHA on the same key shape (`rl:{{N}}:bench`), about {seconds} s a run."),
        "Policy for both: capacity 100, 10/s, cost 1, Redis's clock.".to_owned(),
        "Both run on the same private Redis, flushed before each run; the client's runs must have no errors, redis-benchmark's are checked in Redis.".to_owned(),
    ];
    Ok(section)
}
