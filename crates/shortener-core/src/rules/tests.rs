//! Rules: checking names the bad field; the evaluator against a plainly written model
//! over random visitors and rule lists; languages by q-value; splits by their weights.

use std::net::IpAddr;

use time::OffsetDateTime;

use super::*;

mod model;

/// A visitor with every fact known, counting what the evaluator asked.
#[derive(Debug, Clone, Default)]
pub(super) struct Facts {
    pub(super) device: Option<Device>,
    pub(super) os: Option<Os>,
    pub(super) browser: Option<Browser>,
    pub(super) accept_language: Option<String>,
    pub(super) country: Option<String>,
    pub(super) query: Vec<(String, Option<String>)>,
    pub(super) now: i64,
    pub(super) address: Option<IpAddr>,
    pub(super) countries_asked: usize,
}

impl VisitorFacts for Facts {
    fn device(&mut self) -> Option<Device> {
        self.device
    }
    fn os(&mut self) -> Option<Os> {
        self.os
    }
    fn browser(&mut self) -> Option<Browser> {
        self.browser
    }
    fn accept_language(&mut self) -> Option<&str> {
        self.accept_language.as_deref()
    }
    fn country(&mut self) -> Option<&str> {
        self.countries_asked += 1;
        self.country.as_deref()
    }
    fn query(&mut self, key: &str) -> Option<Option<&str>> {
        (self.query.iter())
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_deref())
    }
    fn now(&mut self) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(self.now).unwrap()
    }
    fn address(&mut self) -> Option<IpAddr> {
        self.address
    }
}

pub(super) fn condition(kind: &str, value: &str) -> ConditionSpec {
    ConditionSpec {
        kind: kind.to_owned(),
        key: None,
        value: Some(value.to_owned()),
    }
}

fn rule(conditions: Vec<ConditionSpec>, url: &str) -> RuleSpec {
    RuleSpec {
        name: None,
        conditions,
        url: Some(url.to_owned()),
        split: None,
        redirect_status: None,
    }
}

#[test]
fn a_bad_rule_is_refused_naming_its_field() {
    let cases = [
        (
            vec![rule(vec![condition("os", "beos")], "https://a.example/")],
            "rules[0].conditions[0].value",
        ),
        (
            vec![rule(vec![condition("colour", "red")], "https://a.example/")],
            "rules[0].conditions[0].type",
        ),
        (
            vec![
                rule(vec![], "https://a.example/"),
                rule(vec![condition("after", "tomorrow")], "https://b.example/"),
            ],
            "rules[1].conditions[0].value",
        ),
        (
            vec![rule(
                vec![condition("network", "10.0.0.0/33")],
                "https://a.example/",
            )],
            "rules[0].conditions[0].value",
        ),
        (
            vec![rule(
                vec![condition("country", "FRA")],
                "https://a.example/",
            )],
            "rules[0].conditions[0].value",
        ),
        (vec![rule(vec![], "javascript:alert(1)")], "rules[0].url"),
        (
            vec![RuleSpec {
                split: Some(vec![VariantSpec {
                    url: "https://a.example/".into(),
                    weight: 1,
                }]),
                url: None,
                ..rule(vec![], "")
            }],
            "rules[0].split",
        ),
        (
            vec![RuleSpec {
                split: Some(vec![
                    VariantSpec {
                        url: "https://a.example/".into(),
                        weight: 1,
                    },
                    VariantSpec {
                        url: "https://b.example/".into(),
                        weight: 0,
                    },
                ]),
                url: None,
                ..rule(vec![], "")
            }],
            "rules[0].split[1].weight",
        ),
        (
            vec![RuleSpec {
                redirect_status: Some(303),
                ..rule(vec![], "https://a.example/")
            }],
            "rules[0].redirect_status",
        ),
        (
            vec![RuleSpec {
                split: Some(Vec::new()),
                ..rule(vec![], "https://a.example/")
            }],
            "rules[0]",
        ),
        (
            vec![rule(
                vec![ConditionSpec {
                    kind: "query".into(),
                    key: None,
                    value: Some("x".into()),
                }],
                "https://a.example/",
            )],
            "rules[0].conditions[0].key",
        ),
        (
            vec![rule(vec![], "https://a.example/"); MAX_RULES + 1],
            "rules",
        ),
        (
            vec![rule(
                vec![condition("device", "mobile"); MAX_CONDITIONS + 1],
                "https://a.example/",
            )],
            "rules[0].conditions",
        ),
        (
            vec![
                RuleSpec {
                    name: Some("a".into()),
                    ..rule(vec![], "https://a.example/")
                },
                RuleSpec {
                    name: Some("a".into()),
                    ..rule(vec![], "https://b.example/")
                },
            ],
            "rules[1].name",
        ),
    ];
    for (specs, field) in cases {
        let error = Rules::parse(&specs).unwrap_err();
        assert_eq!(error.field, field, "{error}");
    }
}

#[test]
fn rules_come_back_as_they_were_given() {
    let specs = vec![
        RuleSpec {
            name: Some("iphone".into()),
            ..rule(vec![condition("os", "ios")], "https://apps.example/x")
        },
        rule(
            vec![condition("language", "fr"), condition("country", "FR")],
            "https://example.fr/",
        ),
        RuleSpec {
            redirect_status: Some(307),
            ..rule(
                vec![ConditionSpec {
                    kind: "query".into(),
                    key: Some("ref".into()),
                    value: Some("mail".into()),
                }],
                "https://example.com/from-mail",
            )
        },
        RuleSpec {
            name: Some("launch".into()),
            url: None,
            split: Some(vec![
                VariantSpec {
                    url: "https://a.example/".into(),
                    weight: 70,
                },
                VariantSpec {
                    url: "https://b.example/".into(),
                    weight: 30,
                },
            ]),
            ..rule(
                vec![
                    condition("after", "2027-01-01T00:00:00Z"),
                    condition("network", "2001:db8::/32"),
                ],
                "",
            )
        },
    ];
    let rules = Rules::parse(&specs).unwrap();
    assert_eq!(rules.to_specs(), specs);
    let json = serde_json::to_string(&specs).unwrap();
    assert!(json.contains(r#""type":"os""#), "{json}");
}

#[test]
fn languages_follow_their_q_values() {
    let header = "fr-CH, fr;q=0.9, en;q=0.8, de;q=0, *;q=0.1";
    assert!(accepts_language(header, "fr"));
    assert!(accepts_language(header, "fr-ch"));
    assert!(accepts_language(header, "en"));
    assert!(!accepts_language(header, "de"), "q=0 refuses a language");
    assert!(!accepts_language(header, "it"), "* names no language");
    assert!(
        !accepts_language("en", "en-gb"),
        "a full tag wants that tag"
    );
    assert!(accepts_language("en-GB", "en"));
}

#[test]
fn a_split_follows_its_weights_and_keeps_each_visitor() {
    let specs = vec![RuleSpec {
        url: None,
        split: Some(vec![
            VariantSpec {
                url: "https://a.example/".into(),
                weight: 70,
            },
            VariantSpec {
                url: "https://b.example/".into(),
                weight: 30,
            },
        ]),
        ..rule(vec![], "")
    }];
    let rules = Rules::parse(&specs).unwrap();
    let mut counts = [0usize; 2];
    for visitor in 0..100_000 {
        let identity = format!("203.0.113.{}-{visitor}", visitor % 251);
        let first = resolve(&rules, &mut Facts::default(), "go", &identity).unwrap();
        let again = resolve(&rules, &mut Facts::default(), "go", &identity).unwrap();
        assert_eq!(first.variant, again.variant);
        counts[first.variant.unwrap()] += 1;
    }
    let share = counts[0] as f64 / 100_000.0;
    assert!((share - 0.7).abs() < 0.01, "{counts:?}");
}

#[test]
fn a_country_is_looked_up_only_when_a_rule_reached_asks() {
    let specs = vec![
        rule(vec![condition("device", "mobile")], "https://m.example/"),
        rule(vec![condition("country", "fr")], "https://fr.example/"),
    ];
    let rules = Rules::parse(&specs).unwrap();
    let mut mobile = Facts {
        device: Some(Device::Mobile),
        ..Facts::default()
    };
    assert_eq!(resolve(&rules, &mut mobile, "l", "v").unwrap().rule, 0);
    assert_eq!(mobile.countries_asked, 0);
    let mut french = Facts {
        country: Some("FR".into()),
        ..Facts::default()
    };
    let resolution = resolve(&rules, &mut french, "l", "v").unwrap();
    assert_eq!(
        (resolution.rule, resolution.url.as_str()),
        (1, "https://fr.example/")
    );
    assert!(resolve(&Rules::default(), &mut Facts::default(), "l", "v").is_none());
}
