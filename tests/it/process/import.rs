//! `shortener import`, run as a process on files: our export read back whole, Shlink's
//! CSV and API pages with their visits, bad lines said by number, and a database not yet
//! migrated migrated first, or refused under `storage.migrate = false`.

use shortener_tests::TempDir;

use crate::process::cli::{shortener, text};

/// What `export` writes, `import` reads back whole into another database: every code,
/// target, time, visit limit, visit count, owner and redirect rules; run again, it skips every code. A
/// Shlink CSV comes in with its codes, and a bad line changes nothing.
#[tokio::test]
async fn an_export_imports_back_whole_and_a_shlink_csv_keeps_its_codes() {
    let app = shortener_tests::spawn_app(&shortener_tests::TestConfig::default().with(|c| {
        c.domains.push(shortener_tests::config::DomainConfig {
            host: "go.example.org".into(),
            ..Default::default()
        });
    }));
    let http = shortener_tests::client();
    let plain = app
        .create(
            &http,
            serde_json::json!({"url": "https://example.com/plain", "tags": ["moved", "q4"],
                               "title": "Moved", "redirect_status": 307, "crawlable": true,
                               "rules": [{"name": "ios", "conditions": [{"type": "os", "value": "ios"}],
                                          "url": "https://apps.example/"},
                                         {"split": [{"url": "https://a.example/", "weight": 2},
                                                    {"url": "https://b.example/", "weight": 1}]}]}),
        )
        .await;
    let limited = app
        .create(
            &http,
            serde_json::json!({"url": "https://example.com/few", "max_visits": 5}),
        )
        .await;
    // The same code on the other domain: a second link, which the round trip keeps apart.
    let elsewhere = app
        .create(
            &http,
            serde_json::json!({"url": "https://example.org/elsewhere", "domain": "go.example.org",
                               "alias": plain["code"]}),
        )
        .await;
    assert_eq!(
        elsewhere["short_url"],
        format!("http://go.example.org/{}", plain["code"].as_str().unwrap())
    );
    for link in [&plain, &limited] {
        let code = link["code"].as_str().unwrap();
        for _ in 0..2 {
            // With two domains, the host names the domain: the default one's is that of
            // the default public_url.
            let visit = http
                .get(app.url(&format!("/{code}")))
                .header("host", "127.0.0.1:8080");
            assert!(visit.send().await.unwrap().status().is_redirection());
        }
    }
    // The visit flush runs every second.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let exported = shortener(&app.dir, &["export", "--config", "shortener.toml"]);
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let file = app.dir.join("links.ndjson");
    std::fs::write(&file, &exported.stdout).unwrap();

    let target = TempDir::new();
    let database = format!("sqlite://{}", target.path().join("moved.db").display());
    let migrated = shortener(target.path(), &["migrate", "--database-url", &database]);
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    let file = file.to_str().unwrap();
    let import = [
        "import",
        "--from",
        "ndjson",
        file,
        "--database-url",
        &database,
    ];
    let first = shortener(target.path(), &import);
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert!(
        text(&first.stdout).contains("imported 3 links; 0 unchanged, 0 conflicts, 0 refused"),
        "{}",
        text(&first.stdout)
    );
    let again = shortener(target.path(), &import);
    assert!(
        text(&again.stdout).contains("imported 0 links; 3 unchanged, 0 conflicts, 0 refused"),
        "{}",
        text(&again.stdout)
    );
    let back = shortener(target.path(), &["export", "--database-url", &database]);
    let sorted = |bytes: &[u8]| {
        let mut lines: Vec<String> = text(bytes).lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    assert_eq!(
        sorted(&back.stdout),
        sorted(&exported.stdout),
        "a round trip keeps everything"
    );
    assert!(text(&exported.stdout).contains("\"visits\":2"));
    assert!(text(&exported.stdout).contains("\"domain\":\"go.example.org\""));
    assert!(text(&exported.stdout).contains("\"tags\":\"moved,q4\""));
    assert!(
        text(&exported.stdout).contains("\"rules\":"),
        "the rules are exported"
    );

    let shlink = target.path().join("shlink.csv");
    std::fs::write(
        &shlink,
        "Long URL;Short code;Title\nhttps://example.org/a;from-shlink;Hello\n",
    )
    .unwrap();
    let shlink = shlink.to_str().unwrap();
    let dry = [
        "import",
        "--from",
        "shlink-csv",
        shlink,
        "--database-url",
        &database,
        "--dry-run",
    ];
    let dry = shortener(target.path(), &dry);
    assert!(
        text(&dry.stdout).contains("would import 1 links"),
        "{}",
        text(&dry.stdout)
    );
    assert!(
        !text(&dry.stdout).contains("records had"),
        "a title is kept"
    );
    let real = [
        "import",
        "--from",
        "shlink-csv",
        shlink,
        "--database-url",
        &database,
    ];
    assert!(shortener(target.path(), &real).status.success());
    let all = text(&shortener(target.path(), &["export", "--database-url", &database]).stdout);
    let imported: Vec<serde_json::Value> = (all.lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|link: &serde_json::Value| link["code"] == "from-shlink")
        .collect();
    assert_eq!(imported.len(), 1, "{all}");
    assert_eq!(imported[0]["url"], "https://example.org/a");
    assert_eq!(imported[0]["title"], "Hello");
    // `--domain` puts the file's links on that domain: the same code comes in again there.
    let onto: Vec<&str> = real
        .iter()
        .copied()
        .chain(["--domain", "go.example.org"])
        .collect();
    let onto = shortener(target.path(), &onto);
    assert!(
        text(&onto.stdout).contains("imported 1 links; 0 unchanged"),
        "{}",
        text(&onto.stdout)
    );
    let all = text(&shortener(target.path(), &["export", "--database-url", &database]).stdout);
    let domains: Vec<serde_json::Value> = (all.lines())
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|link| link["code"] == "from-shlink")
        .map(|link| link["domain"].clone())
        .collect();
    assert_eq!(domains.len(), 2, "{all}");
    assert!(
        domains.contains(&serde_json::json!("go.example.org")),
        "{domains:?}"
    );

    // A bad value, a target the rules refuse (a private address) and a code taken by
    // another target are each said on their line; the good line comes in; exit 1.
    let bad = target.path().join("bad.csv");
    std::fs::write(
        &bad,
        "Long URL,Short code\nhttps://example.org/b,fine\nnope,bad\n\
         http://127.0.0.1/admin,inside\nhttps://example.org/not-a,from-shlink\n",
    )
    .unwrap();
    let bad = bad.to_str().unwrap();
    let refused = shortener(
        target.path(),
        &[
            "import",
            "--from",
            "shlink-csv",
            bad,
            "--database-url",
            &database,
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    let said = text(&refused.stdout);
    for line in [
        "line 3: refused: url",
        "line 4: refused: url",
        "line 5: conflict: code `from-shlink` is taken by another target",
        "imported 1 links; 0 unchanged, 1 conflicts, 2 refused",
    ] {
        assert!(said.contains(line), "{line} in {said}");
    }
    let after = text(&shortener(target.path(), &["export", "--database-url", &database]).stdout);
    assert!(after.contains("\"fine\""), "the good line came in");
    assert!(!after.contains("\"inside\""), "a refused target did not");
    assert!(!after.contains("not-a"), "the taken code kept its target");
}

/// Pages of Shlink's API come in with their visit totals, a limited link's counted
/// against its limit. A database whose migrations were not applied is migrated first, as
/// `serve` does; under `storage.migrate = false` it is refused, naming the migrations and
/// the command that applies them.
#[test]
fn shlink_pages_import_with_their_visits_into_a_database_migrated_first() {
    let dir = TempDir::new();
    let database = format!("sqlite://{}", dir.path().join("links.db").display());
    let page = dir.path().join("page.json");
    std::fs::write(
        &page,
        r#"{"shortUrls": {"data": [
            {"shortCode": "seen", "longUrl": "https://example.org/seen", "visitsSummary": {"total": 3}},
            {"shortCode": "few", "longUrl": "https://example.org/few", "visitsSummary": {"total": 5},
             "meta": {"maxVisits": 2}, "tags": ["moved"]}
        ]}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("unmigrated.toml"),
        "[storage]\nkind = \"sqlite\"\nurl = \"sqlite://links.db\"\nmigrate = false\n",
    )
    .unwrap();
    let page = page.to_str().unwrap();
    let import = ["import", "--from", "shlink-json", page];
    let refused = shortener(
        dir.path(),
        &[&import[..], &["--config", "unmigrated.toml"]].concat(),
    );
    assert_eq!(refused.status.code(), Some(1));
    let said = text(&refused.stderr);
    assert!(
        said.contains("pending migration") && said.contains("shortener migrate"),
        "{said}"
    );
    let done = shortener(
        dir.path(),
        &[&import[..], &["--database-url", &database]].concat(),
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert!(
        text(&done.stdout).contains("imported 2 links; 0 unchanged"),
        "{}",
        text(&done.stdout)
    );
    assert!(
        text(&done.stderr).contains("applied migration 0001"),
        "{}",
        text(&done.stderr)
    );
    let status = text(
        &shortener(
            dir.path(),
            &["migrate", "--status", "--database-url", &database],
        )
        .stdout,
    );
    assert!(!status.contains("pending"), "{status}");
    // Closed cleanly: the file alone holds the links, no write-ahead log beside it.
    let wal = dir.path().join("links.db-wal");
    assert!(!wal.exists(), "{} left behind", wal.display());
    let exported = text(&shortener(dir.path(), &["export", "--database-url", &database]).stdout);
    let links: Vec<serde_json::Value> = (exported.lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let by_code = |code: &str| {
        let found = links.iter().find(|link| link["code"] == code);
        found.cloned().unwrap_or_default()
    };
    assert_eq!(by_code("seen")["visits"], 3, "{exported}");
    assert_eq!(
        by_code("few")["visits"],
        2,
        "used up at its limit: {exported}"
    );
    assert_eq!(by_code("few")["max_visits"], 2);
    assert_eq!(by_code("few")["tags"], "moved");
}

/// A write that fails midway (here PostgreSQL refusing one row, by a trigger) stops the
/// import: the batches before it stay, and the summary says how many links were written
/// and the first line that was not, with exit 1. Nothing is reported as written that was
/// not, and nothing written is reported as lost.
#[test]
fn a_write_that_fails_midway_reports_what_was_written() {
    let database = shortener_tests::TestDatabase::create();
    let dir = TempDir::new();
    let migrated = shortener(dir.path(), &["migrate", "--database-url", database.url()]);
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    database.query(
        "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         IF NEW.code = 'boom' THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$; \
         CREATE TRIGGER refuse_boom BEFORE INSERT ON links FOR EACH ROW EXECUTE FUNCTION refuse_boom();",
    );
    // Two batches: 5 000 links, then the refused one and one more.
    let mut lines: Vec<String> = (0..5000)
        .map(|n| {
            format!(
                r#"{{"code":"ok-{n:04}","url":"https://example.com/{n}","created_at":"2026-01-01T00:00:00Z"}}"#
            )
        })
        .collect();
    for code in ["boom", "after"] {
        lines.push(format!(
            r#"{{"code":"{code}","url":"https://example.com/{code}","created_at":"2026-01-01T00:00:00Z"}}"#
        ));
    }
    let file = dir.path().join("links.ndjson");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let file = file.to_str().unwrap();
    let args = [
        "import",
        "--from",
        "ndjson",
        file,
        "--database-url",
        database.url(),
    ];
    let import = shortener(dir.path(), &args);
    assert_eq!(import.status.code(), Some(1), "{}", text(&import.stderr));
    assert!(
        text(&import.stdout).contains("imported 5000 links"),
        "{}",
        text(&import.stdout)
    );
    let stderr = text(&import.stderr);
    assert!(
        stderr.contains("stopped") && stderr.contains("line 5001"),
        "{stderr}"
    );
    let stored = database.query("SELECT count(*) FROM links");
    assert_eq!(stored.trim(), "5000", "what the summary says was written");
}
