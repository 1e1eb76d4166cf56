//! Benchmark 9, of the User-Agent parsers a visit's browser, OS and device can come
//! from: `woothee` (Project Woothee's dataset, compiled in; what the server uses, behind
//! a cache per string) against `ua-parser` (the uap ports' reference dataset, uap-core's
//! `regexes.yaml`, read from that crate's own package), on the same strings, in this
//! process, alternated in every round.

use std::hint::black_box;
use std::time::Instant;

use anyhow::Context as _;
use shortener_testkit::cargo_command;

use super::Context;
use super::report::{Section, Unit};

/// Browsers and a crawler as they introduce themselves today.
const AGENTS: [&str; 8] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
    "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
];

pub fn run(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    let yaml = std::fs::read_to_string(regexes_yaml()?)?;
    let regexes: ua_parser::Regexes<'_> = serde_yaml::from_str(&yaml)?;
    let started = Instant::now();
    let uap = ua_parser::Extractor::try_from(regexes)?;
    let compiled = started.elapsed();
    let woothee = woothee::parser::Parser::new();
    let passes = context.pick(2000, 100);
    let rate = |parse: &dyn Fn(&'static str)| {
        let started = Instant::now();
        for _ in 0..passes {
            AGENTS.iter().for_each(|agent| parse(agent));
        }
        (passes * AGENTS.len()) as f64 / started.elapsed().as_secs_f64()
    };
    for round in 1..=context.rounds {
        let ours = rate(&|agent| drop(black_box(woothee.parse(black_box(agent)))));
        let theirs = rate(&|agent| drop(black_box(uap.extract(black_box(agent)))));
        section.push("woothee parses/s", Unit::PerSecond, ours);
        section.push("ua-parser parses/s", Unit::PerSecond, theirs);
        let rounds = context.rounds;
        context.step(&format!(
            "round {round}/{rounds}: woothee {ours:.0}/s, ua-parser {theirs:.0}/s"
        ));
    }
    let what = "User-Agent parses/s, 8 current browser strings: woothee (the server's) vs ua-parser (uap-core's regexes)";
    let command = format!("in-process, {passes} passes over the strings per round");
    section.versus(what, ["woothee", "ua-parser", "parses/s"], &command);
    section.notes = vec![
        "Single-threaded, one parse of browser, OS and device each: `woothee::parser::Parser::parse` against `ua_parser::Extractor::extract` (user agent, OS and device extractors).".to_owned(),
        format!("ua-parser compiled uap-core's regexes.yaml in {:.1} s before the first parse (woothee has nothing to compile); the server parses each distinct string once and caches the result, so either would cost a redirect only on a string it has not seen.", compiled.as_secs_f64()),
    ];
    Ok(())
}

/// uap-core's `regexes.yaml` in the `ua-parser` package that this binary was built with.
fn regexes_yaml() -> anyhow::Result<std::path::PathBuf> {
    let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    // Not `--offline`: metadata reads the manifests of every platform's packages, which
    // a fresh machine has not downloaded.
    let output = (cargo_command().current_dir(workspace))
        .args(["metadata", "--format-version", "1"])
        .output()?;
    anyhow::ensure!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let manifest = (metadata["packages"]
        .as_array()
        .context("cargo metadata")?
        .iter())
    .find(|package| package["name"] == "ua-parser")
    .and_then(|package| package["manifest_path"].as_str())
    .context("the ua-parser package")?;
    let dir = std::path::Path::new(manifest)
        .parent()
        .context("a directory")?;
    Ok(dir.join("uap-core/regexes.yaml"))
}
