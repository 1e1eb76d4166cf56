//! Scenarios for any [`LinkRepository`]: what every storage adapter must do.
//!
//! Each scenario works on codes it draws at random, so scenarios can share a database.
//! Times are whole microseconds, the precision every backend keeps exactly.

use shortener_core::{
    Access, AlphabetCodeGenerator, CodeGenerator, InsertError, Link, LinkKey, LinkOptions,
    LinkRepository, NewLink, Owner, RedirectStatus, ShortCode, TargetUrl, Title, VisitOutcome,
    VisitTally,
};
use time::{Date, Duration, OffsetDateTime};

use shortener_testkit::concurrently;

/// `code` on the default domain.
pub(crate) fn key(code: &ShortCode) -> LinkKey {
    LinkKey::on_default(code.clone())
}

/// Insert returns the link with zero visits, and get returns every field as inserted,
/// with and without the optional fields.
pub async fn insert_then_get_returns_every_field(repo: &impl LinkRepository) {
    let now = now_micros();
    let full = NewLink {
        domain: shortener_core::Domain::default(),
        code: random_code(),
        url: url("https://example.com/a/b?q=1&r=%20x#fragment"),
        created_at: now,
        expires_at: Some(now + Duration::days(30) + Duration::microseconds(123_457)),
        max_visits: Some(5),
        owner: Some(Owner::parse("ci-bot.v2").expect("a valid owner")),
        tags: shortener_core::Tags::default(),
        options: every_option(),
    };
    let bare = NewLink {
        domain: shortener_core::Domain::default(),
        code: random_code(),
        url: url("http://[::1]:8080/"),
        created_at: now - Duration::seconds(1),
        expires_at: None,
        max_visits: None,
        owner: None,
        tags: shortener_core::Tags::default(),
        options: LinkOptions::default(),
    };
    for new_link in [full, bare] {
        let expected = new_link.clone().into_link();
        let inserted = repo.insert(new_link).await.expect("insert");
        assert_eq!(inserted, expected, "insert returns the stored link");
        let found = repo.get(&expected.key()).await.expect("get");
        assert_eq!(found, Some(expected), "get returns every field as inserted");
    }
}

/// Inserting a code that exists is `CodeTaken` and leaves the first link untouched.
pub async fn insert_of_an_existing_code_is_code_taken(repo: &impl LinkRepository) {
    let original = new_link(random_code());
    repo.insert(original.clone()).await.expect("first insert");
    let mut other = new_link(original.code.clone());
    other.url = url("https://example.org/other");
    other.max_visits = Some(1);
    assert_eq!(repo.insert(other).await, Err(InsertError::CodeTaken));
    let found = repo.get(&original.key()).await.expect("get");
    assert_eq!(found, Some(original.into_link()));
}

/// `insert_many` answers each link in order as `insert` would: a code that exists, or
/// that comes twice in the batch, is `CodeTaken` and changes nothing; the others are
/// stored.
pub async fn insert_many_answers_each_link(repo: &impl LinkRepository) {
    let existing = new_link(random_code());
    repo.insert(existing.clone()).await.expect("first insert");
    let (first, second) = (new_link(random_code()), new_link(random_code()));
    let mut taken = new_link(existing.code.clone());
    taken.url = url("https://example.org/taken");
    let mut twice = new_link(first.code.clone());
    twice.url = url("https://example.org/twice");
    let results = repo
        .insert_many(vec![first.clone(), taken, second.clone(), twice])
        .await
        .expect("insert_many");
    assert_eq!(
        results,
        vec![
            Ok(first.clone().into_link()),
            Err(InsertError::CodeTaken),
            Ok(second.clone().into_link()),
            Err(InsertError::CodeTaken),
        ]
    );
    for link in [existing, first, second] {
        let found = repo.get(&link.key()).await.expect("get");
        assert_eq!(found, Some(link.into_link()), "stored as given");
    }
}

/// `get_many` answers each code in the order asked as `get` would: a link for a stored
/// code (every field), `None` for an unknown one, the same link again for a code asked
/// twice, and nothing for no codes.
pub async fn get_many_answers_each_code_in_order(repo: &impl LinkRepository) {
    let (first, second) = (new_link(random_code()), new_link(random_code()));
    for link in [&first, &second] {
        repo.insert(link.clone()).await.expect("insert");
    }
    let unknown = random_code();
    let asked = [second.key(), key(&unknown), first.key(), second.key()];
    let found = repo.get_many(&asked).await.expect("get_many");
    let (first, second) = (Some(first.into_link()), Some(second.into_link()));
    assert_eq!(found, vec![second.clone(), None, first, second]);
    assert_eq!(repo.get_many(&[]).await.expect("get_many of none"), vec![]);
}

/// Of 20 concurrent inserts of one code, exactly one succeeds; the others are `CodeTaken`.
pub async fn concurrent_inserts_of_one_code_admit_one(repo: &impl LinkRepository) {
    let code = random_code();
    let outcomes = concurrently(20, |index| {
        let mut link = new_link(code.clone());
        link.url = url(&format!("https://example.com/{index}"));
        repo.insert(link)
    })
    .await;
    let winners: Vec<&Link> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "exactly one insert wins: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| o.is_ok() || o == &Err(InsertError::CodeTaken)),
        "the losers are CodeTaken: {outcomes:?}"
    );
    let found = repo.get(&key(&code)).await.expect("get");
    assert_eq!(
        found.as_ref(),
        Some(winners[0]),
        "the winner is what is stored"
    );
}

/// Codes differing only in case are different links.
pub async fn codes_are_case_sensitive(repo: &impl LinkRepository) {
    let lower = ShortCode::parse(&format!("x{}", random_code()).to_lowercase()).expect("code");
    let upper = ShortCode::parse(&lower.as_str().to_uppercase()).expect("code");
    repo.insert(new_link(lower.clone()))
        .await
        .expect("insert lower case");
    let mut upper_link = new_link(upper.clone());
    upper_link.url = url("https://example.com/upper");
    repo.insert(upper_link.clone())
        .await
        .expect("a code in other case is free");
    let found = repo.get(&key(&upper)).await.expect("get");
    assert_eq!(found, Some(upper_link.into_link()));
}

/// Delete is `true` once, then `false`, and the link is gone.
pub async fn delete_then_get_is_none(repo: &impl LinkRepository) {
    let link = new_link(random_code());
    let code = link.code.clone();
    repo.insert(link).await.expect("insert");
    assert!(repo.delete(&key(&code), Access::All).await.expect("delete"));
    assert!(
        !repo
            .delete(&key(&code), Access::All)
            .await
            .expect("second delete")
    );
    assert_eq!(repo.get(&key(&code)).await.expect("get"), None);
    assert!(
        !repo
            .delete(&key(&random_code()), Access::All)
            .await
            .expect("delete unknown")
    );
}

/// Of 3n concurrent visits of a link with `max_visits = n`, exactly n are counted, each
/// seeing a distinct count 1..=n; the rest, and every later visit, are `Exhausted`.
pub async fn record_visit_counts_exactly_max_visits(repo: &impl LinkRepository) {
    const MAX: u64 = 7;
    let mut link = new_link(random_code());
    link.max_visits = Some(MAX);
    let code = link.code.clone();
    repo.insert(link).await.expect("insert");
    let now = now_micros();
    let link_key = key(&code);
    let outcomes = concurrently(3 * MAX as usize, |_| repo.record_visit(&link_key, now)).await;
    let mut counted = Vec::new();
    for outcome in outcomes {
        match outcome.expect("record_visit") {
            VisitOutcome::Counted(link) => {
                assert_eq!(link.code, code);
                assert_eq!(link.max_visits, Some(MAX));
                counted.push(link.visits);
            }
            VisitOutcome::Exhausted => {}
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    counted.sort_unstable();
    assert_eq!(
        counted,
        (1..=MAX).collect::<Vec<_>>(),
        "each count seen once"
    );
    assert_eq!(
        repo.record_visit(&key(&code), now)
            .await
            .expect("record_visit"),
        VisitOutcome::Exhausted
    );
    let stored = repo
        .get(&key(&code))
        .await
        .expect("get")
        .expect("link exists");
    assert_eq!(stored.visits, MAX);
}

/// A visit at or after `expires_at` is `Expired` and not counted.
pub async fn record_visit_on_an_expired_link_is_expired(repo: &impl LinkRepository) {
    let mut link = new_link(random_code());
    let expires_at = link.created_at + Duration::hours(1);
    link.expires_at = Some(expires_at);
    link.max_visits = Some(3);
    let code = link.code.clone();
    repo.insert(link).await.expect("insert");
    for now in [
        expires_at,
        expires_at + Duration::microseconds(1),
        expires_at + Duration::days(1),
    ] {
        assert_eq!(
            repo.record_visit(&key(&code), now)
                .await
                .expect("record_visit"),
            VisitOutcome::Expired,
            "at {now}"
        );
    }
    let before = expires_at - Duration::microseconds(1);
    match repo
        .record_visit(&key(&code), before)
        .await
        .expect("record_visit")
    {
        VisitOutcome::Counted(link) => {
            assert_eq!(link.visits, 1, "expired visits were not counted")
        }
        other => panic!("a visit before expiry is counted, got {other:?}"),
    }
}

/// An unknown code is `None` for get and `NotFound` for a visit, and no link appears.
pub async fn record_visit_on_an_unknown_code_is_not_found(repo: &impl LinkRepository) {
    let code = random_code();
    assert_eq!(repo.get(&key(&code)).await.expect("get"), None);
    assert_eq!(
        repo.record_visit(&key(&code), now_micros())
            .await
            .expect("record_visit"),
        VisitOutcome::NotFound
    );
    assert_eq!(repo.get(&key(&code)).await.expect("get"), None);
}

/// Batched counts add up per code; unknown codes are skipped, not created.
pub async fn add_visits_adds_and_skips_unknown_codes(repo: &impl LinkRepository) {
    let (first, second, unknown) = (random_code(), random_code(), random_code());
    for code in [&first, &second] {
        repo.insert(new_link(code.clone())).await.expect("insert");
    }
    // Read once first, so that a caching adapter holds a copy: its `get_fresh` must
    // still see the counts (its `get` may keep the copy, which serves redirects).
    assert_eq!(visits(repo, &first).await, 0);
    let day = now_micros().date();
    let mut batch = vec![
        tally(&first, day, 3, 0),
        tally(&unknown, day, 5, 0),
        tally(&second, day, 1, 0),
    ];
    batch.sort_by(|a, b| a.key.cmp(&b.key));
    repo.add_visits(&batch).await.expect("add_visits");
    repo.add_visits(&[tally(&first, day, 2, 0)])
        .await
        .expect("add_visits");
    repo.add_visits(&[]).await.expect("add_visits of nothing");
    assert_eq!(visits(repo, &first).await, 5);
    assert_eq!(visits(repo, &second).await, 1);
    assert_eq!(repo.get(&key(&unknown)).await.expect("get"), None);
}

/// A working store is healthy.
pub async fn health_is_ok(repo: &impl LinkRepository) {
    repo.health().await.expect("health");
}

/// Now, truncated to whole microseconds.
pub(crate) fn now_micros() -> OffsetDateTime {
    let now = OffsetDateTime::now_utc();
    now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000)
        .unwrap_or(now)
}

pub(crate) fn random_code() -> ShortCode {
    const ALPHABET: &str = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-";
    AlphabetCodeGenerator::new(ALPHABET, 12)
        .expect("a valid alphabet")
        .generate()
}

pub(crate) fn url(raw: &str) -> TargetUrl {
    TargetUrl::parse(raw).expect("a valid url")
}

pub(crate) fn new_link(code: ShortCode) -> NewLink {
    NewLink {
        domain: shortener_core::Domain::default(),
        url: url(&format!("https://example.com/{code}")),
        code,
        created_at: now_micros(),
        expires_at: None,
        max_visits: None,
        owner: None,
        tags: shortener_core::Tags::default(),
        options: LinkOptions::default(),
    }
}

pub(crate) fn tally(code: &ShortCode, day: Date, visits: u64, bots: u64) -> VisitTally {
    VisitTally {
        key: key(code),
        day,
        visits,
        bots,
    }
}

pub(crate) async fn visits(repo: &impl LinkRepository, code: &ShortCode) -> u64 {
    repo.get_fresh(&key(code))
        .await
        .expect("get_fresh")
        .expect("link exists")
        .visits
}

/// Every option set, none of them its default.
pub(crate) fn every_option() -> LinkOptions {
    LinkOptions {
        redirect_status: Some(RedirectStatus::TemporaryRedirect),
        forward_query: Some(false),
        expired_url: Some(url("https://example.com/over?why=ended")),
        title: Some(Title::parse("Spring launch · été \"25\"").expect("a valid title")),
        crawlable: true,
        password: Some(password_hash("c2FsdHNhbHRzYWx0")),
        rules: rules(&[
            r#"{"name": "iphone", "conditions": [{"type": "os", "value": "ios"},
                {"type": "query", "key": "ref"}], "url": "https://apps.example/x",
                "redirect_status": 307}"#,
            r#"{"conditions": [{"type": "after", "value": "2027-01-01T00:00:00Z"},
                {"type": "network", "value": "2001:db8::/32"}],
                "split": [{"url": "https://a.example/", "weight": 70},
                          {"url": "https://b.example/", "weight": 30}]}"#,
        ]),
    }
}

/// Rules from their JSON form, one rule per item (as the API takes them).
pub(crate) fn rules(items: &[&str]) -> shortener_core::rules::Rules {
    let specs: Vec<shortener_core::rules::RuleSpec> = (items.iter())
        .map(|item| serde_json::from_str(item).expect("a rule"))
        .collect();
    shortener_core::rules::Rules::parse(&specs).expect("valid rules")
}

/// A well-formed argon2id hash with `salt` (the repositories store it as text; none of
/// them verifies it).
pub(crate) fn password_hash(salt: &str) -> shortener_core::PasswordHash {
    shortener_core::PasswordHash::parse(&format!(
        "$argon2id$v=19$m=19456,t=2,p=1${salt}$q5PfnEmCSjWMr/1xBsIjXJr4YQmQnrwUqdmyLUAqfHM"
    ))
    .expect("a well-formed hash")
}
