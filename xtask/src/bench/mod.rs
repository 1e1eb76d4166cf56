//! `cargo xtask bench [--quick] [--only NAME]...`: the benchmarks of issue 5, side by side
//! with their references, in order of importance (`BENCHMARKS`).
//!
//! Every comparison alternates its variants in one run (A B A B ..., `rounds` times) and
//! reports medians. Servers (`redis-server`, `shortener`, the poem ceiling) are private
//! processes on free loopback ports, stopped on drop and by a watchdog if xtask dies.
//! A full run of every benchmark writes docs/BENCHMARKS.md; every run writes
//! `target/bench/results.json` and `target/bench/BENCHMARKS.md`. Figures are reported,
//! never asserted: the run fails only when a benchmark could not run (a missing tool, a
//! server that does not start, a command whose calls failed).

mod client;
mod creates;
mod http;
mod json;
mod memory;
mod nodes;
mod process;
mod redis;
mod report;
mod scripts;
mod shortener;
mod wrk;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, bail};

use report::{Outcome, Run, Section};

const USAGE: &str = "usage: cargo xtask bench [--quick] [--only NAME]...   (NAME: scripts, client, memory, http, creates, nodes)";

type Benchmark = fn(&Context) -> anyhow::Result<Section>;

/// The benchmarks, in order of importance: (name for `--only`, title, body).
const BENCHMARKS: [(&str, &str, Benchmark); 6] = [
    ("scripts", "1. Limiter scripts in Redis", scripts::run),
    ("client", "2. Limiter through our client", client::run),
    ("memory", "3. Memory limiter", memory::run),
    ("http", "4. HTTP redirects", http::run),
    ("creates", "5. Creates", creates::run),
    ("nodes", "6. Three nodes on one Redis", nodes::run),
];

/// How long and how often to measure, and where things are.
#[derive(Debug)]
pub struct Context {
    pub quick: bool,
    /// Rounds of every comparison (A B A B ...): at least 3.
    pub rounds: usize,
    /// `target/` (or `CARGO_TARGET_DIR`).
    pub target_dir: PathBuf,
    started: Instant,
}

impl Context {
    /// Prints one progress line, with the time since the run started.
    pub fn step(&self, bench: &str, message: &str) {
        eprintln!(
            "[{:>6.1}s] {bench}: {message}",
            self.started.elapsed().as_secs_f64()
        );
    }

    /// `full` seconds, or `quick` ones with `--quick`.
    pub fn seconds(&self, full: f64, quick: f64) -> f64 {
        if self.quick { quick } else { full }
    }

    /// The wrk duration, in whole seconds.
    pub fn wrk_seconds(&self) -> u32 {
        if self.quick { 1 } else { 5 }
    }

    /// `target/release/<binary>`, after `cargo build --release -p <package> --bin <binary>`.
    pub fn release_binary(&self, package: &str, binary: &str) -> anyhow::Result<PathBuf> {
        self.step(
            "build",
            &format!("cargo build --release -p {package} --bin {binary}"),
        );
        crate::run(crate::cargo().args([
            "build",
            "--quiet",
            "--release",
            "-p",
            package,
            "--bin",
            binary,
        ]))?;
        Ok(self.target_dir.join("release").join(binary))
    }
}

pub fn run(args: &[String]) -> anyhow::Result<()> {
    let Some((quick, only)) = parse(args)? else {
        eprintln!("{USAGE}");
        return Ok(());
    };
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| crate::root().join("target"), PathBuf::from);
    let context = Context {
        quick,
        rounds: if quick { 3 } else { 5 },
        target_dir,
        started: Instant::now(),
    };
    let started_at = now_utc();
    let load_before = load_average();

    let mut benchmarks = Vec::new();
    for (name, title, body) in BENCHMARKS {
        if !only.is_empty() && !only.iter().any(|selected| selected == name) {
            continue;
        }
        context.step(name, &format!("{title}: starting"));
        let outcome = match body(&context) {
            Ok(section) => Outcome::Done(section),
            Err(error) if error.is::<process::MissingBinary>() => {
                Outcome::Skipped(error.to_string())
            }
            Err(error) => Outcome::Failed(format!("{error:#}")),
        };
        match &outcome {
            Outcome::Done(_) => context.step(name, "done"),
            Outcome::Skipped(why) => context.step(name, &format!("SKIPPED: {why}")),
            Outcome::Failed(why) => context.step(name, &format!("FAILED: {why}")),
        }
        benchmarks.push((name, title, outcome));
    }

    let mut machine = machine();
    machine.push(("load average (1, 5, 15 min) before the run", load_before));
    let run = Run {
        mode: if quick { "quick" } else { "full" },
        rounds: context.rounds,
        started_at,
        seconds: context.started.elapsed().as_secs_f64(),
        machine,
        benchmarks,
    };
    // Quick and partial runs do not replace the published figures of a full run.
    write_reports(
        &run,
        &context.target_dir.join("bench"),
        only.is_empty() && !quick,
    )?;
    eprintln!("xtask: bench took {:.0?}", context.started.elapsed());
    let incomplete: Vec<&str> = run
        .benchmarks
        .iter()
        .filter(|(_, _, outcome)| !matches!(outcome, Outcome::Done(_)))
        .map(|(name, _, _)| *name)
        .collect();
    if !incomplete.is_empty() {
        bail!("benchmarks that did not run: {}", incomplete.join(", "));
    }
    Ok(())
}

/// `(quick, only)` from the arguments; `None` for `--help`.
fn parse(args: &[String]) -> anyhow::Result<Option<(bool, Vec<String>)>> {
    let mut quick = false;
    let mut only: Vec<String> = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--only" => {
                let names = args.next().context("--only needs a NAME")?;
                only.extend(names.split(',').map(str::to_owned));
            }
            "-h" | "--help" => return Ok(None),
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    if let Some(unknown) = only
        .iter()
        .find(|name| !BENCHMARKS.iter().any(|(known, _, _)| known == name))
    {
        bail!("unknown benchmark `{unknown}`\n{USAGE}");
    }
    Ok(Some((quick, only)))
}

/// `results.json` and `BENCHMARKS.md` in `out_dir`, and docs/BENCHMARKS.md when `publish`.
fn write_reports(run: &Run, out_dir: &Path, publish: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(out_dir)?;
    let markdown = run.markdown();
    std::fs::write(out_dir.join("results.json"), format!("{}\n", run.json()))?;
    std::fs::write(out_dir.join("BENCHMARKS.md"), &markdown)?;
    eprintln!("\n{markdown}");
    eprintln!("xtask: wrote {}", out_dir.join("results.json").display());
    if publish {
        let docs = crate::root().join("docs");
        std::fs::create_dir_all(&docs)?;
        std::fs::write(docs.join("BENCHMARKS.md"), &markdown)?;
        eprintln!("xtask: wrote docs/BENCHMARKS.md");
    } else {
        eprintln!(
            "xtask: wrote {} (docs/BENCHMARKS.md is written by a full run of every benchmark)",
            out_dir.join("BENCHMARKS.md").display()
        );
    }
    Ok(())
}

/// What the figures were measured on.
fn machine() -> Vec<(&'static str, String)> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|line| {
                Some(
                    line.strip_prefix("model name")?
                        .trim_start_matches([' ', '\t', ':'])
                        .to_owned(),
                )
            })
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let version = |program: &str, arg: &str| {
        Command::new(program)
            .arg(arg)
            .output()
            .ok()
            .map(|output| {
                let line = String::from_utf8_lossy(&output.stdout)
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                // wrk follows its version with a copyright.
                line.split(" Copyright")
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            })
            .filter(|line| !line.is_empty())
            .unwrap_or_else(|| "not found".to_owned())
    };
    vec![
        ("cpu", format!("{cpu} ({cores} cores)")),
        ("rustc", version("rustc", "--version")),
        ("redis", version("redis-server", "--version")),
        ("wrk", version("wrk", "--version")),
    ]
}

/// The 1, 5 and 15 minute load averages: other work on the machine skews the figures.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn now_utc() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_default()
}
