//! One limits file as envoyproxy/ratelimit reads it: a domain and its nested descriptors.
//! Every key they accept is accepted (and no other), so their files load unchanged.

use serde::{Deserialize, Deserializer};

/// A file: `domain` and its `descriptors`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct File {
    #[serde(default, deserialize_with = "scalar")]
    pub domain: String,
    #[serde(default)]
    pub descriptors: Vec<Descriptor>,
}

/// One level of the descriptor tree.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Descriptor {
    #[serde(default, deserialize_with = "scalar")]
    pub key: String,
    #[serde(default, deserialize_with = "scalar")]
    pub value: String,
    pub rate_limit: Option<RateLimit>,
    #[serde(default)]
    pub descriptors: Vec<Descriptor>,
    #[serde(default)]
    pub shadow_mode: bool,
    #[serde(default)]
    pub quota_mode: bool,
    #[serde(default)]
    pub detailed_metric: bool,
    #[serde(default)]
    pub value_to_metric: bool,
    #[serde(default)]
    pub share_threshold: bool,
    /// Returned to Envoy in the answer's dynamic metadata when the descriptor's limit
    /// passes (with `RESPONSE_DYNAMIC_METADATA`).
    #[serde(default)]
    pub metadata: Option<serde_yaml::Value>,
    /// Ours: `token_bucket`, `gcra` or `fixed_window` for this descriptor's limit.
    pub algorithm: Option<String>,
}

/// `rate_limit:` of a descriptor.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RateLimit {
    #[serde(default)]
    pub requests_per_unit: u32,
    #[serde(default, deserialize_with = "scalar")]
    pub unit: String,
    #[serde(default)]
    pub unlimited: bool,
    #[serde(default, deserialize_with = "scalar")]
    pub name: String,
    #[serde(default)]
    pub replaces: Vec<Replaces>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Replaces {
    #[serde(default, deserialize_with = "scalar")]
    pub name: String,
}

/// A string field that YAML may have written as a number or a boolean (`value: 443`),
/// as Go's YAML reader takes it.
fn scalar<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    match serde_yaml::Value::deserialize(deserializer)? {
        serde_yaml::Value::String(text) => Ok(text),
        serde_yaml::Value::Number(number) => Ok(number.to_string()),
        serde_yaml::Value::Bool(flag) => Ok(flag.to_string()),
        serde_yaml::Value::Null => Ok(String::new()),
        _ => Err(serde::de::Error::custom("expected a string")),
    }
}

/// Parses one file's text; the error is serde_yaml's, which names the key and the line.
/// Of a file of several YAML documents (separated by `---`), the first is read, as their
/// Go reader does.
pub(crate) fn parse(text: &str) -> Result<File, serde_yaml::Error> {
    let empty = || File {
        domain: String::new(),
        descriptors: Vec::new(),
    };
    if text.trim().is_empty() {
        // An empty file is a file without a domain, refused by the loader.
        return Ok(empty());
    }
    match serde_yaml::Deserializer::from_str(text).next() {
        Some(first) => File::deserialize(first),
        None => Ok(empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_several_documents_the_first_is_read() {
        let text = "domain: first\ndescriptors:\n  - key: a\n---\ndomain: second\n";
        let file = parse(text).unwrap();
        assert_eq!(file.domain, "first");
        assert_eq!(file.descriptors.len(), 1);
        // A leading separator starts the first document.
        assert_eq!(parse("---\ndomain: only\n").unwrap().domain, "only");
        // A broken first document is still an error naming the line.
        let error = parse("domain: [\n---\ndomain: ok\n").unwrap_err();
        assert!(error.location().is_some(), "{error}");
    }
}
