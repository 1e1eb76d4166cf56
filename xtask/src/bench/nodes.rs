//! Benchmark 6: three `shortener` nodes on one Redis. Creates per second of the three
//! loaded at once against one node alone, and admission accuracy under a quota shared by
//! the three: admitted / (capacity + rate * elapsed), with demand far above the quota.

use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::Context;
use super::process::{TempDir, require};
use super::redis::RedisServer;
use super::report::{Section, Unit};
use super::shortener::{Node, QUOTA_KEY, Quota, Setup, Storage, UNLIMITED};
use super::wrk::{CREATE_SCRIPT, Wrk, WrkRun};

const NODES: usize = 3;
/// The shared quota: demand from three wrk processes is thousands a second.
const QUOTA: Quota = Quota {
    capacity: 100,
    refill_per_sec: 200.0,
};
const CREATED: &str = "shortener_links_created_total";

pub fn run(context: &Context) -> anyhow::Result<Section> {
    require("wrk")?;
    let binary = context.release_binary("shortener-server", "shortener")?;
    let scripts = TempDir::with_prefix("wrk")?;
    let script = scripts.path().join("create.lua");
    std::fs::write(&script, CREATE_SCRIPT)?;
    let redis = RedisServer::start()?;
    let setup = Setup {
        storage: Storage::Memory,
        redis: Some(redis.url()),
        create: Some(UNLIMITED),
        quota_tier: Some(QUOTA),
        ..Setup::embedded()
    };
    let nodes = (0..NODES)
        .map(|_| Node::start(&binary, "nodes", &setup))
        .collect::<anyhow::Result<Vec<_>>>()?;
    context.step(
        "nodes",
        &format!(
            "{NODES} nodes on redis-server port {}: {}",
            redis.port(),
            nodes
                .iter()
                .map(|node| node.base.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        ),
    );
    let seconds = context.wrk_seconds();
    let alone = Wrk {
        script: Some(&script),
        ..Wrk::standard(seconds)
    };
    // Three wrk processes of one thread each: about the connections of one `-t2 -c64`.
    let each = Wrk {
        threads: 1,
        connections: 22,
        ..alone
    };
    let quota = Wrk {
        api_key: Some(QUOTA_KEY),
        ..each
    };
    let url = |node: &Node| format!("{}/api/v1/links", node.base);
    for node in &nodes {
        Wrk {
            seconds: 1,
            ..alone
        }
        .run(&url(node))?;
    }
    let mut section = Section::default();
    let mut fallbacks = 0.0;
    for round in 1..=context.rounds {
        let run = alone.run(&url(&nodes[0]))?;
        context.step(
            "nodes",
            &format!(
                "round {round}/{}: 1 node: {} creates",
                context.rounds,
                Unit::PerSecond.format(run.rps)
            ),
        );
        section
            .series("1 node creates/s", Unit::PerSecond)
            .values
            .push(run.rps);

        let runs = all_at_once(&nodes, &each, url)?;
        let rate: f64 = runs.iter().map(|run| run.rps).sum();
        context.step(
            "nodes",
            &format!(
                "round {round}/{}: {NODES} nodes: {} creates",
                context.rounds,
                Unit::PerSecond.format(rate)
            ),
        );
        section
            .series("3 nodes creates/s", Unit::PerSecond)
            .values
            .push(rate);

        // A full bucket to start from: it refills in capacity / rate.
        std::thread::sleep(Duration::from_secs_f64(
            capacity() / QUOTA.refill_per_sec + 0.25,
        ));
        let before = created(&nodes)?;
        let fallbacks_before = fallback_decisions(&nodes)?;
        // From before the first wrk starts to after the last ends: longer than the span of
        // the decisions, so the bound is generous and an over-admission is a real one.
        let started = Instant::now();
        let runs = all_at_once(&nodes, &quota, url)?;
        let elapsed = started.elapsed().as_secs_f64();
        let admitted = created(&nodes)? - before;
        fallbacks += fallback_decisions(&nodes)? - fallbacks_before;
        let bound = capacity() + QUOTA.refill_per_sec * elapsed;
        let demand: f64 = runs.iter().map(|run| run.requests).sum();
        let accuracy = 100.0 * admitted / bound;
        context.step(
            "nodes",
            &format!("round {round}/{}: quota: {admitted} admitted of {demand} requests in {elapsed:.2} s, bound {bound:.0}: {accuracy:.1}%", context.rounds),
        );
        section
            .series("admitted / bound", Unit::Percent)
            .values
            .push(accuracy);
        section
            .series("admitted", Unit::Count)
            .values
            .push(admitted);
        section
            .series("bound (capacity + rate * elapsed)", Unit::Count)
            .values
            .push(bound);
        section
            .series("over-admitted (admitted - bound, if above)", Unit::Count)
            .values
            .push((admitted - bound.floor()).max(0.0));
        section
            .series("requests under the quota", Unit::Count)
            .values
            .push(demand);
    }
    let command = each.describe("http://127.0.0.1:PORT_i/api/v1/links (one per node, at once)");
    section.compare(
        "creates/s: 3 nodes on one Redis, loaded at once, vs 1 node",
        "3 nodes creates/s",
        Some("1 node creates/s"),
        &command,
    );
    section.compare(
        &format!("admission under a quota shared by 3 nodes (capacity {}, {}/s): admitted / (capacity + rate * elapsed)", QUOTA.capacity, QUOTA.refill_per_sec),
        "admitted / bound",
        None,
        &quota.describe("... with X-API-Key of the quota tier, on each node at once"),
    );
    section.compare(
        "over-admission across 3 nodes (admitted above the bound)",
        "over-admitted (admitted - bound, if above)",
        None,
        "the same runs",
    );
    section.notes = vec![
        format!(
            "{NODES} release `shortener` nodes on one private redis-server (token bucket), links in memory (each node its own store), so that the limiter, not a database, is what they share; the machine's {} cores carry the nodes, Redis and wrk.",
            std::thread::available_parallelism().map_or(0, std::num::NonZero::get)
        ),
        format!(
            "Throughput: `create` quota too large to refuse; {} against one node, then {NODES} wrk of -t1 -c22 against the {NODES} nodes at once, alternated in every round.",
            alone.describe("...")
        ),
        format!(
            "Accuracy: requests with the API key of the `quota` tier (capacity {}, {}/s, one bucket for the key across the nodes), starting from a full bucket; admitted = the rise of `{CREATED}` over the nodes, elapsed = from the start of the first wrk to the end of the last (longer than the decisions' span, so the bound is generous: an over-admission is a real one, and accuracy is understated by a few tokens).",
            QUOTA.capacity, QUOTA.refill_per_sec
        ),
        format!(
            "Decisions made by the local fallback instead of Redis during the accuracy runs: {fallbacks} (they would not be bounded by the shared quota)."
        ),
    ];
    drop(nodes);
    Ok(section)
}

#[allow(clippy::cast_precision_loss)] // a small capacity, exact in f64
fn capacity() -> f64 {
    QUOTA.capacity as f64
}

/// One wrk per node, all started before any is waited for.
fn all_at_once(
    nodes: &[Node],
    wrk: &Wrk<'_>,
    url: impl Fn(&Node) -> String,
) -> anyhow::Result<Vec<WrkRun>> {
    let running = nodes
        .iter()
        .map(|node| wrk.spawn(&url(node)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    running.into_iter().map(|running| running.wait()).collect()
}

fn created(nodes: &[Node]) -> anyhow::Result<f64> {
    nodes
        .iter()
        .map(|node| node.counter(CREATED, &[]).context("reading /metrics"))
        .sum()
}

fn fallback_decisions(nodes: &[Node]) -> anyhow::Result<f64> {
    nodes
        .iter()
        .map(|node| node.counter("shortener_ratelimit_fallback_decisions_total", &[]))
        .sum()
}
