//! The `Shortener` service of `shortener-core`, over the memory repository.

use std::collections::VecDeque;
use std::sync::Mutex;

use shortener_core::{
    Access, Alias, AlphabetCodeGenerator, CodeGenerator, CreateError, CreateLink, LinkKey,
    LinkPatch, LinkRepository, Owner, ResolveError, ShortCode, Shortener, TargetUrl, UpdateError,
    Visitor,
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

fn key(raw: &str) -> LinkKey {
    LinkKey::on_default(code(raw))
}

fn request(alias: Option<&str>) -> CreateLink {
    CreateLink {
        domain: shortener_core::Domain::default(),
        url: TargetUrl::parse("https://example.com/target").unwrap(),
        alias: alias.map(|a| Alias::parse(a).unwrap()),
        expires_at: None,
        max_visits: None,
        owner: None,
        tags: shortener_core::Tags::default(),
        options: shortener_core::LinkOptions::default(),
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
    let resolved = shortener
        .resolve(&key("my-link"), now, Some(Visitor::Person))
        .await
        .unwrap();
    assert_eq!(resolved.url(), "https://example.com/target");
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
    let kept = shortener.link(&key("same")).await.unwrap().unwrap();
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
        shortener
            .resolve(&key("nothing"), now, Some(Visitor::Person))
            .await,
        Err(ResolveError::NotFound)
    );
    let mut expiring = request(Some("expiring"));
    expiring.expires_at = Some(now + Duration::seconds(10));
    shortener.create(expiring, now).await.unwrap();
    assert!(
        shortener
            .resolve(&key("expiring"), now, Some(Visitor::Person))
            .await
            .is_ok()
    );
    let later = now + Duration::seconds(10);
    assert_eq!(
        shortener
            .resolve(&key("expiring"), later, Some(Visitor::Person))
            .await,
        Err(ResolveError::Expired(None))
    );
    let mut limited = request(Some("limited"));
    limited.max_visits = Some(2);
    shortener.create(limited, now).await.unwrap();
    for visits in 1..=2 {
        let link = shortener
            .resolve(&key("limited"), now, Some(Visitor::Person))
            .await
            .unwrap();
        assert_eq!(link.full().map(|link| link.visits), Some(visits));
    }
    assert_eq!(
        shortener
            .resolve(&key("limited"), now, Some(Visitor::Person))
            .await,
        Err(ResolveError::Exhausted(None))
    );
    // An ended link with an `expired_url` says where to go instead, by person and by bot.
    let fallback = TargetUrl::parse("https://example.com/over").unwrap();
    let mut once = request(Some("once"));
    once.max_visits = Some(1);
    once.expires_at = Some(later);
    once.options.expired_url = Some(fallback.clone());
    shortener.create(once, now).await.unwrap();
    let once = code("once");
    shortener
        .resolve(
            &LinkKey::on_default(once.clone()),
            now,
            Some(Visitor::Person),
        )
        .await
        .unwrap();
    for visitor in [Some(Visitor::Person), Some(Visitor::Bot), None] {
        let resolved = shortener
            .resolve(&LinkKey::on_default(once.clone()), now, visitor)
            .await;
        assert_eq!(
            resolved,
            Err(ResolveError::Exhausted(Some(fallback.clone())))
        );
    }
    let resolved = shortener
        .resolve(&LinkKey::on_default(once.clone()), later, None)
        .await;
    assert_eq!(resolved, Err(ResolveError::Expired(Some(fallback))));
}

#[tokio::test]
async fn visits_are_counted_in_memory_until_flushed() {
    let shortener = service();
    let now = OffsetDateTime::now_utc();
    let link = shortener.create(request(None), now).await.unwrap();
    for _ in 0..3 {
        shortener
            .resolve(&link.key(), now, Some(Visitor::Person))
            .await
            .unwrap();
    }
    let stored = shortener
        .repository()
        .get(&link.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.visits, 0, "no write per redirect");
    let shown = shortener.link(&link.key()).await.unwrap().unwrap();
    assert_eq!(shown.visits, 3, "pending visits are shown");
    assert_eq!(shortener.flush_visits().await.unwrap(), 1);
    let stored = shortener
        .repository()
        .get(&link.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.visits, 3);
    assert_eq!(
        shortener.link(&link.key()).await.unwrap().unwrap().visits,
        3
    );
    assert_eq!(shortener.flush_visits().await.unwrap(), 0);
}

#[tokio::test]
async fn head_requests_and_bots_do_not_count_as_visits() {
    let shortener = service();
    let now = OffsetDateTime::now_utc();
    let mut limited = request(Some("once"));
    limited.max_visits = Some(1);
    shortener.create(limited, now).await.unwrap();
    let code = code("once");
    for visitor in [None, Some(Visitor::Bot), None, Some(Visitor::Bot)] {
        shortener
            .resolve(&LinkKey::on_default(code.clone()), now, visitor)
            .await
            .unwrap();
    }
    shortener
        .resolve(
            &LinkKey::on_default(code.clone()),
            now,
            Some(Visitor::Person),
        )
        .await
        .unwrap();
    assert_eq!(
        shortener
            .resolve(
                &LinkKey::on_default(code.clone()),
                now,
                Some(Visitor::Person)
            )
            .await,
        Err(ResolveError::Exhausted(None)),
        "only the person used the one visit"
    );
    shortener.flush_visits().await.unwrap();
    let days = shortener
        .repository()
        .visits_by_day(&LinkKey::on_default(code.clone()), now.date(), now.date())
        .await
        .unwrap();
    assert_eq!(
        (days[0].visits, days[0].bots),
        (1, 2),
        "HEAD counted nowhere"
    );
    assert_eq!(
        shortener
            .link(&LinkKey::on_default(code.clone()))
            .await
            .unwrap()
            .unwrap()
            .visits,
        1
    );
}

#[tokio::test]
async fn updates_follow_the_rules_of_a_create_and_stay_with_the_owner() {
    let shortener = service();
    let now = OffsetDateTime::now_utc();
    let owner = Owner::parse("alice").unwrap();
    let mut owned = request(Some("alices"));
    owned.owner = Some(owner.clone());
    shortener.create(owned, now).await.unwrap();
    let code = code("alices");
    let past = LinkPatch {
        expires_at: Some(Some(now - Duration::seconds(1))),
        ..LinkPatch::default()
    };
    let zero = LinkPatch {
        max_visits: Some(Some(0)),
        ..LinkPatch::default()
    };
    let fix = LinkPatch {
        url: Some(TargetUrl::parse("https://example.com/fixed").unwrap()),
        ..LinkPatch::default()
    };
    let mine = Access::Owner(&owner);
    assert_eq!(
        shortener
            .update(&LinkKey::on_default(code.clone()), mine, &past, now)
            .await,
        Err(UpdateError::ExpiryNotInFuture)
    );
    assert_eq!(
        shortener
            .update(&LinkKey::on_default(code.clone()), mine, &zero, now)
            .await,
        Err(UpdateError::ZeroMaxVisits)
    );
    let bob = Owner::parse("bob").unwrap();
    assert_eq!(
        shortener
            .update(
                &LinkKey::on_default(code.clone()),
                Access::Owner(&bob),
                &fix,
                now
            )
            .await,
        Err(UpdateError::NotFound)
    );
    let fixed = shortener
        .update(&LinkKey::on_default(code.clone()), mine, &fix, now)
        .await
        .unwrap();
    assert_eq!(fixed.url.as_str(), "https://example.com/fixed");
    assert!(
        !shortener
            .delete(&LinkKey::on_default(code.clone()), Access::Owner(&bob))
            .await
            .unwrap()
    );
    assert!(
        shortener
            .delete(&LinkKey::on_default(code.clone()), mine)
            .await
            .unwrap()
    );
}

/// A link behind a password resolves for no one who has not proven it, counts no visit
/// then, and resolves (counting one) for whoever proved the hash it still has.
#[tokio::test]
async fn a_locked_link_resolves_only_for_its_current_hash() {
    let hash = |salt: &str| {
        shortener_core::PasswordHash::parse(&format!(
            "$argon2id$v=19$m=19456,t=2,p=1${salt}$q5PfnEmCSjWMr/1xBsIjXJr4YQmQnrwUqdmyLUAqfHM"
        ))
        .unwrap()
    };
    let shortener = service();
    let now = OffsetDateTime::now_utc();
    let mut locked = request(Some("locked"));
    locked.options.password = Some(hash("c2FsdA"));
    locked.max_visits = Some(2);
    shortener.create(locked, now).await.unwrap();
    let key = key("locked");
    for visitor in [Some(Visitor::Person), Some(Visitor::Bot), None] {
        assert_eq!(
            shortener.resolve(&key, now, visitor).await,
            Err(ResolveError::Locked(hash("c2FsdA")))
        );
    }
    let stale = hash("b2xk");
    assert_eq!(
        (shortener.resolve_unlocked(&key, now, Some(Visitor::Person), Some(&stale))).await,
        Err(ResolveError::Locked(hash("c2FsdA"))),
        "a hash the link no longer has opens nothing"
    );
    assert_eq!(shortener.link(&key).await.unwrap().unwrap().visits, 0);
    let current = hash("c2FsdA");
    for _ in 0..2 {
        let link = (shortener.resolve_unlocked(&key, now, Some(Visitor::Person), Some(&current)))
            .await
            .unwrap();
        assert_eq!(link.cacheable_for(now, 600), None, "never cached");
    }
    assert_eq!(shortener.link(&key).await.unwrap().unwrap().visits, 2);
    // Used up: the visitor learns that much, and nothing else, without the password.
    assert!(matches!(
        shortener.resolve(&key, now, Some(Visitor::Person)).await,
        Err(ResolveError::Exhausted(None))
    ));
}
