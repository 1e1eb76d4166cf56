//! What the cache adds: one inner read per miss, negative entries, and writes that keep
//! the cache right.

use std::sync::Arc;
use std::time::Duration;

use shortener_cache::{CacheConfig, CacheStats, CachedRepository};
use shortener_core::{
    Access, LinkKey, LinkPatch, LinkRepository, NewLink, Redirect, ShortCode, TargetUrl,
    VisitOutcome, VisitTally,
};
use time::OffsetDateTime;

mod counting;

use counting::CountingRepository;

fn cached(capacity: u64, negative_ttl: Duration) -> CachedRepository<CountingRepository> {
    let config = CacheConfig {
        capacity,
        ttl: Duration::from_secs(3600),
        negative_ttl,
    };
    CachedRepository::new(CountingRepository::default(), config)
}

fn new_link(code: &str, max_visits: Option<u64>) -> NewLink {
    NewLink {
        domain: shortener_core::Domain::default(),
        code: ShortCode::parse(code).unwrap(),
        url: TargetUrl::parse("https://example.com/").unwrap(),
        created_at: OffsetDateTime::UNIX_EPOCH,
        expires_at: None,
        max_visits,
        owner: None,
        tags: shortener_core::Tags::default(),
        options: shortener_core::LinkOptions::default(),
    }
}

fn code(raw: &str) -> ShortCode {
    ShortCode::parse(raw).unwrap()
}

fn key(raw: &str) -> LinkKey {
    LinkKey::on_default(code(raw))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_misses_make_one_inner_read() {
    let repository = Arc::new(cached(1_000, Duration::from_secs(3600)));
    // Written behind the cache's back, so that the first read is a miss.
    let link = repository
        .inner()
        .links
        .insert(new_link("hot", None))
        .await
        .unwrap();
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let repository = Arc::clone(&repository);
            tokio::spawn(async move { repository.get_redirect(&key("hot")).await })
        })
        .collect();
    for task in tasks {
        assert_eq!(
            task.await.unwrap().unwrap(),
            Some(Redirect::from(link.clone()))
        );
    }
    assert_eq!(repository.inner().gets(), 1);
    assert_eq!(
        repository.stats(),
        CacheStats {
            hits: 99,
            misses: 1
        }
    );
}

#[tokio::test]
async fn unknown_codes_are_remembered_until_inserted() {
    let repository = cached(1_000, Duration::from_secs(3600));
    assert_eq!(repository.get_redirect(&key("later")).await.unwrap(), None);
    assert_eq!(repository.get_redirect(&key("later")).await.unwrap(), None);
    assert_eq!(
        repository.inner().gets(),
        1,
        "the unknown code was read once"
    );
    let link = repository.insert(new_link("later", None)).await.unwrap();
    assert_eq!(
        repository.get_redirect(&key("later")).await.unwrap(),
        Some(Redirect::from(link))
    );
    assert_eq!(
        repository.inner().gets(),
        1,
        "insert stored the link in the cache"
    );
}

/// A write landing while a miss is read wins: the miss's older answer is not cached over
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_during_a_miss_is_not_overwritten_by_it() {
    let repository = Arc::new(cached(1_000, Duration::from_secs(3600)));
    let held = repository.inner().answers.write().await;
    let reading = {
        let repository = Arc::clone(&repository);
        tokio::spawn(async move { repository.get_redirect(&key("racing")).await })
    };
    // The miss has read the store (nothing there) and waits to answer.
    while repository.inner().gets() == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let link = repository.insert(new_link("racing", None)).await.unwrap();
    drop(held);
    assert_eq!(
        reading.await.unwrap().unwrap(),
        None,
        "it answers what it read"
    );
    assert_eq!(
        repository.get_redirect(&key("racing")).await.unwrap(),
        Some(Redirect::from(link)),
        "the insert's entry stayed"
    );
    assert_eq!(repository.inner().gets(), 1);
}

#[tokio::test]
async fn unknown_codes_expire_after_the_negative_ttl_and_found_ones_do_not() {
    let repository = cached(1_000, Duration::from_millis(100));
    let known = repository.insert(new_link("known", None)).await.unwrap();
    assert_eq!(
        repository.get_redirect(&key("elsewhere")).await.unwrap(),
        None
    );
    // Another node creates the link: this node still answers from its negative entry.
    let created = repository
        .inner()
        .links
        .insert(new_link("elsewhere", None))
        .await
        .unwrap();
    assert_eq!(
        repository.get_redirect(&key("elsewhere")).await.unwrap(),
        None
    );
    assert_eq!(repository.inner().gets(), 1);
    // Well past the negative ttl, and far from the positive one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        repository.get_redirect(&key("elsewhere")).await.unwrap(),
        Some(Redirect::from(created))
    );
    assert_eq!(
        repository.get_redirect(&key("known")).await.unwrap(),
        Some(Redirect::from(known))
    );
    assert_eq!(
        repository.inner().gets(),
        2,
        "only the negative entry expired"
    );
}

#[tokio::test]
async fn writes_keep_the_cache_right() {
    let repository = cached(1_000, Duration::from_secs(3600));
    repository
        .insert(new_link("limited", Some(2)))
        .await
        .unwrap();
    for expected in 1..=2 {
        match repository
            .record_visit(&key("limited"), OffsetDateTime::now_utc())
            .await
        {
            Ok(VisitOutcome::Counted(link)) => assert_eq!(link.visits, expected),
            other => panic!("{other:?}"),
        }
        let cached = repository.get_redirect(&key("limited")).await.unwrap();
        assert_eq!(visits(cached), Some(expected));
    }
    assert_eq!(
        repository.inner().gets(),
        0,
        "counted visits updated the cache"
    );
    let outcome = repository
        .record_visit(&key("limited"), OffsetDateTime::now_utc())
        .await;
    assert_eq!(outcome, Ok(VisitOutcome::Exhausted));
    let cached = repository.get_redirect(&key("limited")).await.unwrap();
    assert_eq!(visits(cached), Some(2));
    assert_eq!(
        repository.inner().gets(),
        1,
        "a refused visit dropped the entry"
    );
    // Counts flushed for a link without a limit: its total grows in the store only.
    repository.insert(new_link("plain", None)).await.unwrap();
    repository
        .add_visits(&[VisitTally {
            key: shortener_core::LinkKey::on_default(code("plain")),
            day: OffsetDateTime::now_utc().date(),
            visits: 5,
            bots: 0,
        }])
        .await
        .unwrap();
    let cached = repository.get_redirect(&key("plain")).await.unwrap();
    assert_eq!(
        (cached.is_some(), repository.inner().gets()),
        (true, 1),
        "a visit count evicts nothing: the redirect is served from the cache"
    );
    let fresh = repository.get_fresh(&key("plain")).await.unwrap().unwrap();
    assert_eq!(fresh.visits, 5, "the store's count, past the cache");
    assert_eq!(repository.inner().gets(), 2);
    assert!(
        repository
            .get_redirect(&key("plain"))
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        repository.inner().gets(),
        2,
        "the cached redirect is still served"
    );
    let patch = LinkPatch {
        url: Some(TargetUrl::parse("https://example.com/moved").unwrap()),
        ..LinkPatch::default()
    };
    repository
        .update(&key("plain"), Access::All, &patch)
        .await
        .unwrap();
    assert_eq!(
        repository
            .get_redirect(&key("plain"))
            .await
            .unwrap()
            .unwrap()
            .url(),
        "https://example.com/moved",
        "an edit drops the cached redirect"
    );
    assert!(
        repository
            .delete(&key("limited"), Access::All)
            .await
            .unwrap()
    );
    assert_eq!(
        repository.get_redirect(&key("limited")).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn capacity_zero_passes_every_read_through() {
    let repository = cached(0, Duration::from_secs(3600));
    repository.insert(new_link("plain", None)).await.unwrap();
    for _ in 0..3 {
        assert!(
            repository
                .get_redirect(&key("plain"))
                .await
                .unwrap()
                .is_some()
        );
    }
    assert_eq!(repository.inner().gets(), 3);
    assert_eq!(repository.stats(), CacheStats { hits: 0, misses: 3 });
}

/// The visits of a redirect kept whole (a link with a visit limit).
fn visits(redirect: Option<Redirect>) -> Option<u64> {
    Some(redirect?.full()?.visits)
}
