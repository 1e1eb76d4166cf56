//! Benchmark 5: creates per second (POST /api/v1/links, wrk with `BENCH_CREATE=1`) with the
//! memory and the Redis limiter (a `create` quota too large to refuse), over SQLite and
//! PostgreSQL; and SQLite's durability settings side by side (`synchronous` normal and
//! full, full with group commit), with the memory limiter.

use shortener_testkit::{RedisServer, require_binary};

use super::Context;
use super::http::alternate;
use super::report::Section;
use super::servers::{Node, SQLITE, UNLIMITED, database, postgres, redis_limiter};
use super::tools::Wrk;

/// SQLite nodes by durability: (label, storage.sqlite_synchronous, storage.sqlite_group_commit).
const DURABILITY: [(&str, &str, bool); 3] = [
    ("SQLite normal", "normal", false),
    ("SQLite full", "full", false),
    ("SQLite full + group commit", "full", true),
];

pub fn run(context: &Context) -> anyhow::Result<Section> {
    require_binary("wrk")?;
    require_binary("redis-server")?;
    let redis = RedisServer::try_start_private()?;
    let database = database(context, "creates");
    let mut storages = vec![("SQLite", SQLITE.to_owned())];
    if let Some((database, _)) = &database {
        storages.push(("PostgreSQL", postgres(database.url())));
    }
    let create = format!("[limiter.policies.create]\n{UNLIMITED}");
    let mut configs = Vec::new();
    for (storage_label, storage) in &storages {
        for (limiter, config) in [
            ("memory limiter", String::new()),
            ("Redis limiter", redis_limiter(redis.url())),
        ] {
            configs.push((
                format!("{limiter} + {storage_label}"),
                format!("{storage}{config}{create}"),
            ));
        }
    }
    // The durability rows: what `storage.sqlite_synchronous = "full"` costs, and what
    // group commit wins back (the embedded default is full with group commit).
    for (label, synchronous, group_commit) in DURABILITY {
        let storage = format!(
            "{SQLITE}sqlite_synchronous = \"{synchronous}\"\nsqlite_group_commit = {group_commit}\n"
        );
        configs.push((label.to_owned(), format!("{storage}{create}")));
    }
    let (mut targets, mut nodes) = (Vec::new(), Vec::new());
    for (label, config) in configs {
        let node = Node::start(context, &config)?;
        context.step("creates", &format!("{label}: {}", node.base));
        targets.push((label, format!("{}/api/v1/links", node.base)));
        nodes.push(node);
    }
    let script = context.wrk_script();
    let wrk = Wrk {
        create: true,
        ..Wrk::standard(&script, context.wrk_seconds())
    };
    // `synchronous = full` without group commit queues creates behind one fsync each, and
    // some wait past wrk's 2 s timeout: that is a result, counted.
    let durability = DURABILITY.map(|(label, _, _)| label);
    let mut section = alternate(context, "creates", &wrk, &targets, "creates/s", &durability)?;
    let command = wrk.describe("http://127.0.0.1:PORT/api/v1/links");
    let mut compare = |what: &str, ours: &str, reference: &str| {
        let reference = format!("{reference} creates/s");
        section.compare(
            what,
            &format!("{ours} creates/s"),
            Some(&reference),
            &command,
        );
    };
    for (storage, _) in &storages {
        compare(
            &format!("creates/s, {storage}: Redis limiter vs memory limiter"),
            &format!("Redis limiter + {storage}"),
            &format!("memory limiter + {storage}"),
        );
    }
    let [normal, full, grouped] = durability;
    compare(
        "creates/s, SQLite: synchronous full vs normal (no group commit)",
        full,
        normal,
    );
    compare(
        "creates/s, SQLite: full + group commit vs normal without (the 0.8x target)",
        grouped,
        normal,
    );
    if database.is_some() {
        let (postgres, sqlite) = ("memory limiter + PostgreSQL", "memory limiter + SQLite");
        compare(
            "creates/s, memory limiter: PostgreSQL vs SQLite",
            postgres,
            sqlite,
        );
        compare(
            "creates/s: Redis limiter + PostgreSQL (several nodes) vs the embedded default",
            "Redis limiter + PostgreSQL",
            sqlite,
        );
    }
    // The nodes stop before their database is dropped.
    drop(nodes);
    section.notes = vec![
        format!("wrk -t2 -c64 -d{}s with `BENCH_CREATE=1` (`crates/shortener-bench/src/bin/bench/wrk.lua`: POST /api/v1/links, a random code each), each server warmed up with 1 s, alternated in every round; every response must be a 201.", wrk.seconds),
        "Durability rows: SQLite with the memory limiter and `storage.sqlite_synchronous` normal or full, `storage.sqlite_group_commit` off or on; the embedded default is full with group commit.".to_owned(),
        "The `create` policy is capacity 1 000 000 000 at 50 000/s, so nothing is refused and the limiter's cost is all that it adds; the Redis limiter uses a private redis-server (token bucket, one hot key: every request comes from 127.0.0.1).".to_owned(),
        match &database {
            Some(_) => "SQLite: a file per server; PostgreSQL: a throwaway database of the test kit (`shortener_test_<random>`) shared by both PostgreSQL servers and dropped afterwards; release builds, default pools.".to_owned(),
            None => "PostgreSQL: not measured, no PostgreSQL was reachable.".to_owned(),
        },
    ];
    Ok(section)
}
