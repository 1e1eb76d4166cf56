//! envoyproxy/ratelimit's own configuration tests, as a table: every limits file of their
//! `test/config/` and every configuration their `config_test.go` builds in Go, written to
//! the same effect under `tests/their-config/`, either loads or is refused with the same
//! kind of error (naming the same key or value), and every lookup that test makes finds
//! what theirs finds: no limit, the same `requests_per_unit` and unit, unlimited, shadow
//! mode, the same name, `detailed_metric` and `metadata`; the same stats key (their
//! `Stats.Key`, our metric labels); and the same cache key (their `GenerateCacheKey`, with
//! `share_threshold`'s patterns) with our bucket shared exactly where theirs is. The
//! `metadata:` lookups are asked of the running service too, and come back in the
//! answer's `dynamic_metadata`.
//!
//! Not here, as ours has no such thing to assert: their counters' values (ours are the
//! `metrics` facade's, labelled by the same stats key), `domain_not_found`, `Dump()`, and
//! `FullKey == Stats.Key` (ours has one metric key).

use std::collections::BTreeSet;

use shortener_core::Algorithm;
use shortener_rls::ServiceSettings;
use shortener_rls::limits::{Entry, Limits, Matched, Unit};
use shortener_rls::proto::rate_limit_response::Code;
use shortener_rls::protobuf::{Struct, value::Kind};

use crate::support::{descriptor, serve};

mod files;
mod metrics;
mod share;

/// One of their tests (or one configuration of it): files loaded together, in order.
#[derive(Debug)]
pub struct Fixture {
    /// Their Go test (and sub-test) this reproduces.
    pub test: &'static str,
    /// Under `tests/their-config/`.
    pub files: &'static [&'static str],
    /// Their `MERGE_DOMAIN_CONFIG`.
    pub merge: bool,
    pub outcome: Outcome,
}

#[derive(Debug)]
pub enum Outcome {
    /// The files load, and each lookup finds what theirs finds.
    Loads(&'static [Lookup]),
    /// Refused, naming this file, with this distinctive part of the message.
    Refused {
        file: &'static str,
        message: &'static str,
    },
}

/// One `GetLimit` of theirs: a descriptor of a domain, and what it finds.
#[derive(Debug)]
pub struct Lookup {
    pub domain: &'static str,
    pub entries: &'static [(&'static str, &'static str)],
    /// The descriptor's own limit (Envoy's override).
    pub overriding: Option<(u32, Unit)>,
    /// `None`: no limit applies (theirs returns nil).
    pub found: Option<Found>,
}

#[derive(Debug)]
pub struct Found {
    /// `None`: unlimited.
    pub rate: Option<(u32, Unit)>,
    /// Their `Stats.Key` (and `FullKey`): the domain and our metric labels, joined by `.`.
    pub stats_key: &'static str,
    pub shadow_mode: bool,
    pub name: &'static str,
    pub detailed_metric: bool,
    /// Their `ShareThresholdKeyPattern`, one per entry (`""`: the entry's own value);
    /// empty: none (nil).
    pub shared: &'static [&'static str],
    /// A text in the limit's `metadata:`, by its path of keys.
    pub metadata: Option<(&'static [&'static str], &'static str)>,
}

/// A lookup that finds no limit.
pub const fn none(
    domain: &'static str,
    entries: &'static [(&'static str, &'static str)],
) -> Lookup {
    Lookup {
        domain,
        entries,
        overriding: None,
        found: None,
    }
}

/// A lookup that finds `requests` per `unit`, counted under `stats_key`.
pub const fn limit(
    domain: &'static str,
    entries: &'static [(&'static str, &'static str)],
    requests: u32,
    unit: Unit,
    stats_key: &'static str,
) -> Lookup {
    Lookup {
        domain,
        entries,
        overriding: None,
        found: Some(Found {
            rate: Some((requests, unit)),
            stats_key,
            shadow_mode: false,
            name: "",
            detailed_metric: false,
            shared: &[],
            metadata: None,
        }),
    }
}

/// A lookup that finds an unlimited limit, counted under `stats_key`.
pub const fn unlimited(
    domain: &'static str,
    entries: &'static [(&'static str, &'static str)],
    stats_key: &'static str,
) -> Lookup {
    let mut lookup = limit(domain, entries, 0, Unit::Second, stats_key);
    lookup.found().rate = None;
    lookup
}

/// A fixture whose files load, with its lookups.
pub const fn loads(
    test: &'static str,
    files: &'static [&'static str],
    merge: bool,
    lookups: &'static [Lookup],
) -> Fixture {
    Fixture {
        test,
        files,
        merge,
        outcome: Outcome::Loads(lookups),
    }
}

impl Lookup {
    const fn found(&mut self) -> &mut Found {
        match &mut self.found {
            Some(found) => found,
            None => panic!("a lookup that finds nothing has no limit to describe"),
        }
    }

    pub const fn shadow(mut self) -> Self {
        self.found().shadow_mode = true;
        self
    }

    pub const fn named(mut self, name: &'static str) -> Self {
        self.found().name = name;
        self
    }

    pub const fn detailed(mut self) -> Self {
        self.found().detailed_metric = true;
        self
    }

    pub const fn shared(mut self, patterns: &'static [&'static str]) -> Self {
        self.found().shared = patterns;
        self
    }

    pub const fn metadata(mut self, path: &'static [&'static str], text: &'static str) -> Self {
        self.found().metadata = Some((path, text));
        self
    }

    pub const fn overriding(mut self, requests: u32, unit: Unit) -> Self {
        self.overriding = Some((requests, unit));
        self
    }
}

/// Every fixture, in the order of their `config_test.go`.
fn fixtures() -> impl Iterator<Item = &'static Fixture> {
    (files::FIXTURES.iter())
        .chain(share::FIXTURES)
        .chain(metrics::FIXTURES)
}

fn lookups() -> impl Iterator<Item = (&'static Fixture, &'static Lookup)> {
    fixtures().flat_map(|fixture| match &fixture.outcome {
        Outcome::Loads(lookups) => lookups
            .iter()
            .map(move |lookup| (fixture, lookup))
            .collect(),
        Outcome::Refused { .. } => Vec::new(),
    })
}

const DIRECTORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/their-config/");

fn texts(fixture: &Fixture) -> Vec<(String, String)> {
    (fixture.files.iter())
        .map(|name| {
            let text = std::fs::read_to_string(format!("{DIRECTORY}{name}")).unwrap();
            ((*name).to_owned(), text)
        })
        .collect()
}

fn entries(lookup: &Lookup) -> Vec<Entry<'static>> {
    (lookup.entries.iter())
        .map(|&(key, value)| Entry { key, value })
        .collect()
}

/// Their `GenerateCacheKey` without its prefix and window: each entry's value, or its
/// `share_threshold` pattern.
fn their_cache_key(lookup: &Lookup, shared: &[&str]) -> String {
    let mut key = format!("{}_", lookup.domain);
    for (index, (entry_key, value)) in lookup.entries.iter().enumerate() {
        let pattern = shared.get(index).copied().unwrap_or_default();
        let value = if pattern.is_empty() { value } else { pattern };
        key.push_str(&format!("{entry_key}_{value}_"));
    }
    key
}

fn text_at<'a>(metadata: &'a Struct, path: &[&str]) -> Option<&'a str> {
    let (last, parents) = path.split_last()?;
    let mut map = metadata;
    for key in parents {
        match &map.fields.get(*key)?.kind {
            Some(Kind::StructValue(inner)) => map = inner,
            _ => return None,
        }
    }
    match &map.fields.get(*last)?.kind {
        Some(Kind::StringValue(text)) => Some(text),
        _ => None,
    }
}

fn check(lookup: &Lookup, matched: Option<&Matched>, at: &str) {
    let (want, matched) = match (&lookup.found, matched) {
        (None, None) => return,
        (None, Some(matched)) => panic!("{at}: theirs finds no limit, ours {matched:?}"),
        (Some(_), None) => panic!("{at}: theirs finds a limit, ours none"),
        (Some(want), Some(matched)) => (want, matched),
    };
    let limit = &matched.limit;
    match want.rate {
        Some(rate) => {
            assert!(!limit.unlimited, "{at}");
            assert_eq!((limit.requests_per_unit, limit.unit), rate, "{at}");
        }
        None => assert!(limit.unlimited, "{at}: unlimited"),
    }
    let stats_key = format!("{}.{}", lookup.domain, matched.metric_key.join("."));
    assert_eq!(stats_key, want.stats_key, "{at}: stats key");
    assert_eq!(limit.shadow_mode, want.shadow_mode, "{at}: shadow_mode");
    assert_eq!(limit.name, want.name, "{at}: name");
    assert_eq!(limit.detailed_metric, want.detailed_metric, "{at}");
    let cache_key = their_cache_key(lookup, want.shared);
    assert_eq!(matched.cache_key, cache_key, "{at}: cache key");
    match want.metadata {
        None => assert_eq!(limit.metadata, None, "{at}"),
        Some((path, text)) => {
            let metadata = limit.metadata.as_ref().expect("metadata");
            assert_eq!(text_at(metadata, path), Some(text), "{at}: {metadata:?}");
        }
    }
}

#[test]
fn their_fixtures_load_or_fail_and_their_lookups_find_what_theirs_find() {
    for fixture in fixtures() {
        let loaded = Limits::load(&texts(fixture), fixture.merge, Algorithm::TokenBucket);
        let (limits, lookups) = match (&fixture.outcome, loaded) {
            (Outcome::Loads(lookups), Ok(limits)) => (limits, lookups),
            (Outcome::Refused { file, message }, Err(error)) => {
                assert_eq!(error.file, *file, "{}", fixture.test);
                assert!(error.message.contains(message), "{}: {error}", fixture.test);
                continue;
            }
            (Outcome::Loads(_), Err(error)) => panic!("{}: {error}", fixture.test),
            (Outcome::Refused { .. }, Ok(_)) => panic!("{}: loaded", fixture.test),
        };
        assert!(!limits.is_empty(), "{}", fixture.test);
        // (identity, cache key) of each lookup that found a limit, by domain.
        let mut buckets: Vec<(&str, String, String)> = Vec::new();
        for (index, lookup) in lookups.iter().enumerate() {
            let at = format!("{} #{}: {:?}", fixture.test, index + 1, lookup.entries);
            let matched = limits.find(lookup.domain, &entries(lookup), lookup.overriding);
            check(lookup, matched.as_ref(), &at);
            if let Some(matched) = matched {
                buckets.push((lookup.domain, matched.identity, matched.cache_key));
            }
        }
        // Our bucket is shared exactly where their cache key is.
        for (domain, identity, cache_key) in &buckets {
            for (other_domain, other_identity, other_key) in &buckets {
                if domain == other_domain {
                    assert_eq!(
                        identity == other_identity,
                        cache_key == other_key,
                        "{}: {identity} / {other_identity}",
                        fixture.test
                    );
                }
            }
        }
    }
}

/// The table's size, and every file under `tests/their-config/` in it.
#[test]
fn the_table_covers_every_file_of_theirs() {
    let lookups = lookups().count();
    assert_eq!((fixtures().count(), lookups), (44, 102));
    let used: BTreeSet<&str> = fixtures().flat_map(|f| f.files.iter().copied()).collect();
    let mut present = BTreeSet::new();
    for directory in ["", "inline/"] {
        for entry in std::fs::read_dir(format!("{DIRECTORY}{directory}")).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".yaml") {
                present.insert(format!("{directory}{name}"));
            }
        }
    }
    let used: BTreeSet<String> = used.into_iter().map(str::to_owned).collect();
    assert_eq!(used, present);
    assert_eq!(
        present.len(),
        42,
        "20 files of theirs, 22 configurations built in Go"
    );
}

/// Their `TestMetadata`, through the service: a limit that passes returns its
/// `metadata:` in the answer's `dynamic_metadata`.
#[tokio::test]
async fn their_metadata_comes_back_in_the_answer() {
    let settings = ServiceSettings {
        dynamic_metadata: true,
        ..ServiceSettings::default()
    };
    let mut asked = 0;
    for (fixture, lookup) in lookups() {
        let Some((path, text)) = lookup.found.as_ref().and_then(|found| found.metadata) else {
            continue;
        };
        let files = texts(fixture);
        let files: Vec<(&str, &str)> = (files.iter())
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .collect();
        let mut service = serve(&files, settings.clone()).await;
        let answer = service
            .ask(lookup.domain, vec![descriptor(lookup.entries)])
            .await;
        assert_eq!(answer.overall_code(), Code::Ok);
        let fields = &answer
            .dynamic_metadata
            .as_ref()
            .expect("dynamic metadata")
            .fields;
        let Some(Kind::StructValue(metadata)) = &fields["metadata"].kind else {
            panic!("{fields:?}")
        };
        assert_eq!(text_at(metadata, path), Some(text), "{metadata:?}");
        asked += 1;
    }
    assert_eq!(asked, 2);
}
