//! The target rules, one case per class of refused target.

use super::*;

fn rules() -> TargetRules {
    TargetRules {
        own_hosts: vec![("s.example.com".into(), 443)],
        allow_private: false,
        allow_mixed_script: false,
    }
}

fn check(rules: &TargetRules, deny: &DenyList, url: &str) -> Result<(), TargetRefusal> {
    rules.check(&TargetUrl::parse(url).unwrap(), deny)
}

#[test]
fn own_hosts_are_refused_whatever_the_case() {
    let deny = DenyList::default();
    for url in [
        "https://s.example.com/abc",
        "http://S.Example.COM:443/x",
        "https://s.example.com./x",
    ] {
        assert!(
            matches!(check(&rules(), &deny, url), Err(TargetRefusal::OwnHost(_))),
            "{url}"
        );
    }
    assert!(check(&rules(), &deny, "https://example.com/").is_ok());
    // Another port of the host is another service, but for the two of the web.
    assert!(check(&rules(), &deny, "http://s.example.com:8081/x").is_ok());
    assert!(matches!(
        check(&rules(), &deny, "http://s.example.com/x"),
        Err(TargetRefusal::OwnHost(_))
    ));
    let local = TargetRules {
        own_hosts: vec![TargetRules::own_host("http://127.0.0.1:8080").unwrap()],
        allow_private: true,
        ..rules()
    };
    assert!(matches!(
        check(&local, &deny, "http://127.0.0.1:8080/abc"),
        Err(TargetRefusal::OwnHost(_))
    ));
    assert!(check(&local, &deny, "http://127.0.0.1:9000/abc").is_ok());
    assert!(check(&local, &deny, "http://[::1]:8080/abc").is_ok());
}

#[test]
fn private_addresses_are_refused_unless_allowed() {
    let deny = DenyList::default();
    for url in [
        "http://127.0.0.1/",
        "http://0x7f.1/",
        "http://2130706433/",
        "http://10.0.0.5/",
        "http://172.16.1.1/",
        "http://192.168.1.1:8080/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",
        "http://[::1]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://[::ffff:10.0.0.5]/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://api.localhost/",
    ] {
        assert!(
            matches!(check(&rules(), &deny, url), Err(TargetRefusal::Private(_))),
            "{url}"
        );
    }
    for url in [
        "http://8.8.8.8/",
        "http://172.32.0.1/",
        "http://[2001:db8::1]/",
        "http://localhost.example.com/",
    ] {
        assert!(check(&rules(), &deny, url).is_ok(), "{url}");
    }
    let open = TargetRules {
        allow_private: true,
        ..rules()
    };
    assert!(check(&open, &deny, "http://10.0.0.5/").is_ok());
}

#[test]
fn deny_entries_match_exactly_or_by_suffix() {
    let deny = DenyList::parse(["Example.org", "*.bad.example", "*.bücher.example"]).unwrap();
    for url in [
        "https://example.org/x",
        "https://EXAMPLE.org./",
        "https://a.bad.example/",
        "https://a.b.bad.example:81/",
        "https://shop.bücher.example/",
        "https://shop.xn--bcher-kva.example/",
    ] {
        assert!(
            matches!(check(&rules(), &deny, url), Err(TargetRefusal::Denied(_))),
            "{url}"
        );
        assert!(
            deny.denies_url(TargetUrl::parse(url).unwrap().as_str()),
            "{url}"
        );
    }
    for url in [
        "https://www.example.org/",
        "https://bad.example/",
        "https://notbad.example/",
        "https://example.org.evil.com/",
    ] {
        assert!(check(&rules(), &deny, url).is_ok(), "{url}");
        assert!(
            !deny.denies_url(TargetUrl::parse(url).unwrap().as_str()),
            "{url}"
        );
    }
}

#[test]
fn deny_files_skip_comments_and_name_the_bad_line() {
    let list =
        DenyList::parse_file("# phishing\nexample.org  # seen 2026-11\n\n*.bad.example\n").unwrap();
    assert_eq!(list.len(), 2);
    let error = DenyList::parse_file("example.org\nhttp://x.example/\n").unwrap_err();
    assert!(error.to_string().contains("line 2"), "{error}");
    // Not quoted: a path pointed at another file must not copy its lines to the log.
    let error = DenyList::parse_file("root:x:0:0:root:/root:/bin/bash\n").unwrap_err();
    assert!(!error.to_string().contains("root"), "{error}");
    assert!(DenyList::parse(["*."]).is_err());
}

#[test]
fn look_alike_hosts_are_refused_unless_allowed() {
    let deny = DenyList::default();
    // A Cyrillic `а` before Latin `pple`; a Greek omicron in `gοogle`.
    for url in ["https://\u{0430}pple.com/", "https://g\u{03BF}ogle.com/"] {
        assert!(
            matches!(
                check(&rules(), &deny, url),
                Err(TargetRefusal::MixedScript(_))
            ),
            "{url}"
        );
    }
    // Scripts beyond Latin, Cyrillic and Greek: an Armenian `օ` in `gօogle`.
    assert!(matches!(
        check(&rules(), &deny, "https://g\u{0585}ogle.com/"),
        Err(TargetRefusal::MixedScript(_))
    ));
    // Whole-script look-alikes: every letter Cyrillic, read as a Latin name.
    for (url, imitated) in [
        // а р р ӏ е
        (
            "https://\u{0430}\u{0440}\u{0440}\u{04CF}\u{0435}.com/",
            "apple.com",
        ),
        // р а у р а ӏ
        (
            "https://\u{0440}\u{0430}\u{0443}\u{0440}\u{0430}\u{04CF}.com/",
            "paypal.com",
        ),
    ] {
        match check(&rules(), &deny, url) {
            Err(TargetRefusal::LookAlike { imitates, .. }) => assert_eq!(imitates, imitated),
            other => panic!("{url}: {other:?}"),
        }
    }
    // One script per label that reads as itself is fine: Russian, Latin with accents
    // (Turkish dotless i too), Japanese.
    for url in [
        "https://\u{043F}\u{0440}\u{0438}\u{043C}\u{0435}\u{0440}.com/",
        "https://bücher.example/",
        "https://k\u{0131}rm\u{0131}z\u{0131}.example/",
        "https://\u{4F8B}\u{3048}.jp/",
        "https://example.com/",
    ] {
        assert!(check(&rules(), &deny, url).is_ok(), "{url}");
    }
    let open = TargetRules {
        allow_mixed_script: true,
        ..rules()
    };
    assert!(check(&open, &deny, "https://\u{0430}pple.com/").is_ok());
    let all_cyrillic = "https://\u{0430}\u{0440}\u{0440}\u{04CF}\u{0435}.com/";
    assert!(check(&open, &deny, all_cyrillic).is_ok());
}

#[test]
fn urls_are_shown_with_their_host_in_unicode() {
    let url = TargetUrl::parse("https://Bücher.example:8443/xn--path?q=xn--").unwrap();
    assert_eq!(
        url.as_str(),
        "https://xn--bcher-kva.example:8443/xn--path?q=xn--"
    );
    assert_eq!(
        unicode_form(&url),
        "https://bücher.example:8443/xn--path?q=xn--"
    );
    let plain = TargetUrl::parse("https://example.com/xn--a").unwrap();
    assert_eq!(unicode_form(&plain), "https://example.com/xn--a");
}
