//! The evaluator against a plainly written model, over random visitors and rule lists:
//! the same rule, target and variant.

use proptest::prelude::*;

use super::{Facts, condition};
use crate::rules::*;

/// The model: every condition of every rule evaluated as written in the rules' words,
/// the first rule all of whose conditions hold, and a split's variant found by laying
/// the variants out one weight unit at a time.
fn model(
    rules: &Rules,
    facts: &Facts,
    link: &str,
    identity: &str,
) -> Option<(usize, String, Option<usize>)> {
    for (index, rule) in rules.rules().iter().enumerate() {
        let mut all = true;
        for condition in &rule.conditions {
            let holds = match condition {
                Condition::Device(d) => facts.device == Some(*d),
                Condition::Os(o) => facts.os == Some(*o),
                Condition::Browser(b) => facts.browser == Some(*b),
                Condition::Language(tag) => {
                    facts.accept_language.as_deref().is_some_and(|header| {
                        header.split(',').any(|item| {
                            let language =
                                item.split(';').next().unwrap().trim().to_ascii_lowercase();
                            let zero =
                                item.replace(' ', "").contains(";q=0") && !item.contains("q=0.");
                            !zero
                                && (language == *tag
                                    || (!tag.contains('-')
                                        && language.split('-').next() == Some(tag)))
                        })
                    })
                }
                Condition::Country(c) => facts.country.as_deref() == Some(c.as_str()),
                Condition::Query { key, value } => {
                    let found = facts.query.iter().find(|(k, _)| k == key);
                    match (found, value) {
                        (None, _) => false,
                        (Some(_), None) => true,
                        (Some((_, given)), Some(wanted)) => given.as_ref() == Some(wanted),
                    }
                }
                Condition::After(t) => facts.now >= t.unix_timestamp(),
                Condition::Before(t) => facts.now < t.unix_timestamp(),
                Condition::Network(n) => facts.address.is_some_and(|a| n.contains(&a)),
            };
            all &= holds;
        }
        if !all {
            continue;
        }
        return Some(match &rule.target {
            RuleTarget::Url(url) => (index, url.as_str().to_owned(), None),
            RuleTarget::Split(variants) => {
                let mut laid_out = Vec::new();
                for (variant, (_, weight)) in variants.iter().enumerate() {
                    laid_out.extend(std::iter::repeat_n(variant, *weight as usize));
                }
                let at = (split_point(link, identity) % laid_out.len() as u64) as usize;
                let variant = laid_out[at];
                (
                    index,
                    variants[variant].0.as_str().to_owned(),
                    Some(variant),
                )
            }
        });
    }
    None
}

fn conditions() -> impl Strategy<Value = ConditionSpec> {
    let plain = |kind: &'static str, values: &'static [&'static str]| {
        prop::sample::select(values).prop_map(move |value| condition(kind, value))
    };
    prop_oneof![
        plain("device", &["mobile", "tablet", "desktop", "bot"]),
        plain("os", &["android", "ios", "windows"]),
        plain("browser", &["chrome", "firefox", "safari"]),
        plain("language", &["fr", "en", "en-gb", "de"]),
        plain("country", &["FR", "DE", "US"]),
        plain("after", &["1970-01-01T00:16:40Z", "1970-01-01T00:33:20Z"]),
        plain("before", &["1970-01-01T00:16:40Z", "1970-01-01T00:33:20Z"]),
        plain("network", &["10.0.0.0/8", "10.1.0.0/16", "2001:db8::/32"]),
        (
            prop::sample::select(&["ref", "utm"][..]),
            prop::option::of(prop::sample::select(&["mail", "x"][..]))
        )
            .prop_map(|(key, value)| ConditionSpec {
                kind: "query".into(),
                key: Some(key.into()),
                value: value.map(Into::into)
            }),
    ]
}

fn rule_lists() -> impl Strategy<Value = Vec<RuleSpec>> {
    let target = prop_oneof![
        (0..5u32).prop_map(|n| (Some(format!("https://t{n}.example/")), None)),
        prop::collection::vec(1..6u32, 2..4).prop_map(|weights| {
            let split = (weights.iter().enumerate())
                .map(|(index, weight)| VariantSpec {
                    url: format!("https://v{index}.example/"),
                    weight: *weight,
                })
                .collect();
            (None, Some(split))
        }),
    ];
    let one = (prop::collection::vec(conditions(), 0..4), target).prop_map(
        |(conditions, (url, split))| RuleSpec {
            name: None,
            conditions,
            url,
            split,
            redirect_status: None,
        },
    );
    prop::collection::vec(one, 0..6)
}

fn visitors() -> impl Strategy<Value = Facts> {
    (
        prop::option::of(prop::sample::select(Device::ALL)),
        prop::option::of(prop::sample::select(
            &[Os::Android, Os::Ios, Os::Windows][..],
        )),
        prop::option::of(prop::sample::select(
            &[Browser::Chrome, Browser::Firefox][..],
        )),
        prop::option::of(prop::sample::select(
            &["fr-CH, fr;q=0.9, en;q=0.8", "en-GB", "de;q=0, en", "*"][..],
        )),
        prop::option::of(prop::sample::select(&["FR", "DE"][..])),
        prop::collection::vec(
            (
                prop::sample::select(&["ref", "utm"][..]),
                prop::option::of(prop::sample::select(&["mail", "y"][..])),
            ),
            0..3,
        ),
        0i64..3_000,
        prop::option::of(prop::sample::select(
            &["10.1.2.3", "10.9.9.9", "192.0.2.1", "2001:db8::1"][..],
        )),
    )
        .prop_map(
            |(device, os, browser, language, country, query, now, address)| Facts {
                device,
                os,
                browser,
                accept_language: language.map(Into::into),
                country: country.map(Into::into),
                query: query
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.map(Into::into)))
                    .collect(),
                now,
                address: address.map(|a| a.parse().unwrap()),
                countries_asked: 0,
            },
        )
}

proptest! {
    #[test]
    fn the_evaluator_agrees_with_the_model(
        specs in rule_lists(),
        mut facts in visitors(),
        identity in "[a-z0-9.:]{1,20}",
    ) {
        let rules = Rules::parse(&specs).unwrap();
        let expected = model(&rules, &facts, "link", &identity);
        let got = resolve(&rules, &mut facts, "link", &identity)
            .map(|r| (r.rule, r.url.as_str().to_owned(), r.variant));
        prop_assert_eq!(got, expected);
    }
}
