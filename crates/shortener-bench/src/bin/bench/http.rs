//! Benchmarks 4 to 6, with wrk against `shortener` nodes: redirects per second against the
//! poem ceiling ([`run`]); creates per second by limiter, storage and SQLite durability
//! ([`creates`]); three nodes on one Redis ([`nodes`]), loaded at once against one alone,
//! and their admission under a shared quota, with demand far above it.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use shortener_testkit::{require_binary, spawn_listening};

use super::Context;
use super::report::{Section, Unit};
use super::tools::{
    CREATE, Node, SQLITE, STARTUP, UNLIMITED, Wrk, database, private_redis, redis_limiter, stdout,
    storage,
};

const RANDOM_LINKS: usize = 10_000;
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const REFERER: &str = "https://news.example.com/item?id=42";
/// SQLite nodes by durability: (label, storage.sqlite_synchronous, storage.sqlite_group_commit):
/// what `full` costs and what group commit wins back (the default is full with group commit).
/// Full without group commit queues creates behind one fsync each: wrk's timeouts are counted.
const DURABILITY: [(&str, &str, bool); 3] = [
    ("SQLite normal", "normal", false),
    ("SQLite full", "full", false),
    ("SQLite full + group commit", "full", true),
];
const CACHE_OFF: &str = "[cache]\ncapacity = 0\n";
const NODES: usize = 3;
/// The statement a create makes alone (`insert.rs` of `shortener-postgres`), a new code each.
const PGBENCH_INSERT: &str = "\\set n random(1, 2000000000)
INSERT INTO links (code, url, created_at, expires_at, max_visits, owner, redirect_status, forward_query, expired_url, title, crawlable, tags, domain, password_hash) VALUES ('p' || :client_id || '-' || :n || '-' || random(), 'https://example.com/bench', now(), NULL, NULL, NULL, NULL, NULL, NULL, NULL, false, '{}', '', NULL) RETURNING code, url, created_at, expires_at, max_visits, visits, owner, redirect_status, forward_query, expired_url, title, crawlable, tags, domain, password_hash;
";
/// The shared quota (capacity, refill per second), far below three wrk's thousands a second.
const QUOTA: (f64, f64) = (100.0, 200.0);
/// The API key of the `quota` tier, and its SHA-256 (`printf %s bench-quota-key | sha256sum`).
const KEY: &str = "bench-quota-key";
const SHA256: &str = "7d7644a98b0dc289e9637e6b51f17675241236d69ca5c67ef7ade62cace97a8f";
const CREATED: &str = "shortener_links_created_total";
const FALLBACK: &str = "shortener_ratelimit_fallback_decisions_total";
const OVER: &str = "over-admitted (admitted - bound, if above)";

pub fn run(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    let redis = private_redis(context, &["wrk"])?;
    let ceiling = &mut Command::new(context.binaries.join("ceiling"));
    let (_ceiling, base) = spawn_listening("ceiling", ceiling, "ceiling listening on ", STARTUP)?;
    let redirect = redis_limiter(redis.url()) + "[limiter.policies.redirect]\n" + UNLIMITED;
    // What the request counter and histogram cost a hot redirect. The line before any
    // table header lands in the `[server]` table that `Node::start` opens the file with.
    let metrics_off = format!("request_metrics = false\n{SQLITE}");
    // The same node as "embedded, cache on", plus one Redis script call per redirect.
    let redis_policy = format!("{SQLITE}{redirect}");
    // The same, each node leasing up to 1 000 tokens per call (reserve and lease: 6 000 of
    // the 10^9, well within the 2%).
    let leased_policy = format!("{SQLITE}{redirect}lease = 1000\n");
    let mut configs = vec![
        ("embedded, cache on", SQLITE.to_owned()),
        ("embedded, cache off", format!("{SQLITE}{CACHE_OFF}")),
        ("embedded, request metrics off", metrics_off),
        ("embedded + Redis redirect policy", redis_policy),
        (
            "embedded + Redis redirect policy, lease = 1000",
            leased_policy,
        ),
    ];
    // Optional: without PostgreSQL the embedded figures still stand.
    let database = database(context);
    if let Some((database, _)) = &database {
        let cached = format!("{}{redirect}", storage("postgres", database.url()));
        let uncached = format!("{cached}{CACHE_OFF}");
        configs.push(("Redis limiter + PostgreSQL, cache on", cached));
        configs.push(("Redis limiter + PostgreSQL, cache off", uncached));
    }
    let (wrk, hot_link) = (context.wrk(&[]), Node::create_link);
    let ceiling = ("poem ceiling", format!("{base}/bench"));
    load(section, context, &wrk, Some(ceiling), &configs, hot_link)?;
    for (label, _) in &configs {
        let command = wrk.describe(&format!("http://127.0.0.1:PORT/CODE ({label})"));
        for figure in ["redirects/s", "p99"] {
            let what = format!("{figure}, one hot link: {label} vs the poem ceiling");
            section.versus(&what, [label, "poem ceiling", figure], &command);
        }
    }
    let command = wrk.describe("http://127.0.0.1:PORT/CODE");
    let [on, off, policy, leased] = [configs[0].0, configs[2].0, configs[3].0, configs[4].0];
    let what = "redirects/s, one hot link: request metrics on (the default) vs off (goal >= 0.97)";
    section.versus(what, [on, off, "redirects/s"], &command);
    let what = "redirects/s, one hot link: a Redis `redirect` policy (never refusing) vs none";
    section.versus(what, [policy, on, "redirects/s"], &command);
    let what = "redirects/s, one hot link: a Redis `redirect` policy leasing 1 000 tokens per call vs none (goal >= 0.75)";
    section.versus(what, [leased, on, "redirects/s"], &command);

    // A random cached link of RANDOM_LINKS (codes in the run's temp dir) vs the same paths.
    let file = wrk.scripts.join("codes.txt");
    let codes = [("BENCH_CODES", file.to_str().context("a path")?, "codes.txt")];
    let random = context.wrk(&codes);
    let config =
        format!("{SQLITE}[cache]\nttl_secs = 3600\n[limiter.policies.create]\n{UNLIMITED}");
    let configs = [("embedded, random link of 10 000", config)];
    let ceiling = ("poem ceiling, random paths", format!("{base}/"));
    let labels = [configs[0].0, ceiling.0, "redirects/s"];
    let links = |node: &Node| {
        let codes = node.create_cached_links(RANDOM_LINKS)?;
        std::fs::write(&file, codes.join("\n") + "\n")?;
        context.step(&format!("{} links made and cached", codes.len()));
        Ok(format!("{}/", node.base))
    };
    load(section, context, &random, Some(ceiling), &configs, links)?;
    let what = "redirects/s, a random link out of 10 000, all cached: embedded vs the poem ceiling";
    section.versus(what, labels, &random.describe("http://127.0.0.1:PORT/"));

    // One hot link requested with a browser's User-Agent and a Referer, against the
    // ceiling with the same, and against the same node not counting visit values.
    let browser = [
        ("BENCH_USER_AGENT", BROWSER, "<a browser's>"),
        ("BENCH_REFERER", REFERER, "<a page's>"),
    ];
    let agent = context.wrk(&browser);
    let untracked = format!("{SQLITE}[visits]\ntrack_referrer = false\ntrack_agent = false\n");
    let configs = [
        ("embedded, browser User-Agent + Referer", SQLITE.to_owned()),
        ("embedded, the same, visit values off", untracked),
    ];
    let ceiling = ("poem ceiling, browser User-Agent", format!("{base}/bench"));
    let labels = [configs[0].0, ceiling.0, "redirects/s"];
    load(section, context, &agent, Some(ceiling), &configs, hot_link)?;
    let command = agent.describe("http://127.0.0.1:PORT/CODE");
    let what = "redirects/s, one hot link with a browser's User-Agent and a Referer: embedded vs the poem ceiling";
    section.versus(what, labels, &command);
    let what = "redirects/s, the same: referrer, browser, OS and device counted (the default) vs not (goal >= 0.9)";
    section.versus(what, [configs[0].0, configs[1].0, "redirects/s"], &command);
    section.notes = vec![
        format!("wrk -t2 -c64 -d{}s on one link, each server warmed up with 1 s of wrk; servers are release builds, alternated in every round, and every response must be a 3xx (no 404, 429 or 5xx).", wrk.seconds),
        "The poem ceiling answers every GET with the same 302 and does nothing else (`crates/shortener-bench/src/bin/ceiling.rs`).".to_owned(),
        "Embedded: the built-in defaults (SQLite, link cache, memory limiter, no `redirect` policy, so redirects are not limited); cache off is `[cache] capacity = 0`. Embedded + Redis redirect policy: the same with the Redis limiter (a private redis-server) and a `redirect` policy too large to refuse; with `lease = 1000`, the node leases up to 1 000 of its tokens per script call and admits from them in memory.".to_owned(),
        format!("Random links: {RANDOM_LINKS} links made through the bulk endpoint and each followed once before the run (`[cache] ttl_secs = 3600`, so that all stay cached); wrk GETs a random one of them per request, and the ceiling gets the same paths."),
        format!("Browser User-Agent: `{BROWSER}` and `Referer: {REFERER}` on every request, so that the bot detection (the `isbot` crate's patterns) and the visit values (the referring host; the browser, OS and device from the cached User-Agent parse) run on every redirect; wrk sends neither otherwise. Visit values off: `[visits] track_referrer = false`, `track_agent = false`."),
        match &database {
            Some(_) => "Redis limiter + PostgreSQL: a private redis-server, a throwaway database of the test kit (`shortener_test_<random>`) dropped afterwards, and a `redirect` policy too large to refuse, so that every redirect makes one script call on one hot key.".to_owned(),
            None => "Redis limiter + PostgreSQL: not measured, no PostgreSQL was reachable.".to_owned(),
        },
    ];
    Ok(())
}

pub fn creates(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    let redis = private_redis(context, &["wrk"])?;
    let database = database(context);
    let mut storages = vec![("SQLite", SQLITE.to_owned())];
    if let Some((database, _)) = &database {
        storages.push(("PostgreSQL", storage("postgres", database.url())));
    }
    let create = format!("[limiter.policies.create]\n{UNLIMITED}");
    let redis_limiter = redis_limiter(redis.url());
    let mut configs = Vec::new();
    for (storage_label, storage) in &storages {
        for (limiter, config) in [("memory", ""), ("Redis", redis_limiter.as_str())] {
            let label = format!("{limiter} limiter + {storage_label}");
            configs.push((label, format!("{storage}{config}{create}")));
        }
    }
    for (label, synchronous, group_commit) in DURABILITY {
        let durability = format!("sqlite_synchronous = \"{synchronous}\"\n");
        let durability = format!("{durability}sqlite_group_commit = {group_commit}\n");
        configs.push((label.to_owned(), format!("{SQLITE}{durability}{create}")));
    }
    let wrk = context.wrk(&[CREATE]);
    let url = |node: &Node| Ok(format!("{}/api/v1/links", node.base));
    load(section, context, &wrk, None, &configs, url)?;
    let command = wrk.describe("http://127.0.0.1:PORT/api/v1/links");
    let mut compare = |what: &str, ours: &str, reference: &str| {
        section.versus(what, [ours, reference, "creates/s"], &command);
    };
    for (storage, _) in &storages {
        let what = format!("creates/s, {storage}: Redis limiter vs memory limiter");
        let [redis, memory] = ["Redis", "memory"].map(|of| format!("{of} limiter + {storage}"));
        compare(&what, &redis, &memory);
    }
    let [normal, full, grouped] = DURABILITY.map(|(label, _, _)| label);
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
    section.notes = vec![
        format!("wrk -t2 -c64 -d{}s with `BENCH_CREATE=1` (`crates/shortener-bench/src/bin/bench/wrk.lua`: POST /api/v1/links, a random code each), each server warmed up with 1 s, alternated in every round; every response must be a 201.", wrk.seconds),
        "Durability rows: SQLite with the memory limiter and `storage.sqlite_synchronous` normal or full, `storage.sqlite_group_commit` off or on; the embedded default is full with group commit.".to_owned(),
        "The `create` policy is capacity 1 000 000 000 at 50 000/s, so nothing is refused and the limiter's cost is all that it adds; the Redis limiter uses a private redis-server (token bucket, one hot key: every request comes from 127.0.0.1).".to_owned(),
        match &database {
            Some(_) => "SQLite: a file per server; PostgreSQL: a throwaway database of the test kit (`shortener_test_<random>`) shared by both PostgreSQL servers and dropped afterwards; release builds, default pools.".to_owned(),
            None => "PostgreSQL: not measured, no PostgreSQL was reachable.".to_owned(),
        },
    ];
    if let Some((database, _)) = &database {
        // The same node as the row "memory limiter + PostgreSQL", beside pgbench.
        let config = storage("postgres", database.url()) + &create;
        pgbench(context, section, database.url(), &config, &wrk)?;
    }
    Ok(())
}

pub fn nodes(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    let redis = private_redis(context, &["wrk"])?;
    let (capacity, refill) = QUOTA;
    let config = format!(
        "[storage]\nkind = \"memory\"\n{}[limiter.policies.create]\n{UNLIMITED}\
         [limiter.tiers.quota.create]\ncapacity = {capacity}\nrefill_per_sec = {refill:?}\n\
         [[api_keys]]\nname = \"bench\"\nsha256 = \"{SHA256}\"\ntier = \"quota\"\n",
        redis_limiter(redis.url())
    );
    let nodes = (0..NODES).map(|_| Node::start(context, &config));
    let nodes = nodes.collect::<anyhow::Result<Vec<_>>>()?;
    let urls = nodes.iter().map(|n| n.base.clone() + "/api/v1/links");
    let urls: Vec<String> = urls.collect();
    let (url, all) = (redis.url(), urls.join(" "));
    context.step(&format!("{NODES} nodes on {url}: {all}"));
    let sum = |counter: &str| {
        let counts = nodes.iter().map(|node| node.counter(counter));
        counts.sum::<anyhow::Result<f64>>()
    };
    let alone = context.wrk(&[CREATE]);
    // Three wrk processes of one thread each: about the connections of one `-t2 -c64`.
    let mut each = alone;
    (each.threads, each.connections) = (1, 22);
    let mut quota = each;
    quota.env = &[("BENCH_API_KEY", KEY, "<key of the quota tier>"), CREATE];
    alone.warm_up(&urls)?;
    let mut fallbacks = 0.0;
    context.alternate(&["1 node", "3 nodes", "quota"], |_, variant| {
        if *variant != "quota" {
            let rate = if *variant == "1 node" {
                alone.run(&urls[0])?.figures.rate
            } else {
                each.run_at_once(&urls)?.iter().map(|run| run.figures.rate).sum()
            };
            section.push(&format!("{variant} creates/s"), Unit::PerSecond, rate);
            return Ok(format!("{variant}: {rate:.0} creates/s"));
        }
        // A full bucket to start from: it refills in capacity / rate.
        std::thread::sleep(Duration::from_secs_f64(capacity / refill + 0.25));
        let (before, fallbacks_before) = (sum(CREATED)?, sum(FALLBACK)?);
        // From before the first wrk starts to after the last ends: longer than the span of
        // the decisions, so the bound is generous and an over-admission is a real one.
        let started = Instant::now();
        let runs = quota.run_at_once(&urls)?;
        let elapsed = started.elapsed().as_secs_f64();
        let admitted = sum(CREATED)? - before;
        fallbacks += sum(FALLBACK)? - fallbacks_before;
        let bound = capacity + refill * elapsed;
        let demand: f64 = runs.iter().map(|run| run.requests).sum();
        let accuracy = 100.0 * admitted / bound;
        section.push("admitted / bound", Unit::Percent, accuracy);
        section.push("admitted", Unit::Count, admitted);
        section.push("bound (capacity + rate * elapsed)", Unit::Count, bound);
        section.push(OVER, Unit::Count, (admitted - bound.floor()).max(0.0));
        section.push("requests under the quota", Unit::Count, demand);
        Ok(format!("quota: {admitted} admitted of {demand} requests in {elapsed:.2} s, bound {bound:.0}: {accuracy:.1}%"))
    })?;
    let command = each.describe("http://127.0.0.1:PORT_i/api/v1/links (one per node, at once)");
    let what = "creates/s: 3 nodes on one Redis, loaded at once, vs 1 node";
    section.versus(what, ["3 nodes", "1 node", "creates/s"], &command);
    let what = format!("a quota shared by 3 nodes (capacity {capacity}, {refill}/s)");
    let what = format!("admission under {what}: admitted / (capacity + rate * elapsed)");
    let command = quota.describe("... on each node at once");
    section.compare(&what, "admitted / bound", None, &command);
    let what = "over-admission across 3 nodes (admitted above the bound)";
    section.compare(what, OVER, None, "the same runs");
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let alone = alone.describe("...");
    section.notes = vec![
        format!(
            "{NODES} release `shortener` nodes on one private redis-server (token bucket), links in memory (each node its own store), so that the limiter, not a database, is what they share; the machine's {cores} cores carry the nodes, Redis and wrk."
        ),
        format!(
            "Throughput: `create` quota too large to refuse; {alone} against one node, then {NODES} wrk of -t1 -c22 against the {NODES} nodes at once, alternated in every round."
        ),
        format!(
            "Accuracy: requests with the API key of the `quota` tier (capacity {capacity}, {refill}/s, one bucket for the key across the nodes), starting from a full bucket; admitted = the rise of `{CREATED}` over the nodes, elapsed = from the start of the first wrk to the end of the last (longer than the decisions' span, so the bound is generous: an over-admission is a real one, and accuracy is understated by a few tokens)."
        ),
        format!(
            "Decisions made by the local fallback instead of Redis during the accuracy runs: {fallbacks} (they would not be bounded by the shared quota)."
        ),
    ];
    Ok(())
}

/// Creates/s of a node with `config` (on PostgreSQL at `url`) beside pgbench of the
/// statement that one create makes alone, on the same database, alternated: series
/// `<label> creates/s`.
fn pgbench(
    context: &Context,
    section: &mut Section,
    url: &str,
    config: &str,
    wrk: &Wrk,
) -> anyhow::Result<()> {
    if let Err(missing) = require_binary("pgbench") {
        context.step(&format!("{missing}: no pgbench row"));
        return Ok(());
    }
    let script = wrk.scripts.join("insert.sql");
    std::fs::write(&script, PGBENCH_INSERT)?;
    let node = Node::start(context, config)?;
    let (creates, seconds) = (
        format!("{}/api/v1/links", node.base),
        wrk.seconds.to_string(),
    );
    let script = script.to_str().context("a path")?;
    let args = [
        "-n", "-M", "prepared", "-c", "16", "-j", "2", "-T", &seconds, "-f", script, url,
    ];
    wrk.warm_up([&creates])?;
    let [ours, theirs] = ["PostgreSQL node", "pgbench -c16 INSERT ... RETURNING"];
    context.alternate(&[ours, theirs], |_, &label| {
        let rate = if label == ours {
            wrk.run(&creates)?.figures.rate
        } else {
            let seconds = u64::from(wrk.seconds) + 60;
            let out = stdout(Command::new("pgbench").args(args), seconds)?;
            let tps = out.lines().find_map(|line| line.strip_prefix("tps = "));
            let tps = tps.and_then(|tps| tps.split(' ').next()?.parse().ok());
            tps.with_context(|| format!("no tps from pgbench: {out}"))?
        };
        section.push(&format!("{label} creates/s"), Unit::PerSecond, rate);
        Ok(format!("{label}: {rate:.0} creates/s"))
    })?;
    let what = "creates/s on PostgreSQL: a node (memory limiter) vs pgbench of the same INSERT ... RETURNING (goal >= 0.8)";
    let shown = args[..10].join(" ") + " insert.sql DATABASE_URL";
    let command = wrk.describe("http://127.0.0.1:PORT/api/v1/links") + " vs pgbench " + &shown;
    section.versus(what, [ours, theirs, "creates/s"], &command);
    section.notes.push(format!("pgbench: the single-row `INSERT ... RETURNING` of a create made alone (grouped creates insert many rows in one statement instead), a new code each, with the 16 connections of the node's default pool, on the same database, alternated with the node: `{}`", PGBENCH_INSERT.lines().nth(1).unwrap_or_default()));
    Ok(())
}

/// Starts a node per `(label, config)` loaded at `url(node)`, warms it and the `ceiling` (if
/// any) up with 1 s of `wrk`, then alternates `wrk` on them: series `<label> creates/s` (or
/// `redirects/s`), `<label> p50` and `<label> p99`. Every response must be a 2xx or 3xx,
/// and no request may fail but wrk's timeouts on the [`DURABILITY`] nodes (series `<label>
/// wrk timeouts`). The nodes stop at the end, before the database they use is dropped.
fn load<L: ToString>(
    section: &mut Section,
    context: &Context,
    wrk: &Wrk<'_>,
    ceiling: Option<(&str, String)>,
    configs: &[(L, String)],
    url: impl Fn(&Node) -> anyhow::Result<String>,
) -> anyhow::Result<()> {
    let ceiling = ceiling.map(|(label, url)| (label.to_owned(), url));
    let (mut targets, mut nodes) = (Vec::from_iter(ceiling), Vec::new());
    for (label, config) in configs {
        let node = Node::start(context, config)?;
        let (label, url) = (label.to_string(), url(&node)?);
        context.step(&format!("{label}: {url}"));
        targets.push((label, url));
        nodes.push(node);
    }
    wrk.warm_up(targets.iter().map(|(_, url)| url))?;
    context.step("warmed up every server with 1 s of wrk");
    let created = wrk.env.contains(&CREATE);
    let rate = if created { "creates/s" } else { "redirects/s" };
    context.alternate(&targets, |_, (label, url)| {
        let run = wrk.run(url)?;
        let (bad, errors) = (run.bad_statuses, run.socket_errors);
        let counted = DURABILITY.iter().any(|(name, ..)| name == label);
        let what = format!("{label}: {bad} bad statuses, {errors} socket errors");
        ensure!(bad == 0.0 && (counted || errors == 0.0), what);
        if counted {
            section.push(&format!("{label} wrk timeouts"), Unit::Count, errors);
        }
        Ok(section.figures(label, rate, run.figures))
    })?;
    Ok(())
}
