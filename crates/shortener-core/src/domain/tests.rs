//! The domain types' rules, one test per rule.

use super::*;

#[test]
fn a_request_s_query_is_merged_into_the_target_s_and_wins() {
    let merged =
        |target: &str, query: &str| merge_query(TargetUrl::parse(target).unwrap().as_str(), query);
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
