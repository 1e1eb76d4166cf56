//! `bench [--quick] [--only NAME]...`, run by `cargo xtask bench` after a release build of
//! the server and of this crate: the benchmarks side by side with their references, in
//! order of importance (`BENCHMARKS`).
//!
//! Every comparison alternates its variants in one run (A B A B ..., `rounds` times:
//! [`Context::alternate`]) and reports medians. Servers (`redis-server`, `shortener`, the
//! poem ceiling) are private processes of the test kit on free loopback ports, stopped on
//! drop and by a watchdog if this process dies. Every run writes
//! `target/bench/results.json` and `target/bench/BENCHMARKS.md`, a full run of every
//! benchmark docs/BENCHMARKS.md too.
//!
//! What it is not: a test. Figures are reported, never asserted: the run fails only when a
//! benchmark could not run (a missing tool, a server that does not start, a command whose
//! calls failed).

mod http;
mod memory;
mod nodes;
mod report;
mod rls;
mod scripts;
mod servers;
mod tools;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use report::{Benchmark, Machine, Run, Section};
use shortener_testkit::{MissingBinary, TempDir, output_within};
use time::OffsetDateTime;
use time::macros::format_description;
use tools::Wrk;

/// The benchmarks side by side with their references (docs/BENCHMARKS.md).
#[derive(Debug, Parser)]
#[command(bin_name = "cargo xtask bench")]
struct Args {
    /// Shorter runs and 3 rounds: a smoke run, whose figures are not published.
    #[arg(long)]
    quick: bool,
    /// Only these benchmarks (repeat, or separate with commas).
    #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(
        BENCHMARKS.map(|(name, _, _)| name)
    ))]
    only: Vec<String>,
}

type Body = fn(&Context) -> anyhow::Result<Section>;

/// The benchmarks, in order of importance: (name for `--only`, title, body).
const BENCHMARKS: [(&str, &str, Body); 7] = [
    ("scripts", "1. Limiter scripts in Redis", scripts::run),
    ("client", "2. Limiter through our client", scripts::client),
    ("memory", "3. Memory limiter", memory::run),
    ("http", "4. HTTP redirects", http::run),
    ("creates", "5. Creates", http::creates),
    ("nodes", "6. Three nodes on one Redis", nodes::run),
    ("rls", "7. Rate limit service (gRPC)", rls::run),
];

/// How long and how often to measure, and where things are.
#[derive(Debug)]
pub struct Context {
    pub quick: bool,
    /// Rounds of every comparison (A B A B ...): at least 3.
    pub rounds: usize,
    /// `target/release`, where this binary, `shortener`, `ceiling` and `limiter_client` are
    /// (built by `cargo xtask bench` before this one ran); `target/` holds `bench/` and
    /// `criterion/`.
    pub binaries: PathBuf,
    /// Holds `wrk.lua`.
    scripts: TempDir,
    started: Instant,
    /// The benchmark running, named in the progress lines.
    bench: Cell<&'static str>,
}

impl Context {
    /// Prints one progress line, with the time since the run started.
    pub fn step(&self, message: &str) {
        let seconds = self.started.elapsed().as_secs_f64();
        eprintln!("[{seconds:>6.1}s] {}: {message}", self.bench.get());
    }

    /// `rounds` times, `measure(round, variant)` of every variant in turn (A B A B ...),
    /// each returning the progress line of its run.
    pub fn alternate<T>(
        &self,
        variants: &[T],
        mut measure: impl FnMut(usize, &T) -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        for round in 1..=self.rounds {
            for variant in variants {
                let message = measure(round, variant)?;
                self.step(&format!("round {round}/{}: {message}", self.rounds));
            }
        }
        Ok(())
    }

    /// `full` seconds, or `quick` ones with `--quick`.
    pub fn seconds(&self, full: f64, quick: f64) -> f64 {
        if self.quick { quick } else { full }
    }

    /// `wrk -t2 -c64` (two load threads, as many as the machine has cores) for 5 s, or 1 s
    /// with `--quick`.
    pub fn wrk(&self) -> Wrk<'_> {
        Wrk {
            scripts: self.scripts.path(),
            threads: 2,
            connections: 64,
            seconds: if self.quick { 1 } else { 5 },
            create: false,
            api_key: None,
            codes: None,
            user_agent: None,
        }
    }
}

fn main() -> ExitCode {
    // Printed by hand: one line with its causes, not anyhow's Debug with a backtrace.
    let Err(error) = run() else {
        return ExitCode::SUCCESS;
    };
    eprintln!("bench: {error:#}");
    ExitCode::FAILURE
}

fn run() -> anyhow::Result<()> {
    let Args { quick, only } = Args::parse();
    let scripts = TempDir::with_prefix("wrk")?;
    std::fs::write(scripts.path().join("wrk.lua"), include_str!("wrk.lua"))?;
    let binaries = std::env::current_exe()?;
    let binaries = binaries.parent().context("no directory")?.to_owned();
    let (started, rounds, bench) = (Instant::now(), if quick { 3 } else { 5 }, Cell::new(""));
    let context = Context {
        quick,
        rounds,
        binaries,
        scripts,
        started,
        bench,
    };
    let format = format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    let started_at = OffsetDateTime::now_utc().format(format)?;
    let load_average = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load_average = load_average.split_whitespace().take(3).collect::<Vec<_>>();

    let mut benchmarks = Vec::new();
    for (name, title, body) in BENCHMARKS {
        if !only.is_empty() && !only.iter().any(|selected| selected == name) {
            continue;
        }
        context.bench.set(name);
        context.step(&format!("{title}: starting"));
        let (status, reason, section) = match body(&context) {
            Ok(section) => ("done", None, Some(section)),
            Err(error) if error.is::<MissingBinary>() => ("skipped", Some(error.to_string()), None),
            Err(error) => ("failed", Some(format!("{error:#}")), None),
        };
        let upper = status.to_uppercase();
        let line = reason.as_ref().map(|why| format!("{upper}: {why}"));
        context.step(line.as_deref().unwrap_or(status));
        let benchmark = Benchmark {
            name,
            title,
            status,
            reason,
            section,
        };
        benchmarks.push(benchmark);
    }
    let run = Run {
        mode: if quick { "quick" } else { "full" },
        rounds,
        started_at,
        seconds: started.elapsed().as_secs_f64(),
        machine: machine(load_average.join(" ")),
        benchmarks,
    };
    // Quick and partial runs do not replace the published figures of a full run.
    let out_dir = context.binaries.with_file_name("bench");
    write_reports(&run, &out_dir, only.is_empty() && !quick)?;
    eprintln!("bench: took {:.0?}", started.elapsed());
    let incomplete = run
        .benchmarks
        .iter()
        .filter(|benchmark| benchmark.section.is_none());
    let incomplete: Vec<&str> = incomplete.map(|benchmark| benchmark.name).collect();
    if !incomplete.is_empty() {
        bail!("benchmarks that did not run: {}", incomplete.join(", "));
    }
    Ok(())
}

/// `results.json` and `BENCHMARKS.md` in `out_dir`, and docs/BENCHMARKS.md when `publish`.
fn write_reports(run: &Run, out_dir: &Path, publish: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(out_dir)?;
    let (markdown, json) = (run.markdown(), out_dir.join("results.json"));
    std::fs::write(&json, serde_json::to_string_pretty(run)? + "\n")?;
    std::fs::write(out_dir.join("BENCHMARKS.md"), &markdown)?;
    eprintln!("\n{markdown}\nbench: wrote {}", json.display());
    if publish {
        // This crate is crates/shortener-bench in the workspace.
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        std::fs::create_dir_all(&docs)?;
        std::fs::write(docs.join("BENCHMARKS.md"), &markdown)?;
        eprintln!("bench: wrote docs/BENCHMARKS.md");
    } else {
        let written = out_dir.join("BENCHMARKS.md");
        let why = "docs/BENCHMARKS.md is written by a full run of every benchmark";
        eprintln!("bench: wrote {} ({why})", written.display());
    }
    Ok(())
}

/// What the figures were measured on.
fn machine(load_average: String) -> Machine {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = (info.lines()).find_map(|line| line.strip_prefix("model name"));
    let cpu = cpu.map_or("unknown CPU", |cpu| {
        cpu.trim_start_matches([' ', '\t', ':'])
    });
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    // The first line of `program --version`, without wrk's copyright.
    let version = |program: &str| {
        let output = output_within(
            Command::new(program).arg("--version"),
            Duration::from_secs(10),
        );
        let stdout = output.map(|output| output.stdout).unwrap_or_default();
        let stdout = String::from_utf8_lossy(&stdout);
        let line = stdout.lines().next().unwrap_or_default();
        let line = line.split(" Copyright").next().unwrap_or_default().trim();
        if line.is_empty() { "not found" } else { line }.to_owned()
    };
    Machine {
        cpu: format!("{cpu} ({cores} cores)"),
        rustc: version("rustc"),
        redis: version("redis-server"),
        wrk: version("wrk"),
        load_average,
    }
}
