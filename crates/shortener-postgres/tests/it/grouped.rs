//! Concurrent creates leave in grouped statements (`insert.rs`), and each is answered as
//! if it had been inserted alone.

use shortener_core::{InsertError, Link, LinkKey, LinkRepository, ShortCode};
use shortener_postgres::PostgresRepository;
use shortener_testkit::concurrently;
use sqlx::{Connection, PgConnection};

use crate::{connect, database_url, new_link, random_code};

#[tokio::test]
async fn concurrent_creates_are_grouped_and_answered_one_by_one() {
    let repository = connect().await;
    // 100 codes asked for three times each, and 10 links with a visit limit the database
    // cannot hold (above i64::MAX), all at once.
    let codes: Vec<_> = (0..100).map(|_| random_code()).collect();
    let refused: Vec<_> = (0..10).map(|_| random_code()).collect();
    let results = concurrently(310, |index| {
        let (repository, codes, refused) = (&repository, &codes, &refused);
        async move {
            let mut link = new_link(
                codes
                    .get(index / 3)
                    .unwrap_or_else(|| &refused[index - 300]),
            );
            if index >= 300 {
                link.max_visits = Some(u64::MAX);
            }
            (link.code.clone(), repository.insert(link).await)
        }
    })
    .await;

    for code in &codes {
        assert_eq!(
            created_and_taken(&results, code),
            (1, 2),
            "{code}: {:?}",
            of(&results, code)
        );
        let stored = repository
            .get(&LinkKey::on_default(code.clone()))
            .await
            .unwrap();
        assert_eq!(
            stored.expect("acknowledged, so stored").url.as_str(),
            format!("https://example.com/{code}")
        );
    }
    for code in &refused {
        let (_, result) = results.iter().find(|(of, _)| of == code).unwrap();
        assert!(
            matches!(result, Err(InsertError::Storage(_))),
            "{code}: {result:?}"
        );
        assert!(
            repository
                .get(&LinkKey::on_default(code.clone()))
                .await
                .unwrap()
                .is_none()
        );
    }

    // Rows written by one statement share its transaction id: fewer transactions than
    // links means the creates were grouped.
    let mut connection = PgConnection::connect(database_url().as_str())
        .await
        .unwrap();
    let names: Vec<String> = codes.iter().map(ToString::to_string).collect();
    let (links, transactions): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(DISTINCT xmin::text) FROM links WHERE code = ANY($1)",
    )
    .bind(&names)
    .fetch_one(&mut connection)
    .await
    .unwrap();
    assert_eq!(links, 100);
    assert!(
        transactions < 50,
        "{links} links in {transactions} transactions"
    );
}

/// Two nodes creating the same aliases at once, in opposite orders: each alias is
/// created once and refused as taken once, and no batch fails (a deadlock between two
/// batches would be answered as unavailable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_grouping_the_same_codes_in_opposite_orders_never_deadlock() {
    let (first, second) = (connect().await, connect().await);
    for _ in 0..10 {
        let codes: Vec<_> = (0..200).map(|_| random_code()).collect();
        let (forward, backward) = tokio::join!(
            concurrently_on(&first, codes.iter()),
            concurrently_on(&second, codes.iter().rev()),
        );
        let results = [forward, backward].concat();
        for code in &codes {
            assert_eq!(
                created_and_taken(&results, code),
                (1, 1),
                "{code}: {:?}",
                of(&results, code)
            );
        }
    }
}

type Answer = (ShortCode, Result<Link, InsertError>);

/// The answers for `code`.
fn of<'a>(answers: &'a [Answer], code: &ShortCode) -> Vec<&'a Answer> {
    answers.iter().filter(|(of, _)| of == code).collect()
}

/// How many of the answers for `code` created it, and how many found it taken.
fn created_and_taken(answers: &[Answer], code: &ShortCode) -> (usize, usize) {
    let of_code = || of(answers, code).into_iter();
    let created = of_code().filter(|(_, result)| result.is_ok()).count();
    let taken = of_code()
        .filter(|(_, result)| matches!(result, Err(InsertError::CodeTaken)))
        .count();
    (created, taken)
}

/// Creates of `codes` on `repository`, all queued at once in that order.
async fn concurrently_on<'a>(
    repository: &PostgresRepository,
    codes: impl Iterator<Item = &'a ShortCode>,
) -> Vec<Answer> {
    let inserts =
        codes.map(|code| async move { (code.clone(), repository.insert(new_link(code)).await) });
    futures_util::future::join_all(inserts).await
}
