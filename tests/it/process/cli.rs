//! The operator's subcommands, run as processes the way an operator runs them with only
//! the binary: `migrate [--status]`, `config check` (every example file, a bad one, and a
//! rate limit service's limits files), `completions`, and `--help` on each; and a bad
//! configuration refused with exit code 2 and one line naming the key.

use std::path::Path;
use std::process::Output;

use shortener_tests::{Launch, TempDir, TestConfig, binary, check_config};

/// `shortener ARGS` in `dir`, with no `SHORTENER_*` variable of the caller's.
pub(crate) fn shortener(dir: &Path, args: &[&str]) -> Output {
    Launch::one_shot(binary(), dir).args(args).output().unwrap()
}

pub(crate) fn text(bytes: &[u8]) -> String {
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

    // Their variables: a knob that changes nothing is a warning, a feature not served
    // is refused by name.
    let with_theirs = |name: &str, value: &str| {
        Launch::one_shot(binary(), dir.path())
            .args(args)
            .env(name, value)
            .output()
            .unwrap()
    };
    let warned = with_theirs("USE_STATSD", "true");
    assert!(warned.status.success(), "{}", text(&warned.stderr));
    assert!(
        text(&warned.stderr).contains("warning: environment variable USE_STATSD"),
        "{}",
        text(&warned.stderr)
    );
    let refused = with_theirs("CONFIG_TYPE", "GRPC_XDS_SOTW");
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("CONFIG_TYPE"));

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
    let app = shortener_tests::spawn_app(&TestConfig::default());
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
        "domain,code,url,created_at,expires_at,max_visits,visits,owner,\
         redirect_status,forward_query,expired_url,title,crawlable,tags,password_hash,rules"
    );
    assert_eq!(rows.len(), 4, "{rows:?}");
    for code in &codes {
        assert!(
            rows.iter().any(|row| row.starts_with(&format!(",{code},"))),
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

#[test]
fn bad_config_exits_2_with_one_line() {
    let dir = TempDir::new();
    let (code, stderr) = check_config(dir.path(), "[server]\nredirect_status = 200\n");
    assert_eq!(code, Some(2));
    assert!(stderr.contains("server.redirect_status"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    let (code, stderr) = check_config(dir.path(), "[limiter]\nkindd = \"redis\"\n");
    assert_eq!(code, Some(2));
    assert!(stderr.contains("kindd"), "{stderr}");
    for (toml, key) in [
        ("[limiter]\nipv4_prefix = 33\n", "limiter.ipv4_prefix"),
        ("[limiter]\nipv6_prefix = 129\n", "limiter.ipv6_prefix"),
        (
            "[server]\nclient_ip_header = \"true-client-ip\"\n",
            "client_ip_header",
        ),
        (
            "[server]\nheader_read_timeout_ms = 0\n",
            "server.header_read_timeout_ms",
        ),
        (
            "[server]\nrequest_timeout_ms = 0\n",
            "server.request_timeout_ms",
        ),
        ("[server]\nidle_timeout_ms = 0\n", "server.idle_timeout_ms"),
        ("[server]\nmax_connections = 0\n", "server.max_connections"),
        (
            "[storage]\nstatement_timeout_ms = 3600001\n",
            "storage.statement_timeout_ms",
        ),
    ] {
        let (code, stderr) = check_config(dir.path(), toml);
        assert_eq!(code, Some(2), "{toml}");
        assert!(stderr.contains(key), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

#[test]
fn a_max_age_over_a_year_is_refused_naming_the_key() {
    let dir = TempDir::new();
    let config = TestConfig::default().with(|c| c.links.redirect_max_age_secs = 31_536_001);
    let (code, stderr) = check_config(dir.path(), &config.file_text(dir.path()));
    assert_ne!(code, Some(0));
    assert!(stderr.contains("links.redirect_max_age_secs"), "{stderr}");
}
