//! Request bodies read from JSON by hand, so that every error names its field: the
//! readers of each field, and the edit and bulk bodies (the create body is in `api`).
//!
//! poem-openapi's derived parsers report errors as prose (`failed to parse "string": ...
//! (occurred while parsing ...)`) that does not say which field was wrong in a form a client
//! can rely on. Here each body type reads its own fields ([`FromJsonBody`]) and refuses with
//! a [`FieldError`], a type that carries the field's name; the derived `Object` of each body
//! still describes it in the OpenAPI document. The payload that applies this is
//! [`super::body::JsonBody`].

use poem::http::StatusCode;
use poem_openapi::Object;
use poem_openapi::types::{MaybeUndefined, Type};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::api_error::problem_response;

/// Bad input, naming the field it is about: `url`, `links[3].alias`, or `body` for the
/// body as a whole. A 400 problem+json whose detail reads `<field>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error inside an array item: `url` becomes `links[3].url`.
    #[must_use]
    pub fn within(self, parent: &str) -> Self {
        Self {
            field: format!("{parent}.{}", self.field),
            message: self.message,
        }
    }
}

impl poem::error::ResponseError for FieldError {
    fn status(&self) -> StatusCode {
        StatusCode::BAD_REQUEST
    }

    fn as_response(&self) -> poem::Response {
        problem_response(StatusCode::BAD_REQUEST, self.to_string())
    }
}

/// A request body that reads itself from a JSON object.
pub trait FromJsonBody: Type + Sized {
    /// # Errors
    /// A [`FieldError`] naming the first field that is missing or malformed.
    fn from_json(body: Map<String, Value>) -> Result<Self, FieldError>;

    /// Reads any JSON value: anything but an object is refused as `body`.
    ///
    /// # Errors
    /// As [`Self::from_json`], or `body` when the value is not an object.
    fn from_value(value: Value) -> Result<Self, FieldError> {
        match value {
            Value::Object(body) => Self::from_json(body),
            _ => Err(FieldError::new("body", "must be a JSON object")),
        }
    }
}

/// What a redirect status that is not one of the four is told.
pub const STATUSES: &str = "must be 301, 302, 307 or 308";

/// An edit, as a JSON merge patch (RFC 7396): absent fields stay as they are, `null`
/// clears an optional one (`redirect_status` and `forward_query` then follow the
/// service's again, and `crawlable` is false).
#[derive(Object, Debug)]
#[oai(deny_unknown_fields)]
pub struct PatchLinkRequest {
    /// A new target (cannot be cleared).
    #[oai(validator(min_length = 1, max_length = 8192))]
    pub url: Option<String>,
    /// A new expiry (in the future), or `null` for none.
    pub expires_at: MaybeUndefined<OffsetDateTime>,
    /// A new visit limit (at least 1), or `null` for none.
    #[oai(validator(minimum(value = "1")))]
    pub max_visits: MaybeUndefined<u64>,
    /// 301, 302, 307 or 308, or `null` for the service's.
    #[oai(validator(minimum(value = "301"), maximum(value = "308")))]
    pub redirect_status: MaybeUndefined<u16>,
    /// Whether to forward the query string, or `null` for the service's choice.
    pub forward_query: MaybeUndefined<bool>,
    /// Where to send visitors once expired or used up, or `null` for a 410.
    #[oai(validator(min_length = 1, max_length = 8192))]
    pub expired_url: MaybeUndefined<String>,
    /// A new title (1 to 512 characters), or `null` for none.
    #[oai(validator(min_length = 1, max_length = 512))]
    pub title: MaybeUndefined<String>,
    /// Whether `/robots.txt` lets crawlers follow the link (`null`: false).
    pub crawlable: MaybeUndefined<bool>,
    /// The link's tags, replacing its own (`null` or `[]`: none).
    #[oai(validator(max_items = 10))]
    pub tags: MaybeUndefined<Vec<String>>,
    /// A new password (8 characters to 1024 bytes), or `null` to open the link to all.
    #[oai(validator(min_length = 8, max_length = 1024), write_only)]
    pub password: MaybeUndefined<String>,
    /// The link's redirect rules, replacing its own (`null` or `[]`: none).
    #[oai(validator(max_items = 16))]
    pub rules: MaybeUndefined<Vec<super::rules::RuleBody>>,
    /// The same rules, checked as they were read (`None`: left as they are).
    #[oai(skip)]
    pub checked_rules: Option<shortener_core::rules::Rules>,
}

impl FromJsonBody for PatchLinkRequest {
    fn from_json(mut body: Map<String, Value>) -> Result<Self, FieldError> {
        let (is_boolean, is_string) = ("must be true or false", "must be a string");
        let patch = Self {
            url: patch_url(body.remove("url"))?,
            expires_at: patch_expires_at(body.remove("expires_at"))?,
            max_visits: patch_max_visits(body.remove("max_visits"))?,
            redirect_status: patched(&mut body, "redirect_status", status, STATUSES)?,
            forward_query: patched(&mut body, "forward_query", boolean, is_boolean)?,
            expired_url: patched(&mut body, "expired_url", string, is_string)?,
            title: patched(&mut body, "title", string, is_string)?,
            crawlable: patched(&mut body, "crawlable", boolean, is_boolean)?,
            tags: patched(&mut body, "tags", strings, ARE_STRINGS)?,
            password: patched(&mut body, "password", string, is_string)?,
            rules: MaybeUndefined::Undefined,
            checked_rules: match body.remove("rules") {
                None => None,
                Some(Value::Null) => Some(shortener_core::rules::Rules::default()),
                Some(value) => Some(super::rules::read(value)?),
            },
        };
        deny_unknown(&body, "a link edit")?;
        Ok(patch)
    }
}

/// The body of a bulk create.
#[derive(Object, Debug)]
#[oai(deny_unknown_fields)]
pub struct BulkRequest {
    /// Create bodies, 1 to 1000.
    #[oai(validator(min_items = 1))]
    pub links: Vec<Value>,
}

impl FromJsonBody for BulkRequest {
    fn from_json(mut body: Map<String, Value>) -> Result<Self, FieldError> {
        let bulk = Self {
            links: links(body.remove("links"))?,
        };
        deny_unknown(&body, "a bulk create")?;
        Ok(bulk)
    }
}

/// Refuses the fields left in `body` after the known ones were taken out.
pub fn deny_unknown(body: &Map<String, Value>, what: &str) -> Result<(), FieldError> {
    match body.keys().next() {
        Some(name) => Err(FieldError::new(
            name.as_str(),
            format!("is not a field of {what}"),
        )),
        None => Ok(()),
    }
}

pub fn url(value: Option<Value>) -> Result<String, FieldError> {
    match value {
        Some(Value::String(url)) => Ok(url),
        None | Some(Value::Null) => Err(FieldError::new("url", "is required")),
        Some(_) => Err(FieldError::new("url", "must be a string")),
    }
}

pub fn alias(value: Option<Value>) -> Result<Option<String>, FieldError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(alias)) => Ok(Some(alias)),
        Some(_) => Err(FieldError::new("alias", "must be a string")),
    }
}

pub fn expires_at(value: Option<Value>) -> Result<Option<OffsetDateTime>, FieldError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            OffsetDateTime::parse(&text, &Rfc3339)
                .map(Some)
                .map_err(|_| {
                    FieldError::new(
                        "expires_at",
                        "must be an RFC 3339 date-time such as 2030-01-01T00:00:00Z",
                    )
                })
        }
        Some(_) => Err(FieldError::new(
            "expires_at",
            "must be an RFC 3339 date-time string",
        )),
    }
}

pub fn max_visits(value: Option<Value>) -> Result<Option<u64>, FieldError> {
    let refused = || FieldError::new("max_visits", "must be a whole number of at least 1");
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) | None => Err(refused()),
            Some(n) => Ok(Some(n)),
        },
        Some(_) => Err(refused()),
    }
}

/// An optional field of `body` read by `read` (`None` for a value of the wrong type,
/// refused as `expected`); absent or `null` is `None`.
pub fn optional<T>(
    body: &mut Map<String, Value>,
    name: &str,
    read: fn(Value) -> Option<T>,
    expected: &str,
) -> Result<Option<T>, FieldError> {
    match body.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => read(value)
            .map(Some)
            .ok_or_else(|| FieldError::new(name, expected)),
    }
}

/// As [`optional`], for a merge patch: absent keeps the value, `null` clears it.
pub fn patched<T>(
    body: &mut Map<String, Value>,
    name: &str,
    read: fn(Value) -> Option<T>,
    expected: &str,
) -> Result<MaybeUndefined<T>, FieldError> {
    match body.get(name) {
        None => Ok(MaybeUndefined::Undefined),
        Some(Value::Null) => {
            body.remove(name);
            Ok(MaybeUndefined::Null)
        }
        Some(_) => Ok(optional(body, name, read, expected)?
            .map_or(MaybeUndefined::Null, MaybeUndefined::Value)),
    }
}

/// Readers for [`optional`] and [`patched`].
pub fn string(value: Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text),
        _ => None,
    }
}

pub fn boolean(value: Value) -> Option<bool> {
    value.as_bool()
}

/// What a list of tags that is not one is told.
pub const ARE_STRINGS: &str = "must be an array of strings";

/// An array of strings.
pub fn strings(value: Value) -> Option<Vec<String>> {
    let Value::Array(items) = value else {
        return None;
    };
    items.into_iter().map(string).collect()
}

/// A redirect status as a number (whether it is one of the four is the domain's rule).
pub fn status(value: Value) -> Option<u16> {
    value.as_u64().and_then(|number| u16::try_from(number).ok())
}

/// A merge patch's `url`: absent keeps the target; a target cannot be cleared.
pub fn patch_url(value: Option<Value>) -> Result<Option<String>, FieldError> {
    match value {
        None => Ok(None),
        Some(Value::Null) => Err(FieldError::new("url", "cannot be cleared")),
        value => url(value).map(Some),
    }
}

/// A merge patch's `expires_at`: absent keeps it, `null` clears it.
pub fn patch_expires_at(
    value: Option<Value>,
) -> Result<MaybeUndefined<OffsetDateTime>, FieldError> {
    match value {
        None => Ok(MaybeUndefined::Undefined),
        value => Ok(expires_at(value)?.map_or(MaybeUndefined::Null, MaybeUndefined::Value)),
    }
}

/// A merge patch's `max_visits`: absent keeps it, `null` clears it.
pub fn patch_max_visits(value: Option<Value>) -> Result<MaybeUndefined<u64>, FieldError> {
    match value {
        None => Ok(MaybeUndefined::Undefined),
        value => Ok(max_visits(value)?.map_or(MaybeUndefined::Null, MaybeUndefined::Value)),
    }
}

/// A bulk body's `links`: an array (its items are read one by one, each with its own
/// errors).
pub fn links(value: Option<Value>) -> Result<Vec<Value>, FieldError> {
    match value {
        Some(Value::Array(items)) => Ok(items),
        None | Some(Value::Null) => Err(FieldError::new("links", "is required")),
        Some(_) => Err(FieldError::new(
            "links",
            "must be an array of create bodies",
        )),
    }
}

impl From<FieldError> for super::ApiError {
    fn from(error: FieldError) -> Self {
        Self::bad_request(&error.field, error.message)
    }
}
