//! The limiter scripts in Redis, with redis-benchmark on a private Redis.
//!
//! - Benchmark 1 ([`run`]): our scripts inside Redis, against the naive token bucket
//!   (`crates/shortener-bench/fixtures/naive_token_bucket.lua`) and plain `INCR` (the
//!   floor of any counter).
//! - Benchmark 2 ([`client`]): decisions through our client, `RedisRateLimiter` from 64
//!   tokio tasks in one process (`limiter_client`), against redis-benchmark of the same
//!   script with 64 clients and no pipelining.

use std::process::Command;

use anyhow::{Context as _, ensure};
use redis::{Connection, Value};
use shortener_testkit::RedisServer;

use super::Context;
use super::report::{Section, Unit};
use super::servers::private_redis;
use super::tools::{KEY, Load, connect, limiter_client};

const TOKEN_BUCKET: &str = include_str!("../../../../../lua/token_bucket.lua");
const GCRA: &str = include_str!("../../../../../lua/gcra.lua");
const NAIVE: &str = include_str!("../../../fixtures/naive_token_bucket.lua");
/// Our scripts, by their algorithm's name in `limiter_client` (and their file's).
const SCRIPTS: [(&str, &str); 2] = [("token_bucket", TOKEN_BUCKET), ("gcra", GCRA)];
/// Our scripts' arguments after the key: capacity 100, one token per 100 000 us, cost 1,
/// Redis's clock, no audit.
const OUR_ARGS: [&str; 5] = ["100", "100000", "1", "", "0"];
/// A production-shaped key (`{prefix}{identity}:{policy}`) for `MEMORY USAGE`.
const MEMORY_KEY: &str = "rl:{203.0.113.9}:create";
const CLIENTS: u32 = 50;
const PIPELINES: [u32; 2] = [1, 16];
/// The concurrency of benchmark 2, tasks and clients.
const TASKS: u32 = 64;

/// A command under test: its name (a script's file), and its words with [`KEY`] in them.
type Variant = (String, Vec<String>);

/// A private Redis, with redis-benchmark installed.
fn redis(context: &Context) -> anyhow::Result<(RedisServer, Connection)> {
    let server = private_redis(&["redis-benchmark"])?;
    context.step(&format!("private redis-server at {}", server.url()));
    let redis = connect(&server)?;
    Ok((server, redis))
}

/// `EVALSHA <sha> 1 KEY args...` of the script `name`, loaded into Redis.
fn evalsha(
    redis: &mut Connection,
    name: &str,
    lua: &str,
    args: &[&str],
) -> anyhow::Result<Variant> {
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(lua).query(redis)?;
    let words = ["EVALSHA", &sha, "1", KEY]
        .into_iter()
        .chain(args.iter().copied());
    Ok((format!("{name}.lua"), words.map(str::to_owned).collect()))
}

/// The words of `command` with `key` for [`KEY`].
fn with_key<'a>(command: &'a [String], key: &'a str) -> Vec<&'a str> {
    command
        .iter()
        .map(|word| if word == KEY { key } else { word })
        .collect()
}

/// redis-benchmark of one command.
fn load((name, command): &Variant, clients: u32, pipeline: u32, requests: u64) -> Load<'_> {
    Load {
        clients,
        pipeline,
        requests,
        name,
        command,
    }
}

/// Benchmark 1.
pub fn run(context: &Context) -> anyhow::Result<Section> {
    let (server, mut redis) = redis(context)?;
    // Seconds from the client, as the naive script expects; fixed for the run, which only
    // makes its buckets drain (and it writes on a refusal all the same).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let now = now.as_secs().to_string();
    let args = ["100", "10", &now, "1"];
    let mut variants = vec![evalsha(&mut redis, "naive_token_bucket", NAIVE, &args)?];
    for (name, lua) in SCRIPTS {
        variants.push(evalsha(&mut redis, name, lua, &OUR_ARGS)?);
    }
    variants.push(("INCR".to_owned(), vec!["INCR".to_owned(), KEY.to_owned()]));
    for variant in &variants {
        verify(&mut redis, variant)?;
    }
    context.step("one call of each variant answered as expected");

    let seconds = context.seconds(3.0, 0.5);
    let mut runs = Vec::new();
    for pipeline in PIPELINES {
        for variant in &variants {
            // Long enough to warm up, short enough for --quick.
            let probe = match (pipeline, context.quick) {
                (1, true) => 5_000,
                (1, false) | (_, true) => 20_000,
                (_, false) => 100_000,
            };
            let count = load(variant, CLIENTS, pipeline, probe).calibrate(&server, seconds)?;
            let name = &variant.0;
            context.step(&format!(
                "warm-up {name} P{pipeline}: {count} requests a run"
            ));
            runs.push(load(variant, CLIENTS, pipeline, count));
        }
    }
    let mut section = Section::default();
    context.alternate(&runs, |_, load| {
        let label = format!("{} P{}", load.name, load.pipeline);
        let (figures, us) = load.run(&server).with_context(|| label.clone())?;
        section.push(&format!("{label} rps"), Unit::PerSecond, figures.rate);
        section.push(&format!("{label} p50"), Unit::Millis, figures.p50_ms);
        section.push(&format!("{label} Redis us per call"), Unit::Micros, us);
        Ok(format!("{label}: {figures} ({us:.2} us per call in Redis)"))
    })?;
    for (name, command) in &variants {
        redis::cmd("FLUSHALL").exec(&mut redis)?;
        // In one transaction with the call: our scripts' keys expire when the bucket is
        // full again, 100 ms after one call here.
        let (call, mut pipe) = (with_key(command, MEMORY_KEY), redis::pipe());
        pipe.atomic().cmd(call[0]).arg(&call[1..]);
        pipe.cmd("MEMORY")
            .arg(&["USAGE", MEMORY_KEY, "SAMPLES", "0"]);
        let (_, bytes): (Value, i64) = pipe.query(&mut redis)?;
        context.step(&format!("MEMORY USAGE of one {name} key: {bytes} bytes"));
        #[allow(clippy::cast_precision_loss)] // a byte count far below 2^52
        section.push(&format!("{name} bytes per key"), Unit::Bytes, bytes as f64);
    }

    let naive = variants[0].0.as_str();
    for ours in &variants[1..3] {
        let name = ours.0.as_str();
        for pipeline in PIPELINES {
            let what = "requests/s, 50 clients";
            let what = format!("{name} vs naive script: {what}, P{pipeline}, 10 000 keys");
            let command = load(ours, CLIENTS, pipeline, 0).describe();
            section.versus(&what, [name, naive, &format!("P{pipeline} rps")], &command);
        }
        let what = "Redis's usec_per_call (INFO commandstats), P16";
        let command = "INFO commandstats after CONFIG RESETSTAT";
        let labels = [name, naive, "P16 Redis us per call"];
        section.versus(&format!("{name} vs naive script: {what}"), labels, command);
        let what = format!("{name} vs naive script: bytes per key");
        let command = format!("MEMORY USAGE {MEMORY_KEY} SAMPLES 0");
        section.versus(&what, [name, naive, "bytes per key"], &command);
        let what = format!("{name} vs INCR (the floor): requests/s, P16");
        let command = load(&variants[3], CLIENTS, 16, 0).describe();
        section.versus(&what, [name, "INCR", "P16 rps"], &command);
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

/// One call of the variant on a fresh key: an admitted decision that wrote its key, not an
/// error reply. INCR answers 1 and the naive script `{1, tokens}`; our scripts answer one
/// integer, a credit >= 0 for an admission.
fn verify(redis: &mut Connection, (name, command): &Variant) -> anyhow::Result<()> {
    let key = "rl:{verify}:bench";
    let call = with_key(command, key);
    let reply: Value = redis::cmd(call[0]).arg(&call[1..]).query(redis)?;
    let admitted = match (&reply, name.as_str()) {
        (Value::Int(value), "INCR") => *value == 1,
        (Value::Int(credit), _) => *credit >= 0,
        (Value::Array(items), _) => items.first() == Some(&Value::Int(1)),
        _ => false,
    };
    let call = call.join(" ");
    ensure!(admitted, "`{call}` answered {reply:?}, not an admission");
    let exists: i64 = redis::cmd("EXISTS").arg(key).query(redis)?;
    ensure!(exists == 1, "`{call}` wrote no key");
    Ok(redis::cmd("FLUSHALL").exec(redis)?)
}

/// Benchmark 2.
pub fn client(context: &Context) -> anyhow::Result<Section> {
    let (server, mut redis) = redis(context)?;
    let seconds = context.seconds(3.0, 0.5);
    let mut section = Section::default();
    for (algorithm, lua) in SCRIPTS {
        // On the key RedisRateLimiter writes for identity N and policy `bench`.
        let script = evalsha(&mut redis, algorithm, lua, &OUR_ARGS)?;
        let load = |requests| load(&script, TASKS, 1, requests);
        let requests = load(20_000).calibrate(&server, seconds)?;
        let mut client = Command::new(context.binaries.join("limiter_client"));
        let warmup = context.seconds(0.5, 0.2);
        let args = format!("--algorithm {algorithm} --tasks {TASKS} --seconds {seconds}");
        client.arg("--url").arg(server.url()).args(args.split(' '));
        client.arg("--warmup").arg(warmup.to_string());
        let file = &script.0;
        let [ours, theirs] =
            ["RedisRateLimiter", "redis-benchmark"].map(|by| format!("{by} {file}"));
        context.alternate(&[true, false], |_, ours_now| {
            if *ours_now {
                redis::cmd("FLUSHALL").exec(&mut redis)?;
                let figures = limiter_client(&mut client)?.figures;
                Ok(section.figures(&ours, "decisions/s", figures))
            } else {
                let figures = load(requests).run(&server)?.0;
                Ok(section.figures(&theirs, "decisions/s", figures))
            }
        })?;
        let limiter_client = format!("limiter_client --algorithm {algorithm} --tasks {TASKS}");
        let command = format!("{limiter_client} vs {}", load(0).describe());
        let what = format!("decisions/s, {file}, 64 concurrent, no pipelining");
        let what = format!("our client vs redis-benchmark: {what}");
        section.versus(&what, [&ours, &theirs, "decisions/s"], &command);
        let what = format!("our client vs redis-benchmark: p99, {file}");
        section.versus(&what, [&ours, &theirs, "p99"], &command);
    }
    section.notes = vec![
        format!("Ours: `limiter_client` (crates/shortener-bench), {TASKS} tokio tasks on the default multi-threaded runtime in one process, each calling `RedisRateLimiter::acquire` on random keys out of 10 000 through the default pool of multiplexed connections, {seconds} s measured after a warm-up."),
        format!("Reference: redis-benchmark -c {TASKS} -P 1 of the same EVALSHA on the same key shape (`rl:{{N}}:bench`), about {seconds} s a run."),
        "Policy for both: capacity 100, 10/s, cost 1, Redis's clock.".to_owned(),
        "Both run on the same private Redis, flushed before each run; the client's runs must have no errors, redis-benchmark's are checked in Redis.".to_owned(),
    ];
    Ok(section)
}
