//! Links behind a password: the page a locked link answers with, the `unlockLink`
//! operation its form posts to, and `X-Link-Password` on `GET /{code}` for API clients.
//!
//! Every attempt takes a token from two buckets in one all-or-nothing decision, before
//! the password is checked: the client's bucket for this link (the `unlock` policy, 5 a
//! minute by default) and the link's bucket over every client (`unlock_link`, 30 a
//! minute). A stranger who spends their own guesses leaves every other client theirs; the
//! link's bucket bounds all guesses at it, and it takes six clients' worth to empty it.
//! With Redis both are shared by every node, so the bounds hold whatever the number of
//! nodes. A refused attempt checks nothing.
//!
//! Nothing here shows the target: the page has no link in it, it is never cached, and
//! the redirect that follows a right password is `no-store` (see `Link::cacheable_for`).

use poem::Request;
use poem::http::{HeaderName, StatusCode};
use poem_openapi::payload::Html;
use poem_openapi::{ApiResponse, Object};
use shortener_core::{LinkKey, ResolveError, ShortCode};
use time::OffsetDateTime;

use super::{ApiError, Problem};
use crate::state::AppState;
use crate::web::CONTENT_SECURITY_POLICY;

/// The header that carries a locked link's password on `GET /{code}`.
pub const PASSWORD_HEADER: HeaderName = HeaderName::from_static("x-link-password");

/// A visitor's attempt at a locked link's password, and who makes it.
pub(crate) struct Unlock {
    pub password: String,
    /// The client's identity, as the rate limiter counts it.
    pub client: String,
    /// The tier of the caller's API key, whose `unlock` policy applies if it has one.
    pub tier: Option<String>,
}

impl std::fmt::Debug for Unlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unlock")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

/// Why an attempt did not open the link.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The password is not the link's.
    Wrong,
    /// Too many attempts; the seconds to wait.
    Limited(u64),
    /// The limiter could not decide and does not guess (`on_error = "fail_closed"`).
    Unavailable(ApiError),
}

/// The form of the unlock page.
#[derive(Object, serde::Deserialize)]
pub(crate) struct UnlockForm {
    /// The link's password.
    #[oai(validator(max_length = 1024))]
    password: String,
}

#[derive(ApiResponse, Debug)]
pub(crate) enum UnlockResponse {
    /// The right password: on to the target, counted as a visit.
    #[oai(status = 303)]
    SeeOther(
        #[oai(header = "Location")] String,
        #[oai(header = "Cache-Control")] String,
    ),
    /// A wrong password: the page again, saying so.
    #[oai(status = 403)]
    Wrong(
        Html<String>,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Content-Security-Policy")] String,
    ),
    /// Too many attempts at this link (from this client, or from all of them): the page,
    /// with the wait.
    #[oai(status = 429)]
    Limited(
        Html<String>,
        #[oai(header = "Retry-After")] u64,
        #[oai(header = "Cache-Control")] String,
        #[oai(header = "Content-Security-Policy")] String,
    ),
}

impl std::fmt::Debug for UnlockForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UnlockForm { .. }")
    }
}

/// The answer to the unlock form's post (the `unlockLink` operation of [`super::ops`]):
/// the code of the path, the visit's query `q`, the form's password.
pub(crate) async fn answer(
    state: &AppState,
    request: &Request,
    code: &str,
    query: Option<&str>,
    form: UnlockForm,
) -> Result<UnlockResponse, ApiError> {
    let site = (state
        .serving
        .domains
        .by_host(crate::domains::request_host(request)))
    .ok_or_else(|| ApiError::not_found("host: this service serves no such domain"))?;
    let code = ShortCode::parse(code).map_err(|e| ApiError::bad_request("code", e))?;
    let key = LinkKey::new(site.domain.clone(), code);
    let now = OffsetDateTime::now_utc();
    // The post's `Referer` is the unlock page: the visit's referrer is not known here.
    let visit = crate::visit::values::Visit {
        referer: None,
        ..state.visit(request)
    };
    let visitor = visit.visitor;
    let link = match state.shortener.resolve(&key, now, Some(visitor)).await {
        // An open link opens without a password.
        Ok(link) => link,
        Err(ResolveError::Locked(hash)) => {
            let unlock = state.unlock_of(request, form.password);
            match state.try_unlock(&key, hash, unlock, now, visitor).await {
                Ok(resolved) => resolved?,
                Err(Refused::Wrong) => {
                    return Ok(UnlockResponse::Wrong(
                        page(&key, query, Some("Wrong password.")),
                        "no-store".into(),
                        CONTENT_SECURITY_POLICY.into(),
                    ));
                }
                Err(Refused::Limited(seconds)) => {
                    let message =
                        format!("Too many attempts at this link. Try again in {seconds} seconds.");
                    return Ok(UnlockResponse::Limited(
                        page(&key, query, Some(&message)),
                        seconds,
                        "no-store".into(),
                        CONTENT_SECURITY_POLICY.into(),
                    ));
                }
                Err(Refused::Unavailable(error)) => return Err(error),
            }
        }
        Err(error) => return Err(error.into()),
    };
    // The visit's query is the form's `q`, not the post's own.
    let rules_visit = crate::visit_rules::Visit {
        query,
        ..crate::visit_rules::Visit::of(request, Some(visitor), now)
    };
    let destination = crate::visit_rules::destination(state, &link, &rules_visit);
    state.count_values(&key, now, &visit, destination.way.as_ref());
    Ok(UnlockResponse::SeeOther(
        destination.location,
        "no-store".into(),
    ))
}

impl From<Refused> for ApiError {
    /// How an API client (`X-Link-Password`) is told.
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::Wrong => ApiError::status(
                StatusCode::FORBIDDEN,
                "X-Link-Password: not this link's password",
            ),
            Refused::Limited(seconds) => ApiError::TooManyRequests(
                poem_openapi::payload::Json(Problem::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("rate limit `unlock` exhausted; retry after {seconds} s"),
                )),
                seconds,
            ),
            Refused::Unavailable(error) => error,
        }
    }
}

/// The unlock page of `key`, with a `message` (a wrong password, a wait) when there is
/// one. Its form posts the password to the link's own path, with the visit's `query`
/// carried along as `q`.
pub(crate) fn page(key: &LinkKey, query: Option<&str>, message: Option<&str>) -> Html<String> {
    // A code is only `A-Z a-z 0-9 _ -`: safe in a path and in HTML as it is.
    let code = key.code.as_str();
    let action = match query {
        Some(query) if !query.is_empty() => format!("/{code}?q={}", percent_encoded(query)),
        _ => format!("/{code}"),
    };
    let message = message.map_or(String::new(), |message| {
        format!(
            "<p class=\"alert\" role=\"alert\">{}</p>\n",
            escape(message)
        )
    });
    Html(format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"robots\" content=\"noindex\">\n<title>Password required</title>\n\
         <link rel=\"stylesheet\" href=\"/assets/app.css\">\n</head>\n<body>\n\
         <main class=\"unlock\">\n<h1>This link needs a password</h1>\n{message}\
         <form method=\"post\" action=\"{}\">\n\
         <label for=\"password\">Password</label>\n\
         <input id=\"password\" name=\"password\" type=\"password\" required minlength=\"8\" \
         maxlength=\"1024\" autocomplete=\"current-password\" autofocus>\n\
         <button type=\"submit\">Open the link</button>\n</form>\n</main>\n</body>\n</html>\n",
        escape(&action)
    ))
}

/// `text` as a query value: every byte but the unreserved ones (RFC 3986) escaped.
fn percent_encoded(text: &str) -> String {
    use std::fmt::Write as _;
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            let _ = write!(encoded, "%{byte:02X}");
        }
    }
    encoded
}

/// `text` safe inside HTML text and double-quoted attributes.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_posts_to_the_code_with_the_visit_query_and_escapes_its_message() {
        let key = LinkKey::on_default(ShortCode::parse("s3cret").unwrap());
        let Html(plain) = page(&key, None, None);
        assert!(
            plain.contains(r#"<form method="post" action="/s3cret">"#),
            "{plain}"
        );
        assert!(!plain.contains("role=\"alert\""));
        let Html(page) = page(&key, Some("a=1&b=<x>"), Some("Wrong <password>."));
        assert!(
            page.contains(r#"action="/s3cret?q=a%3D1%26b%3D%3Cx%3E""#),
            "{page}"
        );
        assert!(page.contains("Wrong &lt;password&gt;."), "{page}");
    }
}
