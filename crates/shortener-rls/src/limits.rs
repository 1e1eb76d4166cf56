//! The limits of every domain, as a tree read from envoyproxy/ratelimit's YAML files, and
//! the matcher that finds a request descriptor's limit in it (their `GetLimit`):
//! - each entry of the descriptor is looked up at its level as `key_value`, then against
//!   the level's wildcards (`value: foo*`, `*` matching any run), then as `key` alone (a
//!   key without a value, which counts each value on its own);
//! - the limit applies only when the entry that reaches it is the descriptor's last, so
//!   the most specific configured match wins and a deeper descriptor matches nothing;
//! - a descriptor's own `limit` (Envoy's override) replaces the file's.
//!
//! Not here: the decision (see `service.rs`) and reading the files (`reload.rs`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use shortener_core::{Algorithm, Policy};

use crate::yaml;

mod matcher;
mod policy;
#[cfg(test)]
mod tests;

pub use matcher::{Entry, Matched};
pub use policy::{parse_algorithm, policy_for};

/// Every domain's descriptor tree.
#[derive(Debug, Default)]
pub struct Limits {
    domains: HashMap<String, Level>,
    /// The algorithm of a limit that names none (`rls.algorithm`), and of overrides.
    algorithm: Algorithm,
    /// The domains of files that did not load at start (see [`Limits::load_each`]): their
    /// requests are answered as the limiter's errors are, not as if unlimited.
    broken: std::collections::HashSet<String>,
}

/// A limits file that cannot be loaded: the file and what is wrong, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct LoadError {
    pub file: String,
    pub message: String,
}

/// A time unit of `rate_limit.unit`, with Envoy's protobuf number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

/// One configured (or overriding) limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// `domain.key_value.key`: the metric key, as theirs.
    pub full_key: String,
    /// The bucket's policy: unambiguous path of the configuration node.
    pub bucket: String,
    pub requests_per_unit: u32,
    pub unit: Unit,
    pub unlimited: bool,
    pub shadow_mode: bool,
    /// Over its limit, it refuses the request only when every quota descriptor of the
    /// request is over (their `quota_mode`).
    pub quota_mode: bool,
    pub name: String,
    pub replaces: Vec<String>,
    pub detailed_metric: bool,
    /// The descriptor's `algorithm:` (ours), else the service's.
    pub algorithm: Algorithm,
    /// `None` for an unlimited limit and for a limit of 0 (which refuses everything).
    pub policy: Option<Policy>,
    /// The descriptor's `metadata:`, for the answer's dynamic metadata.
    pub metadata: Option<envoy_types::pb::google::protobuf::Struct>,
}

/// The descriptors of one level, by `key_value` or `key`, and its wildcard patterns.
#[derive(Debug, Default)]
struct Level {
    children: HashMap<String, Node>,
    /// (`key_value*`, its parts split on `*`), in file order: the first match wins.
    wildcards: Vec<(String, Vec<String>)>,
}

#[derive(Debug)]
struct Node {
    limit: Option<Arc<Limit>>,
    level: Level,
    value_to_metric: bool,
    share_threshold: bool,
}

impl Unit {
    fn parse(text: &str) -> Option<Self> {
        Some(match text.to_ascii_uppercase().as_str() {
            "SECOND" => Self::Second,
            "MINUTE" => Self::Minute,
            "HOUR" => Self::Hour,
            "DAY" => Self::Day,
            "WEEK" => Self::Week,
            "MONTH" => Self::Month,
            "YEAR" => Self::Year,
            _ => return None,
        })
    }

    /// Envoy's `RateLimitResponse.RateLimit.Unit` number.
    pub fn proto(self) -> i32 {
        match self {
            Self::Second => 1,
            Self::Minute => 2,
            Self::Hour => 3,
            Self::Day => 4,
            Self::Month => 5,
            Self::Year => 6,
            Self::Week => 7,
        }
    }

    /// From Envoy's number (an override's unit); `None` for UNKNOWN and others.
    pub fn from_proto(number: i32) -> Option<Self> {
        Some(match number {
            1 => Self::Second,
            2 => Self::Minute,
            3 => Self::Hour,
            4 => Self::Day,
            5 => Self::Month,
            6 => Self::Year,
            7 => Self::Week,
            _ => return None,
        })
    }

    /// Seconds in the unit, as theirs counts them (a month is 30 days, a year 365).
    pub fn seconds(self) -> u64 {
        match self {
            Self::Second => 1,
            Self::Minute => 60,
            Self::Hour => 3_600,
            Self::Day => 86_400,
            Self::Week => 604_800,
            Self::Month => 2_592_000,
            Self::Year => 31_536_000,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::Year => "year",
        }
    }
}

impl Limits {
    /// Loads `(file name, text)` pairs in order. A domain in two files is an error unless
    /// `merge_domains` (their `MERGE_DOMAIN_CONFIG`), when the second adds to the first.
    /// `algorithm` decides the limits that name none, and the requests' overrides.
    ///
    /// # Errors
    /// The first [`LoadError`]: bad YAML, an unknown key, an empty domain or key, a
    /// duplicate domain or descriptor, a bad unit, a bad `replaces`, and so on.
    pub fn load(
        files: &[(String, String)],
        merge_domains: bool,
        algorithm: Algorithm,
    ) -> Result<Self, LoadError> {
        let mut limits = Self {
            domains: HashMap::new(),
            algorithm,
            broken: std::collections::HashSet::new(),
        };
        for (file, text) in files {
            let error = |message: String| LoadError {
                file: file.clone(),
                message,
            };
            let parsed =
                yaml::parse(text).map_err(|e| error(format!("error loading config file: {e}")))?;
            if parsed.domain.is_empty() {
                return Err(error("config file cannot have empty domain".into()));
            }
            if limits.domains.contains_key(&parsed.domain) && !merge_domains {
                return Err(error(format!(
                    "duplicate domain '{}' in config file",
                    parsed.domain
                )));
            }
            let domain = limits.domains.entry(parsed.domain.clone()).or_default();
            let path = Path {
                metric: parsed.domain.clone(),
                bucket: escape(&parsed.domain),
            };
            domain
                .load(&path, &parsed.descriptors, algorithm)
                .map_err(error)?;
        }
        Ok(limits)
    }

    /// Loads every file that loads (with the ones before it that did), and names the rest:
    /// at start, one bad file must not take every domain's limits down. The domain a bad
    /// file names, when it can be read and no good file configures it, is marked broken
    /// ([`Limits::is_broken`]).
    pub fn load_each(
        files: &[(String, String)],
        merge_domains: bool,
        algorithm: Algorithm,
    ) -> (Self, Vec<LoadError>) {
        let mut good: Vec<(String, String)> = Vec::new();
        let mut errors = Vec::new();
        let mut bad_domains = Vec::new();
        for file in files {
            good.push(file.clone());
            if let Err(error) = Self::load(&good, merge_domains, algorithm) {
                good.pop();
                errors.push(error);
                let named = serde_yaml::from_str::<serde_yaml::Value>(&file.1)
                    .ok()
                    .and_then(|yaml| yaml.get("domain")?.as_str().map(str::to_owned));
                bad_domains.extend(named);
            }
        }
        // Every file of `good` loaded together with the ones before it.
        let mut limits = Self::load(&good, merge_domains, algorithm).unwrap_or_else(|_| Self {
            algorithm,
            ..Self::default()
        });
        limits.broken = (bad_domains.into_iter())
            .filter(|domain| !domain.is_empty() && !limits.domains.contains_key(domain))
            .collect();
        (limits, errors)
    }

    /// Whether `domain`'s file did not load at start (and no reload has loaded it since).
    pub fn is_broken(&self, domain: &str) -> bool {
        self.broken.contains(domain)
    }

    /// Whether no domain is configured.
    pub fn is_empty(&self) -> bool {
        self.domains.is_empty()
    }

    /// The configured domains.
    pub fn domains(&self) -> impl Iterator<Item = &str> {
        self.domains.keys().map(String::as_str)
    }
}

/// Where a level is in the tree: its metric key, and its bucket path.
struct Path {
    metric: String,
    bucket: String,
}

impl Level {
    fn load(
        &mut self,
        path: &Path,
        descriptors: &[yaml::Descriptor],
        default: Algorithm,
    ) -> Result<(), String> {
        for descriptor in descriptors {
            if descriptor.key.is_empty() {
                return Err("descriptor has empty key".into());
            }
            let mut final_key = descriptor.key.clone();
            if !descriptor.value.is_empty() {
                final_key = format!("{final_key}_{}", descriptor.value);
            }
            let here = Path {
                metric: format!("{}.{final_key}", path.metric),
                bucket: format!("{}.{}", path.bucket, escape(&final_key)),
            };
            if self.children.contains_key(&final_key) {
                return Err(format!(
                    "duplicate descriptor composite key '{}'",
                    here.metric
                ));
            }
            let algorithm = match &descriptor.algorithm {
                None => default,
                Some(name) => {
                    parse_algorithm(name).map_err(|e| format!("{e} at '{}'", here.metric))?
                }
            };
            let limit = match &descriptor.rate_limit {
                None => None,
                Some(rate_limit) => {
                    Some(Arc::new(limit(&here, descriptor, rate_limit, algorithm)?))
                }
            };
            if descriptor.share_threshold && !final_key.contains('*') {
                return Err(format!(
                    "share_threshold can only be used with wildcard values (containing '*'), \
                     but found key '{final_key}'"
                ));
            }
            if final_key.contains('*') {
                let parts = final_key.split('*').map(str::to_owned).collect();
                self.wildcards.push((final_key.clone(), parts));
            }
            let mut node = Node {
                limit,
                level: Level::default(),
                value_to_metric: descriptor.value_to_metric,
                share_threshold: descriptor.share_threshold,
            };
            node.level.load(&here, &descriptor.descriptors, default)?;
            self.children.insert(final_key, node);
        }
        Ok(())
    }
}

fn limit(
    path: &Path,
    descriptor: &yaml::Descriptor,
    rate_limit: &yaml::RateLimit,
    algorithm: Algorithm,
) -> Result<Limit, String> {
    let unit = Unit::parse(&rate_limit.unit);
    if rate_limit.unlimited && unit.is_some() {
        return Err("should not specify rate limit unit when unlimited".into());
    }
    let unit = match unit {
        Some(unit) => unit,
        None if rate_limit.unlimited => Unit::Second,
        None => {
            return Err(format!(
                "invalid rate limit unit '{}' at '{}'",
                rate_limit.unit, path.metric
            ));
        }
    };
    let mut replaces = Vec::new();
    for replaced in &rate_limit.replaces {
        if replaced.name.is_empty() {
            return Err("should not have an empty replaces entry".into());
        }
        if replaced.name == rate_limit.name {
            return Err("replaces should not contain name of same descriptor".into());
        }
        replaces.push(replaced.name.clone());
    }
    let policy = if rate_limit.unlimited {
        None
    } else {
        policy_for(&path.bucket, rate_limit.requests_per_unit, unit, algorithm)
            .map_err(|e| format!("{e} (at '{}')", path.metric))?
    };
    Ok(Limit {
        full_key: path.metric.clone(),
        bucket: path.bucket.clone(),
        requests_per_unit: rate_limit.requests_per_unit,
        unit,
        unlimited: rate_limit.unlimited,
        shadow_mode: descriptor.shadow_mode,
        quota_mode: descriptor.quota_mode,
        name: rate_limit.name.clone(),
        replaces,
        detailed_metric: descriptor.detailed_metric,
        algorithm,
        policy,
        metadata: (descriptor.metadata.as_ref())
            .map(crate::metadata::from_yaml)
            .transpose()
            .map_err(|e| format!("{e} (at '{}')", path.metric))?,
    })
}

/// Percent-encodes the characters that separate parts of a bucket's name, so that no two
/// different descriptors name one bucket.
pub(crate) fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '%' | '.' | ':' | '=' | '&' | '{' | '}' => {
                let _ = write!(escaped, "%{:02X}", u32::from(character));
            }
            other => escaped.push(other),
        }
    }
    escaped
}
