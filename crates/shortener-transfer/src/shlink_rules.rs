//! Shlink's redirect rules and ours, both ways.
//!
//! - [`to_ours`]: Shlink's rules (`redirectRules` of a short URL, as its
//!   `GET /rest/v3/short-urls/{shortCode}/redirect-rules` answers them, or as its `POST`
//!   takes them) as ours, ordered by their `priority`, each condition mapped onto ours. A
//!   condition ours cannot express (a city, an address pattern with a wildcard in the
//!   middle) is refused, with the reason, rather than read as a rule that matches other
//!   visitors than it did. The import and the Shlink API read rules through it.
//! - [`to_shlink`]: ours in Shlink's shape, for its API's `GET`; a rule Shlink cannot
//!   express (a split, a name, its own status, a tablet, a bot or a browser Shlink does
//!   not know) is refused by its place rather than shown as something it is not.

use serde::Deserialize;
use serde_json::{Value, json};
use shortener_core::rules::{ConditionSpec, RuleSpec, Rules};

/// One of Shlink's rules as its API and its export carry it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShlinkRule {
    long_url: String,
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    conditions: Vec<ShlinkCondition>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShlinkCondition {
    #[serde(rename = "type")]
    kind: String,
    match_key: Option<String>,
    #[serde(default)]
    match_value: Option<String>,
}

/// `rules` as ours, checked, in Shlink's order (the lowest `priority` first).
///
/// # Errors
/// The first rule or condition ours cannot express, or that our rules refuse.
pub fn rules(rules: Vec<ShlinkRule>) -> Result<Rules, String> {
    let specs = to_ours(rules).map_err(|error| format!("redirectRules{error}"))?;
    Rules::parse(&specs).map_err(|error| format!("redirectRules: {error}"))
}

/// `rules` as ours, unchecked, in Shlink's order (the lowest `priority` first; rules of
/// one priority in the order given).
///
/// # Errors
/// The first condition ours cannot express, as `[rule]: why`.
pub fn to_ours(mut rules: Vec<ShlinkRule>) -> Result<Vec<RuleSpec>, String> {
    rules.sort_by_key(|rule| rule.priority);
    (rules.into_iter().enumerate())
        .map(|(index, rule)| {
            let conditions = (rule.conditions.into_iter())
                .map(condition)
                .collect::<Result<_, _>>()
                .map_err(|error| format!("[{index}]: {error}"))?;
            Ok(RuleSpec {
                name: None,
                conditions,
                url: Some(rule.long_url),
                split: None,
                redirect_status: None,
            })
        })
        .collect()
}

/// Our `rules` as Shlink's `redirectRules` (priorities from 1, in our order).
///
/// # Errors
/// The first rule Shlink cannot express, as `rules[index]: why`.
pub fn to_shlink(rules: &[RuleSpec]) -> Result<Vec<Value>, String> {
    (rules.iter().enumerate())
        .map(|(index, rule)| {
            let why = |why: String| format!("rules[{index}]: {why}");
            let url = match (&rule.url, &rule.split, &rule.name, rule.redirect_status) {
                (_, Some(_), _, _) => {
                    return Err(why("a split has no form in Shlink's rules".into()));
                }
                (_, _, Some(_), _) => {
                    return Err(why("a named rule has no form in Shlink's rules".into()));
                }
                (_, _, _, Some(_)) => {
                    return Err(why(
                        "a rule's own redirect status has no form in Shlink's rules".into(),
                    ));
                }
                (Some(url), None, None, None) => url,
                (None, None, None, None) => return Err(why("has no target".into())),
            };
            let conditions = (rule.conditions.iter().enumerate())
                .map(|(at, condition)| {
                    shlink_condition(condition)
                        .map_err(|error| why(format!("conditions[{at}]: {error}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(json!({"longUrl": url, "priority": index + 1, "conditions": conditions}))
        })
        .collect()
}

/// One of our conditions as Shlink's, or why it has no form there.
fn shlink_condition(ours: &ConditionSpec) -> Result<Value, String> {
    let value = ours.value.as_deref().unwrap_or_default();
    let plain =
        |kind: &str, value: &str| json!({"type": kind, "matchKey": null, "matchValue": value});
    let none = || {
        Err(format!(
            "`{}` `{value}` has no form in Shlink's rules",
            ours.kind
        ))
    };
    Ok(match (ours.kind.as_str(), value) {
        ("device", "mobile" | "desktop") => plain("device", value),
        ("os", "android" | "ios" | "windows" | "macos" | "linux" | "chromeos") => {
            plain("device", value)
        }
        ("browser", "chrome" | "firefox" | "edge" | "safari" | "opera") => plain("browser", value),
        ("language", _) => plain("language", value),
        ("country", _) => plain("geolocation-country-code", value),
        ("after", _) => plain("after-date", value),
        ("before", _) => plain("before-date", value),
        ("network", _) => {
            // A network of one address is that address, as Shlink writes one.
            let single = value
                .strip_suffix("/32")
                .filter(|address| !address.contains(':'));
            let single = single.or_else(|| value.strip_suffix("/128"));
            plain("ip-address", single.unwrap_or(value))
        }
        ("query", _) => {
            let key = ours.key.as_deref().unwrap_or_default();
            match ours.value.as_deref() {
                None => plain("any-value-query-param", key),
                Some("") => plain("valueless-query-param", key),
                Some(value) => json!({"type": "query-param", "matchKey": key, "matchValue": value}),
            }
        }
        _ => return none(),
    })
}

fn condition(shlink: ShlinkCondition) -> Result<ConditionSpec, String> {
    let plain = |kind: &str, value: &str| ConditionSpec {
        kind: kind.to_owned(),
        key: None,
        value: Some(value.to_owned()),
    };
    let query = |key: &str, value: Option<&str>| ConditionSpec {
        kind: "query".to_owned(),
        key: Some(key.to_owned()),
        value: value.map(str::to_owned),
    };
    let value = shlink.match_value.as_deref().unwrap_or_default().trim();
    Ok(match shlink.kind.as_str() {
        // Shlink's device types are device classes and operating systems both.
        "device" => match value.to_ascii_lowercase().as_str() {
            device @ ("desktop" | "mobile" | "tablet") => plain("device", device),
            os => plain("os", os),
        },
        "os" => plain("os", value),
        "browser" => plain("browser", value),
        "language" => plain("language", &value.replace('_', "-")),
        "query-param" => query(shlink.match_key.as_deref().unwrap_or_default(), Some(value)),
        // These two name their parameter in `matchValue`. A parameter present with any
        // value is ours without a value; one present without a value is ours with "".
        "any-value-query-param" => query(value, None),
        "valueless-query-param" => query(value, Some("")),
        "ip-address" => plain("network", &network(value)?),
        "geolocation-country-code" => plain("country", value),
        "before-date" => plain("before", value),
        "after-date" => plain("after", value),
        other => return Err(format!("a condition of type `{other}` is not supported")),
    })
}

/// Shlink's address patterns as a network: an address, a CIDR, or an IPv4 address whose
/// last parts are `*` (`192.168.*.*` is `192.168.0.0/16`).
fn network(pattern: &str) -> Result<String, String> {
    if pattern.contains('/') {
        return Ok(pattern.to_owned());
    }
    if !pattern.contains('*') {
        let bits = if pattern.contains(':') { 128 } else { 32 };
        return Ok(format!("{pattern}/{bits}"));
    }
    let parts: Vec<&str> = pattern.split('.').collect();
    let fixed = parts.iter().take_while(|part| **part != "*").count();
    if parts.len() != 4 || parts[fixed..].iter().any(|part| *part != "*") {
        return Err(format!(
            "ip-address `{pattern}`: only trailing wildcards can be a network"
        ));
    }
    let octets: Vec<&str> = (0..4)
        .map(|at| if at < fixed { parts[at] } else { "0" })
        .collect();
    Ok(format!("{}/{}", octets.join("."), fixed * 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shlink_rules_come_in_order_with_each_condition_mapped() {
        let json = r#"[
          {"longUrl": "https://example.com/es", "priority": 2, "conditions": [
            {"type": "language", "matchKey": null, "matchValue": "es_ES"},
            {"type": "ip-address", "matchKey": null, "matchValue": "192.168.*.*"}]},
          {"longUrl": "https://example.com/android", "priority": 1, "conditions": [
            {"type": "device", "matchKey": null, "matchValue": "android"},
            {"type": "query-param", "matchKey": "ref", "matchValue": "mail"},
            {"type": "any-value-query-param", "matchKey": null, "matchValue": "utm"},
            {"type": "geolocation-country-code", "matchKey": null, "matchValue": "ES"},
            {"type": "after-date", "matchKey": null, "matchValue": "2027-01-01T00:00:00+00:00"}]}
        ]"#;
        let rules = rules(serde_json::from_str(json).unwrap()).unwrap();
        let specs = serde_json::to_value(rules.to_specs()).unwrap();
        assert_eq!(
            specs,
            serde_json::json!([
                {"conditions": [
                    {"type": "os", "value": "android"},
                    {"type": "query", "key": "ref", "value": "mail"},
                    {"type": "query", "key": "utm"},
                    {"type": "country", "value": "ES"},
                    {"type": "after", "value": "2027-01-01T00:00:00Z"}],
                 "url": "https://example.com/android"},
                {"conditions": [
                    {"type": "language", "value": "es-es"},
                    {"type": "network", "value": "192.168.0.0/16"}],
                 "url": "https://example.com/es"},
            ])
        );
    }

    #[test]
    fn what_ours_cannot_express_refuses_the_link() {
        for (kind, value, reason) in [
            (
                "geolocation-city-name",
                "Madrid",
                "`geolocation-city-name` is not supported",
            ),
            ("ip-address", "10.*.0.1", "only trailing wildcards"),
            ("device", "toaster", "conditions[0].value"),
        ] {
            let json = format!(
                r#"[{{"longUrl": "https://example.com/", "conditions": [
                     {{"type": "{kind}", "matchKey": null, "matchValue": "{value}"}}]}}]"#
            );
            let error = rules(serde_json::from_str(&json).unwrap()).unwrap_err();
            assert!(error.contains(reason), "{kind}: {error}");
        }
    }

    #[test]
    fn ours_go_to_shlink_and_come_back_the_same() {
        let ours: Vec<RuleSpec> = serde_json::from_value(serde_json::json!([
            {"conditions": [
                {"type": "os", "value": "ios"},
                {"type": "device", "value": "mobile"},
                {"type": "browser", "value": "firefox"},
                {"type": "query", "key": "ref", "value": "mail"},
                {"type": "query", "key": "utm"},
                {"type": "query", "key": "debug", "value": ""}],
             "url": "https://example.com/a"},
            {"conditions": [
                {"type": "language", "value": "fr-ch"},
                {"type": "country", "value": "FR"},
                {"type": "network", "value": "203.0.113.9/32"},
                {"type": "network", "value": "2001:db8::/64"},
                {"type": "after", "value": "2027-01-01T00:00:00Z"},
                {"type": "before", "value": "2027-02-01T00:00:00Z"}],
             "url": "https://example.com/b"}
        ]))
        .unwrap();
        let theirs = to_shlink(&ours).unwrap();
        assert_eq!(theirs[0]["priority"], 1);
        assert_eq!(
            theirs[0]["conditions"][0],
            serde_json::json!({"type": "device", "matchKey": null, "matchValue": "ios"})
        );
        assert_eq!(
            theirs[1]["conditions"][2],
            serde_json::json!({"type": "ip-address", "matchKey": null, "matchValue": "203.0.113.9"})
        );
        let back = to_ours(serde_json::from_value(Value::Array(theirs)).unwrap()).unwrap();
        let mut expected = ours;
        expected[1].conditions[2].value = Some("203.0.113.9/32".into());
        assert_eq!(back, expected);
    }

    #[test]
    fn what_shlink_cannot_express_is_refused_by_its_place() {
        for (rule, reason) in [
            (
                serde_json::json!({"split": [{"url": "https://a.example/", "weight": 1},
                                            {"url": "https://b.example/", "weight": 1}]}),
                "rules[1]: a split",
            ),
            (
                serde_json::json!({"name": "x", "url": "https://a.example/"}),
                "rules[1]: a named rule",
            ),
            (
                serde_json::json!({"url": "https://a.example/", "redirect_status": 307}),
                "rules[1]: a rule's own redirect status",
            ),
            (
                serde_json::json!({"url": "https://a.example/",
                                   "conditions": [{"type": "device", "value": "tablet"}]}),
                "rules[1]: conditions[0]: `device` `tablet`",
            ),
            (
                serde_json::json!({"url": "https://a.example/",
                                   "conditions": [{"type": "browser", "value": "samsung"}]}),
                "rules[1]: conditions[0]: `browser` `samsung`",
            ),
        ] {
            let plain = serde_json::json!({"url": "https://ok.example/"});
            let ours: Vec<RuleSpec> =
                serde_json::from_value(serde_json::json!([plain, rule])).unwrap();
            let error = to_shlink(&ours).unwrap_err();
            assert!(error.starts_with(reason), "{error}");
        }
    }
}
