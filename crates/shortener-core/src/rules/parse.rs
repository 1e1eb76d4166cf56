//! Checking rules as carried ([`RuleSpec`]) into [`Rules`], naming the first bad field
//! as the API shows it, and writing them back.

use ipnet::IpNet;
use time::OffsetDateTime;

use super::{
    Browser, Condition, ConditionSpec, Device, MAX_CONDITIONS, MAX_RULES, MAX_TEXT_BYTES,
    MAX_VARIANTS, MAX_WEIGHT, MIN_VARIANTS, Os, Rule, RuleError, RuleSpec, RuleTarget, Rules,
    VariantSpec,
};
use crate::{RedirectStatus, TargetUrl};

impl Rules {
    /// Checks `specs` whole.
    ///
    /// # Errors
    /// The first bad field, named as `rules[i]...`.
    pub fn parse(specs: &[RuleSpec]) -> Result<Self, RuleError> {
        if specs.len() > MAX_RULES {
            return Err(bad("rules".into(), format!("at most {MAX_RULES} rules")));
        }
        let mut rules = Vec::with_capacity(specs.len());
        for (index, spec) in specs.iter().enumerate() {
            let here = format!("rules[{index}]");
            let rule = Rule::parse(spec, &here)?;
            if let Some(name) = &rule.name {
                let taken = (rules.iter()).any(|other: &Rule| other.name.as_ref() == Some(name));
                if taken {
                    return Err(bad(
                        format!("{here}.name"),
                        "is the name of an earlier rule",
                    ));
                }
            }
            rules.push(rule);
        }
        Ok(Self { rules })
    }
}

impl Rule {
    fn parse(spec: &RuleSpec, here: &str) -> Result<Self, RuleError> {
        if let Some(name) = &spec.name {
            let field = format!("{here}.name");
            text(name, &field)?;
            if name.is_empty() {
                return Err(bad(field, "must not be empty"));
            }
            if name == super::NO_RULE {
                return Err(bad(
                    field,
                    "is what visits that no rule sent are counted as",
                ));
            }
        }
        if spec.conditions.len() > MAX_CONDITIONS {
            let message = format!("at most {MAX_CONDITIONS} conditions");
            return Err(bad(format!("{here}.conditions"), message));
        }
        let conditions = (spec.conditions.iter().enumerate())
            .map(|(index, condition)| {
                Condition::parse(condition, &format!("{here}.conditions[{index}]"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let target = match (&spec.url, &spec.split) {
            (Some(url), None) => RuleTarget::Url(target(url, &format!("{here}.url"))?),
            (None, Some(split)) => RuleTarget::Split(variants(split, &format!("{here}.split"))?),
            _ => return Err(bad(here.to_owned(), "needs exactly one of url and split")),
        };
        let redirect_status = match spec.redirect_status {
            None => None,
            Some(code) => Some(RedirectStatus::from_code(code).ok_or_else(|| {
                bad(
                    format!("{here}.redirect_status"),
                    "must be 301, 302, 307 or 308",
                )
            })?),
        };
        Ok(Self {
            name: spec.name.clone(),
            conditions,
            target,
            redirect_status,
        })
    }

    pub(super) fn to_spec(&self) -> RuleSpec {
        let (url, split) = match &self.target {
            RuleTarget::Url(url) => (Some(url.as_str().to_owned()), None),
            RuleTarget::Split(variants) => (
                None,
                Some(
                    (variants.iter())
                        .map(|(url, weight)| VariantSpec {
                            url: url.as_str().to_owned(),
                            weight: *weight,
                        })
                        .collect(),
                ),
            ),
        };
        RuleSpec {
            name: self.name.clone(),
            conditions: self.conditions.iter().map(Condition::to_spec).collect(),
            url,
            split,
            redirect_status: self.redirect_status.map(RedirectStatus::code),
        }
    }
}

impl Condition {
    fn parse(spec: &ConditionSpec, here: &str) -> Result<Self, RuleError> {
        let field = |name: &str| format!("{here}.{name}");
        if spec.kind != "query" && spec.key.is_some() {
            return Err(bad(field("key"), "is only for a query condition"));
        }
        let value = || {
            spec.value
                .as_deref()
                .ok_or_else(|| bad(field("value"), "is missing"))
        };
        let one_of = |names: &[&str]| format!("must be one of {}", names.join(", "));
        let condition = match spec.kind.as_str() {
            "device" => Self::Device(Device::parse(value()?).ok_or_else(|| {
                bad(
                    field("value"),
                    one_of(&Device::ALL.iter().map(|d| d.as_str()).collect::<Vec<_>>()),
                )
            })?),
            "os" => Self::Os(Os::parse(value()?).ok_or_else(|| {
                bad(
                    field("value"),
                    one_of(&Os::ALL.iter().map(|o| o.as_str()).collect::<Vec<_>>()),
                )
            })?),
            "browser" => Self::Browser(Browser::parse(value()?).ok_or_else(|| {
                bad(
                    field("value"),
                    one_of(&Browser::ALL.iter().map(|b| b.as_str()).collect::<Vec<_>>()),
                )
            })?),
            "language" => Self::Language(language(value()?, &field("value"))?),
            "country" => {
                let code = value()?;
                if code.len() != 2 || !code.bytes().all(|b| b.is_ascii_alphabetic()) {
                    return Err(bad(
                        field("value"),
                        "must be a two-letter country code (ISO 3166-1)",
                    ));
                }
                Self::Country(code.to_ascii_uppercase())
            }
            "query" => {
                let key = spec
                    .key
                    .as_deref()
                    .ok_or_else(|| bad(field("key"), "is missing"))?;
                if key.is_empty() {
                    return Err(bad(field("key"), "must not be empty"));
                }
                text(key, &field("key"))?;
                if let Some(value) = &spec.value {
                    text(value, &field("value"))?;
                }
                Self::Query {
                    key: key.to_owned(),
                    value: spec.value.clone(),
                }
            }
            "after" | "before" => {
                let instant =
                    OffsetDateTime::parse(value()?, &time::format_description::well_known::Rfc3339)
                        .map_err(|_| {
                            bad(
                                field("value"),
                                "must be an RFC 3339 time (2027-01-01T00:00:00Z)",
                            )
                        })?;
                if spec.kind == "after" {
                    Self::After(instant)
                } else {
                    Self::Before(instant)
                }
            }
            "network" => Self::Network(
                value()?
                    .parse::<IpNet>()
                    .map_err(|_| {
                        bad(
                            field("value"),
                            "must be a network in CIDR form (192.0.2.0/24, 2001:db8::/32)",
                        )
                    })?
                    .trunc(),
            ),
            _ => {
                return Err(bad(
                    field("type"),
                    "must be one of device, os, browser, language, country, query, after, before, network",
                ));
            }
        };
        Ok(condition)
    }

    fn to_spec(&self) -> ConditionSpec {
        let plain = |kind: &str, value: String| ConditionSpec {
            kind: kind.to_owned(),
            key: None,
            value: Some(value),
        };
        let rfc3339 = |instant: &OffsetDateTime| {
            instant
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default()
        };
        match self {
            Self::Device(device) => plain("device", device.as_str().to_owned()),
            Self::Os(os) => plain("os", os.as_str().to_owned()),
            Self::Browser(browser) => plain("browser", browser.as_str().to_owned()),
            Self::Language(tag) => plain("language", tag.clone()),
            Self::Country(code) => plain("country", code.clone()),
            Self::Query { key, value } => ConditionSpec {
                kind: "query".to_owned(),
                key: Some(key.clone()),
                value: value.clone(),
            },
            Self::After(instant) => plain("after", rfc3339(instant)),
            Self::Before(instant) => plain("before", rfc3339(instant)),
            Self::Network(network) => plain("network", network.to_string()),
        }
    }
}

fn bad(field: String, message: impl Into<String>) -> RuleError {
    RuleError {
        field,
        message: message.into(),
    }
}

fn text(value: &str, field: &str) -> Result<(), RuleError> {
    if value.len() > MAX_TEXT_BYTES || value.chars().any(char::is_control) {
        return Err(bad(
            field.to_owned(),
            format!("must be at most {MAX_TEXT_BYTES} bytes, without control characters"),
        ));
    }
    Ok(())
}

fn target(url: &str, field: &str) -> Result<TargetUrl, RuleError> {
    TargetUrl::parse(url).map_err(|error| bad(field.to_owned(), error.0))
}

fn variants(split: &[VariantSpec], field: &str) -> Result<Vec<(TargetUrl, u32)>, RuleError> {
    if !(MIN_VARIANTS..=MAX_VARIANTS).contains(&split.len()) {
        let message = format!("needs {MIN_VARIANTS} to {MAX_VARIANTS} variants");
        return Err(bad(field.to_owned(), message));
    }
    (split.iter().enumerate())
        .map(|(index, variant)| {
            let here = format!("{field}[{index}]");
            if !(1..=MAX_WEIGHT).contains(&variant.weight) {
                let message = format!("must be a whole number from 1 to {MAX_WEIGHT}");
                return Err(bad(format!("{here}.weight"), message));
            }
            Ok((
                target(&variant.url, &format!("{here}.url"))?,
                variant.weight,
            ))
        })
        .collect()
}

/// A language tag of letters, digits and `-`: a primary tag of 2 to 8 letters, then
/// subtags of 1 to 8; kept lowercase.
fn language(tag: &str, field: &str) -> Result<String, RuleError> {
    let mut parts = tag.split('-');
    let primary = parts.next().unwrap_or_default();
    let primary_ok =
        (2..=8).contains(&primary.len()) && primary.bytes().all(|b| b.is_ascii_alphabetic());
    let rest_ok = parts.all(|part| {
        (1..=8).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    if !primary_ok || !rest_ok {
        return Err(bad(field.to_owned(), "must be a language tag (en, en-GB)"));
    }
    Ok(tag.to_ascii_lowercase())
}
