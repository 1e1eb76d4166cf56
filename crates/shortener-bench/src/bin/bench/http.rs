//! The HTTP benchmarks, with wrk against `shortener` nodes.
//!
//! - Benchmark 4 ([`run`]): redirects per second against the poem ceiling
//!   (`crates/shortener-bench/src/bin/ceiling.rs`): one hot link on the embedded default
//!   with the cache on and off, with request metrics off, with a Redis `redirect` policy
//!   that never refuses, and on the Redis limiter over PostgreSQL; a random link out of
//!   10 000, all cached; and a hot link with a browser's User-Agent (bot detection runs).
//! - Benchmark 5 ([`creates`]): creates per second (POST /api/v1/links, wrk with
//!   `BENCH_CREATE=1`) with the memory and the Redis limiter (a `create` quota too large to
//!   refuse), over SQLite and PostgreSQL; and SQLite's durability settings side by side
//!   (`synchronous` normal and full, full with group commit), with the memory limiter.

use anyhow::ensure;

use super::Context;
use super::report::{Section, Unit};
use super::servers::{
    Node, SQLITE, UNLIMITED, ceiling, database, postgres, private_redis, redis_limiter,
};
use super::tools::Wrk;

/// Links of the random-link comparison.
const RANDOM_LINKS: usize = 10_000;
/// A desktop browser's User-Agent.
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
/// SQLite nodes by durability: (label, storage.sqlite_synchronous, storage.sqlite_group_commit).
const DURABILITY: [(&str, &str, bool); 3] = [
    ("SQLite normal", "normal", false),
    ("SQLite full", "full", false),
    ("SQLite full + group commit", "full", true),
];

/// `(label, url)` of every server that wrk loads.
type Targets = Vec<(String, String)>;

/// Benchmark 4.
pub fn run(context: &Context) -> anyhow::Result<Section> {
    let redis = private_redis(&["wrk"])?;
    let (_ceiling, base) = ceiling(context)?;
    let redirect = format!("[limiter.policies.redirect]\n{UNLIMITED}");
    let redirect = format!("{}{redirect}", redis_limiter(redis.url()));
    let cache_off = "[cache]\ncapacity = 0\n";
    // What the request counter and histogram cost a hot redirect. The line before any
    // table header lands in the `[server]` table that `Node::start` opens the file with.
    let metrics_off = format!("request_metrics = false\n{SQLITE}");
    // The same node as "embedded, cache on", plus one Redis script call per redirect.
    let redis_policy = format!("{SQLITE}{redirect}");
    let mut configs = vec![
        ("embedded, cache on", SQLITE.to_owned()),
        ("embedded, cache off", format!("{SQLITE}{cache_off}")),
        ("embedded, request metrics off", metrics_off),
        ("embedded + Redis redirect policy", redis_policy),
    ];
    // Optional: without PostgreSQL the embedded figures still stand.
    let database = database(context);
    if let Some((database, _)) = &database {
        let config = format!("{}{redirect}", postgres(database.url()));
        let uncached = format!("{config}{cache_off}");
        configs.push(("Redis limiter + PostgreSQL, cache on", config));
        configs.push(("Redis limiter + PostgreSQL, cache off", uncached));
    }
    let (nodes, mut targets) = start(context, &configs, Node::create_link)?;
    targets.insert(0, ("poem ceiling".to_owned(), format!("{base}/bench")));
    let wrk = context.wrk();
    let mut section = Section::default();
    alternate(context, &mut section, &wrk, &targets, &[])?;
    for (label, _) in &targets[1..] {
        let command = wrk.describe(&format!("http://127.0.0.1:PORT/CODE ({label})"));
        for figure in ["redirects/s", "p99"] {
            let what = format!("{figure}, one hot link: {label} vs the poem ceiling");
            section.versus(&what, [label, "poem ceiling", figure], &command);
        }
    }
    let command = wrk.describe("http://127.0.0.1:PORT/CODE");
    let (on, off) = ("embedded, cache on", "embedded, request metrics off");
    let what = "request metrics on (the default) vs off (goal >= 0.97)";
    let what = format!("redirects/s, one hot link: {what}");
    section.versus(&what, [on, off, "redirects/s"], &command);
    let what = "a Redis `redirect` policy (never refusing) vs none";
    let what = format!("redirects/s, one hot link: {what}");
    section.versus(&what, [configs[3].0, on, "redirects/s"], &command);
    // The nodes stop before their database is dropped.
    drop(nodes);

    // A random link out of RANDOM_LINKS, all cached, against the ceiling answering the same
    // paths.
    let config =
        format!("{SQLITE}[cache]\nttl_secs = 3600\n[limiter.policies.create]\n{UNLIMITED}");
    let node = Node::start(context, &config)?;
    let codes = node.create_cached_links(RANDOM_LINKS)?;
    // Beside the wrk script, in the run's own temp dir.
    let file = wrk.scripts.join("codes.txt");
    std::fs::write(&file, codes.join("\n") + "\n")?;
    context.step(&format!("{} links made and cached", codes.len()));
    let mut random = wrk;
    random.codes = Some(&file);
    let ceiling = ("poem ceiling, random paths", format!("{base}/"));
    let node = ("embedded, random link of 10 000", format!("{}/", node.base));
    let what = "a random link out of 10 000, all cached";
    let pair = [ceiling, node];
    beside_ceiling(
        context,
        &mut section,
        &random,
        pair,
        what,
        "http://127.0.0.1:PORT/",
    )?;

    // One hot link requested with a browser's User-Agent, against the ceiling with the same.
    let node = Node::start(context, SQLITE)?;
    let mut browser = wrk;
    browser.user_agent = Some(BROWSER);
    let ceiling = ("poem ceiling, browser User-Agent", format!("{base}/bench"));
    let node = ("embedded, browser User-Agent", node.create_link()?);
    let what = "one hot link with a browser's User-Agent";
    let pair = [ceiling, node];
    beside_ceiling(
        context,
        &mut section,
        &browser,
        pair,
        what,
        "http://127.0.0.1:PORT/CODE",
    )?;
    section.notes = vec![
        format!("wrk -t2 -c64 -d{}s on one link, each server warmed up with 1 s of wrk; servers are release builds, alternated in every round, and every response must be a 3xx (no 404, 429 or 5xx).", wrk.seconds),
        "The poem ceiling answers every GET with the same 302 and does nothing else (`crates/shortener-bench/src/bin/ceiling.rs`).".to_owned(),
        "Embedded: the built-in defaults (SQLite, moka cache, memory limiter, no `redirect` policy, so redirects are not limited); cache off is `[cache] capacity = 0`. Embedded + Redis redirect policy: the same with the Redis limiter (a private redis-server) and a `redirect` policy too large to refuse.".to_owned(),
        format!("Random links: {RANDOM_LINKS} links made through the bulk endpoint and each followed once before the run (`[cache] ttl_secs = 3600`, so that all stay cached); wrk GETs a random one of them per request, and the ceiling gets the same paths."),
        format!("Browser User-Agent: `{BROWSER}` on every request, so that the bot detection (the `isbot` crate's patterns) runs on every redirect; wrk sends no User-Agent otherwise, and a request without one skips it."),
        match &database {
            Some(_) => "Redis limiter + PostgreSQL: a private redis-server, a throwaway database of the test kit (`shortener_test_<random>`) dropped afterwards, and a `redirect` policy too large to refuse, so that every redirect makes one script call on one hot key.".to_owned(),
            None => "Redis limiter + PostgreSQL: not measured, no PostgreSQL was reachable.".to_owned(),
        },
    ];
    Ok(section)
}

/// Benchmark 5.
pub fn creates(context: &Context) -> anyhow::Result<Section> {
    let redis = private_redis(&["wrk"])?;
    let database = database(context);
    let mut storages = vec![("SQLite", SQLITE.to_owned())];
    if let Some((database, _)) = &database {
        storages.push(("PostgreSQL", postgres(database.url())));
    }
    let create = format!("[limiter.policies.create]\n{UNLIMITED}");
    let mut configs = Vec::new();
    for (storage_label, storage) in &storages {
        let limiters = [
            ("memory limiter", String::new()),
            ("Redis limiter", redis_limiter(redis.url())),
        ];
        for (limiter, config) in limiters {
            configs.push((
                format!("{limiter} + {storage_label}"),
                format!("{storage}{config}{create}"),
            ));
        }
    }
    // The durability rows: what `storage.sqlite_synchronous = "full"` costs, and what
    // group commit wins back (the embedded default is full with group commit).
    for (label, synchronous, group_commit) in DURABILITY {
        let durability = format!(
            "sqlite_synchronous = \"{synchronous}\"\nsqlite_group_commit = {group_commit}\n"
        );
        configs.push((label.to_owned(), format!("{SQLITE}{durability}{create}")));
    }
    let url = |node: &Node| Ok(format!("{}/api/v1/links", node.base));
    let (nodes, targets) = start(context, &configs, url)?;
    let mut wrk = context.wrk();
    wrk.create = true;
    // `synchronous = full` without group commit queues creates behind one fsync each, and
    // some wait past wrk's 2 s timeout: that is a result, counted.
    let durability = DURABILITY.map(|(label, _, _)| label);
    let mut section = Section::default();
    alternate(context, &mut section, &wrk, &targets, &durability)?;
    let command = wrk.describe("http://127.0.0.1:PORT/api/v1/links");
    let mut compare = |what: &str, ours: &str, reference: &str| {
        section.versus(what, [ours, reference, "creates/s"], &command);
    };
    for (storage, _) in &storages {
        let what = format!("creates/s, {storage}: Redis limiter vs memory limiter");
        let [redis, memory] = ["Redis", "memory"].map(|of| format!("{of} limiter + {storage}"));
        compare(&what, &redis, &memory);
    }
    let [normal, full, grouped] = durability;
    let what = "creates/s, SQLite: synchronous full vs normal (no group commit)";
    compare(what, full, normal);
    let what = "creates/s, SQLite: full + group commit vs normal without (the 0.8x target)";
    compare(what, grouped, normal);
    if database.is_some() {
        let (postgres, sqlite) = ("memory limiter + PostgreSQL", "memory limiter + SQLite");
        let what = "creates/s, memory limiter: PostgreSQL vs SQLite";
        compare(what, postgres, sqlite);
        let what = "creates/s: Redis limiter + PostgreSQL (several nodes) vs the embedded default";
        compare(what, "Redis limiter + PostgreSQL", sqlite);
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

/// The ceiling and a node, alternated: one row, `redirects/s, <what>: embedded vs the poem
/// ceiling`.
fn beside_ceiling(
    context: &Context,
    section: &mut Section,
    wrk: &Wrk<'_>,
    pair: [(&str, String); 2],
    what: &str,
    url: &str,
) -> anyhow::Result<()> {
    let labels = [pair[1].0, pair[0].0, "redirects/s"];
    let targets = pair.map(|(label, url)| (label.to_owned(), url));
    alternate(context, section, wrk, &targets, &[])?;
    let what = format!("redirects/s, {what}: embedded vs the poem ceiling");
    section.versus(&what, labels, &wrk.describe(url));
    Ok(())
}

/// A node per `(label, config)`, and the `(label, url(node))` targets to load.
fn start<L: ToString>(
    context: &Context,
    configs: &[(L, String)],
    url: impl Fn(&Node) -> anyhow::Result<String>,
) -> anyhow::Result<(Vec<Node>, Targets)> {
    let (mut nodes, mut targets) = (Vec::new(), Vec::new());
    for (label, config) in configs {
        let node = Node::start(context, config)?;
        let (label, url) = (label.to_string(), url(&node)?);
        context.step(&format!("{label}: {url}"));
        targets.push((label, url));
        nodes.push(node);
    }
    Ok((nodes, targets))
}

/// Warms every `(label, url)` target up with 1 s of `wrk`, then runs `wrk` on each in turn,
/// `rounds` times: series `<label> creates/s` (or `redirects/s`), `<label> p50` and
/// `<label> p99`. Every response must be a 2xx or 3xx, and no request may fail, except
/// wrk's timeouts on the targets named in `timeouts_counted`, which are a result (series
/// `<label> wrk timeouts`).
fn alternate(
    context: &Context,
    section: &mut Section,
    wrk: &Wrk<'_>,
    targets: &[(String, String)],
    timeouts_counted: &[&str],
) -> anyhow::Result<()> {
    let rate = if wrk.create {
        "creates/s"
    } else {
        "redirects/s"
    };
    let mut warm_up = *wrk;
    warm_up.seconds = 1;
    for (_, url) in targets {
        warm_up.run(url)?;
    }
    context.step("warmed up every server with 1 s of wrk");
    context.alternate(targets, |_, (label, url)| {
        let run = wrk.run(url)?;
        let (bad, errors) = (run.bad_statuses, run.socket_errors);
        let counted = timeouts_counted.contains(&label.as_str());
        ensure!(
            bad == 0.0 && (counted || errors == 0.0),
            "{label}: {bad} bad statuses, {errors} socket errors"
        );
        if counted {
            section.push(&format!("{label} wrk timeouts"), Unit::Count, errors);
        }
        Ok(section.figures(label, rate, run.figures))
    })
}
