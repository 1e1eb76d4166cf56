//! YOURLS' API (`/yourls-api.php`), as its clients call it: the `yourls` client on PyPI,
//! ShareX's YOURLS shortener, the WordPress and Drupal plugins, n8n and Make.
//!
//! Parameters come in the query or a form body, as YOURLS takes them. A caller is one of
//! this service's API keys, given as `signature=KEY`, or as `username=NAME` and
//! `password=KEY` (the key's name and the key). YOURLS' timed signature,
//! `md5(timestamp . token)`, cannot be checked by a service that keeps only each key's
//! SHA-256: it is refused, saying what to send instead. Answers are in `format=json`
//! (the default here), `xml` or `simple`.
//!
//! Served actions: `shorturl`, `expand`, `url-stats`, `stats` (`filter=last`: the
//! newest links), `db-stats` and `version`; see [`actions`].

mod actions;
mod output;

use poem::http::HeaderValue;
use std::sync::Arc;

use poem::{Endpoint, Request, Response};

use crate::auth::API_KEY_HEADER;
use crate::limit::{limit_create, limit_lookup};
use crate::state::AppState;
pub(crate) use output::Format;

/// The parameters of a request, from its query and its form body (the body's win).
#[derive(Debug, Clone, Default)]
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        (self.0.iter().rev())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// `/yourls-api.php`: the parameters read once, the caller's key put where the rate limit
/// reads it, then `shorturl` through the `create` policy and every other action through
/// `lookup`.
pub(crate) fn endpoint() -> impl Endpoint<Output = Response> {
    Dispatch {
        create: limit_create(actions::handle),
        lookup: limit_lookup(actions::handle),
    }
}

struct Dispatch<C, L> {
    create: C,
    lookup: L,
}

impl<C: Endpoint, L: Endpoint> Endpoint for Dispatch<C, L> {
    type Output = Response;

    async fn call(&self, mut request: Request) -> poem::Result<Response> {
        let params = match read(&mut request).await {
            Ok(params) => params,
            Err(error) => return Ok(crate::http::problem_of_error(error)),
        };
        let format = Format::of(&params);
        if params.get("timestamp").is_some() {
            return Ok(output::failure(
                format,
                poem::http::StatusCode::FORBIDDEN,
                "error:auth",
                "timestamp: a timed signature (md5 of timestamp and token) cannot be checked \
                 here, where only each key's SHA-256 is kept; send signature=KEY without a \
                 timestamp, or username=NAME&password=KEY",
            ));
        }
        if let Some(key) = key_of(&request, &params)
            && let Ok(value) = HeaderValue::from_str(&key)
        {
            request.headers_mut().insert(API_KEY_HEADER, value);
        }
        let create = params.get("action") == Some("shorturl");
        request.extensions_mut().insert(params);
        let response = if create {
            self.create
                .call(request)
                .await
                .map(poem::IntoResponse::into_response)
        } else {
            self.lookup
                .call(request)
                .await
                .map(poem::IntoResponse::into_response)
        };
        Ok(output::rewrite(
            format,
            response.unwrap_or_else(crate::http::problem_of_error),
        )
        .await)
    }
}

/// The key a request authenticates with: `signature`, or `password` when `username`
/// names the key it is. A login that does not match is sent as a key that matches
/// none, which the rate limit refuses as unknown.
fn key_of(request: &Request, params: &Params) -> Option<String> {
    if let Some(signature) = params.get("signature") {
        return Some(signature.to_owned());
    }
    let password = params.get("password")?;
    let username = params.get("username").unwrap_or_default();
    let state = request.data::<Arc<AppState>>()?;
    let matches = (state.api_keys.find(password)).is_some_and(|key| key.name.as_str() == username);
    Some(if matches {
        password.to_owned()
    } else {
        "-".to_owned()
    })
}

/// The query's parameters and, for a form POST, the body's, read once.
async fn read(request: &mut Request) -> poem::Result<Params> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let query = request.uri().query().unwrap_or_default().to_owned();
    pairs.extend(url::form_urlencoded::parse(query.as_bytes()).into_owned());
    let form = (request.content_type())
        .is_some_and(|kind| kind.starts_with("application/x-www-form-urlencoded"));
    if form {
        let body = request.take_body().into_vec().await?;
        pairs.extend(url::form_urlencoded::parse(&body).into_owned());
    }
    if pairs.len() > 64 {
        return Err(poem::Error::from_string(
            "parameters: at most 64",
            poem::http::StatusCode::BAD_REQUEST,
        ));
    }
    Ok(Params(pairs))
}
