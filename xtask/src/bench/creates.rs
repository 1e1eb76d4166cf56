//! Benchmark 5: creates per second (POST /api/v1/links, wrk with `create.lua`) with the
//! memory and the Redis limiter (a `create` quota too large to refuse), over SQLite and
//! PostgreSQL; and SQLite's durability settings side by side (`synchronous` normal and
//! full, full with group commit), with the memory limiter.

use anyhow::ensure;

use super::Context;
use super::process::{TempDir, require};
use super::redis::RedisServer;
use super::report::{Section, Unit};
use super::shortener::{Database, Node, Setup, Storage, UNLIMITED};
use super::wrk::{CREATE_SCRIPT, Wrk};

pub fn run(context: &Context) -> anyhow::Result<Section> {
    require("wrk")?;
    let binary = context.release_binary("shortener-server", "shortener")?;
    let scripts = TempDir::with_prefix("wrk")?;
    let script = scripts.path().join("create.lua");
    std::fs::write(&script, CREATE_SCRIPT)?;
    let redis = RedisServer::start()?;
    let database = match Database::create() {
        Ok(database) => Some(database),
        Err(error) => {
            context.step(
                "creates",
                &format!("no PostgreSQL, so SQLite only: {error:#}"),
            );
            None
        }
    };
    let mut storages = vec![("SQLite", Storage::Sqlite)];
    if let Some(database) = &database {
        storages.push(("PostgreSQL", Storage::Postgres(database.url().to_owned())));
    }
    let mut nodes = Vec::new();
    for (storage_label, storage) in &storages {
        for (limiter_label, redis_url) in [
            ("memory limiter", None),
            ("Redis limiter", Some(redis.url())),
        ] {
            let setup = Setup {
                storage: storage.clone(),
                redis: redis_url,
                create: Some(UNLIMITED),
                ..Setup::embedded()
            };
            let label = format!("{limiter_label} + {storage_label}");
            let node = Node::start(&binary, "creates", &setup)?;
            context.step("creates", &format!("{label}: {}", node.base));
            nodes.push((label, node));
        }
    }
    // The durability rows: what `storage.sqlite_synchronous = "full"` costs, and what
    // group commit wins back (the embedded default is full with group commit).
    for (label, sqlite) in DURABILITY {
        let setup = Setup {
            create: Some(UNLIMITED),
            sqlite: Some(sqlite),
            ..Setup::embedded()
        };
        let node = Node::start(&binary, "creates", &setup)?;
        context.step("creates", &format!("{label}: {}", node.base));
        nodes.push((label.to_owned(), node));
    }
    let wrk = Wrk {
        script: Some(&script),
        ..Wrk::standard(context.wrk_seconds())
    };
    for (_, node) in &nodes {
        Wrk { seconds: 1, ..wrk }.run(&url(node))?;
    }
    context.step("creates", "warmed up every server with 1 s of wrk");
    let mut section = Section::default();
    for round in 1..=context.rounds {
        for (label, node) in &nodes {
            let run = wrk.run(&url(node))?;
            // `synchronous = full` without group commit queues creates behind one fsync
            // each, and some wait past wrk's 2 s timeout: that is a result, counted.
            let durability = DURABILITY.iter().any(|(name, _)| name == label);
            ensure!(
                run.bad_statuses == 0.0 && (durability || run.socket_errors == 0.0),
                "{label}: {} refused or failed creates, {} socket errors",
                run.bad_statuses,
                run.socket_errors
            );
            if durability {
                section
                    .series(&format!("{label} wrk timeouts"), Unit::Count)
                    .values
                    .push(run.socket_errors);
            }
            context.step(
                "creates",
                &format!(
                    "round {round}/{}: {label}: {} (p50 {:.2} ms, p99 {:.2} ms)",
                    context.rounds,
                    Unit::PerSecond.format(run.rps),
                    run.p50_ms,
                    run.p99_ms
                ),
            );
            section
                .series(&format!("{label} creates/s"), Unit::PerSecond)
                .values
                .push(run.rps);
            section
                .series(&format!("{label} p50"), Unit::Millis)
                .values
                .push(run.p50_ms);
            section
                .series(&format!("{label} p99"), Unit::Millis)
                .values
                .push(run.p99_ms);
        }
    }
    let command = wrk.describe("http://127.0.0.1:PORT/api/v1/links");
    for (storage, _) in &storages {
        section.compare(
            &format!("creates/s, {storage}: Redis limiter vs memory limiter"),
            &format!("Redis limiter + {storage} creates/s"),
            Some(&format!("memory limiter + {storage} creates/s")),
            &command,
        );
    }
    let [normal, full, grouped] = DURABILITY.map(|(label, _)| format!("{label} creates/s"));
    section.compare(
        "creates/s, SQLite: synchronous full vs normal (no group commit)",
        &full,
        Some(&normal),
        &command,
    );
    section.compare(
        "creates/s, SQLite: full + group commit vs normal without (the 0.8x target)",
        &grouped,
        Some(&normal),
        &command,
    );
    if database.is_some() {
        section.compare(
            "creates/s, memory limiter: PostgreSQL vs SQLite",
            "memory limiter + PostgreSQL creates/s",
            Some("memory limiter + SQLite creates/s"),
            &command,
        );
        section.compare(
            "creates/s: Redis limiter + PostgreSQL (several nodes) vs the embedded default",
            "Redis limiter + PostgreSQL creates/s",
            Some("memory limiter + SQLite creates/s"),
            &command,
        );
    }
    drop(nodes);
    section.notes = vec![
        format!("wrk -t2 -c64 -d{}s with `xtask/src/bench/create.lua` (POST /api/v1/links, a random code each), each server warmed up with 1 s, alternated in every round; every response must be a 201.", wrk.seconds),
        "Durability rows: SQLite with the memory limiter and `storage.sqlite_synchronous` normal or full, `storage.sqlite_group_commit` off or on; the embedded default is full with group commit.".to_owned(),
        "The `create` policy is capacity 1 000 000 000 at 50 000/s, so nothing is refused and the limiter's cost is all that it adds; the Redis limiter uses a private redis-server (token bucket, one hot key: every request comes from 127.0.0.1).".to_owned(),
        match &database {
            Some(_) => "SQLite: a file per server; PostgreSQL: a throwaway database (`shortener_bench_<random>`) shared by both PostgreSQL servers and dropped afterwards; release builds, default pools.".to_owned(),
            None => "PostgreSQL: not measured, no PostgreSQL was reachable.".to_owned(),
        },
    ];
    Ok(section)
}

/// SQLite nodes by durability: (label, (sqlite_synchronous, sqlite_group_commit)).
const DURABILITY: [(&str, (&str, bool)); 3] = [
    ("SQLite normal", ("normal", false)),
    ("SQLite full", ("full", false)),
    ("SQLite full + group commit", ("full", true)),
];

fn url(node: &Node) -> String {
    format!("{}/api/v1/links", node.base)
}
