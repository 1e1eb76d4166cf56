//! Unit tests that need the crate's internals: the pragmas of live connections, and a
//! database made full by `max_page_count`.

use shortener_core::{InsertError, LinkRepository, NewLink, ShortCode, TargetUrl};
use time::OffsetDateTime;

use super::*;

async fn pragma(repository: &SqliteRepository, name: &str) -> String {
    let mut connection = repository.pool.acquire().await.unwrap();
    let sql = match name {
        "journal_mode" => "PRAGMA journal_mode",
        "synchronous" => "PRAGMA synchronous",
        "busy_timeout" => "PRAGMA busy_timeout",
        "foreign_keys" => "PRAGMA foreign_keys",
        "journal_size_limit" => "PRAGMA journal_size_limit",
        _ => unreachable!("no such pragma in these tests"),
    };
    let row: sqlx::sqlite::SqliteRow = sqlx::query(sql).fetch_one(&mut *connection).await.unwrap();
    use sqlx::Row as _;
    row.try_get::<String, _>(0)
        .or_else(|_| row.try_get::<i64, _>(0).map(|v| v.to_string()))
        .unwrap()
}

fn link(code: &str) -> NewLink {
    NewLink {
        domain: shortener_core::Domain::default(),
        code: ShortCode::parse(code).unwrap(),
        url: TargetUrl::parse(&format!("https://example.com/{code}")).unwrap(),
        created_at: OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
        expires_at: None,
        max_visits: None,
        owner: None,
        tags: shortener_core::Tags::default(),
        options: shortener_core::LinkOptions::default(),
    }
}

#[tokio::test]
async fn file_connections_use_wal_the_chosen_sync_busy_timeout_and_foreign_keys() {
    let dir = shortener_testkit::TempDir::new();
    for (synchronous, expected) in [(Synchronous::Full, "2"), (Synchronous::Normal, "1")] {
        let url = format!("sqlite://{}", dir.path().join("pragmas.db").display());
        let settings = SqliteSettings {
            synchronous,
            wal_max_bytes: 8 << 20,
            ..SqliteSettings::default()
        };
        let repository = SqliteRepository::connect_with(&url, settings)
            .await
            .unwrap();
        assert_eq!(pragma(&repository, "journal_mode").await, "wal");
        assert_eq!(
            pragma(&repository, "synchronous").await,
            expected,
            "{synchronous:?}"
        );
        assert_eq!(pragma(&repository, "busy_timeout").await, "5000");
        assert_eq!(pragma(&repository, "foreign_keys").await, "1");
        assert_eq!(
            pragma(&repository, "journal_size_limit").await,
            (2 << 20).to_string()
        );
        repository.close().await.unwrap();
    }
    assert_eq!(SqliteSettings::default().synchronous, Synchronous::Full);
}

#[tokio::test]
async fn a_full_database_refuses_inserts_as_full_and_keeps_what_it_has() {
    for group_commit in [true, false] {
        let dir = shortener_testkit::TempDir::new();
        let url = format!("sqlite://{}", dir.path().join("full.db").display());
        // One connection: the one that hit the full disk is the one used next.
        let settings = SqliteSettings {
            group_commit,
            max_connections: 1,
            ..SqliteSettings::default()
        };
        // max_page_count is per connection, so it is set on every one: a database of at
        // most 16 pages of 4 KiB, of which the schema takes about ten.
        let repository = SqliteRepository::open(&url, settings, |options| {
            options.pragma("max_page_count", "16")
        })
        .await
        .unwrap();
        let mut stored = Vec::new();
        let mut full = None;
        for index in 0..10_000 {
            let code = format!("c{index}");
            match repository.insert(link(&code)).await {
                Ok(_) => stored.push(code),
                Err(error) => {
                    full = Some(error);
                    break;
                }
            }
        }
        assert!(
            matches!(full, Some(InsertError::Storage(RepositoryError::Full(_)))),
            "group_commit {group_commit}: {full:?} after {} links",
            stored.len()
        );
        assert!(!stored.is_empty());
        for code in &stored {
            let found = repository
                .get(&shortener_core::LinkKey::on_default(
                    ShortCode::parse(code).unwrap(),
                ))
                .await
                .unwrap();
            assert!(found.is_some(), "{code} survives a full database");
        }
        let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_one(&repository.pool)
            .await
            .unwrap();
        assert_eq!(integrity, "ok");
        // Once space is freed, writes work again on the same connection.
        for code in stored.iter().step_by(2) {
            repository
                .delete(
                    &shortener_core::LinkKey::on_default(ShortCode::parse(code).unwrap()),
                    shortener_core::Access::All,
                )
                .await
                .unwrap();
        }
        repository.insert(link("after")).await.unwrap();
        repository
            .add_visits(&[shortener_core::VisitTally {
                key: shortener_core::LinkKey::on_default(ShortCode::parse("after").unwrap()),
                day: time::OffsetDateTime::now_utc().date(),
                visits: 2,
                bots: 0,
            }])
            .await
            .unwrap();
        repository.close().await.unwrap();
    }
}

#[tokio::test]
async fn a_batch_answers_each_insert_and_a_taken_code_only_fails_its_own() {
    let dir = shortener_testkit::TempDir::new();
    let url = format!("sqlite://{}", dir.path().join("batch.db").display());
    let repository = SqliteRepository::connect_with(&url, SqliteSettings::default())
        .await
        .unwrap();
    repository.insert(link("taken")).await.unwrap();
    let inserts = (0..200).map(|index| {
        let repository = repository.clone();
        let code = if index % 50 == 0 {
            "taken".to_owned()
        } else {
            format!("n{index}")
        };
        tokio::spawn(async move { (code.clone(), repository.insert(link(&code)).await) })
    });
    let mut created = 0;
    for insert in inserts.collect::<Vec<_>>() {
        let (code, result) = insert.await.unwrap();
        match result {
            Ok(stored) => {
                assert_eq!(stored.code.as_str(), code);
                created += 1;
            }
            Err(InsertError::CodeTaken) => assert_eq!(code, "taken"),
            Err(error) => panic!("{code}: {error}"),
        }
    }
    assert_eq!(created, 196);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM links")
        .fetch_one(&repository.pool)
        .await
        .unwrap();
    assert_eq!(count, 197);
    repository.close().await.unwrap();
}

#[tokio::test]
async fn close_commits_accepted_inserts_and_leaves_no_wal() {
    let dir = shortener_testkit::TempDir::new();
    let path = dir.path().join("closed.db");
    let url = format!("sqlite://{}", path.display());
    let repository = SqliteRepository::connect_with(&url, SqliteSettings::default())
        .await
        .unwrap();
    for index in 0..500 {
        repository.insert(link(&format!("k{index}"))).await.unwrap();
    }
    assert!(
        repository.wal_stats().wal_bytes > 0,
        "the inserts went to the WAL"
    );
    repository.close().await.unwrap();
    let wal = dir.path().join("closed.db-wal");
    assert_eq!(
        std::fs::metadata(&wal).map_or(0, |m| m.len()),
        0,
        "empty or gone"
    );
    assert!(matches!(
        repository.insert(link("late")).await,
        Err(InsertError::Storage(RepositoryError::Unavailable(_)))
    ));
    let reopened = SqliteRepository::connect(&url, 2, false).await.unwrap();
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM links")
        .fetch_one(&reopened.pool)
        .await
        .unwrap();
    assert_eq!(count, 500);
    reopened.close().await.unwrap();
}

#[tokio::test]
async fn a_wal_starved_by_a_reader_is_truncated_once_the_reader_lets_go() {
    let dir = shortener_testkit::TempDir::new();
    let url = format!("sqlite://{}", dir.path().join("bounded.db").display());
    let settings = SqliteSettings {
        group_commit: false,
        wal_max_bytes: 256 << 10,
        ..SqliteSettings::default()
    };
    let repository = SqliteRepository::connect_with(&url, settings)
        .await
        .unwrap();
    // A reader that keeps its snapshot: no checkpoint can rewind the WAL past it.
    let mut reader = repository.pool.begin().await.unwrap();
    let _: i64 = sqlx::query_scalar("SELECT count(*) FROM links")
        .fetch_one(&mut *reader)
        .await
        .unwrap();
    for index in 0..2000 {
        repository.insert(link(&format!("w{index}"))).await.unwrap();
    }
    let starved = repository.wal_stats();
    assert!(starved.wal_bytes > settings.wal_max_bytes, "{starved:?}");
    reader.commit().await.unwrap();
    // Now the task's next TRUNCATE can finish; give it many ticks on a loaded machine.
    let mut stats = repository.wal_stats();
    for _ in 0..100 {
        if stats.wal_bytes <= settings.wal_max_bytes {
            break;
        }
        tokio::time::sleep(wal::TICK).await;
        stats = repository.wal_stats();
    }
    assert!(stats.wal_bytes <= settings.wal_max_bytes, "{stats:?}");
    assert!(
        stats.truncate_checkpoints > 0 && stats.passive_checkpoints > 0,
        "{stats:?}"
    );
    repository.close().await.unwrap();
}

#[test]
fn the_default_pool_is_four_connections_per_core_from_4_to_16() {
    let by_cores = [0, 1, 2, 3, 4, 5, 64, usize::MAX].map(max_connections_for);
    assert_eq!(by_cores, [4, 4, 8, 12, 16, 16, 16, 16]);
    assert_eq!(
        SqliteSettings::default().max_connections,
        default_max_connections()
    );
}
