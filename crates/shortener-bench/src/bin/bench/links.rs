//! Benchmark 10: redirects and memory by number of links. For each size (1 000 to
//! 1 000 000; up to 10 000 with `--quick`) the links are imported into a new SQLite file
//! (`shortener import`, not a million HTTP calls), a node whose cache holds them all
//! requests each once (each read and cached), waits for its visit flushes, and is then
//! loaded with random redirects over all of them, beside the poem ceiling on random paths.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use shortener_bench::TARGET;
use shortener_testkit::{TempDir, spawn_listening};

use super::Context;
use super::report::{Section, Unit};
use super::tools::{Node, STARTUP, Wrk, shortener, storage};

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
    let mut previous: Option<(usize, f64)> = None;
    for &links in sizes {
        let database = import(context, &dir, links)?;
        std::fs::write(
            codes,
            (0..links).fold(String::new(), |mut text, i| {
                let _ = writeln!(text, "k{i}");
                text
            }),
        )?;
        let cache = format!("[cache]\ncapacity = {}\nttl_secs = 3600\n", links * 2);
        let node = Node::start(context, &(storage("sqlite", &database) + &cache))?;
        let started = node.rss_bytes()?;
        let sequential = [
            ("BENCH_CODES", codes, "codes.txt"),
            ("BENCH_SEQUENTIAL", "1", "1"),
        ];
        let seconds = u32::try_from(links / SWEEP_PER_SECOND + 2)?;
        let sweep = Wrk {
            threads: 1,
            connections: 16,
            seconds,
            ..context.wrk(&sequential)
        };
        sweep.run(&format!("{}/", node.base))?;
        let read = node.counter("shortener_cache_misses_total")?;
        ensure!(
            read >= links as f64,
            "{read} of {links} links were read in {seconds} s"
        );
        // Past the visit and value flushes the sweep started (every 10 s by default):
        // what they hold while writing counts too.
        std::thread::sleep(Duration::from_secs(11));
        let grown = node.rss_bytes()?.saturating_sub(started) as f64;
        let label = format!("{links} links");
        section.push(&format!("{label}: RSS grown"), Unit::Bytes, grown);
        section.push(
            &format!("{label}: RSS per link"),
            Unit::Bytes,
            grown / links as f64,
        );
        // What one more link costs, without the part that does not grow with links
        // (buffers, SQLite's caches up to their bound): against the size before.
        if let Some((fewer, fewer_grown)) = previous {
            let added = (grown - fewer_grown) / (links - fewer) as f64;
            section.push(&format!("{label}: RSS per link added"), Unit::Bytes, added);
        }
        previous = Some((links, grown));
        let random = context.wrk(&sequential[..1]);
        let figures = random.run(&format!("{base}/"))?.figures;
        section.figures(&format!("{CEILING} beside {label}"), "redirects/s", figures);
        section.figures(
            &label,
            "redirects/s",
            random.run(&format!("{}/", node.base))?.figures,
        );
        context.step(&format!("{label}: RSS grew {:.0} MiB", grown / 1048576.0));
    }
    for &links in sizes {
        let (label, command) = (format!("{links} links"), "see the notes");
        let what = format!("RSS per cached link, {links} links (goal <= 400 B)");
        section.compare(&what, &format!("{label}: RSS per link"), None, command);
        if links != sizes[0] {
            let what = format!("RSS per link added, from a tenth as many links to {links}");
            section.compare(
                &what,
                &format!("{label}: RSS per link added"),
                None,
                command,
            );
        }
        let what =
            format!("redirects/s, a random link of {links}, all cached, vs the poem ceiling");
        let ceiling = format!("{CEILING} beside {label}");
        section.versus(
            &what,
            [&label, &ceiling, "redirects/s"],
            &random_command(context),
        );
    }
    section.notes = vec![
        "One pass per size (memory does not change between rounds; the redirect rates of each size are one wrk run beside one of the ceiling).".to_owned(),
        format!("RSS per link: the node's VmRSS after `BENCH_SEQUENTIAL=1 BENCH_CODES=codes.txt wrk -t1 -c16` requested every link in turn (each at least once) and 11 s passed (its visit flushes), minus VmRSS at start, over the links. Links: `k<i>` to `{TARGET}?<i>`, imported with `shortener import --from ndjson`; `[cache] capacity` twice the links, `ttl_secs = 3600`."),
    ];
    Ok(())
}

fn random_command(context: &Context) -> String {
    let var = [("BENCH_CODES", "", "codes.txt")];
    context.wrk(&var).describe("http://127.0.0.1:PORT/")
}

/// A new SQLite file of `links` links, migrated and imported: its URL.
fn import(context: &Context, dir: &TempDir, links: usize) -> anyhow::Result<String> {
    let file = dir.path().join(format!("{links}.ndjson"));
    let url = format!(
        "sqlite://{}",
        dir.path().join(format!("{links}.db")).display()
    );
    let line = |mut text: String, i| {
        let _ = writeln!(
            text,
            r#"{{"code":"k{i}","url":"{TARGET}?{i}","created_at":"2025-06-01T12:00:00Z"}}"#
        );
        text
    };
    std::fs::write(&file, (0..links).fold(String::new(), line))?;
    let file = file.to_str().context("a path")?;
    shortener(context, &["migrate", "--database-url", &url])?;
    let import = ["import", "--from", "ndjson", file, "--database-url", &url];
    shortener(context, &import)?;
    Ok(url)
}
