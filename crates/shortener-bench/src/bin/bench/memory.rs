//! Benchmark 3: the memory limiter's decisions per second from 1, 2 and 8 threads, with the
//! criterion benchmark `crates/shortener-bench/benches/memory_limiter.rs`, run once per
//! round (1 2 8 1 2 8 ...); each round's figure is criterion's median for that round.

use anyhow::Context as _;
use shortener_testkit::cargo_command;

use super::Context;
use super::report::{Section, Unit};
use super::tools::stdout;

const THREADS: [u32; 3] = [1, 2, 8];

pub fn run(context: &Context) -> anyhow::Result<Section> {
    let (warm_up, measurement) = if context.quick {
        ("0.2", "0.5")
    } else {
        ("1", "3")
    };
    let args = format!("--warm-up-time {warm_up} --measurement-time {measurement} --noplot");
    let bench = ["-p", "shortener-bench", "--bench", "memory_limiter", "--"];
    // Set, so that the estimates are where this run reads them.
    let criterion = context.binaries.with_file_name("criterion");
    let command = format!("cargo bench {} {args}", bench.join(" "));
    let mut section = Section::default();
    context.alternate(&[()], |_, ()| {
        context.step(&command);
        let mut cargo = cargo_command();
        cargo
            .args(["bench", "--quiet"])
            .args(bench)
            .args(args.split(' '));
        cargo.env("CRITERION_HOME", &criterion);
        // Half an hour at most: the first run builds the benchmark.
        stdout(cargo.current_dir(env!("CARGO_MANIFEST_DIR")), 1800)?;
        let mut rates = Vec::new();
        for threads in THREADS {
            // Criterion's median time per iteration (ns) of the run that just finished.
            let path = format!("memory_limiter/threads_{threads}/new/estimates.json");
            let path = criterion.join(path);
            let read = || format!("no median in {}", path.display());
            let estimates: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).with_context(read)?)?;
            let nanos = estimates["median"]["point_estimate"].as_f64();
            let nanos = nanos.filter(|nanos| *nanos > 0.0).with_context(read)?;
            let rate = f64::from(threads) * 1e9 / nanos;
            let label = format!("{threads} threads decisions/s");
            section.push(&label, Unit::PerSecond, rate);
            rates.push(format!(
                "{threads} threads: {}",
                Unit::PerSecond.format(rate)
            ));
        }
        Ok(format!("{} decisions", rates.join(", ")))
    })?;
    let one = "1 threads decisions/s";
    section.compare("memory limiter: decisions/s, 1 thread", one, None, &command);
    for threads in [2, 8] {
        let what = format!("memory limiter: decisions/s, {threads} threads vs 1");
        let ours = format!("{threads} threads decisions/s");
        section.compare(&what, &ours, Some(one), &command);
    }
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    section.notes = vec![
        "`MemoryRateLimiter` (token bucket, capacity 100, 10/s) shared by N threads, each deciding on random keys out of 10 000; one criterion iteration is one decision on every thread, timed from a common start until the last thread is done.".to_owned(),
        format!("Criterion ({warm_up} s warm-up, {measurement} s measurement per thread count) once per round; a round's figure is its median time per iteration."),
        format!("The machine has {cores} cores, so 8 threads measure contention, not parallelism."),
    ];
    Ok(section)
}
