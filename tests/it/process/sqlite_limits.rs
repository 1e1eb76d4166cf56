//! The embedded SQLite store at its limits, against the real binary: a full disk refuses
//! creates with 503 while links stay readable and undamaged, and a stalled client does not
//! hold the shutdown past `server.shutdown_timeout_ms`.

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use shortener_testkit::api::API;
use shortener_tests::{Api, Store, TempDir, TestApp, TestConfig, client};

use crate::process::sqlite_storage::wal_bytes;
use crate::support::loaded_sqlite;
use crate::support::open_sqlite as open;

/// A tmpfs of `size` mounted on a directory, unmounted on drop.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> Self {
        let mount_point = dir.join("disk");
        std::fs::create_dir_all(&mount_point).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mount_point)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "mounting a tmpfs needs root (the tests run as root)"
        );
        Self(mount_point)
    }
}

impl SmallDisk {
    /// Makes room: the same tmpfs, larger, with its files in place.
    fn grow(&self, size: &str) {
        let status = std::process::Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("run mount");
        assert!(status.success(), "remounting the tmpfs failed");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[tokio::test]
async fn a_full_disk_refuses_creates_with_503_and_keeps_links_readable() {
    let dir = TempDir::new();
    let disk = SmallDisk::mount(dir.path(), "512k");
    // One connection: the one that met the full disk is the one every later write uses.
    let mut config = loaded_sqlite().with(|c| c.storage.max_connections = 1);
    config.store = Store::Sqlite(disk.0.join("shortener.db"));
    let app = TestApp::start(dir.path(), &config);
    let (http, api) = (client(), Api::of(&app));
    let mut links = Vec::new();
    let problem = loop {
        assert!(links.len() < 100_000, "512 KiB never filled up");
        let target = format!("https://example.com/{}", links.len());
        let answer = api.create(&json!({"url": target})).await;
        match answer.status {
            StatusCode::CREATED => {
                links.push((answer.body["code"].as_str().unwrap().to_owned(), target));
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(answer.headers["content-type"], "application/problem+json");
                break answer.body;
            }
            other => panic!("create answered {other}"),
        }
    };
    assert!(!links.is_empty(), "the disk was full from the start");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("storage is full"),
        "{problem}"
    );
    // Still full: the next create is refused the same way, and every link redirects
    // (the cache is off, so each redirect reads SQLite).
    let again = api
        .create(&json!({"url": "https://example.com/again"}))
        .await;
    assert_eq!(again.status, StatusCode::SERVICE_UNAVAILABLE);
    for (code, target) in &links {
        let redirect = http.get(app.url(&format!("/{code}"))).send().await.unwrap();
        assert_eq!(redirect.status(), StatusCode::FOUND, "{code}");
        assert_eq!(redirect.headers()["location"], target.as_str());
    }
    // Once there is room again, creates work again, with no restart.
    disk.grow("4m");
    let after = app
        .create(&http, json!({"url": "https://example.com/after"}))
        .await;
    links.push((
        after["code"].as_str().unwrap().to_owned(),
        "https://example.com/after".to_owned(),
    ));
    // The files the server leaves hold every link and pass SQLite's integrity check.
    assert!(app.stop(), "graceful exit");
    let copy = TempDir::new();
    for file in ["shortener.db", "shortener.db-wal"] {
        if disk.0.join(file).exists() {
            std::fs::copy(disk.0.join(file), copy.path().join(file)).unwrap();
        }
    }
    let mut database = open(&copy.path().join("shortener.db")).await;
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&mut database)
        .await
        .unwrap();
    assert_eq!(integrity, "ok");
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM links")
        .fetch_one(&mut database)
        .await
        .unwrap();
    assert_eq!(count, i64::try_from(links.len()).unwrap());
    drop(database);
    drop(disk);
}

#[tokio::test]
async fn a_stalled_client_does_not_hold_the_shutdown_past_its_deadline() {
    use std::io::Write as _;

    let dir = TempDir::new();
    // 1 s, against the 10 s that `TestApp::stop` waits: the old fixed 10 s drain alone
    // would not fit in it (nor does a 20 s deadline: checked when this test was written).
    let app = TestApp::start(
        dir.path(),
        &TestConfig::default().with(|c| c.server.shutdown_timeout_ms = 1000),
    );
    let http = client();
    app.create(&http, json!({"url": "https://example.com/before"}))
        .await;
    // A create whose body never finishes: the server waits for it while draining.
    let mut stalled =
        std::net::TcpStream::connect(app.base.trim_start_matches("http://")).expect("connect");
    let head = format!(
        "POST {API}/links HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"url\":"
    );
    stalled
        .write_all(head.as_bytes())
        .expect("send a partial request");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        app.stop(),
        "exited, with success, within the wait of `stop`"
    );
    assert_eq!(
        wal_bytes(dir.path()),
        0,
        "storage was closed after the forced drain"
    );
    drop(stalled);
}
