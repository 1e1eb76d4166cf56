//! The evaluator: the first rule whose conditions all hold, and for a split the variant
//! a visitor keeps, from a hash of the link and the visitor's identity (the same on every
//! node, with no state and no cookie).

use std::net::IpAddr;

use time::OffsetDateTime;

use super::{Browser, Condition, Device, Os, Rule, RuleTarget, Rules};
use crate::{RedirectStatus, TargetUrl};

/// What the evaluator may ask of a visit. Each is asked only when a condition needs it,
/// at most once per condition; an adapter caches what is costly (the User-Agent's parse,
/// the country's lookup).
pub trait VisitorFacts {
    fn device(&mut self) -> Option<Device>;
    fn os(&mut self) -> Option<Os>;
    fn browser(&mut self) -> Option<Browser>;
    /// The `Accept-Language` header, if any.
    fn accept_language(&mut self) -> Option<&str>;
    /// The visitor's country, uppercase ISO 3166-1 alpha-2.
    fn country(&mut self) -> Option<&str>;
    /// The query parameter `key`: `None` when absent, `Some(None)` when present without
    /// a value (`?ref`), `Some(Some(value))` otherwise; the first occurrence.
    fn query(&mut self, key: &str) -> Option<Option<&str>>;
    fn now(&mut self) -> OffsetDateTime;
    /// The client's address, as the visitor's identity reads it.
    fn address(&mut self) -> Option<IpAddr>;
}

/// Where a visit goes when a rule matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolution<'r> {
    /// The rule's position, from 0.
    pub rule: usize,
    pub name: Option<&'r str>,
    pub url: &'r TargetUrl,
    /// The variant's position, for a split.
    pub variant: Option<usize>,
    pub redirect_status: Option<RedirectStatus>,
}

impl Resolution<'_> {
    /// What the visit is counted as by rule: the rule's name, else its place
    /// (`rules[2]`).
    pub fn rule_value(&self) -> String {
        match self.name {
            Some(name) => name.to_owned(),
            None => format!("rules[{}]", self.rule),
        }
    }

    /// What the visit is counted as by variant, for a split: the rule's value and the
    /// variant's place (`launch.split[1]`, `rules[2].split[0]`).
    pub fn variant_value(&self) -> Option<String> {
        let variant = self.variant?;
        Some(format!("{}.split[{variant}]", self.rule_value()))
    }
}

/// The first rule of `rules` that `facts` satisfies, and its target; `None` sends the
/// visit to the link's own URL. `link` and `identity` choose a split's variant.
pub fn resolve<'r>(
    rules: &'r Rules,
    facts: &mut impl VisitorFacts,
    link: &str,
    identity: &str,
) -> Option<Resolution<'r>> {
    let (rule, matched) = (rules.rules.iter().enumerate()).find(|(_, rule)| {
        rule.conditions
            .iter()
            .all(|condition| holds(condition, facts))
    })?;
    let (url, variant) = target(matched, link, identity);
    Some(Resolution {
        rule,
        name: matched.name.as_deref(),
        url,
        variant,
        redirect_status: matched.redirect_status,
    })
}

fn target<'r>(rule: &'r Rule, link: &str, identity: &str) -> (&'r TargetUrl, Option<usize>) {
    match &rule.target {
        RuleTarget::Url(url) => (url, None),
        RuleTarget::Split(variants) => {
            let total: u64 = variants.iter().map(|(_, weight)| u64::from(*weight)).sum();
            let mut point = split_point(link, identity) % total.max(1);
            for (index, (url, weight)) in variants.iter().enumerate() {
                let weight = u64::from(*weight);
                if point < weight {
                    return (url, Some(index));
                }
                point -= weight;
            }
            // Unreachable: the point is below the total of the weights.
            (&variants[0].0, Some(0))
        }
    }
}

fn holds(condition: &Condition, facts: &mut impl VisitorFacts) -> bool {
    match condition {
        Condition::Device(device) => facts.device() == Some(*device),
        Condition::Os(os) => facts.os() == Some(*os),
        Condition::Browser(browser) => facts.browser() == Some(*browser),
        Condition::Language(tag) => facts
            .accept_language()
            .is_some_and(|header| accepts_language(header, tag)),
        Condition::Country(code) => facts.country() == Some(code.as_str()),
        Condition::Query { key, value } => match (facts.query(key), value) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(given), Some(wanted)) => given == Some(wanted.as_str()),
        },
        Condition::After(instant) => facts.now() >= *instant,
        Condition::Before(instant) => facts.now() < *instant,
        Condition::Network(network) => facts.address().is_some_and(|address| {
            // An IPv4 client seen as IPv4-mapped IPv6 is its IPv4 address.
            let address = match address {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
                v4 => v4,
            };
            network.contains(&address)
        }),
    }
}

/// Whether an `Accept-Language` header accepts `tag` (lowercase): some language of it
/// with a quality above 0 is `tag`, or, for a primary tag (`fr`), a tag of that language
/// (`fr-CH`). `*` names no language in particular and matches no condition.
pub fn accepts_language(header: &str, tag: &str) -> bool {
    // At most 32 items are read: a header is bounded by the server's head limit already.
    header.split(',').take(32).any(|item| {
        let mut parts = item.split(';');
        let language = parts.next().unwrap_or_default().trim();
        let quality = parts
            .find_map(|parameter| {
                let (name, value) = parameter.split_once('=')?;
                (name.trim().eq_ignore_ascii_case("q")).then(|| value.trim().parse::<f32>().ok())?
            })
            .unwrap_or(1.0);
        if quality <= 0.0 || language == "*" {
            return false;
        }
        let matches_whole = language.eq_ignore_ascii_case(tag);
        let is_primary = !tag.contains('-');
        let matches_primary = is_primary
            && (language.split('-').next())
                .is_some_and(|primary| primary.eq_ignore_ascii_case(tag));
        matches_whole || matches_primary
    })
}

/// A point on the split, the same on every node and in every version: FNV-1a over the
/// link, a separator and the identity, finished with splitmix64's mix so that close
/// identities land far apart.
pub fn split_point(link: &str, identity: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for byte in link.bytes().chain([0xff]).chain(identity.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(PRIME);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}
