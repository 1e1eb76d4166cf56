//! Benchmark 3: the memory limiter's decisions per second from 1, 2 and 8 threads, with the
//! criterion benchmark `crates/shortener-bench/benches/memory_limiter.rs`, run once per
//! round (1 2 8 1 2 8 ...); each round's figure is criterion's median for that round.

use anyhow::{Context as _, ensure};
use shortener_testkit::cargo_command;

use super::Context;
use super::report::{Section, Unit};

const THREADS: [u32; 3] = [1, 2, 8];

pub fn run(context: &Context) -> anyhow::Result<Section> {
    let (warm_up, measurement) = if context.quick {
        ("0.2", "0.5")
    } else {
        ("1", "3")
    };
    let args = [
        "--warm-up-time",
        warm_up,
        "--measurement-time",
        measurement,
        "--noplot",
    ];
    // Set, so that the estimates are where this run reads them.
    let criterion = context.target_dir().join("criterion");
    let command = format!(
        "cargo bench -p shortener-bench --bench memory_limiter -- {}",
        args.join(" ")
    );
    let mut section = Section::default();
    for round in 1..=context.rounds {
        context.step("memory", &command);
        let output = cargo_command()
            .args([
                "bench",
                "--quiet",
                "-p",
                "shortener-bench",
                "--bench",
                "memory_limiter",
                "--",
            ])
            .args(args)
            .env("CRITERION_HOME", &criterion)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .context("cannot run cargo bench")?;
        ensure!(
            output.status.success(),
            "cargo bench failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        for threads in THREADS {
            // Criterion's median time per iteration (ns) of the run that just finished.
            let path = criterion.join(format!(
                "memory_limiter/threads_{threads}/new/estimates.json"
            ));
            let estimates: serde_json::Value = serde_json::from_slice(
                &std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?,
            )?;
            let nanos = estimates["median"]["point_estimate"]
                .as_f64()
                .filter(|nanos| *nanos > 0.0);
            let nanos = nanos.with_context(|| format!("no median in {}", path.display()))?;
            let rate = f64::from(threads) * 1e9 / nanos;
            let formatted = Unit::PerSecond.format(rate);
            context.round(
                "memory",
                round,
                &format!("{threads} threads: {formatted} decisions"),
            );
            section.push(
                &format!("{threads} threads decisions/s"),
                Unit::PerSecond,
                rate,
            );
        }
    }
    section.compare(
        "memory limiter: decisions/s, 1 thread",
        "1 threads decisions/s",
        None,
        &command,
    );
    for threads in [2, 8] {
        section.compare(
            &format!("memory limiter: decisions/s, {threads} threads vs 1"),
            &format!("{threads} threads decisions/s"),
            Some("1 threads decisions/s"),
            &command,
        );
    }
    section.notes = vec![
        "`MemoryRateLimiter` (token bucket, capacity 100, 10/s) shared by N threads, each deciding on random keys out of 10 000; one criterion iteration is one decision on every thread, timed from a common start until the last thread is done.".to_owned(),
        format!("Criterion ({warm_up} s warm-up, {measurement} s measurement per thread count) once per round; a round's figure is its median time per iteration."),
        format!("The machine has {} cores, so 8 threads measure contention, not parallelism.", std::thread::available_parallelism().map_or(0, std::num::NonZero::get)),
    ];
    Ok(section)
}
