//! Benchmark 11, of redirect rules: one hot link with wrk, on the server as it was before
//! rules existed ([`BASELINE`], built once into `target/bench-baseline/`) and on this
//! one, alternated in every round: a plain link on each, and on this server a link with
//! 8 rules whose last one matches and a link split 50/50.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};
use shortener_bench::TARGET;
use shortener_testkit::{cargo_command, require_binary};

use super::Context;
use super::report::Section;
use super::tools::{Node, SQLITE, stdout};

/// The last commit of the server without redirect rules.
const BASELINE: &str = "2447b12";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const BEFORE: &str = "before rules, plain link";
const PLAIN: &str = "plain link";
const EIGHT: &str = "8 rules, the last matching";
const SPLIT: &str = "50/50 split";

pub fn run(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    require_binary("wrk")?;
    let baseline = baseline(context)?;
    let before = Node::start_binary(&baseline, SQLITE)?;
    let node = Node::start(context, SQLITE)?;
    let old_plain = before.create(json!({ "url": TARGET }))?;
    let plain = node.create(json!({ "url": TARGET }))?;
    let eight = node.create(json!({ "url": TARGET, "rules": eight_rules() }))?;
    let split = node.create(json!({ "url": TARGET, "rules": [{"split": [
        {"url": "https://a.example/bench", "weight": 1},
        {"url": "https://b.example/bench", "weight": 1}]}]}))?;
    let targets = [
        (BEFORE, format!("{}/{old_plain}", before.base)),
        (PLAIN, format!("{}/{plain}", node.base)),
        (EIGHT, format!("{}/{eight}", node.base)),
        (SPLIT, format!("{}/{split}", node.base)),
    ];
    let browser = [("BENCH_USER_AGENT", BROWSER, "<a browser's>")];
    let wrk = context.wrk(&browser);
    wrk.warm_up(targets.iter().map(|(_, url)| url))?;
    context.step("warmed up every link with 1 s of wrk");
    context.alternate(&targets, |_, (label, url)| {
        let run = wrk.run(url)?;
        let (bad, errors) = (run.bad_statuses, run.socket_errors);
        ensure!(
            bad == 0.0 && errors == 0.0,
            "{label}: {bad} bad statuses, {errors} socket errors"
        );
        Ok(section.figures(label, "redirects/s", run.figures))
    })?;
    let command = wrk.describe("http://127.0.0.1:PORT/CODE");
    let rows = [
        (
            "redirects/s, one hot plain link: this server vs the one before rules (goal >= 0.97)",
            PLAIN,
            BEFORE,
        ),
        (
            "redirects/s, one hot link with 8 rules, the last matching, vs a plain link (goal >= 0.85)",
            EIGHT,
            PLAIN,
        ),
        (
            "redirects/s, one hot link split 50/50 vs a plain link (goal >= 0.9)",
            SPLIT,
            PLAIN,
        ),
    ];
    for (what, ours, reference) in rows {
        section.versus(what, [ours, reference, "redirects/s"], &command);
    }
    section.notes = vec![
        format!("Before rules: the server at commit {BASELINE} (the last without redirect rules), built with `cargo build --release` into `target/bench-baseline/{BASELINE}/` on the first run and kept; both nodes run the embedded default (SQLite, link cache, memory limiter) and are alternated in every round."),
        "8 rules: seven whose conditions fail (device mobile, OS iOS, browser Firefox, language fr, query ref=mail, network 10.0.0.0/8, country FR with no IP database) and an eighth (after 2000-01-01) that holds; each request reads the User-Agent (parsed once, then cached), the Accept-Language header, the query and the client's address.".to_owned(),
        "50/50 split: one rule without conditions and two variants; every wrk request comes from 127.0.0.1, so it hashes the same identity to the same variant each time.".to_owned(),
        format!("Every request carries a browser's User-Agent ({BROWSER}); wrk -t2 -c64, every response must be a 3xx."),
    ];
    Ok(())
}

fn eight_rules() -> Value {
    let failing = [
        json!({"type": "device", "value": "mobile"}),
        json!({"type": "os", "value": "ios"}),
        json!({"type": "browser", "value": "firefox"}),
        json!({"type": "language", "value": "fr"}),
        json!({"type": "query", "key": "ref", "value": "mail"}),
        json!({"type": "network", "value": "10.0.0.0/8"}),
        json!({"type": "country", "value": "FR"}),
    ];
    let mut rules: Vec<Value> = (failing.into_iter().enumerate())
        .map(|(index, condition)| {
            json!({"conditions": [condition], "url": format!("https://example.com/rule{index}")})
        })
        .collect();
    rules.push(
        json!({"conditions": [{"type": "after", "value": "2000-01-01T00:00:00Z"}],
                      "url": "https://example.com/last"}),
    );
    Value::Array(rules)
}

/// The server of [`BASELINE`]: built once (release) from `git archive` of the commit into
/// `target/bench-baseline/<commit>/`, and found there on later runs.
fn baseline(context: &Context) -> anyhow::Result<PathBuf> {
    let workspace = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let dir = workspace.join("target/bench-baseline").join(BASELINE);
    let binary = dir.join("target/release/shortener");
    if binary.exists() {
        return Ok(binary);
    }
    let source = dir.join("source");
    if !source.join("Cargo.toml").exists() {
        std::fs::create_dir_all(&source)?;
        let archive = format!(
            "git archive {BASELINE} | tar -x -C '{}'",
            source.to_str().context("a path")?
        );
        stdout(
            Command::new("sh")
                .args(["-c", &archive])
                .current_dir(workspace),
            300,
        )?;
    }
    context.step(&format!(
        "building the server at {BASELINE} (release, once)"
    ));
    let mut build = cargo_command();
    build
        .current_dir(&source)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .args([
            "build",
            "--release",
            "-p",
            "shortener-server",
            "--bin",
            "shortener",
        ]);
    stdout(&mut build, 3600)?;
    ensure!(binary.exists(), "no {} after the build", binary.display());
    Ok(binary)
}
