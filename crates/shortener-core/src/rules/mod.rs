//! Redirect rules: an ordered list of rules per link, each a set of conditions on the
//! visitor that must all hold and the target it sends to (one URL, or a weighted split
//! between variants); the first rule that matches wins, else the link's own URL.
//!
//! [`RuleSpec`] is the plain form the API, the stores and the import files carry;
//! [`Rules::parse`] checks it whole and names the first bad field as the API shows it
//! (`rules[2].conditions[0].value`). [`resolve`] is the evaluator: a pure function of
//! the rules and of what it asks the visitor ([`VisitorFacts`]), which it asks lazily, so
//! that a rule list that names no country never looks one up.
//!
//! Not here: reading headers, parsing a User-Agent or looking up a country (the HTTP
//! adapter answers [`VisitorFacts`]), storing rules, or counting visits by rule.

mod parse;
mod resolve;
#[cfg(test)]
mod tests;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{RedirectStatus, TargetUrl};

pub use resolve::{Resolution, VisitorFacts, accepts_language, resolve, split_point};

/// Rules per link, at most.
pub const MAX_RULES: usize = 16;
/// Conditions per rule, at most.
pub const MAX_CONDITIONS: usize = 8;
/// Variants of a split: at least two, at most ten.
pub const MIN_VARIANTS: usize = 2;
pub const MAX_VARIANTS: usize = 10;
/// A variant's weight: a whole number from 1 to this.
pub const MAX_WEIGHT: u32 = 10_000;
/// A rule's name, and a query condition's key or value, in bytes at most.
pub const MAX_TEXT_BYTES: usize = 64;
/// What the visits of a link with rules that no rule sent are counted as (`by=rule`);
/// no rule may take it as a name.
pub const NO_RULE: &str = "default";

/// A rule as the API and the stores carry it: unchecked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub conditions: Vec<ConditionSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<Vec<VariantSpec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_status: Option<u16>,
}

/// A condition as carried: its `type`, and a `key` (query) and `value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionSpec {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// A split's variant as carried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantSpec {
    pub url: String,
    pub weight: u32,
}

/// The request headers a list of rules reads, for the `Vary` of its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reads {
    pub user_agent: bool,
    pub accept_language: bool,
}

/// A link's checked rules, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub name: Option<String>,
    pub conditions: Vec<Condition>,
    pub target: RuleTarget,
    pub redirect_status: Option<RedirectStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleTarget {
    Url(TargetUrl),
    /// Variants and their weights; the total fits a `u32`.
    Split(Vec<(TargetUrl, u32)>),
}

/// What a condition asks of a visit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    Device(Device),
    Os(Os),
    Browser(Browser),
    /// A language tag, lowercase: a primary tag (`en`) or a full one (`en-gb`).
    Language(String),
    /// An ISO 3166-1 alpha-2 code, uppercase.
    Country(String),
    /// A query parameter present (`value: None`) or equal to a value.
    Query {
        key: String,
        value: Option<String>,
    },
    After(OffsetDateTime),
    Before(OffsetDateTime),
    Network(IpNet),
}

/// Why rules were refused: the field as the API names it, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct RuleError {
    pub field: String,
    pub message: String,
}

macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            /// Every value, in the order the API documents them.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }

            /// The value named `text` (case-insensitive).
            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|value| value.as_str().eq_ignore_ascii_case(text))
            }
        }
    };
}

names!(
    /// A visitor's device class; crawlers are a class of their own.
    Device { Mobile = "mobile", Tablet = "tablet", Desktop = "desktop", Bot = "bot" }
);
names!(
    /// A visitor's operating system family.
    Os {
        Android = "android", Ios = "ios", Windows = "windows", Macos = "macos",
        Linux = "linux", Chromeos = "chromeos",
    }
);
names!(
    /// A visitor's browser family.
    Browser {
        Chrome = "chrome", Firefox = "firefox", Safari = "safari", Edge = "edge",
        Opera = "opera", Samsung = "samsung", InternetExplorer = "ie",
    }
);

impl Rules {
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Which request headers the answer of a visit may depend on: those that some
    /// condition of some rule reads, whether or not a visit gets to it.
    pub fn reads(&self) -> Reads {
        let conditions = || self.rules.iter().flat_map(|rule| &rule.conditions);
        Reads {
            user_agent: conditions().any(|condition| {
                matches!(
                    condition,
                    Condition::Device(_) | Condition::Os(_) | Condition::Browser(_)
                )
            }),
            accept_language: conditions()
                .any(|condition| matches!(condition, Condition::Language(_))),
        }
    }

    /// Every URL the rules send to, with its field as the API names it
    /// (`rules[1].url`, `rules[2].split[0].url`), for the checks a link's own URL gets.
    pub fn targets(&self) -> impl Iterator<Item = (String, &TargetUrl)> {
        self.rules.iter().enumerate().flat_map(|(index, rule)| {
            let urls: Vec<(String, &TargetUrl)> = match &rule.target {
                RuleTarget::Url(url) => vec![(format!("rules[{index}].url"), url)],
                RuleTarget::Split(variants) => (variants.iter().enumerate())
                    .map(|(at, (url, _))| (format!("rules[{index}].split[{at}].url"), url))
                    .collect(),
            };
            urls
        })
    }

    /// The plain form, as [`Rules::parse`] takes it back.
    pub fn to_specs(&self) -> Vec<RuleSpec> {
        self.rules.iter().map(Rule::to_spec).collect()
    }
}
