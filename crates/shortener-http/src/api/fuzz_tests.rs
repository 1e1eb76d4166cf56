//! Fuzzing that stays in `cargo xtask test`: the URL, alias and body parsers alone take
//! or refuse every input and never panic. (The API of a whole node under the same inputs
//! is fuzzed by the server crate, which builds nodes from a configuration.)

use proptest::prelude::*;
use shortener_core::{Alias, DenyList, TargetRules, TargetUrl};

fn url_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "(https?|ftp|javascript|data)://[a-zA-Z0-9.:@%\\[\\]-]{0,30}(/[ -~]{0,20})?",
        "https?://(\\[[0-9a-f:.]{0,40}\\]|[0-9.x]{0,20})(:[0-9]{0,6})?/",
        "https?://[\\u{0}-\\u{7f}\\u{400}-\\u{4ff}\\u{370}-\\u{3ff}\\u{e9}.]{0,20}/",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_parsers_take_or_refuse_and_never_panic(url in url_text(), alias in any::<String>()) {
        if let Ok(url) = TargetUrl::parse(&url) {
            let rules = TargetRules { own_hosts: vec![("s.example".into(), 443)], ..TargetRules::default() };
            let _ = rules.check(&url, &DenyList::default());
            prop_assert!(!DenyList::default().denies_url(url.as_str()));
        }
        let _ = Alias::parse(&alias);
        let _ = DenyList::parse([alias.as_str()]);
        let _ = super::json::parse(alias.as_bytes());
    }
}
