//! Benchmark 2: decisions through our client, `RedisRateLimiter` from 64 tokio tasks in one
//! process (`crates/shortener-bench/src/bin/limiter_client.rs`), against redis-benchmark
//! of the same script with 64 clients and no pipelining, on the same private Redis.

use std::process::{Command, Stdio};

use anyhow::{Context as _, bail, ensure};

use super::Context;
use super::redis::{Load, RedisServer, benchmark, calibrate};
use super::report::{Section, Unit};

const SCRIPTS: [(&str, &str, &str); 2] = [
    (
        "token_bucket",
        "token_bucket.lua",
        include_str!("../../../lua/token_bucket.lua"),
    ),
    ("gcra", "gcra.lua", include_str!("../../../lua/gcra.lua")),
];
const TASKS: u32 = 64;

pub fn run(context: &Context) -> anyhow::Result<Section> {
    super::process::require("redis-benchmark")?;
    let client = context.release_binary("shortener-bench", "limiter_client")?;
    let server = RedisServer::start()?;
    let mut connection = server.connect()?;
    context.step(
        "client",
        &format!("private redis-server on port {}", server.port()),
    );
    let seconds = context.seconds(3.0, 0.5);
    let mut section = Section::default();
    for (algorithm, file, source) in SCRIPTS {
        let sha = connection.text(&["SCRIPT", "LOAD", source])?;
        // The key RedisRateLimiter writes for identity N and policy `bench`.
        let words = [
            "EVALSHA",
            &sha,
            "1",
            "rl:{__rand_int__}:bench",
            "100",
            "100000",
            "1",
            "",
            "0",
        ];
        let load = |requests| Load {
            clients: TASKS,
            pipeline: 1,
            requests,
            command: &words,
            leaves_keys: true,
        };
        let requests = calibrate(&server, &load(20_000), seconds)?;
        let client_command = || {
            let mut command = Command::new(&client);
            command
                .args([
                    "--url",
                    &server.url(),
                    "--algorithm",
                    algorithm,
                    "--tasks",
                    &TASKS.to_string(),
                ])
                .args([
                    "--seconds",
                    &seconds.to_string(),
                    "--warmup",
                    &context.seconds(0.5, 0.2).to_string(),
                ]);
            command
        };
        let ours = format!("RedisRateLimiter {file}");
        let theirs = format!("redis-benchmark {file}");
        for round in 1..=context.rounds {
            connection.ok(&["FLUSHALL"])?;
            let run = run_client(&mut client_command())?;
            context.step(
                "client",
                &format!(
                    "round {round}/{}: {ours}: {} (p50 {:.3} ms, p99 {:.3} ms)",
                    context.rounds,
                    Unit::PerSecond.format(run.rps),
                    run.p50_ms,
                    run.p99_ms
                ),
            );
            section
                .series(&format!("{ours} decisions/s"), Unit::PerSecond)
                .values
                .push(run.rps);
            section
                .series(&format!("{ours} p50"), Unit::Millis)
                .values
                .push(run.p50_ms);
            section
                .series(&format!("{ours} p99"), Unit::Millis)
                .values
                .push(run.p99_ms);

            let run = benchmark(&server, &load(requests))?;
            context.step(
                "client",
                &format!(
                    "round {round}/{}: {theirs}: {} (p50 {:.3} ms, p99 {:.3} ms)",
                    context.rounds,
                    Unit::PerSecond.format(run.rps),
                    run.p50_ms,
                    run.p99_ms
                ),
            );
            section
                .series(&format!("{theirs} decisions/s"), Unit::PerSecond)
                .values
                .push(run.rps);
            section
                .series(&format!("{theirs} p50"), Unit::Millis)
                .values
                .push(run.p50_ms);
            section
                .series(&format!("{theirs} p99"), Unit::Millis)
                .values
                .push(run.p99_ms);
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

/// What `limiter_client` printed.
#[derive(Debug)]
struct ClientRun {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn run_client(command: &mut Command) -> anyhow::Result<ClientRun> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .context("cannot run limiter_client")?;
    if !output.status.success() {
        bail!(
            "limiter_client failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let field = |name: &str| -> anyhow::Result<f64> {
        stdout
            .split_whitespace()
            .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
            .and_then(|value| value.parse().ok())
            .with_context(|| format!("no {name} in limiter_client's output: {stdout}"))
    };
    ensure!(
        field("errors")? == 0.0,
        "limiter_client had errors: {stdout}"
    );
    ensure!(
        field("decisions")? > 0.0,
        "limiter_client decided nothing: {stdout}"
    );
    Ok(ClientRun {
        rps: field("rps")?,
        p50_ms: field("p50_ms")?,
        p99_ms: field("p99_ms")?,
    })
}
