//! Redirect rules in the API: their shape in the OpenAPI document ([`RuleBody`], each
//! condition a variant of [`ConditionBody`] with its allowed values), the reader that
//! takes them from a request body naming the first bad field (`rules[2].conditions[0].value`),
//! and the conversions from and to core's [`Rules`].
//!
//! The reader checks the JSON's shape here and the meaning in core ([`Rules::parse`]);
//! whether each rule's URL is one the service redirects to is the create's business
//! (`service/create.rs`, as for the link's own `url`).

use poem_openapi::{Enum, Object, Union};
use serde_json::{Map, Value};
use shortener_core::rules::{self, ConditionSpec, RuleSpec, Rules, VariantSpec};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::fields::FieldError;

/// A redirect rule: when every condition holds, the visit goes to `url`, or to one
/// variant of `split`. The first rule that matches wins; when none does, the link's own
/// `url`.
#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct RuleBody {
    /// A name to count its visits by (`by=rule`), unique per link: 1 to 64 bytes, not
    /// `default` (what visits no rule sent are counted as). Unnamed rules count by
    /// their place: `rules[2]`.
    #[oai(
        skip_serializing_if_is_none,
        validator(min_length = 1, max_length = 64)
    )]
    pub name: Option<String>,
    /// At most 8, all of which must hold; none: every visit matches.
    #[oai(validator(max_items = 8))]
    pub conditions: Vec<ConditionBody>,
    /// Where the rule sends its visits (exactly one of `url` and `split`).
    #[oai(
        skip_serializing_if_is_none,
        validator(min_length = 1, max_length = 8192)
    )]
    pub url: Option<String>,
    /// An A/B test: 2 to 10 variants with weights (exactly one of `url` and `split`).
    /// A visitor keeps their variant: it is chosen by a hash of the link and the
    /// visitor's identity (their network), the same on every node.
    #[oai(skip_serializing_if_is_none, validator(min_items = 2, max_items = 10))]
    pub split: Option<Vec<VariantBody>>,
    /// The status of the rule's redirects (301, 302, 307 or 308); the link's when absent.
    #[oai(skip_serializing_if_is_none)]
    pub redirect_status: Option<u16>,
}

/// One target of a split.
#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct VariantBody {
    #[oai(validator(min_length = 1, max_length = 8192))]
    pub url: String,
    /// Its share against the other variants' weights: 1 to 10000.
    #[oai(validator(minimum(value = "1"), maximum(value = "10000")))]
    pub weight: u32,
}

/// A condition on the visit, by its `type`.
#[derive(Union, Debug, Clone, PartialEq, Eq)]
#[oai(discriminator_name = "type", one_of)]
pub enum ConditionBody {
    /// The device class of the `User-Agent`; crawlers are `bot`.
    #[oai(mapping = "device")]
    Device(DeviceCondition),
    /// The operating system family of the `User-Agent`.
    #[oai(mapping = "os")]
    Os(OsCondition),
    /// The browser family of the `User-Agent`.
    #[oai(mapping = "browser")]
    Browser(BrowserCondition),
    /// A language the visitor accepts (`Accept-Language`, with a quality above 0).
    #[oai(mapping = "language")]
    Language(LanguageCondition),
    /// The visitor's country, from the service's IP database (`visits.geoip_db`).
    #[oai(mapping = "country")]
    Country(CountryCondition),
    /// A query parameter of the visit: present (no `value`) or equal to `value`.
    #[oai(mapping = "query")]
    Query(QueryCondition),
    /// The visit is at or after an instant.
    #[oai(mapping = "after")]
    After(AfterCondition),
    /// The visit is before an instant.
    #[oai(mapping = "before")]
    Before(BeforeCondition),
    /// The client's address (as the rate limiter reads it, behind `trusted_proxies`) is
    /// in a network.
    #[oai(mapping = "network")]
    Network(NetworkCondition),
}

#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct DeviceCondition {
    pub value: DeviceName,
}

#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct OsCondition {
    pub value: OsName,
}

#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct BrowserCondition {
    pub value: BrowserName,
}

#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct LanguageCondition {
    /// A primary tag (`fr`: any French) or a full one (`fr-CH`).
    #[oai(validator(pattern = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"))]
    pub value: String,
}

#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct CountryCondition {
    /// An ISO 3166-1 alpha-2 code (`FR`).
    #[oai(validator(pattern = r"^[A-Za-z]{2}$"))]
    pub value: String,
}

#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct QueryCondition {
    /// The parameter's name (1 to 64 bytes).
    #[oai(validator(min_length = 1, max_length = 64))]
    pub key: String,
    /// The value it must have; absent: present with any value.
    #[oai(skip_serializing_if_is_none, validator(max_length = 64))]
    pub value: Option<String>,
}

/// Two types of one shape, so that the document gives `after` and `before` a schema
/// each (a `oneOf` must match exactly one).
#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct AfterCondition {
    /// RFC 3339 (`2027-01-01T00:00:00Z`).
    pub value: OffsetDateTime,
}

#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct BeforeCondition {
    /// RFC 3339 (`2027-01-01T00:00:00Z`).
    pub value: OffsetDateTime,
}

#[derive(Object, Debug, Clone, PartialEq, Eq)]
pub struct NetworkCondition {
    /// A network in CIDR form, IPv4 or IPv6 (`192.0.2.0/24`, `2001:db8::/32`).
    #[oai(validator(max_length = 43))]
    pub value: String,
}

macro_rules! value_enum {
    ($(#[$doc:meta])* $name:ident from $core:ident {
        $($(#[$attribute:meta])* $variant:ident),+ $(,)?
    }) => {
        $(#[$doc])*
        #[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
        #[oai(rename_all = "lowercase")]
        pub enum $name { $($(#[$attribute])* $variant),+ }

        impl From<rules::$core> for $name {
            fn from(value: rules::$core) -> Self {
                match value { $(rules::$core::$variant => Self::$variant),+ }
            }
        }
    };
}

value_enum!(
    /// A device class.
    DeviceName from Device { Mobile, Tablet, Desktop, Bot }
);
value_enum!(
    /// An operating system family.
    OsName from Os { Android, Ios, Windows, Macos, Linux, Chromeos }
);
value_enum!(
    /// A browser family (`ie`: Internet Explorer; `samsung`: Samsung Internet).
    BrowserName from Browser {
        Chrome, Firefox, Safari, Edge, Opera, Samsung, #[oai(rename = "ie")] InternetExplorer,
    }
);

/// A link's rules as the API shows them.
pub fn bodies(rules: &Rules) -> Vec<RuleBody> {
    rules.to_specs().into_iter().map(body).collect()
}

fn body(spec: RuleSpec) -> RuleBody {
    RuleBody {
        name: spec.name,
        conditions: spec.conditions.into_iter().filter_map(condition).collect(),
        url: spec.url,
        split: spec.split.map(|variants| {
            (variants.into_iter())
                .map(|variant| VariantBody {
                    url: variant.url,
                    weight: variant.weight,
                })
                .collect()
        }),
        redirect_status: spec.redirect_status,
    }
}

/// A checked condition's plain form as its body (`None` cannot happen: the spec comes
/// from checked rules).
fn condition(spec: ConditionSpec) -> Option<ConditionBody> {
    let query_value = spec.value.clone();
    let value = spec.value.unwrap_or_default();
    let instant = |value: &str| OffsetDateTime::parse(value, &Rfc3339).ok();
    Some(match spec.kind.as_str() {
        "device" => ConditionBody::Device(DeviceCondition {
            value: rules::Device::parse(&value)?.into(),
        }),
        "os" => ConditionBody::Os(OsCondition {
            value: rules::Os::parse(&value)?.into(),
        }),
        "browser" => ConditionBody::Browser(BrowserCondition {
            value: rules::Browser::parse(&value)?.into(),
        }),
        "language" => ConditionBody::Language(LanguageCondition { value }),
        "country" => ConditionBody::Country(CountryCondition { value }),
        "query" => ConditionBody::Query(QueryCondition {
            key: spec.key?,
            value: query_value,
        }),
        "after" => ConditionBody::After(AfterCondition {
            value: instant(&value)?,
        }),
        "before" => ConditionBody::Before(BeforeCondition {
            value: instant(&value)?,
        }),
        "network" => ConditionBody::Network(NetworkCondition { value }),
        _ => return None,
    })
}

/// A body's `rules` (`null` or absent: none), checked whole.
///
/// # Errors
/// The first bad field, named from `rules`.
pub fn read(value: Value) -> Result<Rules, FieldError> {
    let Value::Array(items) = value else {
        return Err(FieldError::new("rules", "must be an array of rules"));
    };
    if items.len() > rules::MAX_RULES {
        let message = format!("at most {} rules", rules::MAX_RULES);
        return Err(FieldError::new("rules", message));
    }
    let specs = (items.into_iter().enumerate())
        .map(|(index, item)| rule(item, &format!("rules[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Rules::parse(&specs).map_err(|error| FieldError::new(error.field, error.message))
}

fn rule(item: Value, here: &str) -> Result<RuleSpec, FieldError> {
    let mut item = object(item, here, "must be a rule (an object)")?;
    let field = |name: &str| format!("{here}.{name}");
    let conditions = match item.remove("conditions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(conditions)) => {
            if conditions.len() > rules::MAX_CONDITIONS {
                let message = format!("at most {} conditions", rules::MAX_CONDITIONS);
                return Err(FieldError::new(field("conditions"), message));
            }
            (conditions.into_iter().enumerate())
                .map(|(index, condition)| {
                    condition_spec(condition, &format!("{here}.conditions[{index}]"))
                })
                .collect::<Result<_, _>>()?
        }
        Some(_) => {
            let message = "must be an array of conditions";
            return Err(FieldError::new(field("conditions"), message));
        }
    };
    let split = match item.remove("split") {
        None | Some(Value::Null) => None,
        Some(Value::Array(variants)) if variants.len() <= rules::MAX_VARIANTS => Some(
            (variants.into_iter().enumerate())
                .map(|(index, variant)| variant_spec(variant, &format!("{here}.split[{index}]")))
                .collect::<Result<_, _>>()?,
        ),
        Some(_) => {
            let message = format!("must be an array of 2 to {} variants", rules::MAX_VARIANTS);
            return Err(FieldError::new(field("split"), message));
        }
    };
    let spec = RuleSpec {
        name: text(&mut item, here, "name")?,
        conditions,
        url: text(&mut item, here, "url")?,
        split,
        redirect_status: match item.remove("redirect_status") {
            None | Some(Value::Null) => None,
            Some(value) => Some(super::fields::status(value).ok_or_else(|| {
                FieldError::new(field("redirect_status"), super::fields::STATUSES)
            })?),
        },
    };
    refuse_unknown(&item, here, "a rule")?;
    Ok(spec)
}

fn condition_spec(item: Value, here: &str) -> Result<ConditionSpec, FieldError> {
    let mut item = object(item, here, "must be a condition (an object with a type)")?;
    let kind = text(&mut item, here, "type")?
        .ok_or_else(|| FieldError::new(format!("{here}.type"), "is required"))?;
    let value = match item.remove("value") {
        None | Some(Value::Null) => None,
        Some(Value::String(value)) => Some(value),
        Some(_) => return Err(FieldError::new(format!("{here}.value"), "must be a string")),
    };
    let spec = ConditionSpec {
        kind,
        key: text(&mut item, here, "key")?,
        value,
    };
    refuse_unknown(&item, here, "a condition")?;
    Ok(spec)
}

fn variant_spec(item: Value, here: &str) -> Result<VariantSpec, FieldError> {
    let mut item = object(
        item,
        here,
        "must be a variant (an object with url and weight)",
    )?;
    let url = text(&mut item, here, "url")?
        .ok_or_else(|| FieldError::new(format!("{here}.url"), "is required"))?;
    let weight = match item.remove("weight") {
        Some(Value::Number(number)) => number.as_u64().and_then(|n| u32::try_from(n).ok()),
        _ => None,
    }
    .ok_or_else(|| {
        let message = format!("must be a whole number from 1 to {}", rules::MAX_WEIGHT);
        FieldError::new(format!("{here}.weight"), message)
    })?;
    refuse_unknown(&item, here, "a variant")?;
    Ok(VariantSpec { url, weight })
}

fn object(value: Value, here: &str, expected: &str) -> Result<Map<String, Value>, FieldError> {
    match value {
        Value::Object(object) => Ok(object),
        _ => Err(FieldError::new(here, expected)),
    }
}

/// An optional string field of `item`.
fn text(
    item: &mut Map<String, Value>,
    here: &str,
    name: &str,
) -> Result<Option<String>, FieldError> {
    match item.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(FieldError::new(
            format!("{here}.{name}"),
            "must be a string",
        )),
    }
}

fn refuse_unknown(item: &Map<String, Value>, here: &str, what: &str) -> Result<(), FieldError> {
    super::fields::deny_unknown(item, what).map_err(|error| error.within(here))
}

#[cfg(test)]
mod tests {
    /// Each condition `type` of the document has a schema of its own whose `type` is that
    /// one value, so that a body matches exactly one branch of the `oneOf`.
    #[test]
    fn every_condition_type_has_a_schema_of_its_own() {
        let document: serde_json::Value = serde_json::from_str(&super::super::document()).unwrap();
        let schemas = &document["components"]["schemas"];
        let mapping = schemas["ConditionBody"]["discriminator"]["mapping"]
            .as_object()
            .unwrap();
        let names = [
            "device", "os", "browser", "language", "country", "query", "after", "before", "network",
        ];
        assert_eq!(mapping.len(), names.len());
        let mut seen = std::collections::HashSet::new();
        for name in names {
            let reference = mapping[name].as_str().unwrap();
            assert!(seen.insert(reference), "{name} shares {reference}");
            let schema = &schemas[reference.trim_start_matches("#/components/schemas/")];
            let kind = &schema["allOf"][0]["properties"]["type"]["enum"];
            assert_eq!(kind, &serde_json::json!([name]), "{name}");
        }
    }
}
