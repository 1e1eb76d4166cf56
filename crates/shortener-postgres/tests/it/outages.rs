//! Failures: sessions killed mid-use, servers that refuse or never answer, passwords.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use shortener_core::{LinkRepository, RepositoryError, VisitOutcome};
use shortener_postgres::PostgresRepository;
use sqlx::{Connection, PgConnection};
use time::OffsetDateTime;
use tokio::net::TcpListener;
use tokio::time::timeout;

use crate::{database_url, new_link, random_code, random_hex, tally};

/// Far above the pool's 2s acquire timeout: only a hang, or a pool without that
/// timeout (sqlx waits 30s by default), gets near it.
const HANG: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn terminated_sessions_are_unavailable_or_succeed_and_the_pool_recovers() {
    // A name of its own, so that only this pool's sessions are terminated.
    let application = format!("shortener_kill_{}", random_hex(12));
    let mut url = database_url();
    let mut admin = PgConnection::connect(url.as_str()).await.unwrap();
    url.query_pairs_mut()
        .append_pair("application_name", &application);
    let repository = PostgresRepository::connect(url.as_str(), 6, true)
        .await
        .unwrap();
    let code = random_code();
    let mut link = new_link(&code);
    link.max_visits = Some(u64::from(u32::MAX));
    repository.insert(link).await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..12)
        .map(|worker| {
            let (repository, code, stop) = (repository.clone(), code.clone(), stop.clone());
            tokio::spawn(async move {
                let (mut calls, mut errors) = (0, Vec::new());
                while !stop.load(Ordering::Relaxed) {
                    let result = match worker % 3 {
                        0 => repository
                            .get(&shortener_core::LinkKey::on_default(code.clone()))
                            .await
                            .map(drop),
                        1 => repository.add_visits(&[tally(&code, 1)]).await,
                        _ => repository
                            .record_visit(
                                &shortener_core::LinkKey::on_default(code.clone()),
                                OffsetDateTime::now_utc(),
                            )
                            .await
                            .map(drop),
                    };
                    calls += 1;
                    errors.extend(result.err());
                }
                (calls, errors)
            })
        })
        .collect();

    let mut terminated = 0;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(30)).await;
        let count: i64 = sqlx::query_scalar(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) \
             FROM pg_stat_activity WHERE application_name = $1",
        )
        .bind(&application)
        .fetch_one(&mut admin)
        .await
        .unwrap();
        terminated += count;
    }
    stop.store(true, Ordering::Relaxed);
    assert!(
        terminated > 0,
        "the pool's sessions were found and terminated"
    );

    let (mut all_calls, mut all_errors) = (0, 0);
    for worker in workers {
        let (calls, errors) = timeout(HANG, worker)
            .await
            .expect("no call hangs on a terminated session")
            .unwrap();
        all_calls += calls;
        all_errors += errors.len();
        for error in errors {
            assert!(
                matches!(error, RepositoryError::Unavailable(_)),
                "a terminated session is Unavailable, got {error:?}"
            );
        }
    }
    eprintln!("{terminated} sessions terminated; {all_errors} of {all_calls} calls failed");
    // The pool replaces the dead sessions on its own.
    repository.health().await.expect("the pool recovers");
    assert!(matches!(
        repository
            .record_visit(
                &shortener_core::LinkKey::on_default(code.clone()),
                OffsetDateTime::now_utc()
            )
            .await,
        Ok(VisitOutcome::Counted(_))
    ));
}

#[tokio::test]
async fn a_refused_connection_is_unavailable_without_the_password() {
    // A port that was free a moment ago: nothing listens there now.
    let port = shortener_testkit::free_port().unwrap();
    let url = format!("postgres://app:hunter2-secret@127.0.0.1:{port}/links");
    let result = timeout(HANG, PostgresRepository::connect(&url, 2, true))
        .await
        .expect("a refused connection answers");
    match result {
        Err(RepositoryError::Unavailable(message)) => {
            assert!(
                message.contains(&format!("app@127.0.0.1:{port}/links")),
                "{message}"
            );
            assert!(!message.contains("hunter2"), "{message}");
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

/// A server that accepts connections and never answers: the acquire timeout, not TCP,
/// decides how long a caller waits.
#[tokio::test]
async fn a_silent_server_is_unavailable_after_the_acquire_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let url = format!("postgres://app@127.0.0.1:{port}/links");
    let result = timeout(HANG, PostgresRepository::connect(&url, 2, true))
        .await
        .expect("a silent server answers within the acquire timeout");
    assert!(
        matches!(result, Err(RepositoryError::Unavailable(_))),
        "{result:?}"
    );
    silent.abort();
}

#[tokio::test]
async fn debug_never_shows_the_password() {
    // A server that trusts local connections accepts any password; one that does not
    // was given its own in SHORTENER_TEST_PG_URL.
    let mut url = database_url();
    if url.password().is_none() {
        url.set_password(Some("hunter2-secret")).unwrap();
    }
    let password = url.password().unwrap().to_owned();
    let repository = PostgresRepository::connect(url.as_str(), 1, true)
        .await
        .unwrap();
    let shown = format!("{repository:?}");
    assert!(
        shown.contains(url.path().trim_start_matches('/')),
        "{shown}"
    );
    assert!(!shown.contains(&password), "{shown}");
}
