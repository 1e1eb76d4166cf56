//! The example files of `config/` start the real binary as they are: only what must
//! point at this test's services (the port, the database, Redis) is overridden, through
//! `SHORTENER_*` environment variables. Each then creates and redirects a link, and the
//! test checks that the backends the file names were the ones used.

use std::path::Path;
use std::process::Command;

use reqwest::StatusCode;
use serde_json::json;
use shortener_tests::{Api, RedisCluster, RedisServer};
use shortener_tests::{TempDir, TestApp, TestDatabase, client};

const BIND: (&str, &str) = ("SHORTENER_SERVER__BIND", "127.0.0.1:0");

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../config")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Creates a link, follows it and checks readiness; returns the code.
async fn create_and_redirect(app: &TestApp) -> String {
    let http = client();
    let body = json!({"url": "https://example.com/from-config"});
    let created = Api::of(app).create(&body).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert!(created.headers.contains_key("ratelimit"));
    let link = created.body;
    let code = link["code"].as_str().unwrap().to_owned();
    assert!(
        link["short_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{code}"))
    );
    let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
    assert_eq!(redirect.status(), StatusCode::FOUND);
    assert_eq!(
        redirect.headers()["location"],
        "https://example.com/from-config"
    );
    let ready = http.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(
        ready.status(),
        StatusCode::OK,
        "every configured backend answers"
    );
    code
}

/// How many keys the Redis server at `url` holds.
fn redis_keys(url: &str) -> usize {
    let output = Command::new("redis-cli")
        .args(["-u", url, "--scan"])
        .output()
        .expect("`redis-cli` runs (Debian package redis-tools)");
    assert!(output.status.success(), "redis-cli --scan on {url}");
    String::from_utf8_lossy(&output.stdout).lines().count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_toml_keeps_links_in_postgresql() {
    let database = TestDatabase::create();
    let dir = TempDir::new();
    let env = [BIND, ("SHORTENER_STORAGE__URL", database.url())];
    let app = TestApp::start_with_file_text(dir.path(), &example("postgres.toml"), &env);
    let code = create_and_redirect(&app).await;
    let stored = database.query(&format!("SELECT url FROM links WHERE code = '{code}'"));
    assert_eq!(stored.trim(), "https://example.com/from-config");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_toml_limits_on_redis() {
    let redis = RedisServer::start_private();
    let dir = TempDir::new();
    let env = [BIND, ("SHORTENER_LIMITER__REDIS_URL", redis.url())];
    let app = TestApp::start_with_file_text(dir.path(), &example("redis.toml"), &env);
    create_and_redirect(&app).await;
    assert!(
        redis_keys(redis.url()) > 0,
        "the limiter wrote its state to Redis"
    );
    // The file keeps the default storage: SQLite, in the node's directory.
    assert!(dir.path().join("shortener.db").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_toml_keeps_links_in_postgresql_and_limits_on_a_redis_cluster() {
    let cluster = RedisCluster::start();
    let database = TestDatabase::create();
    let dir = TempDir::new();
    let seeds = cluster
        .urls()
        .iter()
        .map(|url| format!("\"{url}\""))
        .collect::<Vec<_>>()
        .join(",");
    let seeds = format!("[{seeds}]");
    let env = [
        BIND,
        ("SHORTENER_STORAGE__URL", database.url()),
        ("SHORTENER_LIMITER__REDIS_CLUSTER", &seeds),
    ];
    let app = TestApp::start_with_file_text(dir.path(), &example("cluster.toml"), &env);
    let code = create_and_redirect(&app).await;
    let stored = database.query(&format!("SELECT url FROM links WHERE code = '{code}'"));
    assert_eq!(stored.trim(), "https://example.com/from-config");
    let keys: usize = cluster.urls().iter().map(|url| redis_keys(url)).sum();
    assert!(keys > 0, "the limiter wrote its state to the cluster");
}
