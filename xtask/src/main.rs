//! `cargo xtask <task>`: the project's automation, as one small binary with a module per task.
//!
//! - `test`: formatting, clippy, every test of the workspace (with the Redis and
//!   PostgreSQL servers the tests need, see `services`), and the OpenAPI freshness check;
//!   `test --quick`: formatting, the unit tests, the conformance stories of the in-memory
//!   and SQLite adapters and the in-process API tests, with no program outside the tests.
//! - `openapi`: rewrites `openapi/shortener.json` from the server's code.
//! - `bench [--quick] [--only NAME]...`: builds the server and `crates/shortener-bench`
//!   (release) and runs its `bench` binary, which runs the benchmarks side by side with
//!   their references and writes the reports (see that binary's documentation).
//! - `migrate [--database-url URL] [--status]`: `shortener migrate` (applies, or lists,
//!   the storage migrations).
//! - `up`: nodes, Redis, PostgreSQL and nginx on this machine (see `up`).
//! - `load`: creates through the balancer from several `hey` processes, against the bound.

mod load;
mod panics;
mod services;
#[cfg(test)]
mod tidy;
mod up;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Parser;

/// The project's automation.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask")]
enum Task {
    /// Formatting, clippy and every test of the workspace (extra arguments go to
    /// `cargo test`).
    Test {
        /// Only what needs no program outside the tests (no Redis, PostgreSQL, nginx,
        /// Envoy, Chromium or openssl): formatting, unit tests, the in-memory and SQLite
        /// adapters' conformance stories, the in-process API tests.
        #[arg(long)]
        quick: bool,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        extra: Vec<String>,
    },
    /// Rewrites `openapi/shortener.json` from the server's code.
    Openapi,
    /// Builds the server and the harness (release) and runs the benchmarks (arguments go
    /// to the harness: `--quick`, `--only NAME`...).
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `shortener migrate` from this checkout (arguments go to it: `--status`,
    /// `--database-url URL`, `--config FILE`).
    Migrate {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Nodes, Redis, PostgreSQL and a gateway on this machine, until Ctrl-C.
    Up(up::Options),
    /// Creates through the gateway from several `hey` processes, against the bound.
    Load(load::Options),
}

fn main() -> ExitCode {
    let result = match Task::parse() {
        Task::Test { quick: true, .. } => quick_test(),
        Task::Test { extra, .. } => test(&extra),
        Task::Openapi => openapi(),
        Task::Bench { args } => bench(&args),
        Task::Migrate { args } => migrate(&args),
        Task::Up(options) => up::run(&options),
        Task::Load(options) => load::run(&options),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Runs a command in the workspace root, echoing it, failing on a non-zero exit.
pub fn run(command: &mut Command) -> anyhow::Result<()> {
    eprintln!("$ {}", describe(command));
    let status = command
        .current_dir(root())
        .status()
        .with_context(|| format!("cannot run {}", describe(command)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", describe(command));
    }
    Ok(())
}

fn describe(command: &Command) -> String {
    std::iter::once(command.get_program().to_string_lossy().into_owned())
        .chain(command.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `cargo`, without the variables `cargo run` set for xtask (see `cargo_command`).
fn cargo() -> Command {
    shortener_testkit::cargo_command()
}

fn test(extra: &[String]) -> anyhow::Result<()> {
    let started = Instant::now();
    // The time of each stage, printed with the verdict (and so at the end of `.ci/run`).
    let mut stages = Vec::new();
    let mut stage = |name: &str, since: Instant| {
        stages.push(format!("{name} {:.0?}", since.elapsed()));
        Instant::now()
    };
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    let since = stage("fmt+clippy", started);
    services::require_binary("redis-server")?;
    services::require_binary("redis-cli")?;
    // `xtask/tests/up.rs` runs `cargo xtask up`, nginx in front of the nodes.
    services::require_binary("nginx")?;
    // The test binaries alone first, so that the build's time is told from the tests'; the
    // arguments after `--` are the test binaries' own.
    let cargo_args = extra.iter().take_while(|arg| *arg != "--");
    run(cargo()
        .args(["test", "--workspace", "--no-run"])
        .args(cargo_args))?;
    let since = stage("build", since);
    let postgres = services::Postgres::provide()?;
    let mut command = cargo();
    command
        .args(["test", "--workspace"])
        .args(extra)
        .env("SHORTENER_TEST_PG_URL", postgres.url());
    let result = panics::run(&mut command);
    drop(postgres);
    result?;
    stage("tests (the browser's included)", since);
    let stages = stages.join(", ");
    eprintln!("xtask: stages: {stages}");
    eprintln!("xtask: all checks passed in {:.0?}", started.elapsed());
    Ok(())
}

/// The tests that need no program outside them, for the edit-test loop: the full run
/// (`test`) stays what CI calls.
fn quick_test() -> anyhow::Result<()> {
    let started = Instant::now();
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    // The crates whose tests are self-contained (the PostgreSQL and Redis adapters' are
    // not), the tidy checks, and the `it` tests of the service in process that need no
    // program beside them (those of `in_process/external/` do).
    let packages = [
        "shortener-core",
        "shortener-memory",
        "shortener-cache",
        "shortener-sqlite",
        "shortener-transfer",
        "shortener-backends",
        "shortener-rls",
        "shortener-http",
        "shortener-server",
    ];
    let mut unit = cargo();
    unit.arg("test");
    for package in packages {
        unit.args(["-p", package]);
    }
    let mut passed = run_counting(&mut unit)?;
    passed += run_counting(cargo().args(["test", "-p", "xtask", "--bins"]))?;
    passed += run_counting(cargo().args([
        "test",
        "-p",
        "shortener-tests",
        "--test",
        "it",
        "--",
        "in_process::",
        "--skip",
        "in_process::external::",
    ]))?;
    eprintln!(
        "xtask: quick checks passed: {passed} tests in {:.0?} (`cargo xtask test` runs every test)",
        started.elapsed()
    );
    Ok(())
}

/// As [`run`], echoing the command's output, and returning how many tests it says passed.
fn run_counting(command: &mut Command) -> anyhow::Result<usize> {
    eprintln!("$ {}", describe(command));
    let output = command
        .current_dir(root())
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {}", describe(command)))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    if !output.status.success() {
        bail!("`{}` failed ({})", describe(command), output.status);
    }
    Ok(stdout
        .lines()
        .filter_map(|line| line.strip_prefix("test result: ok. "))
        .filter_map(|rest| rest.split(' ').next()?.parse::<usize>().ok())
        .sum())
}

/// The harness is a release binary of its own: it measures release builds, and the
/// figures should not depend on how xtask was built.
fn bench(args: &[String]) -> anyhow::Result<()> {
    let packages = ["-p", "shortener-server", "-p", "shortener-bench", "--bins"];
    run(cargo()
        .args(["build", "--quiet", "--release"])
        .args(packages))?;
    let target = shortener_testkit::cargo::target_dir();
    run(Command::new(target.join("release/bench")).args(args))
}

/// The migrations are applied by the binary an operator runs, so that there is one
/// code path: this only builds it from the checkout.
fn migrate(args: &[String]) -> anyhow::Result<()> {
    run(cargo()
        .args([
            "run",
            "--quiet",
            "-p",
            "shortener-server",
            "--bin",
            "shortener",
            "--",
        ])
        .arg("migrate")
        .args(args))
}

fn openapi() -> anyhow::Result<()> {
    run(cargo()
        .args([
            "test",
            "--quiet",
            "-p",
            "shortener-http",
            "--lib",
            "openapi_document_is_committed",
        ])
        .env("UPDATE_OPENAPI", "1"))?;
    eprintln!("xtask: wrote openapi/shortener.json");
    Ok(())
}
