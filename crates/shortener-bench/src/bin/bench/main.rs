//! `bench [--quick] [--only NAME]...`, run by `cargo xtask bench` after a release build: the
//! [`BENCHMARKS`] beside their references, alternated ([`Context::alternate`]), written to
//! `target/bench/` (results.json, BENCHMARKS.md) and by a full run to docs/BENCHMARKS.md.
//! Not a test: figures are never asserted; a run fails only when a benchmark cannot run.

mod agents;
mod compat;
mod http;
mod import;
mod limiters;
mod links;
mod report;
mod rls;
mod rules;
mod tools;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use report::{Benchmark, Machine, Run, Section};
use shortener_testkit::{MissingBinary, TempDir, output_within};
use time::OffsetDateTime;
use time::macros::format_description;
use tools::{Var, Wrk};

/// The benchmarks beside their references (docs/BENCHMARKS.md).
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

type Body = fn(&Context, &mut Section) -> anyhow::Result<()>;

/// The benchmarks, in order of importance: (name for `--only`, title, body).
const BENCHMARKS: [(&str, &str, Body); 12] = [
    ("scripts", "1. Limiter scripts in Redis", limiters::run),
    ("client", "2. Limiter through our client", limiters::client),
    ("memory", "3. Memory limiter", limiters::memory),
    ("http", "4. HTTP redirects", http::run),
    ("creates", "5. Creates", http::creates),
    ("nodes", "6. Three nodes on one Redis", http::nodes),
    ("rls", "7. Rate limit service (gRPC)", rls::run),
    ("import", "8. Import", import::run),
    ("agents", "9. User-Agent parsers", agents::run),
    ("links", "10. Memory and redirects by links", links::run),
    ("rules", "11. Redirect rules", rules::run),
    ("compat", "12. Other shorteners' APIs", compat::run),
];

/// Tasks of `limiter_client` and clients of redis-benchmark in benchmarks 2 and 7.
pub const TASKS: u32 = 64;

/// How long and how often to measure, and where things are.
#[derive(Debug)]
pub struct Context {
    pub quick: bool,
    /// Rounds of every comparison (A B A B ...).
    pub rounds: usize,
    /// `target/release`, with this binary, `shortener`, `ceiling` and `limiter_client`.
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

    /// `rounds` times, `measure(round, variant)` of each variant in turn: its progress line.
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

    /// `full`, or `quick` with `--quick`: how long, how many.
    pub fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick { quick } else { full }
    }

    /// A timed `limiter_client` run's arguments: 3 s measured after 0.5 s (or 0.5 after 0.2).
    pub fn timed_client(&self) -> String {
        let (seconds, warmup) = (self.pick(3.0, 0.5), self.pick(0.5, 0.2));
        format!("--tasks {TASKS} --seconds {seconds} --warmup {warmup}")
    }

    /// `wrk -t2 -c64` (a thread per core) for 5 s, or 1 s with `--quick`, setting `env`.
    pub fn wrk<'a>(&'a self, env: &'a [Var<'a>]) -> Wrk<'a> {
        Wrk {
            scripts: self.scripts.path(),
            threads: 2,
            connections: 64,
            seconds: self.pick(5, 1),
            env,
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
    let context = Context {
        quick,
        rounds: if quick { 3 } else { 5 },
        binaries,
        scripts,
        started: Instant::now(),
        bench: Cell::new(""),
    };
    let format = format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    let started_at = OffsetDateTime::now_utc().format(format)?;
    let machine = machine();
    let mut benchmarks = Vec::new();
    let selected = |name: &str| only.is_empty() || only.iter().any(|it| it == name);
    for (name, title, body) in BENCHMARKS.into_iter().filter(|it| selected(it.0)) {
        context.bench.set(name);
        context.step(&format!("{title}: starting"));
        let mut section = Section::default();
        let (status, reason, section) = match body(&context, &mut section) {
            Ok(()) => ("done", None, Some(section)),
            Err(error) if error.is::<MissingBinary>() => ("skipped", Some(error.to_string()), None),
            Err(error) => ("failed", Some(format!("{error:#}")), None),
        };
        let upper = status.to_uppercase();
        let line = reason.as_ref().map(|why| format!("{upper}: {why}"));
        context.step(line.as_deref().unwrap_or(status));
        benchmarks.push(Benchmark {
            name,
            title,
            status,
            reason,
            section,
        });
    }
    let run = Run {
        mode: if quick { "quick" } else { "full" },
        rounds: context.rounds,
        started_at,
        seconds: context.started.elapsed().as_secs_f64(),
        machine,
        benchmarks,
    };
    let out_dir = context.binaries.with_file_name("bench");
    std::fs::create_dir_all(&out_dir)?;
    let (markdown, json) = (run.markdown(), serde_json::to_string_pretty(&run)?);
    std::fs::write(out_dir.join("results.json"), json + "\n")?;
    std::fs::write(out_dir.join("BENCHMARKS.md"), &markdown)?;
    let shown = out_dir.display();
    eprintln!("\n{markdown}\nbench: wrote results.json and BENCHMARKS.md to {shown}");
    // Quick and partial runs do not replace the published figures of a full run.
    if only.is_empty() && !quick {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/BENCHMARKS.md");
        std::fs::write(docs, &markdown)?;
        eprintln!("bench: wrote docs/BENCHMARKS.md");
    } else {
        eprintln!("bench: docs/BENCHMARKS.md is written by a full run of every benchmark");
    }
    eprintln!("bench: took {:.0?}", context.started.elapsed());
    let incomplete = run.benchmarks.iter().filter(|it| it.section.is_none());
    let incomplete = incomplete.map(|it| it.name).collect::<Vec<_>>().join(", ");
    ensure!(incomplete.is_empty(), "benchmarks not run: {incomplete}");
    Ok(())
}

/// What the figures were measured on, and the load before the run.
fn machine() -> Machine {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load_average = load.split_whitespace().take(3).collect::<Vec<_>>();
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = (info.lines()).find_map(|line| line.strip_prefix("model name"));
    let cpu = cpu.map(|cpu| cpu.trim_start_matches([' ', '\t', ':']));
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    // The first line of `program --version`, without wrk's copyright.
    let version = |program: &str| {
        let command = &mut Command::new(program);
        let output = output_within(command.arg("--version"), Duration::from_secs(10));
        let stdout = output.map(|output| output.stdout).unwrap_or_default();
        let stdout = String::from_utf8_lossy(&stdout);
        let line = stdout.lines().next().unwrap_or_default();
        let line = line.split(" Copyright").next().unwrap_or_default().trim();
        if line.is_empty() { "not found" } else { line }.to_owned()
    };
    Machine {
        cpu: format!("{} ({cores} cores)", cpu.unwrap_or("unknown CPU")),
        rustc: version("rustc"),
        redis: version("redis-server"),
        wrk: version("wrk"),
        load_average: load_average.join(" "),
    }
}
