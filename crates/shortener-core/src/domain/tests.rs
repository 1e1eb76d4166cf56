//! The domain types' rules, one test per rule.

use super::*;

#[test]
fn a_request_s_query_is_merged_into_the_target_s_and_wins() {
    let merged = |target: &str, query: &str| TargetUrl::parse(target).unwrap().with_query(query);
    assert_eq!(
        merged("https://example.com/p", "utm=x&b=2"),
        "https://example.com/p?utm=x&b=2"
    );
    assert_eq!(
        merged("https://example.com/p?a=1&b=1&c#top", "b=2&d=%20"),
        "https://example.com/p?a=1&c&b=2&d=%20#top"
    );
    assert_eq!(
        merged("https://example.com/p?a=1", "&&"),
        "https://example.com/p?a=1"
    );
    assert_eq!(
        merged("https://example.com/p?a=1", ""),
        "https://example.com/p?a=1"
    );
    assert_eq!(
        merged("https://example.com/p?a=1", "a"),
        "https://example.com/p?a"
    );
}

#[test]
fn a_link_is_cacheable_until_it_ends_and_never_with_a_visit_limit() {
    let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
    let link = Link {
        code: ShortCode::parse("abc").unwrap(),
        url: TargetUrl::parse("https://example.com/").unwrap(),
        created_at: now,
        expires_at: None,
        max_visits: None,
        visits: 0,
        owner: None,
    };
    assert_eq!(link.cacheable_for(now, 600), Some(600));
    assert_eq!(link.cacheable_for(now, 0), Some(0));
    let expiring = Link {
        expires_at: Some(now + time::Duration::milliseconds(90_500)),
        ..link.clone()
    };
    assert_eq!(expiring.cacheable_for(now, 600), Some(90));
    assert_eq!(expiring.cacheable_for(now, 60), Some(60));
    let past = Link {
        expires_at: Some(now - time::Duration::seconds(1)),
        ..link.clone()
    };
    assert_eq!(past.cacheable_for(now, 600), Some(0));
    let limited = Link {
        max_visits: Some(3),
        ..link
    };
    assert_eq!(limited.cacheable_for(now, 600), None);
}

#[test]
fn urls_are_validated() {
    for ok in [
        "https://example.com/a",
        "http://x.y:8080/p?q=1#f",
        "https://[::1]/",
    ] {
        assert!(TargetUrl::parse(ok).is_ok(), "{ok}");
    }
    for bad in [
        "javascript:alert(1)",
        "data:text/html,hi",
        "ftp://example.com/",
        "/relative",
        "example.com",
        "https://user:pw@example.com/",
        "https://user@example.com/",
        "https://exa\tmple.com/",
        "https://example.com/\n",
        "",
        "http://",
        "file:///etc/passwd",
    ] {
        assert!(TargetUrl::parse(bad).is_err(), "{bad:?}");
    }
    let long = format!("https://example.com/{}", "a".repeat(MAX_URL_BYTES));
    assert!(TargetUrl::parse(&long).is_err());
}

#[test]
fn aliases_are_validated() {
    assert!(Alias::parse("abc").is_ok());
    assert!(Alias::parse("my-link_2").is_ok());
    for bad in [
        "ab",
        "a b",
        "héllo",
        "docs",
        "API",
        "metrics",
        "x/y",
        &"a".repeat(65),
    ] {
        assert!(Alias::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn codes_reject_odd_characters() {
    assert!(ShortCode::parse("aZ09_-").is_ok());
    for bad in ["", "a.b", "%2e", "a/b", "ä", &"x".repeat(65)] {
        assert!(ShortCode::parse(bad).is_err(), "{bad}");
    }
}
