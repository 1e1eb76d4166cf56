//! Benchmark 8: `shortener import --from ndjson` of many links into an empty SQLite file
//! and an empty PostgreSQL database, against the same links (same codes and targets)
//! created through `POST /api/v1/links/bulk` on a node of the same storage: links/s.

use std::process::Command;
use std::time::Instant;

use anyhow::ensure;
use serde_json::json;
use shortener_testkit::postgres::admin_url;
use shortener_testkit::{TempDir, TestDatabase};

use super::Context;
use super::report::{Section, Unit};
use super::tools::{Node, UNLIMITED, database, postgres};

/// Links per run: what a Shlink install of some years holds.
const LINKS: [usize; 2] = [100_000, 10_000];

pub fn run(context: &Context) -> anyhow::Result<Section> {
    let links = LINKS[usize::from(context.quick)];
    let dir = TempDir::with_prefix("import")?;
    let mut section = Section::default();
    // Optional: without PostgreSQL the SQLite figures still stand. Each run gets a new
    // database on the server (or the throwaway cluster) that `database` found.
    let server = database(context);
    let admin = match &server {
        Some((_, Some(cluster))) => cluster.url(""),
        _ => admin_url(),
    };
    let storages = if server.is_some() {
        &["SQLite", "PostgreSQL"][..]
    } else {
        &["SQLite"]
    };
    let variants: Vec<_> = storages
        .iter()
        .flat_map(|&s| [(s, true), (s, false)])
        .collect();
    context.alternate(&variants, |round, &(storage, import)| {
        // Fresh codes and a fresh database every run: nothing is ever "unchanged".
        let lines: Vec<(String, String)> = (0..links)
            .map(|i| {
                (
                    format!("r{round}i{}-{i}", u8::from(import)),
                    format!("https://example.com/{i}"),
                )
            })
            .collect();
        let _database;
        let url = if storage == "SQLite" {
            let name = format!("r{round}-{}.db", u8::from(import));
            format!("sqlite://{}", dir.path().join(name).display())
        } else {
            _database = TestDatabase::create_on(&admin)?;
            _database.url().to_owned()
        };
        let seconds = if import {
            import_file(context, &dir, &url, &lines)?
        } else {
            bulk_api(context, &url, storage, lines)?
        };
        let label = format!(
            "{} into {storage}",
            if import { "import" } else { "bulk API" }
        );
        section.push(
            &format!("{label} links/s"),
            Unit::PerSecond,
            links as f64 / seconds,
        );
        Ok(format!("{label}: {links} links in {seconds:.1} s"))
    })?;
    for storage in storages {
        let what = format!("links/s into an empty {storage}: import vs the bulk API (goal >= 5x)");
        let labels = [
            format!("import into {storage}"),
            format!("bulk API into {storage}"),
        ];
        let command = format!(
            "shortener import --from ndjson FILE --database-url URL vs POST /api/v1/links/bulk \
             (1000 links a request, one client) on a node of the same {storage}"
        );
        section.versus(&what, [&labels[0], &labels[1], "links/s"], &command);
    }
    section.notes = vec![
        format!("{links} links (code and target) per run, each run on a new SQLite file or PostgreSQL database, migrated before the clock starts (`shortener migrate`)."),
        "Import: the release binary reading an NDJSON file of the links, 5 000 to a transaction. Bulk API: a node on the same storage (default `[links]` and cache, the `create` policy lifted), sent the same links as aliases, 1000 to a request, one request at a time; the node starts before the clock does.".to_owned(),
    ];
    Ok(section)
}

/// Seconds to import `lines` from an NDJSON file into the database at `url`.
fn import_file(
    context: &Context,
    dir: &TempDir,
    url: &str,
    lines: &[(String, String)],
) -> anyhow::Result<f64> {
    let file = dir.path().join("links.ndjson");
    let created_at = "2025-06-01T12:00:00Z";
    let text: String = lines
        .iter()
        .map(|(code, url)| json!({ "code": code, "url": url, "created_at": created_at }))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&file, text)?;
    shortener(context, &["migrate", "--database-url", url])?;
    let started = Instant::now();
    let file = file.display().to_string();
    shortener(
        context,
        &["import", "--from", "ndjson", &file, "--database-url", url],
    )?;
    Ok(started.elapsed().as_secs_f64())
}

/// `shortener ARGS`, with none of the shell's `SHORTENER_*` variables, which must succeed.
fn shortener(context: &Context, args: &[&str]) -> anyhow::Result<()> {
    let output = Command::new(context.binaries.join("shortener"))
        .args(args)
        .env_clear()
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(output.status.success(), "shortener {args:?}: {stderr}");
    Ok(())
}

/// Seconds to create `lines` through the bulk endpoint of a node on `url`.
fn bulk_api(
    context: &Context,
    url: &str,
    storage: &str,
    lines: Vec<(String, String)>,
) -> anyhow::Result<f64> {
    let storage = match storage {
        "SQLite" => format!("[storage]\nkind = \"sqlite\"\nurl = \"{url}\"\n"),
        _ => postgres(url),
    };
    let node = Node::start(
        context,
        &format!("{storage}[limiter.policies.create]\n{UNLIMITED}"),
    )?;
    let started = Instant::now();
    for chunk in lines.chunks(1000) {
        let links: Vec<_> = chunk
            .iter()
            .map(|(code, url)| json!({ "url": url, "alias": code }))
            .collect();
        let created = node.bulk(links)?.len();
        ensure!(
            created == chunk.len(),
            "the bulk API created {created} of {}",
            chunk.len()
        );
    }
    Ok(started.elapsed().as_secs_f64())
}
