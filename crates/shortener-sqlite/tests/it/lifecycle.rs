//! What is specific to SQLite: files, migrations, several pools on one file, mapping.

use std::str::FromStr;

use shortener_conformance::migrations::{migrate, migrations_before, status_of};
use shortener_core::{
    InsertError, LinkKey, LinkRepository, RepositoryError, ShortCode, VisitOutcome,
};
use shortener_sqlite::SqliteRepository;
use sqlx::sqlite::SqliteConnectOptions;
use time::OffsetDateTime;

use crate::{TempDatabase, new_link, tally};

#[tokio::test]
async fn a_restart_keeps_links_and_visits() {
    let database = TempDatabase::default();
    let repository = database.connect(true).await;
    let mut link = new_link("kept");
    link.max_visits = Some(3);
    let code = link.key();
    repository.insert(link).await.unwrap();
    let now = OffsetDateTime::now_utc();
    assert!(matches!(
        repository.record_visit(&code, now).await.unwrap(),
        VisitOutcome::Counted(_)
    ));
    repository.close().await.unwrap();
    assert!(matches!(
        repository.get(&code).await,
        Err(RepositoryError::Unavailable(_))
    ));

    // Without `migrate`: the schema is there, so nothing is pending.
    let reopened = database.connect(false).await;
    let found = reopened
        .get(&code)
        .await
        .unwrap()
        .expect("the link survived");
    assert_eq!(found.visits, 1);
    assert_eq!(found.max_visits, Some(3));
}

#[tokio::test]
async fn migrations_are_idempotent_and_listed() {
    let database = TempDatabase::default();
    let first = database.connect(true).await;
    let second = database.connect(true).await;
    assert_eq!(migrate(&second).await, Vec::<i64>::new());
    let expected = vec![
        (1, "create links".to_owned(), true),
        (2, "link management".to_owned(), true),
        (3, "link options".to_owned(), true),
        (4, "link tags".to_owned(), true),
        (5, "link domains".to_owned(), true),
        (6, "link passwords".to_owned(), true),
        (7, "visit dimensions".to_owned(), true),
        (8, "link rules".to_owned(), true),
        (9, "rule dimensions".to_owned(), true),
        (10, "api keys".to_owned(), true),
        (11, "links by url".to_owned(), true),
    ];
    assert_eq!(status_of(&first).await, expected);
    assert_eq!(status_of(&second).await, expected);
}

#[tokio::test]
async fn pending_migrations_are_refused_then_applied_on_demand() {
    let database = TempDatabase::default();
    let refused = SqliteRepository::connect(&database.url, 2, false)
        .await
        .unwrap_err();
    match refused {
        RepositoryError::Unexpected(message) => {
            assert!(
                message.contains(
                    "pending migrations: 1 (create links), 2 (link management), 3 (link options), 4 (link tags), 5 (link domains), 6 (link passwords), 7 (visit dimensions), 8 (link rules), 9 (rule dimensions), 10 (api keys), 11 (links by url)"
                ),
                "{message}"
            );
        }
        other => panic!("expected Unexpected, got {other:?}"),
    }

    let repository = SqliteRepository::connect_unchecked(&database.url, 2)
        .await
        .unwrap();
    assert_eq!(
        status_of(&repository).await,
        vec![
            (1, "create links".to_owned(), false),
            (2, "link management".to_owned(), false),
            (3, "link options".to_owned(), false),
            (4, "link tags".to_owned(), false),
            (5, "link domains".to_owned(), false),
            (6, "link passwords".to_owned(), false),
            (7, "visit dimensions".to_owned(), false),
            (8, "link rules".to_owned(), false),
            (9, "rule dimensions".to_owned(), false),
            (10, "api keys".to_owned(), false),
            (11, "links by url".to_owned(), false),
        ]
    );
    assert_eq!(
        migrate(&repository).await,
        vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    );
    assert_eq!(migrate(&repository).await, Vec::<i64>::new());
    assert_eq!(
        status_of(&repository).await,
        vec![
            (1, "create links".to_owned(), true),
            (2, "link management".to_owned(), true),
            (3, "link options".to_owned(), true),
            (4, "link tags".to_owned(), true),
            (5, "link domains".to_owned(), true),
            (6, "link passwords".to_owned(), true),
            (7, "visit dimensions".to_owned(), true),
            (8, "link rules".to_owned(), true),
            (9, "rule dimensions".to_owned(), true),
            (10, "api keys".to_owned(), true),
            (11, "links by url".to_owned(), true),
        ]
    );
    repository.insert(new_link("migrated")).await.unwrap();
}

/// Two pools on one file, many writers each: WAL and the busy timeout make them wait
/// for each other, never fail with "database is locked".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_on_one_file_wait_instead_of_failing() {
    const LINKS: usize = 40;
    let database = TempDatabase::default();
    let pools = [database.connect(true).await, database.connect(true).await];
    let codes: Vec<ShortCode> = (0..LINKS)
        .map(|i| ShortCode::parse(&format!("w{i}")).unwrap())
        .collect();
    let mut tasks = Vec::new();
    for (index, code) in codes.iter().enumerate() {
        let repository = pools[index % 2].clone();
        let code = code.clone();
        tasks.push(tokio::spawn(async move {
            repository.insert(new_link(code.as_str())).await?;
            // Batches touching every link so far, from both pools at once.
            repository
                .add_visits(&[tally(&LinkKey::on_default(code.clone()), 2)])
                .await?;
            let batch: Vec<_> = (0..=index)
                .map(|i| {
                    tally(
                        &LinkKey::on_default(ShortCode::parse(&format!("w{i}")).unwrap()),
                        1,
                    )
                })
                .collect();
            repository.add_visits(&batch).await?;
            Ok::<_, InsertError>(())
        }));
    }
    for task in tasks {
        task.await.unwrap().expect("every write succeeds");
    }
    // Link i got 2 from its own task, 1 from its own batch, and 1 from each later batch
    // that ran after its insert.
    for (index, code) in codes.iter().enumerate() {
        let visits = pools[0]
            .get(&LinkKey::on_default(code.clone()))
            .await
            .unwrap()
            .unwrap()
            .visits;
        let most = 2 + (LINKS - index) as u64;
        assert!((3..=most).contains(&visits), "{code}: {visits}");
    }
}

#[tokio::test]
async fn repeated_codes_in_one_batch_all_count() {
    let repository = SqliteRepository::connect("sqlite::memory:", 1, true)
        .await
        .unwrap();
    let code = repository.insert(new_link("twice")).await.unwrap().key();
    repository
        .add_visits(&[tally(&code, 2), tally(&code, 3)])
        .await
        .unwrap();
    assert_eq!(repository.get(&code).await.unwrap().unwrap().visits, 5);
}

#[tokio::test]
async fn times_keep_microseconds_and_drop_the_rest() {
    let repository = SqliteRepository::connect("sqlite::memory:", 1, true)
        .await
        .unwrap();
    let cases = [
        (
            "recent",
            1_700_000_000_123_456_789,
            1_700_000_000_123_456_000,
        ),
        ("before-1970", -1_234_567_891, -1_234_568_000),
        (
            "far",
            253_402_300_799_999_999_999,
            253_402_300_799_999_999_000,
        ),
    ];
    for (code, nanos, stored_nanos) in cases {
        let mut link = new_link(code);
        link.created_at = OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap();
        link.expires_at = Some(link.created_at);
        let inserted = repository.insert(link).await.unwrap();
        let found = repository.get(&inserted.key()).await.unwrap().unwrap();
        assert_eq!(found, inserted, "{code}");
        assert_eq!(
            found.created_at.unix_timestamp_nanos(),
            stored_nanos,
            "{code}"
        );
    }
}

#[tokio::test]
async fn counts_beyond_i64_and_corrupt_rows_are_unexpected() {
    let database = TempDatabase::default();
    let repository = database.connect(true).await;
    let mut huge = new_link("huge");
    huge.max_visits = Some(u64::MAX);
    assert!(matches!(
        repository.insert(huge).await,
        Err(InsertError::Storage(RepositoryError::Unexpected(_)))
    ));

    let options = SqliteConnectOptions::from_str(&database.url).unwrap();
    let raw = sqlx::SqlitePool::connect_with(options).await.unwrap();
    sqlx::query(
        "INSERT INTO links (code, url, created_at) \
         VALUES ('corrupt', 'javascript:alert(1)', 0)",
    )
    .execute(&raw)
    .await
    .unwrap();
    let code = LinkKey::on_default(ShortCode::parse("corrupt").unwrap());
    assert!(matches!(
        repository.get(&code).await,
        Err(RepositoryError::Unexpected(message)) if message.contains("invalid url")
    ));
}

#[tokio::test]
async fn a_closed_pool_is_unavailable() {
    let repository = SqliteRepository::connect("sqlite::memory:", 1, true)
        .await
        .unwrap();
    repository.close().await.unwrap();
    for result in [
        repository.health().await,
        repository
            .add_visits(&[tally(
                &LinkKey::on_default(ShortCode::parse("x").unwrap()),
                1,
            )])
            .await,
    ] {
        assert!(
            matches!(result, Err(RepositoryError::Unavailable(_))),
            "{result:?}"
        );
    }
}

/// A database that an earlier version made (the migrations before domains) keeps its
/// links and their days, all on the default domain, once the domain migration runs.
#[tokio::test]
async fn links_made_before_domains_move_to_the_default_domain() {
    let database = TempDatabase::default();
    let migrations = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let earlier = migrations_before(&migrations, 5);
    let options = SqliteConnectOptions::from_str(&database.url)
        .unwrap()
        .create_if_missing(true);
    let raw = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let migrator = sqlx::migrate::Migrator::new(earlier.path()).await.unwrap();
    migrator.run(&raw).await.unwrap();
    for statement in [
        "INSERT INTO links (code, url, created_at, visits, owner, tags, crawlable) \
         VALUES ('old', 'https://example.com/old', 0, 3, 'team', '[\"q4\"]', 1)",
        "INSERT INTO link_days (code, day, visits, bots) VALUES ('old', '2026-12-01', 3, 1)",
    ] {
        sqlx::query(statement).execute(&raw).await.unwrap();
    }
    raw.close().await;

    let repository = database.connect(true).await;
    let key = LinkKey::on_default(ShortCode::parse("old").unwrap());
    let link = repository
        .get(&key)
        .await
        .unwrap()
        .expect("the link is kept");
    assert!(link.domain.is_default());
    assert_eq!(
        (link.visits, link.url.as_str()),
        (3, "https://example.com/old")
    );
    assert_eq!(link.tags.names().collect::<Vec<_>>(), ["q4"]);
    let day = time::macros::date!(2026 - 12 - 01);
    let days = repository.visits_by_day(&key, day, day).await.unwrap();
    assert_eq!((days.len(), days[0].visits, days[0].bots), (1, 3, 1));
    let crawlable = repository.crawlable(&key.domain, 10).await.unwrap();
    assert_eq!(crawlable, [key.code]);
}
