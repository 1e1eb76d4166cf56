//! Benchmark 4: redirects per second of one hot link, with wrk, against the poem ceiling
//! (`crates/shortener-bench/src/bin/ceiling.rs`): the embedded default with the cache on
//! and off, and the Redis limiter (a `redirect` policy that never refuses) over PostgreSQL.

use std::process::Command;

use anyhow::ensure;

use super::Context;
use super::process::{Guard, TempDir, require, spawn_server};
use super::redis::RedisServer;
use super::report::{Section, Unit};
use super::shortener::{Database, Node, Setup, Storage, UNLIMITED};
use super::wrk::Wrk;

/// One server under load, and the URL of its hot link.
#[derive(Debug)]
struct Target {
    label: &'static str,
    url: String,
    // Kept alive for the run.
    _node: Option<Node>,
    _ceiling: Option<(Guard, TempDir)>,
}

pub fn run(context: &Context) -> anyhow::Result<Section> {
    require("wrk")?;
    let shortener = context.release_binary("shortener-server", "shortener")?;
    let ceiling = context.release_binary("shortener-bench", "ceiling")?;
    let mut targets = Vec::new();

    let dir = TempDir::with_prefix("ceiling")?;
    let (process, base) = spawn_server(
        "ceiling",
        &mut Command::new(&ceiling),
        "ceiling listening on ",
        &dir.path().join("stderr.log"),
    )?;
    targets.push(Target {
        label: "poem ceiling",
        url: format!("{base}/bench"),
        _node: None,
        _ceiling: Some((process, dir)),
    });

    let embedded = [
        ("embedded, cache on", Setup::embedded()),
        (
            "embedded, cache off",
            Setup {
                cache: false,
                ..Setup::embedded()
            },
        ),
    ];
    for (label, setup) in embedded {
        targets.push(start(context, &shortener, label, &setup)?);
    }
    // Optional: without PostgreSQL the embedded figures still stand.
    let redis = RedisServer::start()?;
    let database = match Database::create() {
        Ok(database) => Some(database),
        Err(error) => {
            context.step(
                "http",
                &format!("no PostgreSQL, so no Redis + PostgreSQL figures: {error:#}"),
            );
            None
        }
    };
    if let Some(database) = &database {
        for (label, cache) in [
            ("Redis limiter + PostgreSQL, cache on", true),
            ("Redis limiter + PostgreSQL, cache off", false),
        ] {
            let setup = Setup {
                storage: Storage::Postgres(database.url().to_owned()),
                cache,
                redis: Some(redis.url()),
                redirect: Some(UNLIMITED),
                ..Setup::embedded()
            };
            targets.push(start(context, &shortener, label, &setup)?);
        }
    }

    let wrk = Wrk::standard(context.wrk_seconds());
    for target in &targets {
        Wrk::standard(1).run(&target.url)?;
    }
    context.step("http", "warmed up every server with 1 s of wrk");
    let mut section = Section::default();
    for round in 1..=context.rounds {
        for target in &targets {
            let run = wrk.run(&target.url)?;
            ensure!(
                run.bad_statuses == 0.0 && run.socket_errors == 0.0,
                "{}: {} bad statuses, {} socket errors",
                target.label,
                run.bad_statuses,
                run.socket_errors
            );
            context.step(
                "http",
                &format!(
                    "round {round}/{}: {}: {} (p50 {:.2} ms, p99 {:.2} ms)",
                    context.rounds,
                    target.label,
                    Unit::PerSecond.format(run.rps),
                    run.p50_ms,
                    run.p99_ms
                ),
            );
            section
                .series(&format!("{} redirects/s", target.label), Unit::PerSecond)
                .values
                .push(run.rps);
            section
                .series(&format!("{} p50", target.label), Unit::Millis)
                .values
                .push(run.p50_ms);
            section
                .series(&format!("{} p99", target.label), Unit::Millis)
                .values
                .push(run.p99_ms);
        }
    }
    for target in targets.iter().skip(1) {
        let command = wrk.describe(&format!("http://127.0.0.1:PORT/CODE ({})", target.label));
        section.compare(
            &format!(
                "redirects/s, one hot link: {} vs the poem ceiling",
                target.label
            ),
            &format!("{} redirects/s", target.label),
            Some("poem ceiling redirects/s"),
            &command,
        );
        section.compare(
            &format!("p99, one hot link: {} vs the poem ceiling", target.label),
            &format!("{} p99", target.label),
            Some("poem ceiling p99"),
            &command,
        );
    }
    // The nodes stop before their database is dropped.
    drop(targets);
    section.notes = vec![
        format!("wrk -t2 -c64 -d{}s on one link, each server warmed up with 1 s of wrk; servers are release builds, alternated in every round, and every response must be a 3xx (no 404, 429 or 5xx).", wrk.seconds),
        "The poem ceiling answers every GET with the same 302 and does nothing else (`crates/shortener-bench/src/bin/ceiling.rs`).".to_owned(),
        "Embedded: the built-in defaults (SQLite, moka cache, memory limiter, no `redirect` policy, so redirects are not limited); cache off is `[cache] capacity = 0`.".to_owned(),
        match &database {
            Some(_) => "Redis limiter + PostgreSQL: a private redis-server, a throwaway database (`shortener_bench_<random>`) dropped afterwards, and a `redirect` policy too large to refuse, so that every redirect makes one script call on one hot key.".to_owned(),
            None => "Redis limiter + PostgreSQL: not measured, no PostgreSQL was reachable.".to_owned(),
        },
    ];
    Ok(section)
}

fn start(
    context: &Context,
    binary: &std::path::Path,
    label: &'static str,
    setup: &Setup,
) -> anyhow::Result<Target> {
    let node = Node::start(binary, "http", setup)?;
    let path = node.create_link()?;
    context.step(
        "http",
        &format!("{label}: {} with a hot link {path}", node.base),
    );
    Ok(Target {
        label,
        url: format!("{}{path}", node.base),
        _node: Some(node),
        _ceiling: None,
    })
}
