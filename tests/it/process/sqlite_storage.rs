//! The embedded SQLite store under load, against the real binary: the WAL stays bounded
//! under sustained creates and is gone after SIGTERM, and a SIGKILL loses no acknowledged
//! link. Its limits (a full disk, a stalled client at shutdown) are in `sqlite_limits`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shortener_tests::config::SynchronousConfig;
use shortener_tests::{Api, TempDir, TestApp};
use tokio::sync::Notify;

use crate::support::loaded_sqlite;

/// `storage.sqlite_wal_max_mb` of the sustained test: small, so the bound bites soon.
const WAL_MAX_MB: u64 = 4;

/// Bytes of WAL one create can add: the leaf page of its random code plus a share of
/// the interior pages above it (the WAL holds whole 4 KiB pages).
const WAL_BYTES_PER_CREATE: u64 = 8 << 10;

pub(crate) fn wal_bytes(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("shortener.db-wal")).map_or(0, |m| m.len())
}

/// Creates acknowledged so far, and a wake-up for a test waiting for a count: the test
/// waits on the load itself, not on the clock.
#[derive(Debug, Default)]
struct Tally {
    count: AtomicU64,
    changed: Notify,
}

impl Tally {
    fn add(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_waiters();
    }

    fn get(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Returns once `count` creates were acknowledged; panics after `hang` (a server that
    /// stopped answering), which bounds nothing that the test measures.
    async fn reach(&self, count: u64, hang: Duration) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                tokio::pin!(changed);
                // Registered before the check, so that no add between the two is missed.
                changed.as_mut().enable();
                if self.get() >= count {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(hang, wait)
            .await
            .unwrap_or_else(|_| panic!("only {} of {count} creates acknowledged", self.get()));
    }
}

/// Creates links from `clients` tasks until `stop`; returns every acknowledged link
/// (code -> url) and counts 201s in `created` as they come.
async fn create_until(
    base: String,
    clients: usize,
    stop: Arc<AtomicBool>,
    created: Arc<Tally>,
) -> HashMap<String, String> {
    let api = Api::at(&base);
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let api = api.clone();
            let (stop, created) = (stop.clone(), created.clone());
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                for index in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let target = format!("https://example.com/{client}/{index}");
                    let create = api.request(Method::POST, "/links");
                    let Ok(response) = create.json(&json!({"url": target})).send().await else {
                        continue; // the server was killed: this create was never acknowledged
                    };
                    if response.status() == StatusCode::CREATED {
                        let Ok(link) = response.json::<Value>().await else {
                            continue; // a 201 whose body never arrived was not seen by a client
                        };
                        created.add();
                        acknowledged.push((link["code"].as_str().unwrap().to_owned(), target));
                    } else if !stop.load(Ordering::Relaxed) {
                        panic!("create answered {}", response.status());
                    }
                }
                acknowledged
            })
        })
        .collect();
    let mut links = HashMap::new();
    for task in tasks {
        links.extend(task.await.unwrap());
    }
    links
}

/// Reads links by code from `clients` tasks until `stop`, each a SQLite read.
fn read_until(
    app: &TestApp,
    clients: usize,
    stop: Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let api = Api::of(app);
    (0..clients)
        .map(|_| {
            let (api, stop) = (api.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let _ = api.request(Method::GET, "/links/nosuchcode").send().await;
                }
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_wal_stays_bounded_under_sustained_creates_and_is_gone_after_sigterm() {
    let dir = TempDir::new();
    // Without group commit every create is its own transaction on one of 16 pooled
    // connections, and those waiting for the write lock hold read snapshots: the setup
    // of the starved 2.58 GB WAL. (With group commit, SQLite's auto-checkpoint kept up
    // in this test even without the task.)
    let config = loaded_sqlite().with(|c| {
        c.storage.sqlite_wal_max_mb = WAL_MAX_MB;
        c.storage.sqlite_group_commit = false;
        c.storage.sqlite_synchronous = SynchronousConfig::Normal;
    });
    let app = TestApp::start(dir.path(), &config);
    let (stop, created) = (Arc::new(AtomicBool::new(false)), Arc::new(Tally::default()));
    let readers = read_until(&app, 8, stop.clone());
    // Samples of (when, WAL bytes, creates acknowledged so far), every 10 ms.
    let samples = Arc::new(Mutex::new(Vec::new()));
    let sampler = {
        let (dir, stop, created, samples) = (
            app.dir.clone(),
            stop.clone(),
            created.clone(),
            samples.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let sample = (Instant::now(), wal_bytes(&dir), created.get());
                samples.lock().unwrap().push(sample);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let load = tokio::spawn(create_until(
        app.base.clone(),
        32,
        stop.clone(),
        created.clone(),
    ));
    // Run by count, not by time: enough creates to write the bound's worth of WAL
    // eight times over (4 KiB of WAL at least per create), whatever the machine's speed.
    created
        .reach(8 * (WAL_MAX_MB << 20) / 4096, Duration::from_secs(300))
        .await;
    stop.store(true, Ordering::Relaxed);
    let links = load.await.unwrap();
    for reader in readers {
        reader.await.unwrap();
    }
    sampler.join().unwrap();

    // The task looks at the WAL every 100 ms and a checkpoint takes a moment more, so
    // the WAL may pass the bound by what the creates of ~2 looks add: the slack is the
    // most creates acknowledged in any 250 ms of the run, at 8 KiB of WAL each.
    let samples = std::mem::take(&mut *samples.lock().unwrap());
    let window = Duration::from_millis(250);
    let busiest = samples
        .iter()
        .map(|&(at, _, before)| {
            let after = samples
                .iter()
                .take_while(|(later, _, _)| *later <= at + window)
                .last()
                .map_or(before, |&(_, _, count)| count);
            after - before
        })
        .max()
        .unwrap_or(0);
    let bound = (WAL_MAX_MB << 20) + busiest * WAL_BYTES_PER_CREATE;
    let peak = samples
        .iter()
        .map(|&(_, bytes, _)| bytes)
        .max()
        .unwrap_or(0);
    let acknowledged = created.get();
    eprintln!(
        "sustained creates: {acknowledged}, peak WAL {peak} B, bound {bound} B \
         ({WAL_MAX_MB} MiB + {busiest} creates of slack), {} samples",
        samples.len()
    );
    assert!(acknowledged > 0);
    // Unbounded, the WAL grows by every create: the run wrote far more than the bound.
    assert!(
        acknowledged * 4096 > 2 * bound,
        "too few creates ({acknowledged}) for the bound ({bound} B) to be tested"
    );
    assert!(
        peak <= bound,
        "peak WAL {peak} B passed the bound {bound} B"
    );

    assert!(app.stop(), "graceful exit after SIGTERM");
    assert_eq!(wal_bytes(dir.path()), 0, "the WAL is empty or gone");
    let mut database = crate::support::open_sqlite(&dir.path().join("shortener.db")).await;
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM links")
        .fetch_one(&mut database)
        .await
        .unwrap();
    assert_eq!(u64::try_from(count).unwrap(), acknowledged);
    assert_eq!(links.len() as u64, acknowledged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sigkill_under_load_loses_no_acknowledged_link() {
    let dir = TempDir::new();
    let app = TestApp::start(dir.path(), &loaded_sqlite());
    let (stop, created) = (Arc::new(AtomicBool::new(false)), Arc::new(Tally::default()));
    let load = tokio::spawn(create_until(
        app.base.clone(),
        32,
        stop.clone(),
        created.clone(),
    ));
    // Kill once a good number of links were acknowledged, with creates in flight.
    created.reach(2000, Duration::from_secs(60)).await;
    app.kill();
    stop.store(true, Ordering::Relaxed);
    let links = load.await.unwrap();
    assert!(
        links.len() >= 2000,
        "only {} links acknowledged",
        links.len()
    );

    let app = TestApp::start(dir.path(), &loaded_sqlite());
    let api = Api::of(&app);
    for (code, url) in &links {
        let answer = api.get(code).await;
        assert_eq!(answer.status, StatusCode::OK, "acknowledged {code} lost");
        assert_eq!(answer.body["url"], url.as_str());
    }
    assert!(app.stop());
}
