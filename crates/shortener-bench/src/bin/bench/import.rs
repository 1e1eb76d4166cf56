//! Benchmark 8: `shortener import --from ndjson` of many links into an empty SQLite file
//! and an empty PostgreSQL database, against the same links (same codes and targets)
//! created through `POST /api/v1/links/bulk` on a node of the same storage: links/s.

use std::time::Instant;

use anyhow::ensure;
use serde_json::json;
use shortener_testkit::postgres::admin_url;
use shortener_testkit::{TempDir, TestDatabase};

use super::Context;
use super::report::{Section, Unit};
use super::tools::{Node, UNLIMITED, database, ndjson, storage};

const WAYS: [&str; 2] = ["import", "bulk API"];

pub fn run(context: &Context, section: &mut Section) -> anyhow::Result<()> {
    // Links per run: what a Shlink install of some years holds.
    let links = context.pick(100_000, 10_000);
    let dir = TempDir::with_prefix("import")?;
    let file = dir.path().join("links.ndjson").display().to_string();
    let shortener = |args: &[&str]| super::tools::shortener(context, args);
    // Optional: without PostgreSQL the SQLite figures still stand. Each run gets a new
    // database on the server (or the throwaway cluster) that `database` found.
    let server = database(context);
    let admin = match &server {
        Some((_, Some(cluster))) => cluster.url(""),
        _ => admin_url(),
    };
    let storages = &["SQLite", "PostgreSQL"][..1 + usize::from(server.is_some())];
    let variants = storages.iter().flat_map(|&it| WAYS.map(|way| (it, way)));
    context.alternate(&variants.collect::<Vec<_>>(), |round, &(store, way)| {
        // Fresh codes and a fresh database every run: nothing is ever "unchanged".
        let n = u8::from(way == "import");
        let code = |i| format!("r{round}i{n}-{i}");
        let line = |i| (code(i), format!("https://example.com/{i}"));
        let lines: Vec<_> = (0..links).map(line).collect();
        let _database;
        let (kind, url) = if store == "SQLite" {
            let path = dir.path().join(format!("r{round}-{n}.db"));
            ("sqlite", format!("sqlite://{}", path.display()))
        } else {
            _database = TestDatabase::create_on(&admin)?;
            ("postgres", _database.url().to_owned())
        };
        let seconds = if way == "import" {
            ndjson(file.as_ref(), lines.iter().cloned())?;
            shortener(&["migrate", "--database-url", &url])?;
            let started = Instant::now();
            shortener(&["import", "--from", "ndjson", &file, "--database-url", &url])?;
            started.elapsed().as_secs_f64()
        } else {
            let config = storage(kind, &url) + "[limiter.policies.create]\n" + UNLIMITED;
            let node = Node::start(context, &config)?;
            let alias = |(code, url): &(String, String)| json!({ "url": url, "alias": code });
            let started = Instant::now();
            for chunk in lines.chunks(1000) {
                let links = chunk.iter().map(alias).collect();
                let (created, sent) = (node.bulk(links)?.len(), chunk.len());
                ensure!(created == sent, "the bulk API created {created} of {sent}");
            }
            started.elapsed().as_secs_f64()
        };
        let (label, rate) = (format!("{way} into {store}"), links as f64 / seconds);
        section.push(&format!("{label} links/s"), Unit::PerSecond, rate);
        Ok(format!("{label}: {links} links in {seconds:.1} s"))
    })?;
    for storage in storages {
        let what = format!("links/s into an empty {storage}: import vs the bulk API (goal >= 5x)");
        let [import, bulk] = WAYS.map(|way| format!("{way} into {storage}"));
        let command = format!(
            "shortener import --from ndjson FILE --database-url URL vs POST /api/v1/links/bulk \
             (1000 links a request, one client) on a node of the same {storage}"
        );
        section.versus(&what, [&import, &bulk, "links/s"], &command);
    }
    section.notes = vec![
        format!("{links} links (code and target) per run, each run on a new SQLite file or PostgreSQL database, migrated before the clock starts (`shortener migrate`)."),
        "Import: the release binary reading an NDJSON file of the links, 5 000 to a transaction. Bulk API: a node on the same storage (default `[links]` and cache, the `create` policy lifted), sent the same links as aliases, 1000 to a request, one request at a time; the node starts before the clock does.".to_owned(),
    ];
    Ok(())
}
