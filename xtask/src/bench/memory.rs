//! Benchmark 3: the memory limiter's decisions per second from 1, 2 and 8 threads, with the
//! criterion benchmark `crates/shortener-bench/benches/memory_limiter.rs`, run once per
//! round (1 2 8 1 2 8 ...); each round's figure is criterion's median for that round.

use anyhow::Context as _;

use super::Context;
use super::report::{Section, Unit};

const THREADS: [u32; 3] = [1, 2, 8];

pub fn run(context: &Context) -> anyhow::Result<Section> {
    let (warm_up, measurement) = if context.quick {
        ("0.2", "0.5")
    } else {
        ("1", "3")
    };
    let bench_args = [
        "--warm-up-time",
        warm_up,
        "--measurement-time",
        measurement,
        "--noplot",
    ];
    context.step(
        "memory",
        "cargo bench --no-run -p shortener-bench --bench memory_limiter",
    );
    crate::run(crate::cargo().args([
        "bench",
        "--quiet",
        "--no-run",
        "-p",
        "shortener-bench",
        "--bench",
        "memory_limiter",
    ]))?;
    let mut section = Section::default();
    let command = format!(
        "cargo bench -p shortener-bench --bench memory_limiter -- {}",
        bench_args.join(" ")
    );
    for round in 1..=context.rounds {
        let output = crate::cargo()
            .args([
                "bench",
                "--quiet",
                "-p",
                "shortener-bench",
                "--bench",
                "memory_limiter",
                "--",
            ])
            .args(bench_args)
            .current_dir(crate::root())
            .output()
            .context("cannot run cargo bench")?;
        anyhow::ensure!(
            output.status.success(),
            "cargo bench failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        for threads in THREADS {
            let nanos = median_nanos(context, threads)?;
            let rate = f64::from(threads) * 1e9 / nanos;
            context.step(
                "memory",
                &format!(
                    "round {round}/{}: {threads} threads: {} decisions",
                    context.rounds,
                    Unit::PerSecond.format(rate)
                ),
            );
            section
                .series(&format!("{threads} threads decisions/s"), Unit::PerSecond)
                .values
                .push(rate);
        }
    }
    section.compare(
        "memory limiter: decisions/s, 1 thread",
        "1 threads decisions/s",
        None,
        &command,
    );
    section.compare(
        "memory limiter: decisions/s, 2 threads vs 1",
        "2 threads decisions/s",
        Some("1 threads decisions/s"),
        &command,
    );
    section.compare(
        "memory limiter: decisions/s, 8 threads vs 1",
        "8 threads decisions/s",
        Some("1 threads decisions/s"),
        &command,
    );
    section.notes = vec![
        "`MemoryRateLimiter` (token bucket, capacity 100, 10/s) shared by N threads, each deciding on random keys out of 10 000; one criterion iteration is one decision on every thread, timed from a common start until the last thread is done.".to_owned(),
        format!("Criterion ({warm_up} s warm-up, {measurement} s measurement per thread count) once per round; a round's figure is its median time per iteration."),
        format!("The machine has {} cores, so 8 threads measure contention, not parallelism.", std::thread::available_parallelism().map_or(0, std::num::NonZero::get)),
    ];
    Ok(section)
}

/// Criterion's median time per iteration (ns) of `memory_limiter/threads/N`, from the run
/// that just finished.
fn median_nanos(context: &Context, threads: u32) -> anyhow::Result<f64> {
    let path = context.target_dir.join(format!(
        "criterion/memory_limiter/threads_{threads}/new/estimates.json"
    ));
    let estimates = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    // {"mean":{...},"median":{"confidence_interval":{...},"point_estimate":123.4,"standard_error":...},...}
    estimates
        .split_once("\"median\"")
        .and_then(|(_, median)| median.split_once("\"point_estimate\":"))
        .and_then(|(_, rest)| rest.split([',', '}']).next())
        .and_then(|number| number.trim().parse::<f64>().ok())
        .filter(|nanos| nanos.is_finite() && *nanos > 0.0)
        .with_context(|| format!("no median in {}", path.display()))
}
