//! Shlink's REST API (`/rest/v3/...`, and `/rest/v1`, `/rest/v2` for older tools), as
//! its JS SDK, its web client, ShareX and the browser extensions call it, with
//! `X-Api-Key` taking this service's API keys.
//!
//! Served: health, short URLs (list paged by number with search, tags and domain;
//! create, with `findIfExists`; the one-step `shorten`; get, edit, delete; redirect rules
//! read and replaced), tags
//! (listed with their stats, renamed, deleted), the visits overview and the domains. Errors keep this service's detail, which names the field by
//! Shlink's name, under Shlink's problem `type`s. Per-visit lists are answered with a
//! problem that says why: this service keeps daily counts, never a record per visit.
//! What Shlink has and this service has not (a link valid from a later date, codes of
//! a chosen length, orphan visits) is refused naming the field, never ignored.
//!
//! - [`short_urls`]: one short URL at a time, and its shape;
//! - [`redirect_rules`]: a short URL's redirect rules, read and replaced;
//! - [`listing`]: the list, tags and domains;
//! - [`problems`]: this service's problems in Shlink's shape.

mod listing;
mod problems;
mod redirect_rules;
mod short_urls;

use poem::http::HeaderValue;
use poem::web::Json;
use poem::{EndpointExt as _, Request, Response, Route, get, handler};
use serde_json::json;

use crate::auth::API_KEY_HEADER;
use crate::limit::{limit_create, limit_lookup, limit_manage};
use crate::state::AppState;

/// The Shlink version answered by health: clients enable their screens by it, and 4.3
/// is the last whose features this adapter serves (its list filters by domain; 4.5's
/// and later's filters and rule types are not served here).
pub const VERSION: &str = "4.3.0";

/// The routes under `/rest`, with CORS for the origins of `server.cors_origins`.
pub(crate) fn routes(state: &AppState) -> poem::endpoint::BoxEndpoint<'static, Response> {
    let rest = Route::new()
        .at("/health", get(health))
        .nest("/v1", versioned())
        .nest("/v2", versioned())
        .nest("/v3", versioned());
    let rest = problems::ShlinkProblems { inner: rest };
    let origins = &state.serving.cors_origins;
    if origins.is_empty() {
        return rest.map_to_response().boxed();
    }
    let mut cors = poem::middleware::Cors::new()
        .allow_methods(["GET", "POST", "PATCH", "PUT", "DELETE"])
        .allow_headers(["x-api-key", "content-type"])
        .expose_headers(["ratelimit", "ratelimit-policy", "retry-after"]);
    if !origins.iter().any(|origin| origin == "*") {
        cors = cors.allow_origins(origins.iter().map(String::as_str));
    }
    rest.with(cors).map_to_response().boxed()
}

/// One version's routes: v1, v2 and v3 differ in what this adapter does not serve.
fn versioned() -> Route {
    Route::new()
        .at("/health", get(health))
        .at(
            "/short-urls",
            get(limit_lookup(listing::list)).post(limit_create(short_urls::create)),
        )
        .at(
            "/short-urls/shorten",
            get(limit_create(short_urls::shorten).before(key_from_query)),
        )
        .at(
            "/short-urls/:code",
            get(limit_lookup(short_urls::get_one))
                .patch(limit_manage(short_urls::edit))
                .delete(limit_manage(short_urls::delete)),
        )
        .at(
            "/short-urls/:code/redirect-rules",
            get(limit_lookup(redirect_rules::read)).post(limit_manage(redirect_rules::replace)),
        )
        .at("/short-urls/:code/visits", get(short_urls::visits))
        .at("/tags/:tag/visits", get(short_urls::visits))
        .at("/domains/:domain/visits", get(short_urls::visits))
        .at("/visits/orphan", get(short_urls::visits))
        .at("/visits/non-orphan", get(short_urls::visits))
        .at(
            "/tags",
            get(limit_lookup(listing::tags))
                .put(limit_manage(listing::rename_tag))
                .delete(limit_manage(listing::delete_tags)),
        )
        .at("/tags/stats", get(limit_lookup(listing::tag_stats)))
        .at("/visits", get(limit_lookup(listing::visits_overview)))
        .at("/domains", get(limit_lookup(listing::domains)))
}

#[handler]
fn health() -> Json<serde_json::Value> {
    Json(json!({
        "status": "pass",
        "version": VERSION,
        "links": {
            "about": "https://shlink.io",
            "project": "https://github.com/shlinkio/shlink",
        },
    }))
}

/// `shorten` takes its key as `apiKey` in the query: moved to the header, where the rate
/// limit and the operation read it.
async fn key_from_query(mut request: Request) -> poem::Result<Request> {
    let query = request.uri().query().unwrap_or_default();
    let key = url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "apiKey")
        .map(|(_, value)| value.into_owned());
    if let Some(key) = key
        && let Ok(value) = HeaderValue::from_str(&key)
    {
        request.headers_mut().insert(API_KEY_HEADER, value);
    }
    Ok(request)
}
