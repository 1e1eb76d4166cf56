//! Shlink's redirect rules (`redirectRules` of a short URL, as its
//! `GET /rest/v3/short-urls/{shortCode}/redirect-rules` answers them) as ours: ordered
//! by their `priority`, each condition mapped onto ours. A condition ours cannot express
//! (a city, an address pattern with a wildcard in the middle) refuses the link, with
//! the reason, rather than import a rule that matches other visitors than it did.

use serde::Deserialize;
use shortener_core::rules::{ConditionSpec, RuleSpec, Rules};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ShlinkRule {
    long_url: String,
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    conditions: Vec<ShlinkCondition>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShlinkCondition {
    #[serde(rename = "type")]
    kind: String,
    match_key: Option<String>,
    #[serde(default)]
    match_value: String,
}

/// `rules` as ours, in Shlink's order (the lowest `priority` first).
pub(super) fn rules(mut rules: Vec<ShlinkRule>) -> Result<Rules, String> {
    rules.sort_by_key(|rule| rule.priority);
    let specs = (rules.into_iter().enumerate())
        .map(|(index, rule)| {
            let conditions = (rule.conditions.into_iter())
                .map(condition)
                .collect::<Result<_, _>>()
                .map_err(|error| format!("redirectRules[{index}]: {error}"))?;
            Ok(RuleSpec {
                name: None,
                conditions,
                url: Some(rule.long_url),
                split: None,
                redirect_status: None,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Rules::parse(&specs).map_err(|error| format!("redirectRules: {error}"))
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
    let value = shlink.match_value.trim();
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
}
