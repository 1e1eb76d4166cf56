//! Benchmark 1: the limiter scripts inside Redis, against the naive token bucket
//! (`xtask/fixtures/naive_token_bucket.lua`) and plain `INCR` (the floor of any counter).

use anyhow::{Context as _, bail, ensure};

use super::Context;
use super::redis::{Connection, Load, RedisServer, Reply, benchmark, calibrate};
use super::report::{Section, Unit};

const TOKEN_BUCKET: &str = include_str!("../../../lua/token_bucket.lua");
const GCRA: &str = include_str!("../../../lua/gcra.lua");
const NAIVE: &str = include_str!("../../fixtures/naive_token_bucket.lua");

/// Every variant writes the same key shape; the server is flushed before each run.
const KEY: &str = "rl:{__rand_int__}:bench";
/// A production-shaped key (`{prefix}{identity}:{policy}`) for `MEMORY USAGE`.
const MEMORY_KEY: &str = "rl:{203.0.113.9}:create";
const CLIENTS: u32 = 50;
const PIPELINES: [u32; 2] = [1, 16];

/// One command under test.
#[derive(Debug)]
struct Variant {
    /// Series label and report name.
    name: &'static str,
    /// The command with `KEY` in it.
    command: Vec<String>,
    /// The script's SHA-1 and file, for the report.
    script: Option<(String, &'static str)>,
}

impl Variant {
    fn with_key(&self, key: &str) -> Vec<String> {
        self.command
            .iter()
            .map(|word| {
                if word == KEY {
                    key.to_owned()
                } else {
                    word.clone()
                }
            })
            .collect()
    }

    fn load<'a>(&self, words: &'a [&'a str], pipeline: u32, requests: u64) -> Load<'a> {
        // INCR keys never expire; the scripts' do, but must still be there right after a run.
        Load {
            clients: CLIENTS,
            pipeline,
            requests,
            command: words,
            leaves_keys: true,
        }
    }

    fn describe(&self, pipeline: u32) -> String {
        let words: Vec<&str> = self.command.iter().map(String::as_str).collect();
        let sha = self
            .script
            .as_ref()
            .map(|(sha, file)| (sha.as_str(), *file));
        self.load(&words, pipeline, 0).describe(sha)
    }
}

pub fn run(context: &Context) -> anyhow::Result<Section> {
    let server = RedisServer::start()?;
    let mut connection = server.connect()?;
    context.step(
        "scripts",
        &format!("private redis-server on port {}", server.port()),
    );
    // Seconds from the client, as the naive script expects; fixed for the run, which only
    // makes its buckets drain (and it writes on a refusal all the same).
    let now_secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs()
        .to_string();
    let our_args = ["100", "100000", "1", "", "0"].map(str::to_owned);
    let script = |connection: &mut Connection,
                  source: &str,
                  file: &'static str,
                  args: &[String]|
     -> anyhow::Result<Variant> {
        let sha = connection.text(&["SCRIPT", "LOAD", source])?;
        let mut command = vec![
            "EVALSHA".to_owned(),
            sha.clone(),
            "1".to_owned(),
            KEY.to_owned(),
        ];
        command.extend_from_slice(args);
        Ok(Variant {
            name: file,
            command,
            script: Some((sha, file)),
        })
    };
    let variants = [
        script(
            &mut connection,
            NAIVE,
            "naive_token_bucket.lua",
            &["100".into(), "10".into(), now_secs, "1".into()],
        )?,
        script(&mut connection, TOKEN_BUCKET, "token_bucket.lua", &our_args)?,
        script(&mut connection, GCRA, "gcra.lua", &our_args)?,
        Variant {
            name: "INCR",
            command: vec!["INCR".to_owned(), KEY.to_owned()],
            script: None,
        },
    ];
    for variant in &variants {
        verify(&mut connection, variant)?;
    }
    context.step("scripts", "one call of each variant answered as expected");

    let mut section = Section::default();
    let target = context.seconds(3.0, 0.5);
    let mut requests = Vec::new();
    for pipeline in PIPELINES {
        for variant in &variants {
            let words: Vec<String> = variant.command.clone();
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            // Long enough to warm up, short enough for --quick.
            let probe = match (pipeline, context.quick) {
                (1, true) => 5_000,
                (1, false) => 20_000,
                (_, true) => 20_000,
                (_, false) => 100_000,
            };
            let count = calibrate(&server, &variant.load(&words, pipeline, probe), target)?;
            context.step(
                "scripts",
                &format!(
                    "warm-up {} P{pipeline}: {count} requests a run",
                    variant.name
                ),
            );
            requests.push(((variant.name, pipeline), count));
        }
    }
    for round in 1..=context.rounds {
        for pipeline in PIPELINES {
            for variant in &variants {
                let count = requests
                    .iter()
                    .find(|(key, _)| *key == (variant.name, pipeline))
                    .map_or(100_000, |(_, count)| *count);
                let words: Vec<&str> = variant.command.iter().map(String::as_str).collect();
                let result = benchmark(&server, &variant.load(&words, pipeline, count))
                    .with_context(|| format!("{} P{pipeline}", variant.name))?;
                context.step(
                    "scripts",
                    &format!(
                        "round {round}/{}: {} P{pipeline}: {} ({:.2} us per call in Redis)",
                        context.rounds,
                        variant.name,
                        Unit::PerSecond.format(result.rps),
                        result.usec_per_call
                    ),
                );
                section
                    .series(
                        &format!("{} P{pipeline} rps", variant.name),
                        Unit::PerSecond,
                    )
                    .values
                    .push(result.rps);
                section
                    .series(&format!("{} P{pipeline} p50", variant.name), Unit::Millis)
                    .values
                    .push(result.p50_ms);
                section
                    .series(
                        &format!("{} P{pipeline} Redis us per call", variant.name),
                        Unit::Micros,
                    )
                    .values
                    .push(result.usec_per_call);
            }
        }
    }
    for variant in &variants {
        connection.ok(&["FLUSHALL"])?;
        let words = variant.with_key(MEMORY_KEY);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let bytes = memory_usage(&mut connection, &words)?;
        context.step(
            "scripts",
            &format!("MEMORY USAGE of one {} key: {bytes} bytes", variant.name),
        );
        // A byte count far below 2^52.
        #[allow(clippy::cast_precision_loss)]
        section
            .series(&format!("{} bytes per key", variant.name), Unit::Bytes)
            .values
            .push(bytes as f64);
    }

    for ours in ["token_bucket.lua", "gcra.lua"] {
        for pipeline in PIPELINES {
            let what =
                format!("{ours} vs naive script: requests/s, 50 clients, P{pipeline}, 10 000 keys");
            section.compare(
                &what,
                &format!("{ours} P{pipeline} rps"),
                Some(&format!("naive_token_bucket.lua P{pipeline} rps")),
                &variants[usize::from(ours == "gcra.lua") + 1].describe(pipeline),
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
            &variants[3].describe(16),
        );
    }
    section.notes = vec![
        format!("A private redis-server ({}); redis-benchmark with {CLIENTS} clients, keys `{KEY}` over 10 000 random numbers, each run about {target} s after a warm-up run that sets its length, the server flushed and its statistics reset before each run.", server_version(&mut connection)),
        "Our scripts: capacity 100, one token per 100 000 us (10/s), cost 1, Redis's own clock (ARGV[4] = \"\"), no audit (ARGV[5] = \"0\").".to_owned(),
        "The naive script: capacity 100, 10/s, a fixed client time in seconds, cost 1.".to_owned(),
        "Every run is checked in Redis: no errorstats, no failed or rejected calls, at least as many calls as requests, and keys left behind.".to_owned(),
        format!("Bytes per key: `MEMORY USAGE` of `{MEMORY_KEY}` after one call of each variant."),
    ];
    Ok(section)
}

/// One call of the variant on a fresh key: an admitted decision that wrote its key, not an
/// error reply. INCR answers 1 and the naive script `{1, tokens}`; our scripts answer either
/// `{1, ...}` or, since they reply with one integer, a credit >= 0 for an admission.
fn verify(connection: &mut Connection, variant: &Variant) -> anyhow::Result<()> {
    let key = "rl:{verify}:bench";
    let words = variant.with_key(key);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let reply = connection.call(&words)?;
    let admitted = match (&reply, variant.name) {
        (Reply::Integer(value), "INCR") => *value == 1,
        (Reply::Integer(credit), _) => *credit >= 0,
        (Reply::Array(Some(items)), _) => items.first() == Some(&Reply::Integer(1)),
        _ => false,
    };
    ensure!(
        admitted,
        "`{}` answered {reply:?}, not an admitted decision",
        words.join(" ")
    );
    ensure!(
        connection.integer(&["EXISTS", key])? == 1,
        "`{}` wrote no key",
        words.join(" ")
    );
    connection.ok(&["FLUSHALL"])?;
    Ok(())
}

/// `MEMORY USAGE` of the key that `command` writes, in one transaction with it: our
/// scripts' keys expire when the bucket is full again, 100 ms after one call here.
fn memory_usage(connection: &mut Connection, command: &[&str]) -> anyhow::Result<i64> {
    connection.ok(&["MULTI"])?;
    connection.ok(command)?;
    connection.ok(&["MEMORY", "USAGE", MEMORY_KEY, "SAMPLES", "0"])?;
    match connection.ok(&["EXEC"])? {
        Reply::Array(Some(replies)) => match replies.as_slice() {
            [Reply::Error(error), _] => bail!("`{}` failed: {error}", command.join(" ")),
            [_, Reply::Integer(bytes)] => Ok(*bytes),
            other => bail!("MEMORY USAGE answered {other:?}"),
        },
        other => bail!("EXEC answered {other:?}"),
    }
}

fn server_version(connection: &mut Connection) -> String {
    connection
        .text(&["INFO", "server"])
        .ok()
        .and_then(|info| {
            info.lines().find_map(|line| {
                line.strip_prefix("redis_version:")
                    .map(|version| format!("Redis {}", version.trim()))
            })
        })
        .unwrap_or_else(|| "Redis".to_owned())
}
