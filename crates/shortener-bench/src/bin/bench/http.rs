//! Benchmark 4: redirects per second, with wrk, against the poem ceiling
//! (`crates/shortener-bench/src/bin/ceiling.rs`): one hot link on the embedded default with
//! the cache on and off, with a browser's User-Agent (bot detection runs), with a Redis
//! `redirect` policy that never refuses, and on the Redis limiter over PostgreSQL; and a
//! random link out of 10 000, all cached.
//! Also [`alternate`], the rounds of wrk runs that the creates benchmark shares.

use std::path::Path;

use anyhow::ensure;
use shortener_testkit::{RedisServer, require_binary};

use super::Context;
use super::report::{Section, Unit};
use super::servers::{Node, SQLITE, UNLIMITED, ceiling, database, postgres, redis_limiter};
use super::tools::Wrk;

/// Links of the random-link comparison.
const RANDOM_LINKS: usize = 10_000;
/// A desktop browser's User-Agent.
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

pub fn run(context: &Context) -> anyhow::Result<Section> {
    require_binary("wrk")?;
    require_binary("redis-server")?;
    let (_ceiling, base) = ceiling(context)?;
    let mut configs = vec![
        ("embedded, cache on", SQLITE.to_owned()),
        (
            "embedded, cache off",
            format!("{SQLITE}[cache]\ncapacity = 0\n"),
        ),
        // What the request counter and histogram cost a hot redirect. The line before any
        // table header lands in the `[server]` table that `Node::start` opens the file with.
        (
            "embedded, request metrics off",
            format!("request_metrics = false\n{SQLITE}"),
        ),
    ];
    let redis = RedisServer::try_start_private()?;
    // The same node as "embedded, cache on", plus one Redis script call per redirect.
    configs.push((
        "embedded + Redis redirect policy",
        format!(
            "{SQLITE}{}[limiter.policies.redirect]\n{UNLIMITED}",
            redis_limiter(redis.url())
        ),
    ));
    // Optional: without PostgreSQL the embedded figures still stand.
    let database = database(context, "http");
    if let Some((database, _)) = &database {
        let (storage, limiter) = (postgres(database.url()), redis_limiter(redis.url()));
        let config = format!("{storage}{limiter}[limiter.policies.redirect]\n{UNLIMITED}");
        configs.push(("Redis limiter + PostgreSQL, cache on", config.clone()));
        configs.push((
            "Redis limiter + PostgreSQL, cache off",
            format!("{config}[cache]\ncapacity = 0\n"),
        ));
    }
    let mut targets = vec![("poem ceiling".to_owned(), format!("{base}/bench"))];
    let mut nodes = Vec::new();
    for (label, config) in configs {
        let node = Node::start(context, &config)?;
        let url = node.create_link()?;
        context.step("http", &format!("{label}: a hot link {url}"));
        targets.push((label.to_owned(), url));
        nodes.push(node);
    }
    let script = context.wrk_script();
    let wrk = Wrk::standard(&script, context.wrk_seconds());
    let mut section = alternate(context, "http", &wrk, &targets, "redirects/s", &[])?;
    for (label, _) in targets.iter().skip(1) {
        let command = wrk.describe(&format!("http://127.0.0.1:PORT/CODE ({label})"));
        for (what, figure) in [("redirects/s", "redirects/s"), ("p99", "p99")] {
            section.compare(
                &format!("{what}, one hot link: {label} vs the poem ceiling"),
                &format!("{label} {figure}"),
                Some(&format!("poem ceiling {figure}")),
                &command,
            );
        }
    }
    section.compare(
        "redirects/s, one hot link: request metrics on (the default) vs off (goal >= 0.97)",
        "embedded, cache on redirects/s",
        Some("embedded, request metrics off redirects/s"),
        &wrk.describe("http://127.0.0.1:PORT/CODE"),
    );
    section.compare(
        "redirects/s, one hot link: a Redis `redirect` policy (never refusing) vs none",
        "embedded + Redis redirect policy redirects/s",
        Some("embedded, cache on redirects/s"),
        &wrk.describe("http://127.0.0.1:PORT/CODE"),
    );
    // The nodes stop before their database is dropped.
    drop(nodes);
    section.merge(random_links(context, &script, &base)?);
    section.merge(browser_agent(context, &script, &base)?);
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

/// Warms every `(label, url)` target up with 1 s of `wrk`, then runs `wrk` on each in turn,
/// `rounds` times: series `<label> <rate>`, `<label> p50` and `<label> p99`. Every response
/// must be a 2xx or 3xx, and no request may fail, except wrk's timeouts on the targets
/// named in `timeouts_counted`, which are a result (series `<label> wrk timeouts`).
pub fn alternate(
    context: &Context,
    bench: &str,
    wrk: &Wrk<'_>,
    targets: &[(String, String)],
    rate: &str,
    timeouts_counted: &[&str],
) -> anyhow::Result<Section> {
    for (_, url) in targets {
        Wrk { seconds: 1, ..*wrk }.run(url)?;
    }
    context.step(bench, "warmed up every server with 1 s of wrk");
    let mut section = Section::default();
    for round in 1..=context.rounds {
        for (label, url) in targets {
            let run = wrk.run(url)?;
            let counted = timeouts_counted.contains(&label.as_str());
            ensure!(
                run.bad_statuses == 0.0 && (counted || run.socket_errors == 0.0),
                "{label}: {} bad statuses, {} socket errors",
                run.bad_statuses,
                run.socket_errors
            );
            if counted {
                section.push(
                    &format!("{label} wrk timeouts"),
                    Unit::Count,
                    run.socket_errors,
                );
            }
            context.round(bench, round, &format!("{label}: {}", run.figures));
            section.figures(label, rate, run.figures);
        }
    }
    Ok(section)
}

/// A random link out of [`RANDOM_LINKS`], all cached, on the embedded default, against the
/// ceiling answering the same paths.
fn random_links(context: &Context, script: &Path, base: &str) -> anyhow::Result<Section> {
    let config =
        format!("{SQLITE}[cache]\nttl_secs = 3600\n[limiter.policies.create]\n{UNLIMITED}");
    let node = Node::start(context, &config)?;
    let codes = node.create_cached_links(RANDOM_LINKS)?;
    // Beside the wrk script, in the run's own temp dir.
    let file = script.with_file_name("codes.txt");
    std::fs::write(&file, codes.join("\n") + "\n")?;
    context.step("http", &format!("{} links made and cached", codes.len()));
    let wrk = Wrk {
        codes: Some(&file),
        ..Wrk::standard(script, context.wrk_seconds())
    };
    let targets = [
        ("poem ceiling, random paths".to_owned(), format!("{base}/")),
        (
            "embedded, random link of 10 000".to_owned(),
            format!("{}/", node.base),
        ),
    ];
    let mut section = alternate(context, "http", &wrk, &targets, "redirects/s", &[])?;
    section.compare(
        "redirects/s, a random link out of 10 000, all cached: embedded vs the poem ceiling",
        "embedded, random link of 10 000 redirects/s",
        Some("poem ceiling, random paths redirects/s"),
        &wrk.describe("http://127.0.0.1:PORT/"),
    );
    Ok(section)
}

/// One hot link requested with a browser's User-Agent, against the ceiling with the same.
fn browser_agent(context: &Context, script: &Path, base: &str) -> anyhow::Result<Section> {
    let node = Node::start(context, SQLITE)?;
    let url = node.create_link()?;
    let wrk = Wrk {
        user_agent: Some(BROWSER),
        ..Wrk::standard(script, context.wrk_seconds())
    };
    let targets = [
        (
            "poem ceiling, browser User-Agent".to_owned(),
            format!("{base}/bench"),
        ),
        ("embedded, browser User-Agent".to_owned(), url),
    ];
    let mut section = alternate(context, "http", &wrk, &targets, "redirects/s", &[])?;
    section.compare(
        "redirects/s, one hot link with a browser's User-Agent: embedded vs the poem ceiling",
        "embedded, browser User-Agent redirects/s",
        Some("poem ceiling, browser User-Agent redirects/s"),
        &wrk.describe("http://127.0.0.1:PORT/CODE"),
    );
    Ok(section)
}
