//! Benchmark 6: three `shortener` nodes on one Redis. Creates per second of the three
//! loaded at once against one node alone, and admission accuracy under a quota shared by
//! the three: admitted / (capacity + rate * elapsed), with demand far above the quota.

use std::time::{Duration, Instant};

use super::Context;
use super::report::{Section, Unit};
use super::servers::{Node, UNLIMITED, private_redis, redis_limiter};

const NODES: usize = 3;
/// The shared quota (capacity, refill per second): demand from three wrk processes is
/// thousands a second.
const QUOTA: (f64, f64) = (100.0, 200.0);
/// The API key of the `quota` tier, and its SHA-256 (`printf %s bench-quota-key | sha256sum`).
const KEY: &str = "bench-quota-key";
const SHA256: &str = "7d7644a98b0dc289e9637e6b51f17675241236d69ca5c67ef7ade62cace97a8f";
const CREATED: &str = "shortener_links_created_total";
const FALLBACK: &str = "shortener_ratelimit_fallback_decisions_total";

pub fn run(context: &Context) -> anyhow::Result<Section> {
    let redis = private_redis(&["wrk"])?;
    let (capacity, refill) = QUOTA;
    let config = format!(
        "[storage]\nkind = \"memory\"\n{}[limiter.policies.create]\n{UNLIMITED}\
         [limiter.tiers.quota.create]\ncapacity = {capacity}\nrefill_per_sec = {refill:?}\n\
         [[api_keys]]\nname = \"bench\"\nsha256 = \"{SHA256}\"\ntier = \"quota\"\n",
        redis_limiter(redis.url())
    );
    let nodes = (0..NODES).map(|_| Node::start(context, &config));
    let nodes = nodes.collect::<anyhow::Result<Vec<_>>>()?;
    let urls = (nodes.iter()).map(|node| format!("{}/api/v1/links", node.base));
    let urls: Vec<String> = urls.collect();
    context.step(&format!(
        "{NODES} nodes on {}: {}",
        redis.url(),
        urls.join(" ")
    ));
    let sum = |counter: &str| {
        let counts = nodes.iter().map(|node| node.counter(counter));
        counts.sum::<anyhow::Result<f64>>()
    };
    let mut alone = context.wrk();
    alone.create = true;
    // Three wrk processes of one thread each: about the connections of one `-t2 -c64`.
    let mut each = alone;
    (each.threads, each.connections) = (1, 22);
    let mut quota = each;
    quota.api_key = Some(KEY);
    let mut warm_up = alone;
    warm_up.seconds = 1;
    for url in &urls {
        warm_up.run(url)?;
    }
    let mut section = Section::default();
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
        let over = (admitted - bound.floor()).max(0.0);
        section.push("over-admitted (admitted - bound, if above)", Unit::Count, over);
        section.push("requests under the quota", Unit::Count, demand);
        Ok(format!("quota: {admitted} admitted of {demand} requests in {elapsed:.2} s, bound {bound:.0}: {accuracy:.1}%"))
    })?;
    let command = each.describe("http://127.0.0.1:PORT_i/api/v1/links (one per node, at once)");
    let what = "creates/s: 3 nodes on one Redis, loaded at once, vs 1 node";
    section.versus(what, ["3 nodes", "1 node", "creates/s"], &command);
    let what = format!(
        "admission under a quota shared by 3 nodes (capacity {capacity}, {refill}/s): admitted / (capacity + rate * elapsed)"
    );
    let command = quota.describe("... on each node at once");
    let command = format!("BENCH_API_KEY=<key of the quota tier> {command}");
    section.compare(&what, "admitted / bound", None, &command);
    let what = "over-admission across 3 nodes (admitted above the bound)";
    section.compare(
        what,
        "over-admitted (admitted - bound, if above)",
        None,
        "the same runs",
    );
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    section.notes = vec![
        format!(
            "{NODES} release `shortener` nodes on one private redis-server (token bucket), links in memory (each node its own store), so that the limiter, not a database, is what they share; the machine's {cores} cores carry the nodes, Redis and wrk."
        ),
        format!(
            "Throughput: `create` quota too large to refuse; {} against one node, then {NODES} wrk of -t1 -c22 against the {NODES} nodes at once, alternated in every round.",
            alone.describe("...")
        ),
        format!(
            "Accuracy: requests with the API key of the `quota` tier (capacity {capacity}, {refill}/s, one bucket for the key across the nodes), starting from a full bucket; admitted = the rise of `{CREATED}` over the nodes, elapsed = from the start of the first wrk to the end of the last (longer than the decisions' span, so the bound is generous: an over-admission is a real one, and accuracy is understated by a few tokens)."
        ),
        format!(
            "Decisions made by the local fallback instead of Redis during the accuracy runs: {fallbacks} (they would not be bounded by the shared quota)."
        ),
    ];
    drop(nodes);
    Ok(section)
}
