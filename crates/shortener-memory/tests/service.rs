//! The `Shortener` service of `shortener-core`, over the memory repository.

use std::collections::VecDeque;
use std::sync::Mutex;

use shortener_core::{
    Alias, AlphabetCodeGenerator, CodeGenerator, CreateError, CreateLink, LinkRepository,
    ResolveError, ShortCode, Shortener, TargetUrl,
};
use shortener_memory::MemoryRepository;
use time::{Duration, OffsetDateTime};

/// Hands out a fixed list of codes, then repeats the last one.
#[derive(Debug)]
struct Scripted(Mutex<VecDeque<ShortCode>>);

impl Scripted {
    fn new(codes: &[&str]) -> Self {
        Self(Mutex::new(codes.iter().map(|c| code(c)).collect()))
    }
}

impl CodeGenerator for Scripted {
    fn generate(&self) -> ShortCode {
        let mut codes = self.0.lock().unwrap();
        if codes.len() > 1 {
            codes.pop_front().unwrap()
        } else {
            codes[0].clone()
        }
    }
}

fn code(raw: &str) -> ShortCode {
    ShortCode::parse(raw).unwrap()
}

fn request(alias: Option<&str>) -> CreateLink {
    CreateLink {
        url: TargetUrl::parse("https://example.com/target").unwrap(),
        alias: alias.map(|a| Alias::parse(a).unwrap()),
        expires_at: None,
        max_visits: None,
    }
}

fn service() -> Shortener<MemoryRepository, AlphabetCodeGenerator> {
    let generator = AlphabetCodeGenerator::new("abcdefghijklmnopqrstuvwxyz", 7).unwrap();
    Shortener::new(MemoryRepository::default(), generator)
}

#[tokio::test]
async fn create_with_an_alias_and_a_taken_alias() {
    let shortener = service();
    let now = OffsetDateTime::now_utc();
    let link = shortener
        .create(request(Some("my-link")), now)
        .await
        .unwrap();
    assert_eq!(link.code, code("my-link"));
    assert_eq!(link.visits, 0);
    assert_eq!(
        link.created_at.nanosecond() % 1_000,
        0,
        "whole microseconds"
    );
    let taken = shortener.create(request(Some("my-link")), now).await;
    assert_eq!(taken, Err(CreateError::AliasTaken));
    let resolved = shortener.resolve(&code("my-link"), now).await.unwrap();
    assert_eq!(resolved.url.as_str(), "https://example.com/target");
}

#[tokio::test]
async fn a_colliding_code_is_retried_never_overwritten() {
    let shortener = Shortener::new(
        MemoryRepository::default(),
        Scripted::new(&["same", "same", "other"]),
    );
    let now = OffsetDateTime::now_utc();
    let first = shortener.create(request(None), now).await.unwrap();
    assert_eq!(first.code, code("same"));
    let mut second_request = request(None);
    second_request.url = TargetUrl::parse("https://example.org/second").unwrap();
    let second = shortener.create(second_request, now).await.unwrap();
    assert_eq!(second.code, code("other"));
    let kept = shortener.link(&code("same")).await.unwrap().unwrap();
    assert_eq!(kept.url.as_str(), "https://example.com/target");
    // Only "other" is left to draw, and it is taken: the code space is full.
    assert_eq!(
        shortener.create(request(None), now).await,
        Err(CreateError::NoFreeCode)
    );
}

#[tokio::test]
async fn bad_requests_are_refused() {
    let shortener = service();
    let now = OffsetDateTime::now_utc();
    let mut past = request(None);
    past.expires_at = Some(now);
    assert_eq!(
        shortener.create(past, now).await,
        Err(CreateError::ExpiryNotInFuture)
    );
    let mut zero = request(None);
    zero.max_visits = Some(0);
    assert_eq!(
        shortener.create(zero, now).await,
        Err(CreateError::ZeroMaxVisits)
    );
    assert!(shortener.repository().is_empty());
}

#[tokio::test]
async fn resolve_refuses_unknown_expired_and_exhausted_links() {
    let shortener = service();
    let now = OffsetDateTime::now_utc();
    assert_eq!(
        shortener.resolve(&code("nothing"), now).await,
        Err(ResolveError::NotFound)
    );
    let mut expiring = request(Some("expiring"));
    expiring.expires_at = Some(now + Duration::seconds(10));
    shortener.create(expiring, now).await.unwrap();
    assert!(shortener.resolve(&code("expiring"), now).await.is_ok());
    let later = now + Duration::seconds(10);
    assert_eq!(
        shortener.resolve(&code("expiring"), later).await,
        Err(ResolveError::Expired)
    );
    let mut limited = request(Some("limited"));
    limited.max_visits = Some(2);
    shortener.create(limited, now).await.unwrap();
    for visits in 1..=2 {
        let link = shortener.resolve(&code("limited"), now).await.unwrap();
        assert_eq!(link.visits, visits);
    }
    assert_eq!(
        shortener.resolve(&code("limited"), now).await,
        Err(ResolveError::Exhausted)
    );
}

#[tokio::test]
async fn visits_are_counted_in_memory_until_flushed() {
    let shortener = service();
    let now = OffsetDateTime::now_utc();
    let link = shortener.create(request(None), now).await.unwrap();
    for _ in 0..3 {
        shortener.resolve(&link.code, now).await.unwrap();
    }
    let stored = shortener
        .repository()
        .get(&link.code)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.visits, 0, "no write per redirect");
    let shown = shortener.link(&link.code).await.unwrap().unwrap();
    assert_eq!(shown.visits, 3, "pending visits are shown");
    assert_eq!(shortener.flush_visits().await.unwrap(), 1);
    let stored = shortener
        .repository()
        .get(&link.code)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.visits, 3);
    assert_eq!(shortener.link(&link.code).await.unwrap().unwrap().visits, 3);
    assert_eq!(shortener.flush_visits().await.unwrap(), 0);
}
