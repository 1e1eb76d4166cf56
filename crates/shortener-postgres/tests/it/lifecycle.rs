//! What is specific to PostgreSQL: reconnecting, migrations, batches, times, bad rows.

use shortener_conformance::migrations::{migrate, migrations_before, status_of};
use shortener_core::{
    InsertError, LinkKey, LinkRepository, RepositoryError, ShortCode, VisitOutcome,
};
use shortener_postgres::PostgresRepository;
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use time::OffsetDateTime;

use crate::{connect, database_url, new_link, random_code, random_hex, tally};

#[tokio::test]
async fn a_restart_keeps_links_and_visits() {
    let repository = connect().await;
    let code = random_code();
    let mut link = new_link(&code);
    link.max_visits = Some(3);
    repository.insert(link).await.unwrap();
    let now = OffsetDateTime::now_utc();
    assert!(matches!(
        repository
            .record_visit(&shortener_core::LinkKey::on_default(code.clone()), now)
            .await
            .unwrap(),
        VisitOutcome::Counted(_)
    ));
    repository.close().await;
    assert!(matches!(
        repository
            .get(&shortener_core::LinkKey::on_default(code.clone()))
            .await,
        Err(RepositoryError::Unavailable(_))
    ));

    // Without `migrate`: the schema is there, so nothing is pending.
    let url = database_url();
    let reconnected = PostgresRepository::connect(url.as_str(), 2, false)
        .await
        .unwrap();
    let found = reconnected
        .get(&shortener_core::LinkKey::on_default(code.clone()))
        .await
        .unwrap()
        .expect("the link survived");
    assert_eq!((found.visits, found.max_visits), (1, Some(3)));
}

#[tokio::test]
async fn migrations_are_idempotent_and_listed() {
    let first = connect().await;
    let second = connect().await;
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

/// A fresh schema (first on the search path) stands for a fresh database.
#[tokio::test]
async fn pending_migrations_are_refused_then_applied_on_demand() {
    let (url, mut admin, schema) = fresh_schema("fresh").await;

    match PostgresRepository::connect(url.as_str(), 2, false).await {
        Err(RepositoryError::Unexpected(message)) => {
            assert!(
                message.contains(
                    "pending migrations: 1 (create links), 2 (link management), 3 (link options), 4 (link tags), 5 (link domains), 6 (link passwords), 7 (visit dimensions), 8 (link rules), 9 (rule dimensions), 10 (api keys), 11 (links by url)"
                ),
                "{message}"
            );
        }
        other => panic!("expected Unexpected, got {other:?}"),
    }
    let repository = PostgresRepository::connect_unchecked(url.as_str(), 2)
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
    let code = random_code();
    repository.insert(new_link(&code)).await.unwrap();
    let in_schema: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM {schema}.links"
    )))
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(in_schema, 1, "the link went to the fresh schema");
    repository.close().await;
    admin
        .execute(AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .await
        .unwrap();
}

/// `UPDATE .. FROM unnest(..)` updates a row once however often it joins: the adapter
/// must sum repeated codes itself.
#[tokio::test]
async fn repeated_codes_in_one_batch_all_count() {
    let repository = connect().await;
    let code = random_code();
    repository.insert(new_link(&code)).await.unwrap();
    repository
        .add_visits(&[tally(&code, 2), tally(&random_code(), 7), tally(&code, 3)])
        .await
        .unwrap();
    assert_eq!(
        repository
            .get(&shortener_core::LinkKey::on_default(code.clone()))
            .await
            .unwrap()
            .unwrap()
            .visits,
        5
    );
}

#[tokio::test]
async fn times_keep_microseconds_and_drop_the_rest() {
    let repository = connect().await;
    let cases = [
        (1_700_000_000_123_456_789, 1_700_000_000_123_456_000),
        // Before 2000 (PostgreSQL's epoch) and before 1970: still rounded down.
        (-1_234_567_891, -1_234_568_000),
        (253_402_300_799_999_999_999, 253_402_300_799_999_999_000),
    ];
    for (nanos, stored_nanos) in cases {
        let mut link = new_link(&random_code());
        link.created_at = OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap();
        link.expires_at = Some(link.created_at);
        let inserted = repository.insert(link).await.unwrap();
        let found = repository.get(&inserted.key()).await.unwrap().unwrap();
        assert_eq!(found, inserted, "{nanos}");
        assert_eq!(
            found.created_at.unix_timestamp_nanos(),
            stored_nanos,
            "{nanos}"
        );
    }
}

#[tokio::test]
async fn counts_beyond_i64_and_corrupt_rows_are_unexpected() {
    let repository = connect().await;
    let mut huge = new_link(&random_code());
    huge.max_visits = Some(u64::MAX);
    assert!(matches!(
        repository.insert(huge).await,
        Err(InsertError::Storage(RepositoryError::Unexpected(_)))
    ));

    let code = random_code();
    let mut raw = PgConnection::connect(database_url().as_str())
        .await
        .unwrap();
    sqlx::query("INSERT INTO links (code, url, created_at) VALUES ($1, 'javascript:x', now())")
        .bind(code.as_str())
        .execute(&mut raw)
        .await
        .unwrap();
    assert!(matches!(
        repository.get(&shortener_core::LinkKey::on_default(code.clone())).await,
        Err(RepositoryError::Unexpected(message)) if message.contains("invalid url")
    ));
}

/// Flushes from several nodes at once, on overlapping links: none deadlocks (40P01), and
/// every count lands. Each flush holds the codes in its own order; the repository locks
/// them in one order whatever the caller's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_flushes_on_the_same_links_never_deadlock() {
    let repository = std::sync::Arc::new(connect().await);
    let codes: Vec<_> = (0..40).map(|_| random_code()).collect();
    for code in &codes {
        repository.insert(new_link(code)).await.unwrap();
    }
    const FLUSHERS: usize = 8;
    const ROUNDS: usize = 25;
    let tasks: Vec<_> = (0..FLUSHERS)
        .map(|flusher| {
            let repository = repository.clone();
            let mut batch: Vec<_> = codes.iter().map(|code| tally(code, 1)).collect();
            // A different rotation (and every other one reversed) per flusher.
            batch.rotate_left(flusher * 5);
            if flusher % 2 == 1 {
                batch.reverse();
            }
            tokio::spawn(async move {
                for _ in 0..ROUNDS {
                    repository.add_visits(&batch).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    for code in &codes {
        let link = repository
            .get(&shortener_core::LinkKey::on_default(code.clone()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(link.visits, (FLUSHERS * ROUNDS) as u64, "{code}");
    }
}

/// A database that an earlier version made (the migrations before domains) keeps its
/// links and their days, all on the default domain, once the domain migration runs.
#[tokio::test]
async fn links_made_before_domains_move_to_the_default_domain() {
    let (url, mut admin, schema) = fresh_schema("earlier").await;
    let migrations = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let earlier = migrations_before(&migrations, 5);
    let mut raw = PgConnection::connect(url.as_str()).await.unwrap();
    let migrator = sqlx::migrate::Migrator::new(earlier.path()).await.unwrap();
    migrator.run(&mut raw).await.unwrap();
    raw.execute(
        "INSERT INTO links (code, url, created_at, visits, tags, crawlable) \
         VALUES ('old', 'https://example.com/old', now(), 3, '{q4}', true); \
         INSERT INTO link_days (code, day, visits, bots) VALUES ('old', '2026-12-01', 3, 1)",
    )
    .await
    .unwrap();
    raw.close().await.unwrap();

    let repository = PostgresRepository::connect(url.as_str(), 2, true)
        .await
        .unwrap();
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
    repository.close().await;
    admin
        .execute(AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .await
        .unwrap();
}

/// A new, empty schema: the URL whose connections use it, an admin connection outside
/// it (to look into it and drop it), and its name.
async fn fresh_schema(prefix: &str) -> (url::Url, PgConnection, String) {
    let mut url = database_url();
    let schema = format!("{prefix}_{}", random_hex(12));
    let mut admin = PgConnection::connect(url.as_str()).await.unwrap();
    admin
        .execute(AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .await
        .unwrap();
    url.query_pairs_mut()
        .append_pair("options[search_path]", &schema);
    (url, admin, schema)
}
