//! The one reading of a JSON body: bytes to a [`serde_json::Value`], refusing an object
//! that names a key twice, at any depth.
//!
//! `serde_json::Value` keeps the last of two equal keys, and a derived struct refuses them:
//! two readers of one body could then disagree on what it says (a rate-limit count of one
//! `links` array, a handler creating from another). Here there is one reader, and a
//! duplicate key is a 400 that names it (`links`, `links[3].url`), so a body means one thing.
//! Key names are compared after their escapes are decoded (`"li\u006eks"` is `links`).
//! A leading UTF-8 byte-order mark is skipped, as RFC 8259 allows.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::fields::FieldError;

/// Reads one JSON value from `bytes`.
///
/// # Errors
/// A [`FieldError`] naming `body` when the bytes are not JSON, or naming the key (its path
/// from the top: `links[3].url`) when an object holds that key twice.
pub fn parse(bytes: &[u8]) -> Result<Value, FieldError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let seed = Strict {
        path: &Path::Root,
        duplicate: &duplicate,
    };
    let parsed = seed
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    match parsed {
        Ok(value) => Ok(value),
        Err(error) => Err(match duplicate.into_inner() {
            Some(field) => FieldError::new(
                field,
                "is given twice in one object; each key may appear once",
            ),
            None => FieldError::new("body", format!("is not JSON: {error}")),
        }),
    }
}

/// Where a value sits in the document, for naming a duplicate key.
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Key(Path::Root, key) => write!(f, "{key}"),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(Path::Root, index) => write!(f, "[{index}]"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// A `Value` deserializer that refuses duplicate keys; the path of the first one found is
/// left in `duplicate` (serde's errors carry only text).
#[derive(Clone, Copy)]
struct Strict<'a> {
    path: &'a Path<'a>,
    duplicate: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number out of range"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        loop {
            let path = Path::Index(self.path, items.len());
            let seed = Strict {
                path: &path,
                duplicate: self.duplicate,
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = Path::Key(self.path, &key);
            if object.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(path.to_string());
                return Err(de::Error::custom(format_args!("duplicate key `{path}`")));
            }
            let seed = Strict {
                path: &path,
                duplicate: self.duplicate,
            };
            let value = map.next_value_seed(seed)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse;

    #[test]
    fn reads_what_serde_json_reads() {
        let text = r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":"\u00e9"}"#;
        assert_eq!(
            parse(text.as_bytes()).unwrap(),
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
    }

    #[test]
    fn names_the_duplicate_key_by_its_path() {
        let refused = |text: &str| parse(text.as_bytes()).unwrap_err().field;
        assert_eq!(refused(r#"{"links":[1],"links":[]}"#), "links");
        assert_eq!(refused(r#"{"li\u006eks":[1],"links":[]}"#), "links");
        assert_eq!(
            refused(r#"{"links":[{"url":"a"},{"url":"a","url":"b"}]}"#),
            "links[1].url"
        );
        assert_eq!(refused(r#"[{"a":1,"a":1}]"#), "[0].a");
        assert_eq!(refused(r#"{"a":{"b":{"c":1,"c":2}}}"#), "a.b.c");
    }

    #[test]
    fn refuses_what_is_not_one_json_value() {
        for text in ["", "{", r#"{"a":1} {"a":2}"#, "1e400", "{\"a\":1,}"] {
            assert_eq!(parse(text.as_bytes()).unwrap_err().field, "body", "{text}");
        }
    }

    #[test]
    fn skips_a_byte_order_mark() {
        assert_eq!(parse(b"\xEF\xBB\xBF{\"a\":1}").unwrap(), json!({"a": 1}));
    }
}
