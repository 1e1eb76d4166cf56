//! Their `RESPONSE_DYNAMIC_METADATA`: the answer's `dynamic_metadata`, which Envoy puts
//! in the request's dynamic metadata for routes and logs to read. Its shape is theirs:
//! `domain`; `descriptors`, each with its `entries` as `"key=value"` strings (and the
//! request's `limit` override and `hitsAddend` when it carries them); the request's
//! `hitsAddend` when not 0; and `metadata`, the `metadata:` of every descriptor whose limit
//! passed, merged (a key seen first wins; maps under one key are merged in turn).

use envoy_types::pb::google::protobuf::value::Kind;
use envoy_types::pb::google::protobuf::{ListValue, NullValue, Struct, Value};

use crate::proto::RateLimitRequest;

/// A descriptor's `metadata:` map as a protobuf `Struct`, as theirs converts it.
///
/// # Errors
/// When it is not a map with text keys, or holds a value a `Struct` cannot (a tag).
pub(crate) fn from_yaml(yaml: &serde_yaml::Value) -> Result<Struct, String> {
    match value(yaml)? {
        Kind::StructValue(map) => Ok(map),
        _ => Err("error parsing metadata: not a map".into()),
    }
}

fn value(yaml: &serde_yaml::Value) -> Result<Kind, String> {
    use serde_yaml::Value as Yaml;
    Ok(match yaml {
        Yaml::Null => Kind::NullValue(NullValue::NullValue.into()),
        Yaml::Bool(flag) => Kind::BoolValue(*flag),
        Yaml::Number(number) => Kind::NumberValue(number.as_f64().unwrap_or(f64::NAN)),
        Yaml::String(text) => Kind::StringValue(text.clone()),
        Yaml::Sequence(items) => Kind::ListValue(ListValue {
            values: (items.iter())
                .map(|item| value(item).map(wrap))
                .collect::<Result<_, _>>()?,
        }),
        Yaml::Mapping(map) => {
            let mut fields = std::collections::HashMap::new();
            for (key, item) in map {
                let Yaml::String(key) = key else {
                    return Err(format!("error parsing metadata: key {key:?} is not text"));
                };
                fields.insert(key.clone(), wrap(value(item)?));
            }
            Kind::StructValue(Struct { fields })
        }
        Yaml::Tagged(tagged) => {
            return Err(format!(
                "error parsing metadata: tag {} is not supported",
                tagged.tag
            ));
        }
    })
}

fn wrap(kind: Kind) -> Value {
    Value { kind: Some(kind) }
}

/// The answer's metadata for `request`, with the `metadata:` of the limits that passed.
pub(crate) fn response<'a>(
    request: &RateLimitRequest,
    passed: impl IntoIterator<Item = &'a Struct>,
) -> Struct {
    let mut fields = std::collections::HashMap::new();
    fields.insert(
        "domain".to_owned(),
        wrap(Kind::StringValue(request.domain.clone())),
    );
    let descriptors = (request.descriptors.iter())
        .map(|descriptor| {
            let mut fields = std::collections::HashMap::new();
            let entries = (descriptor.entries.iter())
                .map(|entry| wrap(Kind::StringValue(format!("{}={}", entry.key, entry.value))))
                .collect();
            fields.insert(
                "entries".to_owned(),
                wrap(Kind::ListValue(ListValue { values: entries })),
            );
            if let Some(limit) = &descriptor.limit {
                // Theirs writes the override in protobuf's text format.
                let unit = envoy_types::pb::envoy::r#type::v3::RateLimitUnit::try_from(limit.unit)
                    .map_or("UNKNOWN", |unit| unit.as_str_name());
                fields.insert(
                    "limit".to_owned(),
                    wrap(Kind::StringValue(format!(
                        "requests_per_unit:{} unit:{unit}",
                        limit.requests_per_unit
                    ))),
                );
            }
            if let Some(hits) = &descriptor.hits_addend {
                fields.insert(
                    "hitsAddend".to_owned(),
                    wrap(Kind::NumberValue(hits.value as f64)),
                );
            }
            wrap(Kind::StructValue(Struct { fields }))
        })
        .collect();
    fields.insert(
        "descriptors".to_owned(),
        wrap(Kind::ListValue(ListValue {
            values: descriptors,
        })),
    );
    if request.hits_addend != 0 {
        fields.insert(
            "hitsAddend".to_owned(),
            wrap(Kind::NumberValue(f64::from(request.hits_addend))),
        );
    }
    let mut merged = Struct::default();
    for metadata in passed {
        merge(&mut merged, metadata);
    }
    if !merged.fields.is_empty() {
        fields.insert("metadata".to_owned(), wrap(Kind::StructValue(merged)));
    }
    Struct { fields }
}

/// `from` into `into`: a key already there stays, unless both are maps, which merge.
fn merge(into: &mut Struct, from: &Struct) {
    for (key, incoming) in &from.fields {
        match into.fields.get_mut(key) {
            None => {
                into.fields.insert(key.clone(), incoming.clone());
            }
            Some(Value {
                kind: Some(Kind::StructValue(existing)),
            }) => {
                if let Some(Kind::StructValue(incoming)) = &incoming.kind {
                    merge(existing, incoming);
                }
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Struct {
        from_yaml(&serde_yaml::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn yaml_maps_become_structs_and_tags_are_refused() {
        let converted = yaml("team: payments\nweight: 2\nnested: {on: true, list: [1, x]}\n");
        assert_eq!(
            converted.fields["team"].kind,
            Some(Kind::StringValue("payments".into()))
        );
        assert_eq!(
            converted.fields["weight"].kind,
            Some(Kind::NumberValue(2.0))
        );
        let Some(Kind::StructValue(nested)) = &converted.fields["nested"].kind else {
            panic!("{converted:?}")
        };
        assert_eq!(nested.fields["on"].kind, Some(Kind::BoolValue(true)));
        assert!(from_yaml(&serde_yaml::from_str("[1]").unwrap()).is_err());
        assert!(from_yaml(&serde_yaml::from_str("a: !tag 1").unwrap()).is_err());
    }

    #[test]
    fn passed_metadata_merges_with_the_first_value_winning() {
        let request = crate::request("shop", &[&[("a", "1"), ("b", "2")]]);
        let first = yaml("owner: one\nshared: {x: 1}\n");
        let second = yaml("owner: two\nshared: {y: 2}\nextra: z\n");
        let answer = response(&request, [&first, &second]);
        let Some(Kind::StructValue(metadata)) = &answer.fields["metadata"].kind else {
            panic!("{answer:?}")
        };
        assert_eq!(
            metadata.fields["owner"].kind,
            Some(Kind::StringValue("one".into()))
        );
        assert_eq!(
            metadata.fields["extra"].kind,
            Some(Kind::StringValue("z".into()))
        );
        let Some(Kind::StructValue(shared)) = &metadata.fields["shared"].kind else {
            panic!("{metadata:?}")
        };
        assert_eq!(shared.fields.len(), 2, "maps under one key merge");
        assert_eq!(
            answer.fields["domain"].kind,
            Some(Kind::StringValue("shop".into()))
        );
        let Some(Kind::ListValue(descriptors)) = &answer.fields["descriptors"].kind else {
            panic!("{answer:?}")
        };
        let Some(Kind::StructValue(only)) = &descriptors.values[0].kind else {
            panic!("{descriptors:?}")
        };
        let Some(Kind::ListValue(entries)) = &only.fields["entries"].kind else {
            panic!("{only:?}")
        };
        let entries: Vec<_> = (entries.values.iter())
            .map(|entry| entry.kind.clone())
            .collect();
        assert_eq!(
            entries,
            [
                Some(Kind::StringValue("a=1".into())),
                Some(Kind::StringValue("b=2".into()))
            ]
        );
        assert!(
            !answer.fields.contains_key("hitsAddend"),
            "0 is not written"
        );
        // Nothing passed with metadata: no `metadata` key.
        assert!(!response(&request, []).fields.contains_key("metadata"));
    }
}
