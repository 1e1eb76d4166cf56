//! Benchmarks 1 to 3, of the limiters: our scripts inside Redis ([`run`]) against the naive
//! token bucket (`fixtures/naive_token_bucket.lua`) and plain `INCR` (the floor of any
//! counter); our client `RedisRateLimiter` in `limiter_client` against redis-benchmark of
//! the same script ([`client`]); and the memory limiter from 1, 2 and 8 threads with the
//! harness's own threads ([`memory`]).

use std::hint::black_box;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use redis::{Connection, InfoDict, Value};
use shortener_bench::{Figures, IDENTITIES, Rng, identities, policy};
use shortener_core::Algorithm;
use shortener_memory::MemoryRateLimiter;
use shortener_testkit::RedisServer;

use super::report::{Section, Unit};
use super::tools::{command_stat, connect, limiter_client, private_redis, stdout};
use super::{Context, TASKS};

const TOKEN_BUCKET: &str = include_str!("../../../../../lua/token_bucket.lua");
const GCRA: &str = include_str!("../../../../../lua/gcra.lua");
const NAIVE: &str = include_str!("../../../fixtures/naive_token_bucket.lua");
/// Our scripts, by their algorithm's name in `limiter_client` (and their file's).
const SCRIPTS: [(&str, &str); 2] = [("token_bucket", TOKEN_BUCKET), ("gcra", GCRA)];
/// After the key: capacity 100, one token per 100 000 us, cost 1, Redis's clock, no audit.
const OUR_ARGS: [&str; 5] = ["100", "100000", "1", "", "0"];
/// redis-benchmark replaces `__rand_int__` with a random number below 10 000 (`-r 10000`).
const KEY: &str = "rl:{__rand_int__}:bench";
/// A production-shaped key (`{prefix}{identity}:{policy}`) for `MEMORY USAGE`.
const MEMORY_KEY: &str = "rl:{203.0.113.9}:create";
const CLIENTS: u32 = 50;
const PIPELINES: [u32; 2] = [1, 16];
/// The thread counts of the memory limiter benchmark.
const THREADS: [usize; 3] = [1, 2, 8];

/// A command under test: its name (a script's file), and its words with [`KEY`] in them.
struct Variant {
    name: String,
    words: Vec<String>,
}

impl Variant {
    /// `EVALSHA <sha> 1 KEY args...` of a script, loaded into Redis.
    fn evalsha(redis: &mut Connection, name: &str, lua: &str, args: &[&str]) -> Result<Self> {
        let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(lua).query(redis)?;
        let words = [&["EVALSHA", &sha, "1", KEY][..], args].concat();
        let words = words.into_iter().map(str::to_owned).collect();
        let name = format!("{name}.lua");
        Ok(Self { name, words })
    }

    /// redis-benchmark's command line for the report: `<sha of FILE>`, and `""` for an empty word.
    fn describe(&self, clients: u32, pipeline: u32) -> String {
        let mut words = self.words.join(" ").replace("  ", " \"\" ");
        if self.words[0] == "EVALSHA" {
            words = words.replace(&self.words[1], &format!("<sha of {}>", self.name));
        }
        format!("redis-benchmark -c {clients} -P {pipeline} -r 10000 -n N {words}")
    }

    /// `MEMORY USAGE` of [`MEMORY_KEY`] after one call on it in an empty Redis, in one
    /// transaction (our scripts' keys expire when the bucket is full again, 100 ms after one
    /// call here). The call must be an admission that wrote its key, not an error reply:
    /// INCR answers 1, the naive script `{1, tokens}`, ours a credit >= 0.
    fn bytes_per_key(&self, redis: &mut Connection) -> Result<i64> {
        redis::cmd("FLUSHALL").exec(redis)?;
        let line = self.words.join(" ").replace(KEY, MEMORY_KEY);
        let call: Vec<&str> = line.split(' ').collect();
        let mut pipe = redis::pipe();
        pipe.atomic().cmd(call[0]).arg(&call[1..]);
        let usage = ["USAGE", MEMORY_KEY, "SAMPLES", "0"];
        pipe.cmd("MEMORY").arg(&usage);
        let (reply, bytes): (Value, Option<i64>) = pipe.query(redis)?;
        let admitted = match (&reply, self.name.as_str()) {
            (Value::Int(value), "INCR") => *value == 1,
            (Value::Int(credit), _) => *credit >= 0,
            (Value::Array(items), _) => items.first() == Some(&Value::Int(1)),
            _ => false,
        };
        ensure!(admitted, "`{line}` answered {reply:?}, not an admission");
        bytes.with_context(|| format!("`{line}` wrote no key"))
    }

    /// redis-benchmark on a flushed server with fresh statistics. Every call must succeed (an
    /// error reply is fast and would fake a great figure), which Redis tells: keys left
    /// (checked at once: wrong arguments can write keys that expire at once), no
    /// `errorstats`, no failed or rejected calls, at least as many calls as requests.
    fn run(&self, server: &RedisServer, clients: u32, pipeline: u32, requests: u64) -> Run {
        let mut redis = connect(server)?;
        redis::cmd("FLUSHALL").exec(&mut redis)?;
        redis::cmd("CONFIG").arg("RESETSTAT").exec(&mut redis)?;
        let args = format!("-u {} -r 10000 --csv", server.url());
        let args = format!("{args} -c {clients} -P {pipeline} -n {requests}");
        let mut command = Command::new("redis-benchmark");
        let stdout = stdout(command.args(args.split(' ')).args(&self.words), 300)?;
        // The last line, from the right: max, p99, p95, p50, min and avg (ms), rps, the test.
        let last = stdout.lines().last().unwrap_or_default();
        let fields: Vec<&str> = last.rsplitn(8, ',').collect();
        let field = |i: usize| fields.get(i).map(|f| f.trim_matches('"').parse().ok());
        let field = |i| field(i).flatten().unwrap_or(f64::NAN);
        let figures = Figures {
            rate: field(6),
            p50_ms: field(3),
            p99_ms: field(1),
        };
        ensure!(figures.rate > 0.0, "no figures: {stdout}");
        let keys: u64 = redis::cmd("DBSIZE").query(&mut redis)?;
        let errors: InfoDict = redis::cmd("INFO").arg("errorstats").query(&mut redis)?;
        let mut stat = |name| command_stat(&mut redis, &self.words[0], name).unwrap_or(f64::NAN);
        let failed = stat("failed_calls") + stat("rejected_calls");
        let calls = stat("calls");
        let ok = keys > 0 && errors.is_empty() && failed == 0.0 && calls >= requests as f64;
        let command = self.words.join(" ");
        let why = format!("{keys} keys left, {failed} failed, {calls} calls of {requests}");
        ensure!(ok, "`{command}` failed in Redis: {why}, {errors:?}");
        Ok((figures, stat("usec_per_call")))
    }
}

type Result<T> = anyhow::Result<T>;
/// A run's figures and Redis's `usec_per_call`.
type Run = Result<(Figures, f64)>;

/// Requests for a run of about `seconds` (at least 10 000) at the `rate` of a warm-up run.
fn requests(rate: f64, seconds: f64) -> u64 {
    ((rate * seconds).round() as u64).max(10_000)
}

pub fn run(context: &Context, section: &mut Section) -> Result<()> {
    let server = private_redis(context, &["redis-benchmark"])?;
    let mut redis = connect(&server)?;
    // Seconds from the client, as the naive script expects; fixed for the run, which only
    // makes its buckets drain (and it writes on a refusal all the same).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let args = ["100", "10", &now.as_secs().to_string(), "1"];
    let naive = Variant::evalsha(&mut redis, "naive_token_bucket", NAIVE, &args)?;
    let mut variants = vec![naive];
    for (name, lua) in SCRIPTS {
        variants.push(Variant::evalsha(&mut redis, name, lua, &OUR_ARGS)?);
    }
    let (name, words) = ("INCR".to_owned(), vec!["INCR".to_owned(), KEY.to_owned()]);
    variants.push(Variant { name, words });
    for variant in &variants {
        let (name, bytes) = (&variant.name, variant.bytes_per_key(&mut redis)?);
        context.step(&format!("{name} admitted once: {bytes} bytes per key"));
        section.push(&format!("{name} bytes per key"), Unit::Bytes, bytes as f64);
    }

    let seconds = context.pick(3.0, 0.5);
    let mut runs = Vec::new();
    for pipeline in PIPELINES {
        // Long enough to warm up, short enough for --quick.
        let probe = context.pick([20_000, 100_000], [5_000, 20_000])[usize::from(pipeline > 1)];
        for variant in &variants {
            let rate = variant.run(&server, CLIENTS, pipeline, probe)?.0.rate;
            let (name, count) = (&variant.name, requests(rate, seconds));
            let step = format!("warm-up {name} P{pipeline}: {count} requests a run");
            context.step(&step);
            runs.push((variant, pipeline, count));
        }
    }
    context.alternate(&runs, |_, &(variant, pipeline, count)| {
        let label = format!("{} P{pipeline}", variant.name);
        let run = variant.run(&server, CLIENTS, pipeline, count);
        let (figures, us) = run.with_context(|| label.clone())?;
        section.push(&format!("{label} rps"), Unit::PerSecond, figures.rate);
        section.push(&format!("{label} p50"), Unit::Ms, figures.p50_ms);
        section.push(&format!("{label} Redis us per call"), Unit::Us, us);
        Ok(format!("{label}: {figures} ({us:.2} us per call in Redis)"))
    })?;

    let naive = variants[0].name.as_str();
    for ours in &variants[1..3] {
        let name = ours.name.as_str();
        for pipeline in PIPELINES {
            let what = "requests/s, 50 clients";
            let what = format!("{name} vs naive script: {what}, P{pipeline}, 10 000 keys");
            let command = ours.describe(CLIENTS, pipeline);
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
        let command = variants[3].describe(CLIENTS, 16);
        section.versus(&what, [name, "INCR", "P16 rps"], &command);
    }
    section.notes = vec![
        format!("A private redis-server (the machine line's); redis-benchmark with {CLIENTS} clients, keys `{KEY}` over 10 000 random numbers, each run about {seconds} s after a warm-up run that sets its length, the server flushed and its statistics reset before each run."),
        "Our scripts: capacity 100, one token per 100 000 us (10/s), cost 1, Redis's own clock (ARGV[4] = \"\"), no audit (ARGV[5] = \"0\").".to_owned(),
        "The naive script: capacity 100, 10/s, a fixed client time in seconds, cost 1.".to_owned(),
        "Every run is checked in Redis: no errorstats, no failed or rejected calls, at least as many calls as requests, and keys left behind.".to_owned(),
        format!("Bytes per key: `MEMORY USAGE` of `{MEMORY_KEY}` after one call of each variant."),
    ];
    Ok(())
}

pub fn client(context: &Context, section: &mut Section) -> Result<()> {
    let server = private_redis(context, &["redis-benchmark"])?;
    let mut redis = connect(&server)?;
    let seconds = context.pick(3.0, 0.5);
    for (algorithm, lua) in SCRIPTS {
        // On the key RedisRateLimiter writes for identity N and policy `bench`.
        let script = Variant::evalsha(&mut redis, algorithm, lua, &OUR_ARGS)?;
        let count = requests(script.run(&server, TASKS, 1, 20_000)?.0.rate, seconds);
        let (url, timed) = (server.url(), context.timed_client());
        let args = format!("--url {url} --algorithm {algorithm} {timed}");
        let file = &script.name;
        let ours_and_theirs = ["RedisRateLimiter", "redis-benchmark"];
        let [ours, theirs] = ours_and_theirs.map(|by| format!("{by} {file}"));
        context.alternate(&[&ours, &theirs], |_, label| {
            let figures = if *label == &ours {
                redis::cmd("FLUSHALL").exec(&mut redis)?;
                limiter_client(&context.binaries, &args)?.figures
            } else {
                script.run(&server, TASKS, 1, count)?.0
            };
            Ok(section.figures(label, "decisions/s", figures))
        })?;
        let limiter_client = format!("limiter_client --algorithm {algorithm} --tasks {TASKS}");
        let command = format!("{limiter_client} vs {}", script.describe(TASKS, 1));
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
    Ok(())
}

pub fn memory(context: &Context, section: &mut Section) -> Result<()> {
    let limiter = MemoryRateLimiter::new(Algorithm::TokenBucket);
    let (policy, identities) = (policy(), identities(IDENTITIES));
    let seconds = context.pick(3.0, 0.5);
    context.alternate(&THREADS, |_, &threads| {
        // Decisions on every thread, started together, until `seconds` have passed: the
        // wall time from the start until the last thread is done.
        let (decisions, started) = (AtomicU64::new(0), Instant::now());
        let until = started + Duration::from_secs_f64(seconds);
        std::thread::scope(|scope| {
            for thread in 0..threads {
                let (limiter, policy, identities) = (&limiter, &policy, &identities);
                let decisions = &decisions;
                scope.spawn(move || {
                    let (mut rng, mut count) = (Rng(0xBE7C ^ ((thread as u64) << 32)), 0);
                    while count % 1024 != 0 || Instant::now() < until {
                        let identity = &identities[rng.below(identities.len())];
                        black_box(limiter.acquire_at_now(identity, policy, 1));
                        count += 1;
                    }
                    decisions.fetch_add(count, Ordering::Relaxed);
                });
            }
        });
        let rate = decisions.into_inner() as f64 / started.elapsed().as_secs_f64();
        section.push(
            &format!("{threads} threads decisions/s"),
            Unit::PerSecond,
            rate,
        );
        Ok(format!(
            "{threads} threads: {}",
            Unit::PerSecond.format(rate)
        ))
    })?;
    let (one, command) = ("1 threads decisions/s", "in-process, bench --only memory");
    section.compare("memory limiter: decisions/s, 1 thread", one, None, command);
    for threads in &THREADS[1..] {
        let what = format!("memory limiter: decisions/s, {threads} threads vs 1");
        let ours = format!("{threads} threads decisions/s");
        section.compare(&what, &ours, Some(one), command);
    }
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    section.notes = vec![
        format!(
            "`MemoryRateLimiter` (token bucket, capacity 100, 10/s) shared by N threads of the harness, each deciding on random keys out of 10 000 for {seconds} s, timed from a common start until the last thread is done; the thread counts alternate in every round."
        ),
        format!("The machine has {cores} cores, so 8 threads measure contention, not parallelism."),
    ];
    Ok(())
}
