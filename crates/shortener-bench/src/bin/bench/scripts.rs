//! Benchmark 1: the limiter scripts inside Redis, against the naive token bucket
//! (`crates/shortener-bench/fixtures/naive_token_bucket.lua`) and plain `INCR` (the floor
//! of any counter), with redis-benchmark.

use anyhow::{Context as _, ensure};
use redis::Value;
use shortener_testkit::{RedisServer, require_binary};

use super::Context;
use super::report::{Section, Unit};
use super::tools::{KEY, Load, connect};

/// Every variant writes the same key shape; the server is flushed before each run.
const OUR_ARGS: [&str; 5] = ["100", "100000", "1", "", "0"];
/// A production-shaped key (`{prefix}{identity}:{policy}`) for `MEMORY USAGE`.
const MEMORY_KEY: &str = "rl:{203.0.113.9}:create";
const CLIENTS: u32 = 50;
const PIPELINES: [u32; 2] = [1, 16];

/// One command under test: (name, the command with [`KEY`] in it, the script's SHA-1).
type Variant = (&'static str, Vec<String>, Option<String>);

pub fn run(context: &Context) -> anyhow::Result<Section> {
    require_binary("redis-server")?;
    require_binary("redis-benchmark")?;
    let server = RedisServer::try_start_private()?;
    let mut redis = connect(&server)?;
    context.step(
        "scripts",
        &format!("private redis-server at {}", server.url()),
    );
    // Seconds from the client, as the naive script expects; fixed for the run, which only
    // makes its buckets drain (and it writes on a refusal all the same).
    let now_secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs()
        .to_string();
    let mut script = |name: &'static str, source: &str, args: &[&str]| -> anyhow::Result<Variant> {
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(source)
            .query(&mut redis)?;
        let words = ["EVALSHA", sha.as_str(), "1", KEY];
        let command = words
            .iter()
            .chain(args)
            .map(|word| (*word).to_owned())
            .collect();
        Ok((name, command, Some(sha)))
    };
    let variants = [
        script(
            "naive_token_bucket.lua",
            include_str!("../../../fixtures/naive_token_bucket.lua"),
            &["100", "10", &now_secs, "1"],
        )?,
        script(
            "token_bucket.lua",
            include_str!("../../../../../lua/token_bucket.lua"),
            &OUR_ARGS,
        )?,
        script(
            "gcra.lua",
            include_str!("../../../../../lua/gcra.lua"),
            &OUR_ARGS,
        )?,
        ("INCR", vec!["INCR".to_owned(), KEY.to_owned()], None),
    ];
    for variant in &variants {
        verify(&mut redis, variant)?;
    }
    context.step("scripts", "one call of each variant answered as expected");

    let mut section = Section::default();
    let seconds = context.seconds(3.0, 0.5);
    let mut requests = Vec::new();
    for pipeline in PIPELINES {
        for variant in &variants {
            // Long enough to warm up, short enough for --quick.
            let probe = match (pipeline, context.quick) {
                (1, true) => 5_000,
                (1, false) => 20_000,
                (_, true) => 20_000,
                (_, false) => 100_000,
            };
            let count = load(variant, pipeline, probe).calibrate(&server, seconds)?;
            context.step(
                "scripts",
                &format!("warm-up {} P{pipeline}: {count} requests a run", variant.0),
            );
            requests.push(count);
        }
    }
    for round in 1..=context.rounds {
        let runs = PIPELINES
            .iter()
            .flat_map(|pipeline| variants.iter().map(move |variant| (*pipeline, variant)));
        for ((pipeline, variant), count) in runs.zip(&requests) {
            let label = format!("{} P{pipeline}", variant.0);
            let run = load(variant, pipeline, *count)
                .run(&server)
                .with_context(|| label.clone())?;
            let us = run.usec_per_call;
            context.round(
                "scripts",
                round,
                &format!("{label}: {} ({us:.2} us per call in Redis)", run.figures),
            );
            section.push(&format!("{label} rps"), Unit::PerSecond, run.figures.rate);
            section.push(&format!("{label} p50"), Unit::Millis, run.figures.p50_ms);
            section.push(&format!("{label} Redis us per call"), Unit::Micros, us);
        }
    }
    for (name, command, _) in &variants {
        redis::cmd("FLUSHALL").exec(&mut redis)?;
        // In one transaction with the call: our scripts' keys expire when the bucket is
        // full again, 100 ms after one call here.
        let call = command
            .iter()
            .map(|word| if word == KEY { MEMORY_KEY } else { word });
        let (_, bytes): (Value, i64) = redis::pipe()
            .atomic()
            .cmd(&command[0])
            .arg(call.skip(1).collect::<Vec<_>>())
            .cmd("MEMORY")
            .arg(&["USAGE", MEMORY_KEY, "SAMPLES", "0"])
            .query(&mut redis)?;
        context.step(
            "scripts",
            &format!("MEMORY USAGE of one {name} key: {bytes} bytes"),
        );
        // A byte count far below 2^52.
        #[allow(clippy::cast_precision_loss)]
        section.push(&format!("{name} bytes per key"), Unit::Bytes, bytes as f64);
    }

    for (index, ours) in [(1, "token_bucket.lua"), (2, "gcra.lua")] {
        let describe = |variant: &Variant, pipeline| {
            let script = variant.2.as_deref().map(|sha| (sha, variant.0));
            load(variant, pipeline, 0).describe(script)
        };
        for pipeline in PIPELINES {
            section.compare(
                &format!(
                    "{ours} vs naive script: requests/s, 50 clients, P{pipeline}, 10 000 keys"
                ),
                &format!("{ours} P{pipeline} rps"),
                Some(&format!("naive_token_bucket.lua P{pipeline} rps")),
                &describe(&variants[index], pipeline),
            );
        }
        section.compare(
            &format!("{ours} vs naive script: Redis's usec_per_call (INFO commandstats), P16"),
            &format!("{ours} P16 Redis us per call"),
            Some("naive_token_bucket.lua P16 Redis us per call"),
            "INFO commandstats after CONFIG RESETSTAT",
        );
        section.compare(
            &format!("{ours} vs naive script: bytes per key"),
            &format!("{ours} bytes per key"),
            Some("naive_token_bucket.lua bytes per key"),
            &format!("MEMORY USAGE {MEMORY_KEY} SAMPLES 0"),
        );
        section.compare(
            &format!("{ours} vs INCR (the floor): requests/s, P16"),
            &format!("{ours} P16 rps"),
            Some("INCR P16 rps"),
            &describe(&variants[3], 16),
        );
    }
    let info: redis::InfoDict = redis::cmd("INFO").arg("server").query(&mut redis)?;
    let version: String = info.get("redis_version").unwrap_or_default();
    section.notes = vec![
        format!("A private redis-server (Redis {version}); redis-benchmark with {CLIENTS} clients, keys `{KEY}` over 10 000 random numbers, each run about {seconds} s after a warm-up run that sets its length, the server flushed and its statistics reset before each run."),
        "Our scripts: capacity 100, one token per 100 000 us (10/s), cost 1, Redis's own clock (ARGV[4] = \"\"), no audit (ARGV[5] = \"0\").".to_owned(),
        "The naive script: capacity 100, 10/s, a fixed client time in seconds, cost 1.".to_owned(),
        "Every run is checked in Redis: no errorstats, no failed or rejected calls, at least as many calls as requests, and keys left behind.".to_owned(),
        format!("Bytes per key: `MEMORY USAGE` of `{MEMORY_KEY}` after one call of each variant."),
    ];
    Ok(section)
}

/// redis-benchmark of the variant, [`CLIENTS`] clients.
fn load(variant: &Variant, pipeline: u32, requests: u64) -> Load<'_> {
    let command = variant.1.as_slice();
    Load {
        clients: CLIENTS,
        pipeline,
        requests,
        command,
    }
}

/// One call of the variant on a fresh key: an admitted decision that wrote its key, not an
/// error reply. INCR answers 1 and the naive script `{1, tokens}`; our scripts answer one
/// integer, a credit >= 0 for an admission.
fn verify(redis: &mut redis::Connection, (name, command, _): &Variant) -> anyhow::Result<()> {
    let key = "rl:{verify}:bench";
    let words: Vec<&str> = command
        .iter()
        .map(|word| if word == KEY { key } else { word })
        .collect();
    let reply: Value = redis::cmd(words[0]).arg(&words[1..]).query(redis)?;
    let admitted = match (&reply, *name) {
        (Value::Int(value), "INCR") => *value == 1,
        (Value::Int(credit), _) => *credit >= 0,
        (Value::Array(items), _) => items.first() == Some(&Value::Int(1)),
        _ => false,
    };
    ensure!(
        admitted,
        "`{}` answered {reply:?}, not an admitted decision",
        words.join(" ")
    );
    let exists: i64 = redis::cmd("EXISTS").arg(key).query(redis)?;
    ensure!(exists == 1, "`{}` wrote no key", words.join(" "));
    redis::cmd("FLUSHALL").exec(redis)?;
    Ok(())
}
