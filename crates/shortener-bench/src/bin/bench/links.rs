//! Benchmark 10: redirects and memory by number of links. For each size (1 000 to
//! 1 000 000; up to 10 000 with `--quick`) the links are imported into a new SQLite file
//! (`shortener import`, not a million HTTP calls), a node whose cache holds them all
//! requests each once (each read and cached), waits for its visit flushes, and is then
//! loaded with random redirects over all of them, beside the poem ceiling on random paths.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use shortener_bench::TARGET;
use shortener_testkit::{TempDir, spawn_listening};

use super::Context;
use super::report::{Section, Unit};
use super::tools::{Node, STARTUP, ndjson, shortener, storage};

/// Links requested in turn by one wrk thread (`BENCH_SEQUENTIAL`): the sweep lasts long
/// enough to request each at least once at this rate.
const SWEEP_PER_SECOND: usize = 6_000;
const CEILING: &str = "poem ceiling, random paths";

pub fn run(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    let sizes = context.pick(&[1_000, 10_000, 100_000, 1_000_000][..], &[1_000, 10_000]);
    let ceiling = &mut Command::new(context.binaries.join("ceiling"));
    let (_ceiling, base) = spawn_listening("ceiling", ceiling, "ceiling listening on ", STARTUP)?;
    let dir = TempDir::with_prefix("links")?;
    let codes = dir.path().join("codes.txt");
    let codes = codes.to_str().context("a path")?;
    let sequential = ("BENCH_SEQUENTIAL", "1", "1");
    let random = ("BENCH_CODES", codes, "codes.txt");
    let command = context.wrk(&[random]).describe("http://127.0.0.1:PORT/");
    let mut previous: Option<(usize, f64)> = None;
    for &links in sizes {
        let database = import(context, &dir, links)?;
        let lines: String = (0..links).map(|i| format!("k{i}\n")).collect();
        std::fs::write(codes, lines)?;
        let cache = format!("[cache]\ncapacity = {}\nttl_secs = 3600\n", links * 2);
        let node = Node::start(context, &(storage("sqlite", &database) + &cache))?;
        let started = node.rss_bytes()?;
        let seconds = u32::try_from(links / SWEEP_PER_SECOND + 2)?;
        let env = [random, sequential];
        let mut sweep = context.wrk(&env);
        (sweep.threads, sweep.connections, sweep.seconds) = (1, 16, seconds);
        sweep.run(&format!("{}/", node.base))?;
        let read = node.counter("shortener_cache_misses_total")?;
        ensure!(
            read >= links as f64,
            "{read} of {links} read in {seconds} s"
        );
        let label = format!("{links} links");
        let named = |what: &str| format!("{label}: {what}");
        // Right after the sweep, the visits and values it counted may not be written yet
        // (a sweep of new links outruns the value flushes): that peak, then the node once
        // nothing is pending (twice in a row, a second apart) and a flush and the
        // allocator's one-second purge have passed.
        let swept = node.rss_bytes()?.saturating_sub(started) as f64;
        let per_link = named("RSS per link right after the sweep");
        section.push(&per_link, Unit::Bytes, swept / links as f64);
        let (mut calm, waited) = (0, std::time::Instant::now());
        while calm < 2 && waited.elapsed() < Duration::from_secs(600) {
            std::thread::sleep(Duration::from_secs(1));
            let pending = node.counter("shortener_visits_pending_links")?;
            calm = if pending == 0.0 { calm + 1 } else { 0 };
        }
        ensure!(calm == 2, "visits still pending 600 s after the sweep");
        std::thread::sleep(Duration::from_secs(2));
        let flushed = waited.elapsed().as_secs_f64();
        section.push(&named("seconds until flushed"), Unit::Count, flushed);
        let grown = node.rss_bytes()?.saturating_sub(started) as f64;
        section.push(&named("RSS grown"), Unit::Bytes, grown);
        section.push(&named("RSS per link"), Unit::Bytes, grown / links as f64);
        // What one more link costs, without the part that does not grow with links
        // (buffers, SQLite's caches up to their bound): against the size before.
        if let Some((fewer, fewer_grown)) = previous {
            let added = (grown - fewer_grown) / (links - fewer) as f64;
            section.push(&named("RSS per link added"), Unit::Bytes, added);
        }
        previous = Some((links, grown));
        let wrk = context.wrk(&env[..1]);
        let ceiling = format!("{CEILING} beside {label}");
        let figures = wrk.run(&format!("{base}/"))?.figures;
        section.figures(&ceiling, "redirects/s", figures);
        let figures = wrk.run(&format!("{}/", node.base))?.figures;
        section.figures(&label, "redirects/s", figures);
        context.step(&format!("{label}: RSS grew {:.0} MiB", grown / 1048576.0));

        let what = format!("RSS per cached link, {links} links (goal <= 400 B)");
        section.compare(&what, &named("RSS per link"), None, "see the notes");
        let what = format!("RSS per link right after the sweep, {links} links, visits pending");
        section.compare(&what, &per_link, None, "see the notes");
        if links != sizes[0] {
            let what = format!("RSS per link added, from a tenth as many links to {links}");
            section.compare(&what, &named("RSS per link added"), None, "see the notes");
        }
        let what = format!("redirects/s, a random link of {links}, all cached, vs the ceiling");
        section.versus(&what, [&label, &ceiling, "redirects/s"], &command);
    }
    section.notes = vec![
        "One pass per size (memory does not change between rounds; the redirect rates of each size are one wrk run beside one of the ceiling).".to_owned(),
        format!("RSS per link: the node's VmRSS after `BENCH_SEQUENTIAL=1 BENCH_CODES=codes.txt wrk -t1 -c16` requested every link in turn (each at least once) and the visits and values it counted were written (`shortener_visits_pending_links` 0 twice a second apart, then 2 s), minus VmRSS at start, over the links; \"right after the sweep\" is the same at the sweep's end, with what is still pending. Links: `k<i>` to `{TARGET}?<i>`, imported with `shortener import --from ndjson`; `[cache] capacity` twice the links, `ttl_secs = 3600`."),
    ];
    Ok(())
}

/// A new SQLite file of `links` links, migrated and imported: its URL.
fn import(context: &Context, dir: &TempDir, links: usize) -> anyhow::Result<String> {
    let [file, database] = ["ndjson", "db"].map(|it| dir.path().join(format!("{links}.{it}")));
    ndjson(
        &file,
        (0..links).map(|i| (format!("k{i}"), format!("{TARGET}?{i}"))),
    )?;
    let (url, file) = (
        format!("sqlite://{}", database.display()),
        file.display().to_string(),
    );
    shortener(context, &["migrate", "--database-url", &url])?;
    shortener(
        context,
        &["import", "--from", "ndjson", &file, "--database-url", &url],
    )?;
    Ok(url)
}
