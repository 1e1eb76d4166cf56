//! `bench [--quick] [--only NAME]...`, run by `cargo xtask bench` after a release build of
//! the server and of this crate: the benchmarks side by side with their references, in
//! order of importance (`BENCHMARKS`).
//!
//! Every comparison alternates its variants in one run (A B A B ..., `rounds` times) and
//! reports medians. Servers (`redis-server`, `shortener`, the poem ceiling) are private
//! processes of the test kit on free loopback ports, stopped on drop and by a watchdog if
//! this process dies. A full run of every benchmark writes docs/BENCHMARKS.md; every run
//! writes `target/bench/results.json` and `target/bench/BENCHMARKS.md`.
//!
//! What it is not: a test. Figures are reported, never asserted: the run fails only when a
//! benchmark could not run (a missing tool, a server that does not start, a command whose
//! calls failed).

mod client;
mod creates;
mod http;
mod memory;
mod nodes;
mod report;
mod rls;
mod scripts;
mod servers;
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Parser;
use report::{Benchmark, Machine, Run, Section};
use shortener_testkit::{MissingBinary, TempDir, output_within};
use time::OffsetDateTime;
use time::macros::format_description;

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
    ("client", "2. Limiter through our client", client::run),
    ("memory", "3. Memory limiter", memory::run),
    ("http", "4. HTTP redirects", http::run),
    ("creates", "5. Creates", creates::run),
    ("nodes", "6. Three nodes on one Redis", nodes::run),
    ("rls", "7. Rate limit service (gRPC)", rls::run),
];

/// How long and how often to measure, and where things are.
#[derive(Debug)]
pub struct Context {
    pub quick: bool,
    /// Rounds of every comparison (A B A B ...): at least 3.
    pub rounds: usize,
    /// `target/release`, where this binary, `shortener`, `ceiling` and `limiter_client` are.
    binaries: PathBuf,
    /// Holds `wrk.lua`.
    scripts: TempDir,
    started: Instant,
}

impl Context {
    /// Prints one progress line, with the time since the run started.
    pub fn step(&self, bench: &str, message: &str) {
        let seconds = self.started.elapsed().as_secs_f64();
        eprintln!("[{seconds:>6.1}s] {bench}: {message}");
    }

    /// Prints the progress line of one round.
    pub fn round(&self, bench: &str, round: usize, message: &str) {
        self.step(bench, &format!("round {round}/{}: {message}", self.rounds));
    }

    /// `full` seconds, or `quick` ones with `--quick`.
    pub fn seconds(&self, full: f64, quick: f64) -> f64 {
        if self.quick { quick } else { full }
    }

    /// The wrk duration, in whole seconds.
    pub fn wrk_seconds(&self) -> u32 {
        if self.quick { 1 } else { 5 }
    }

    /// A release binary of the workspace, built by `cargo xtask bench` before this one ran.
    pub fn binary(&self, name: &str) -> PathBuf {
        self.binaries.join(name)
    }

    /// The wrk script, with its `done` hook.
    pub fn wrk_script(&self) -> PathBuf {
        self.scripts.path().join("wrk.lua")
    }

    /// `target/`: this binary is `target/release/bench`.
    fn target_dir(&self) -> &Path {
        self.binaries.parent().unwrap_or(&self.binaries)
    }
}

fn main() -> ExitCode {
    // Printed by hand: one line with its causes, not anyhow's Debug with a backtrace.
    run().map_or_else(
        |error| {
            eprintln!("bench: {error:#}");
            ExitCode::FAILURE
        },
        |()| ExitCode::SUCCESS,
    )
}

fn run() -> anyhow::Result<()> {
    let Args { quick, only } = Args::parse();
    let scripts = TempDir::with_prefix("wrk")?;
    std::fs::write(scripts.path().join("wrk.lua"), include_str!("wrk.lua"))?;
    let context = Context {
        quick,
        rounds: if quick { 3 } else { 5 },
        binaries: (std::env::current_exe()?.parent())
            .context("no directory")?
            .to_owned(),
        scripts,
        started: Instant::now(),
    };
    let started_at = OffsetDateTime::now_utc().format(format_description!(
        "[year]-[month]-[day] [hour]:[minute] UTC"
    ))?;
    let load_average = std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();

    let mut benchmarks = Vec::new();
    for (name, title, body) in BENCHMARKS {
        if !only.is_empty() && !only.iter().any(|selected| selected == name) {
            continue;
        }
        context.step(name, &format!("{title}: starting"));
        let (status, reason, section) = match body(&context) {
            Ok(section) => ("done", None, Some(section)),
            Err(error) if error.is::<MissingBinary>() => ("skipped", Some(error.to_string()), None),
            Err(error) => ("failed", Some(format!("{error:#}")), None),
        };
        let upper = status.to_uppercase();
        context.step(
            name,
            &reason
                .as_ref()
                .map_or_else(|| status.to_owned(), |why| format!("{upper}: {why}")),
        );
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
        machine: machine(load_average),
        benchmarks,
    };
    // Quick and partial runs do not replace the published figures of a full run.
    write_reports(
        &run,
        &context.target_dir().join("bench"),
        only.is_empty() && !quick,
    )?;
    eprintln!("bench: took {:.0?}", context.started.elapsed());
    let incomplete: Vec<&str> = (run.benchmarks.iter())
        .filter(|benchmark| benchmark.section.is_none())
        .map(|benchmark| benchmark.name)
        .collect();
    if !incomplete.is_empty() {
        bail!("benchmarks that did not run: {}", incomplete.join(", "));
    }
    Ok(())
}

/// `results.json` and `BENCHMARKS.md` in `out_dir`, and docs/BENCHMARKS.md when `publish`.
fn write_reports(run: &Run, out_dir: &Path, publish: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(out_dir)?;
    let markdown = run.markdown();
    std::fs::write(
        out_dir.join("results.json"),
        serde_json::to_string_pretty(run)? + "\n",
    )?;
    std::fs::write(out_dir.join("BENCHMARKS.md"), &markdown)?;
    eprintln!(
        "\n{markdown}\nbench: wrote {}",
        out_dir.join("results.json").display()
    );
    if publish {
        // This crate is crates/shortener-bench in the workspace.
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        std::fs::create_dir_all(&docs)?;
        std::fs::write(docs.join("BENCHMARKS.md"), &markdown)?;
        eprintln!("bench: wrote docs/BENCHMARKS.md");
    } else {
        eprintln!(
            "bench: wrote {} (docs/BENCHMARKS.md is written by a full run of every benchmark)",
            out_dir.join("BENCHMARKS.md").display()
        );
    }
    Ok(())
}

/// What the figures were measured on.
fn machine(load_average: String) -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|line| {
                let name = line.strip_prefix("model name")?;
                Some(name.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        });
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    // The first line of `program --version`, without wrk's copyright.
    let version = |program: &str| {
        let output = output_within(
            Command::new(program).arg("--version"),
            std::time::Duration::from_secs(10),
        );
        let stdout = output
            .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
            .unwrap_or_default();
        let line = stdout.lines().next().unwrap_or_default();
        let line = line.split(" Copyright").next().unwrap_or_default().trim();
        if line.is_empty() {
            "not found".to_owned()
        } else {
            line.to_owned()
        }
    };
    Machine {
        cpu: format!(
            "{} ({cores} cores)",
            cpu.as_deref().unwrap_or("unknown CPU")
        ),
        rustc: version("rustc"),
        redis: version("redis-server"),
        wrk: version("wrk"),
        load_average,
    }
}
