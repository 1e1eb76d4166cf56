//! JSON field readers for the create and edit requests: each error names its field, which the
//! derived parsers of poem-openapi do not do.

use poem_openapi::types::{MaybeUndefined, ParseError};
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

/// A merge patch's `url`: absent keeps the target; a target cannot be cleared.
pub fn patch_url(value: Option<Value>) -> Result<Option<String>, ParseError<Option<String>>> {
    match value {
        None => Ok(None),
        Some(Value::String(url)) => Ok(Some(url)),
        Some(Value::Null) => Err(ParseError::custom("url: cannot be cleared")),
        Some(_) => Err(ParseError::custom("url: must be a string")),
    }
}

/// A merge patch's `expires_at`: absent keeps it, `null` clears it.
pub fn patch_expires_at(
    value: Option<Value>,
) -> Result<MaybeUndefined<OffsetDateTime>, ParseError<MaybeUndefined<OffsetDateTime>>> {
    match value {
        None => Ok(MaybeUndefined::Undefined),
        Some(Value::Null) => Ok(MaybeUndefined::Null),
        value => expires_at(value)
            .map(|at| at.map_or(MaybeUndefined::Null, MaybeUndefined::Value))
            .map_err(ParseError::propagate),
    }
}

/// A merge patch's `max_visits`: absent keeps it, `null` clears it.
pub fn patch_max_visits(
    value: Option<Value>,
) -> Result<MaybeUndefined<u64>, ParseError<MaybeUndefined<u64>>> {
    match value {
        None => Ok(MaybeUndefined::Undefined),
        Some(Value::Null) => Ok(MaybeUndefined::Null),
        value => max_visits(value)
            .map(|max| max.map_or(MaybeUndefined::Null, MaybeUndefined::Value))
            .map_err(ParseError::propagate),
    }
}

/// A bulk body's `links`: an array (its items are read one by one, each with its own
/// errors).
pub fn links(value: Option<Value>) -> Result<Vec<Value>, ParseError<Vec<Value>>> {
    match value {
        Some(Value::Array(items)) => Ok(items),
        None | Some(Value::Null) => Err(ParseError::custom("links: is required")),
        Some(_) => Err(ParseError::custom(
            "links: must be an array of create bodies",
        )),
    }
}

/// The detail of a create body that did not parse: a field reader's own message names
/// the field; anything else is about the item as a whole.
pub fn field_error(message: &str) -> String {
    let message = message
        .split(" (occurred while parsing")
        .next()
        .unwrap_or(message);
    // `ParseError::custom` puts `failed to parse "<type>": ` before our readers' messages.
    let message = message
        .strip_prefix("failed to parse \"")
        .and_then(|rest| rest.split_once("\": "))
        .map_or(message, |(_, message)| message);
    let names_field = ["url:", "alias:", "expires_at:", "max_visits:"]
        .iter()
        .any(|field| message.starts_with(field));
    if names_field {
        message.to_owned()
    } else {
        format!("must be a create body: {message}")
    }
}
