//! JSON field readers for the create request: each error names its field, which the
//! derived parsers of poem-openapi do not do.

use poem_openapi::types::ParseError;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub fn url(value: Option<Value>) -> Result<String, ParseError<String>> {
    match value {
        Some(Value::String(url)) => Ok(url),
        None | Some(Value::Null) => Err(ParseError::custom("url: is required")),
        Some(_) => Err(ParseError::custom("url: must be a string")),
    }
}

pub fn alias(value: Option<Value>) -> Result<Option<String>, ParseError<Option<String>>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(alias)) => Ok(Some(alias)),
        Some(_) => Err(ParseError::custom("alias: must be a string")),
    }
}

pub fn expires_at(
    value: Option<Value>,
) -> Result<Option<OffsetDateTime>, ParseError<Option<OffsetDateTime>>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            OffsetDateTime::parse(&text, &Rfc3339)
                .map(Some)
                .map_err(|_| {
                    ParseError::custom(
                        "expires_at: must be an RFC 3339 date-time such as 2030-01-01T00:00:00Z",
                    )
                })
        }
        Some(_) => Err(ParseError::custom(
            "expires_at: must be an RFC 3339 date-time string",
        )),
    }
}

pub fn max_visits(value: Option<Value>) -> Result<Option<u64>, ParseError<Option<u64>>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) | None => Err(ParseError::custom(
                "max_visits: must be a whole number of at least 1",
            )),
            Some(n) => Ok(Some(n)),
        },
        Some(_) => Err(ParseError::custom(
            "max_visits: must be a whole number of at least 1",
        )),
    }
}
