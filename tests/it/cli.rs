//! The operator's subcommands, run as processes the way an operator runs them with only
//! the binary: `migrate [--status]`, `config check` (every example file, a bad one, and a
//! rate limit service's limits files), `completions`, and `--help` on each.

use std::path::Path;
use std::process::{Command, Output};

use shortener_tests::{TempDir, binary};

/// `shortener ARGS` in `dir`, with no `SHORTENER_*` variable of the caller's.
fn shortener(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(binary());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SHORTENER_") {
            command.env_remove(name);
        }
    }
    command.args(args).current_dir(dir).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn migrate_lists_then_applies_the_configured_database() {
    let dir = TempDir::new();
    std::fs::write(
        dir.path().join("sqlite.toml"),
        "[storage]\nkind = \"sqlite\"\nurl = \"sqlite://links.db\"\n",
    )
    .unwrap();
    let status = shortener(
        dir.path(),
        &["migrate", "--status", "--config", "sqlite.toml"],
    );
    assert!(status.status.success(), "{}", text(&status.stderr));
    let listed = text(&status.stdout);
    assert!(
        listed.starts_with("migrations of sqlite://links.db:"),
        "{listed}"
    );
    let pending = listed.lines().filter(|l| l.ends_with("pending")).count();
    assert!(pending >= 1 && !listed.contains("applied"), "{listed}");

    let applied = shortener(dir.path(), &["--config", "sqlite.toml", "migrate"]);
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let lines = text(&applied.stdout);
    assert_eq!(lines.matches(": applied ").count(), pending, "{lines}");

    let status = shortener(
        dir.path(),
        &["migrate", "--status", "--database-url", "sqlite://links.db"],
    );
    let listed = text(&status.stdout);
    assert_eq!(listed.matches(" applied").count(), pending, "{listed}");
    let again = shortener(dir.path(), &["migrate", "--config", "sqlite.toml"]);
    assert!(text(&again.stdout).contains("no pending migration"));

    std::fs::write(
        dir.path().join("memory.toml"),
        "[storage]\nkind = \"memory\"\n",
    )
    .unwrap();
    let memory = shortener(dir.path(), &["migrate", "--config", "memory.toml"]);
    assert_eq!(memory.status.code(), Some(2));
    assert!(text(&memory.stderr).contains("nothing to migrate"));
}

#[test]
fn config_check_passes_every_example_and_names_a_bad_key() {
    let dir = TempDir::new();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config");
    let mut checked = 0;
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let file = path.to_str().unwrap();
            let output = shortener(dir.path(), &["config", "check", "--config", file]);
            assert!(output.status.success(), "{file}: {}", text(&output.stderr));
            assert!(text(&output.stdout).contains("valid"), "{file}");
            checked += 1;
        }
    }
    assert!(checked >= 3, "the example files are found");

    std::fs::write(
        dir.path().join("bad.toml"),
        "[limiter]\nkind = \"redis\"\ntimeout_ms = \"soon\"\n",
    )
    .unwrap();
    let output = shortener(dir.path(), &["config", "check", "--config", "bad.toml"]);
    assert_eq!(output.status.code(), Some(2));
    let said = text(&output.stderr);
    assert!(said.contains("limiter.timeout_ms"), "{said}");
    assert_eq!(said.lines().count(), 1, "one line: {said}");
    let missing = shortener(dir.path(), &["config", "check", "--config", "nope.toml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("nope.toml"));
}

#[test]
fn config_check_of_the_rate_limit_service_reads_its_limits_files() {
    let dir = TempDir::new();
    let limits = dir.path().join("runtime/config");
    std::fs::create_dir_all(&limits).unwrap();
    let good = "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: minute\n      requests_per_unit: 5\n";
    std::fs::write(limits.join("edge.yaml"), good).unwrap();
    std::fs::write(
        dir.path().join("rls.toml"),
        "[rls]\nruntime_root = \"runtime\"\nruntime_subdirectory = \"\"\n",
    )
    .unwrap();
    let args = [
        "config",
        "check",
        "--ratelimit-server",
        "--config",
        "rls.toml",
    ];
    let output = shortener(dir.path(), &args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("1 limits file(s)"));

    let bad = good.replace("unit: minute", "unit: fortnight");
    std::fs::write(limits.join("edge.yaml"), bad).unwrap();
    let output = shortener(dir.path(), &args);
    assert_eq!(output.status.code(), Some(2));
    let said = text(&output.stderr);
    assert!(
        said.contains("edge.yaml") && said.contains("fortnight"),
        "{said}"
    );
}

#[test]
fn completions_and_help_cover_every_subcommand() {
    let dir = TempDir::new();
    for (shell, mark) in [
        ("bash", "_shortener()"),
        ("zsh", "#compdef shortener"),
        ("fish", "complete -c shortener"),
    ] {
        let output = shortener(dir.path(), &["completions", shell]);
        assert!(output.status.success(), "{shell}");
        let script = text(&output.stdout);
        assert!(script.contains(mark), "{shell}: {script}");
        assert!(script.contains("ratelimit-server") && script.contains("migrate"));
    }
    let unknown = shortener(dir.path(), &["completions", "tcsh"]);
    assert_eq!(unknown.status.code(), Some(2));

    let help = text(&shortener(dir.path(), &["--help"]).stdout);
    for subcommand in [
        "serve",
        "migrate",
        "config",
        "keys",
        "ratelimit-server",
        "completions",
    ] {
        assert!(help.contains(subcommand), "{subcommand}: {help}");
    }
    for args in [
        &["migrate", "--help"][..],
        &["config", "check", "--help"],
        &["keys", "new", "--help"],
        &["ratelimit-server", "--help"],
    ] {
        let output = shortener(dir.path(), args);
        assert!(output.status.success(), "{args:?}");
        assert!(
            text(&output.stdout).contains("Usage: shortener"),
            "{args:?}"
        );
    }
    let wrong = shortener(dir.path(), &["serve", "--colour"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(text(&wrong.stderr).contains("--colour"));
}

/// `shortener export` reads the storage of a running node (SQLite lets a reader beside
/// its writer) and writes what the API's export would, every link once.
#[tokio::test]
async fn export_writes_every_link_of_the_configured_database() {
    let app = shortener_tests::spawn_app(shortener_tests::BASE_CONFIG);
    let http = shortener_tests::client();
    let mut codes = Vec::new();
    for n in 0..3 {
        let link = app
            .create(
                &http,
                serde_json::json!({"url": format!("https://example.com/{n}")}),
            )
            .await;
        codes.push(link["code"].as_str().unwrap().to_owned());
    }
    let csv = shortener(
        &app.dir,
        &["export", "--format", "csv", "--config", "shortener.toml"],
    );
    assert!(csv.status.success(), "{}", text(&csv.stderr));
    assert!(
        text(&csv.stderr).contains("exported 3 links"),
        "{}",
        text(&csv.stderr)
    );
    let rows: Vec<String> = text(&csv.stdout).lines().map(str::to_owned).collect();
    assert_eq!(
        rows[0],
        "code,url,created_at,expires_at,max_visits,visits,owner,\
         redirect_status,forward_query,expired_url,title,crawlable,tags"
    );
    assert_eq!(rows.len(), 4, "{rows:?}");
    for code in &codes {
        assert!(
            rows.iter().any(|row| row.starts_with(&format!("{code},"))),
            "{code}"
        );
    }
    let ndjson = shortener(
        &app.dir,
        &["export", "--config", "shortener.toml", "--owner", "nobody"],
    );
    assert!(ndjson.status.success(), "{}", text(&ndjson.stderr));
    assert_eq!(text(&ndjson.stdout), "", "nobody owns a link");
    let bad = shortener(&app.dir, &["export", "--format", "xml"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("--format"),
        "{}",
        text(&bad.stderr)
    );
}

/// What `export` writes, `import` reads back whole into another database: every code,
/// target, time, visit limit, visit count and owner; run again, it skips every code. A
/// Shlink CSV comes in with its codes, and a bad line changes nothing.
#[tokio::test]
async fn an_export_imports_back_whole_and_a_shlink_csv_keeps_its_codes() {
    let app = shortener_tests::spawn_app(shortener_tests::BASE_CONFIG);
    let http = shortener_tests::client();
    let plain = app
        .create(
            &http,
            serde_json::json!({"url": "https://example.com/plain", "tags": ["moved", "q4"],
                               "title": "Moved", "redirect_status": 307, "crawlable": true}),
        )
        .await;
    let limited = app
        .create(
            &http,
            serde_json::json!({"url": "https://example.com/few", "max_visits": 5}),
        )
        .await;
    for link in [&plain, &limited] {
        let code = link["code"].as_str().unwrap();
        for _ in 0..2 {
            http.get(app.url(&format!("/{code}"))).send().await.unwrap();
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
        text(&first.stdout).contains("imported 2 links; 0 unchanged, 0 conflicts, 0 refused"),
        "{}",
        text(&first.stdout)
    );
    let again = shortener(target.path(), &import);
    assert!(
        text(&again.stdout).contains("imported 0 links; 2 unchanged, 0 conflicts, 0 refused"),
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
    assert!(text(&exported.stdout).contains("\"tags\":\"moved,q4\""));

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
