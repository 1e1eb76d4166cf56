//! YOURLS' answers in the format a request asks for (`json`, `xml` or `simple`), and
//! this service's problems as YOURLS' failures: `status: fail`, a `code` its clients
//! compare with, the detail as `message` (its field by YOURLS' name), `statusCode`.

use poem::http::StatusCode;
use poem::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use poem::{IntoResponse as _, Response};
use serde_json::{Map, Value, json};

use super::Params;
use crate::api_error::PROBLEM_JSON;

/// What `format=` asks for; JSON when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Xml,
    /// The one value the action is for (a short URL, a long URL) as plain text.
    Simple,
}

impl Format {
    pub(crate) fn of(params: &Params) -> Self {
        match params.get("format") {
            Some("xml") => Self::Xml,
            Some("simple") => Self::Simple,
            _ => Self::Json,
        }
    }
}

/// `value` in `format`; `simple` is its text in the `simple` format.
pub(crate) fn answer(format: Format, status: StatusCode, value: &Value, simple: &str) -> Response {
    match format {
        Format::Json => (poem::web::Json(value.clone()).with_status(status)).into_response(),
        Format::Simple => (simple
            .to_owned()
            .with_content_type("text/plain; charset=utf-8"))
        .with_status(status)
        .into_response(),
        Format::Xml => {
            let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<result>");
            if let Value::Object(fields) = value {
                write_xml(&mut xml, fields);
            }
            xml.push_str("</result>\n");
            (xml.with_content_type("application/xml; charset=utf-8"))
                .with_status(status)
                .into_response()
        }
    }
}

/// A failure as YOURLS answers one.
pub(crate) fn failure(format: Format, status: StatusCode, code: &str, message: &str) -> Response {
    let value = json!({
        "status": "fail",
        "code": code,
        "message": message,
        "errorCode": status.as_u16(),
        "statusCode": status.as_u16(),
    });
    answer(format, status, &value, message)
}

/// A problem answered by the API's code (or the rate limit) as YOURLS' failure, its
/// headers kept (`Retry-After`, `RateLimit`); any other answer as it is.
pub(crate) async fn rewrite(format: Format, response: Response) -> Response {
    if response.content_type() != Some(PROBLEM_JSON) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let problem = crate::compat::problem_body(body).await;
    let detail = (problem.as_ref())
        .and_then(|problem| problem.get("detail")?.as_str())
        .unwrap_or_default()
        .to_owned();
    let (field, why) = crate::compat::field_of(&detail);
    let field = match field.unwrap_or_default() {
        "alias" => "keyword",
        "code" => "shorturl",
        "X-API-Key" | "X-Api-Key" => "signature",
        other => other,
    };
    let message = if field.is_empty() {
        detail.clone()
    } else {
        format!("{field}: {why}")
    };
    let (status, code) = match (parts.status.as_u16(), field) {
        (400, "url") => (StatusCode::BAD_REQUEST, "error:nourl"),
        (400, _) => (StatusCode::BAD_REQUEST, "error:invalid"),
        // YOURLS refuses a login with 403.
        (401 | 403, _) => (StatusCode::FORBIDDEN, "error:auth"),
        (404, _) => (StatusCode::NOT_FOUND, "error:notfound"),
        // A taken keyword is a 200 whose status is `fail`, as YOURLS answers it.
        (409, _) => (StatusCode::OK, "error:keyword"),
        (429, _) => (StatusCode::TOO_MANY_REQUESTS, "error:ratelimit"),
        (status, _) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "error:server",
        ),
    };
    let mut answer = failure(format, status, code, &message);
    parts.headers.remove(CONTENT_LENGTH);
    parts.headers.remove(CONTENT_TYPE);
    for (name, value) in &parts.headers {
        answer.headers_mut().insert(name.clone(), value.clone());
    }
    answer
}

/// The fields of an object as XML elements, nested objects nested.
fn write_xml(xml: &mut String, fields: &Map<String, Value>) {
    for (name, value) in fields {
        xml.push('<');
        xml.push_str(name);
        xml.push('>');
        match value {
            Value::Object(inner) => write_xml(xml, inner),
            Value::Null => {}
            Value::String(text) => escape(xml, text),
            other => escape(xml, &other.to_string()),
        }
        xml.push_str("</");
        xml.push_str(name);
        xml.push('>');
    }
}

fn escape(xml: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => xml.push_str("&amp;"),
            '<' => xml.push_str("&lt;"),
            '>' => xml.push_str("&gt;"),
            '"' => xml.push_str("&quot;"),
            c => xml.push(c),
        }
    }
}
