//! Just enough JSON to write results.json without a dependency.

use std::fmt::{self, Write as _};

/// A JSON value.
#[derive(Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    /// Written as `null` when not finite.
    Number(f64),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn object(fields: Vec<(&str, Json)>) -> Self {
        Self::Object(
            fields
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value))
                .collect(),
        )
    }
}

impl From<&str> for Json {
    fn from(value: &str) -> Self {
        Self::String(value.to_owned())
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Null => f.write_str("null"),
            Self::Bool(value) => write!(f, "{value}"),
            Self::Number(value) if value.is_finite() => write!(f, "{value}"),
            Self::Number(_) => f.write_str("null"),
            Self::String(text) => {
                f.write_char('"')?;
                for character in text.chars() {
                    match character {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        control if u32::from(control) < 0x20 => {
                            write!(f, "\\u{:04x}", u32::from(control))?
                        }
                        other => f.write_char(other)?,
                    }
                }
                f.write_char('"')
            }
            Self::Array(items) => {
                f.write_char('[')?;
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_char(']')
            }
            Self::Object(fields) => {
                f.write_char('{')?;
                for (index, (key, value)) in fields.iter().enumerate() {
                    if index > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{}:{value}", Self::String(key.clone()))?;
                }
                f.write_char('}')
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_escaped_and_never_nan() {
        let json = Json::object(vec![
            ("text", Json::from("a \"b\"\n\\")),
            (
                "values",
                Json::Array(vec![
                    Json::Number(1.5),
                    Json::Number(f64::NAN),
                    Json::Null,
                    Json::Bool(true),
                ]),
            ),
        ]);
        assert_eq!(
            json.to_string(),
            r#"{"text":"a \"b\"\n\\","values":[1.5,null,null,true]}"#
        );
    }
}
