//! A request descriptor to its limit, its bucket and its metric key (their `GetLimit`).

use std::sync::Arc;

use super::{Level, Limit, Limits, Unit, escape, policy_for};

/// One entry of a request's descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    pub key: &'a str,
    pub value: &'a str,
}

/// The limit a descriptor matched, and what its decision is made and counted under.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched {
    pub limit: Arc<Limit>,
    /// The bucket's identity within the domain: every entry's key and value (a key
    /// without a value in the file counts each value apart); an entry matched by a
    /// `share_threshold` wildcard counts under the pattern, so all its values share it.
    pub identity: String,
    /// envoyproxy/ratelimit's cache key without its prefix and window: the domain, then
    /// each entry's key and value (or `share_threshold` pattern), each followed by `_`.
    /// A fixed window's count is kept under it, so that their pods and ours share it.
    pub cache_key: String,
    /// The `key1`, `key2`, ... labels of the metrics (one per level below the domain):
    /// the limit's key, or the request's own entries where the file asks for
    /// `detailed_metric` or `value_to_metric`.
    pub metric_key: Vec<String>,
}

impl Limits {
    /// The limit of one descriptor of a request to `domain`, if any. `overriding` is the
    /// descriptor's own limit (Envoy's `limit`), which replaces the file's for a
    /// configured domain.
    pub fn find(
        &self,
        domain: &str,
        entries: &[Entry<'_>],
        overriding: Option<(u32, Unit)>,
    ) -> Option<Matched> {
        let mut level: &Level = self.domains.get(domain)?;
        if let Some((requests, unit)) = overriding {
            return override_limit(domain, entries, requests, unit, self.algorithm);
        }
        let mut found: Option<&Arc<Limit>> = None;
        let mut shared: Vec<Option<String>> = vec![None; entries.len()];
        let mut detailed = Vec::with_capacity(entries.len());
        let mut valued: Vec<String> = Vec::with_capacity(entries.len());
        for (index, entry) in entries.iter().enumerate() {
            let key_value = format!("{}_{}", entry.key, entry.value);
            detailed.push(key_value.clone());
            let mut node = level.children.get(&key_value);
            let mut wildcard: Option<&str> = None;
            if node.is_none() {
                for (pattern, parts) in &level.wildcards {
                    if wildcard_match(parts, &key_value) {
                        node = level.children.get(pattern);
                        wildcard = Some(pattern);
                        break;
                    }
                }
            }
            let by_value = node.is_some();
            if node.is_none() {
                node = level.children.get(entry.key);
            }
            match node {
                Some(next) => {
                    let prefix = format!("{}_", entry.key);
                    let pattern_value = wildcard.map(|p| p.strip_prefix(&prefix).unwrap_or(p));
                    if next.share_threshold {
                        shared[index] = pattern_value.map(str::to_owned);
                    }
                    let shown = match pattern_value {
                        Some(pattern) if next.share_threshold || !next.value_to_metric => {
                            Some(pattern)
                        }
                        Some(_) => Some(entry.value),
                        None if by_value || next.value_to_metric => Some(entry.value),
                        None => None,
                    };
                    valued.push(match shown.filter(|shown| !shown.is_empty()) {
                        Some(shown) => format!("{}_{shown}", entry.key),
                        None => entry.key.to_owned(),
                    });
                    if next.limit.is_some() && index == entries.len() - 1 {
                        found = next.limit.as_ref();
                    }
                    if next.level.children.is_empty() {
                        break;
                    }
                    level = &next.level;
                }
                None => {
                    valued.push(entry.key.to_owned());
                    break;
                }
            }
        }
        let limit = Arc::clone(found?);
        let metric_key = if limit.detailed_metric {
            if shared.iter().any(Option::is_some) {
                shared_key(entries, &shared)
            } else {
                detailed
            }
        } else {
            valued
        };
        Some(Matched {
            identity: identity(entries, &shared),
            cache_key: cache_key(domain, entries, &shared),
            metric_key,
            limit,
        })
    }
}

/// `*` matches any run of characters (none included); the parts are the pattern split
/// on `*`, so one part is a literal.
fn wildcard_match(parts: &[String], value: &str) -> bool {
    let [first, middle @ .., last] = parts else {
        return parts.first().is_some_and(|only| only == value);
    };
    let fixed: usize = parts.iter().map(String::len).sum();
    if value.len() < fixed || !value.starts_with(first.as_str()) || !value.ends_with(last.as_str())
    {
        return false;
    }
    let mut rest = &value[first.len()..value.len() - last.len()];
    for part in middle {
        match rest.find(part.as_str()) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

fn identity(entries: &[Entry<'_>], shared: &[Option<String>]) -> String {
    let mut identity = String::new();
    for (index, entry) in entries.iter().enumerate() {
        if index > 0 {
            identity.push('&');
        }
        identity.push_str(&escape(entry.key));
        identity.push('=');
        match &shared[index] {
            Some(pattern) => {
                identity.push('*');
                identity.push_str(&escape(pattern));
            }
            None => identity.push_str(&escape(entry.value)),
        }
    }
    identity
}

/// Their `GenerateCacheKey` up to the window: `domain_key_value_key_value_`, unescaped
/// as theirs is (a `_` in a value can make two descriptors share a key there too).
fn cache_key(domain: &str, entries: &[Entry<'_>], shared: &[Option<String>]) -> String {
    let mut key = String::with_capacity(
        domain.len()
            + 1
            + (entries.iter())
                .map(|e| e.key.len() + e.value.len() + 2)
                .sum::<usize>(),
    );
    key.push_str(domain);
    key.push('_');
    for (entry, shared) in entries.iter().zip(shared) {
        key.push_str(entry.key);
        key.push('_');
        key.push_str(shared.as_deref().unwrap_or(entry.value));
        key.push('_');
    }
    key
}

fn shared_key(entries: &[Entry<'_>], shared: &[Option<String>]) -> Vec<String> {
    entries
        .iter()
        .zip(shared)
        .map(|(entry, pattern)| key_value(entry.key, pattern.as_deref().unwrap_or(entry.value)))
        .collect()
}

fn key_value(key: &str, value: &str) -> String {
    if value.is_empty() {
        key.to_owned()
    } else {
        format!("{key}_{value}")
    }
}

/// Their `descriptorKey`, by level: `key_value`, or `key` for an empty value.
fn descriptor_key(entries: &[Entry<'_>]) -> Vec<String> {
    entries
        .iter()
        .map(|entry| key_value(entry.key, entry.value))
        .collect()
}

fn override_limit(
    domain: &str,
    entries: &[Entry<'_>],
    requests: u32,
    unit: Unit,
    algorithm: shortener_core::Algorithm,
) -> Option<Matched> {
    let bucket = format!("override:{requests}/{}", unit.proto());
    // A rate this limiter cannot decide exactly is refused in the file, but an override
    // comes with the request: it is clamped to the fastest exact rate instead.
    let policy = policy_for(&bucket, requests, unit, algorithm).unwrap_or_else(|_| {
        let capacity = u64::from(requests);
        shortener_core::Policy::from_interval(&bucket, capacity, 20).ok()
    });
    let metric_key = descriptor_key(entries);
    let limit = Limit {
        full_key: format!("{domain}.{}", metric_key.join(".")),
        bucket,
        requests_per_unit: requests,
        unit,
        unlimited: false,
        shadow_mode: false,
        quota_mode: false,
        name: String::new(),
        replaces: Vec::new(),
        detailed_metric: false,
        algorithm,
        policy,
        // As theirs: an override is the request's, and carries no metadata of the file's.
        metadata: None,
    };
    Some(Matched {
        limit: Arc::new(limit),
        identity: identity(entries, &vec![None; entries.len()]),
        cache_key: cache_key(domain, entries, &vec![None; entries.len()]),
        metric_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(pattern: &str) -> Vec<String> {
        pattern.split('*').map(str::to_owned).collect()
    }

    #[test]
    fn wildcards_match_any_run_of_characters() {
        let cases = [
            ("path_/foo*", "path_/foo", true),
            ("path_/foo*", "path_/foo/bar", true),
            ("path_/foo*", "path_/fo", false),
            ("path_bar*baz*qux", "path_barXbazYqux", true),
            ("path_bar*baz*qux", "path_barbazqux", true),
            ("path_bar*baz*qux", "path_barquxbaz", false),
            ("path_a*a", "path_a", false),
            ("path_x", "path_x", true),
        ];
        for (pattern, value, expected) in cases {
            assert_eq!(
                wildcard_match(&parts(pattern), value),
                expected,
                "{pattern} ~ {value}"
            );
        }
    }

    #[test]
    fn identities_never_alias() {
        let a = [Entry {
            key: "a=b",
            value: "c",
        }];
        let b = [Entry {
            key: "a",
            value: "b=c",
        }];
        assert_ne!(identity(&a, &[None]), identity(&b, &[None]));
        let c = [
            Entry {
                key: "a",
                value: "b",
            },
            Entry {
                key: "c",
                value: "d",
            },
        ];
        let d = [Entry {
            key: "a",
            value: "b&c=d",
        }];
        assert_ne!(identity(&c, &[None, None]), identity(&d, &[None]));
    }
}
