//! YOURLS' actions over the same state methods as the API's own operations.
//!
//! - `shorturl` (`url`, `keyword`, `title`): a create, answered with YOURLS' record of
//!   the link (`ip` is empty: this service keeps no address);
//! - `expand` and `url-stats` (`shorturl`: a keyword, or a short URL on any served
//!   domain): the caller's link and its visits by people;
//! - `stats` with `filter` `top`, `bottom` or `last` (`limit`, `start`): the most
//!   visited, least visited or newest links, and the totals; `rand` is refused;
//! - `db-stats`: the caller's links and their visits; `version`.

use poem::http::StatusCode;
use poem::{Request, Response, handler};
use serde_json::{Map, Value, json};
use shortener_core::{LinkKey, LinkRepository as _, ListOrder, ListQuery, Tags};
use time::OffsetDateTime;
use time::macros::format_description;

use super::output::answer;
use super::{Format, Params};
use crate::api::fields::FromJsonBody as _;
use crate::api::{ApiError, CreateLinkRequest, LinkBody};
use crate::auth::Scope;
use crate::compat::{key, state};
use crate::state::AppState;

/// The YOURLS version whose API this serves.
const VERSION: &str = "1.9.2";

/// Every action: its answer, or its error as a problem, which the dispatch puts in
/// YOURLS' shape.
#[handler]
pub(super) async fn handle(request: &Request) -> Response {
    let params = request
        .extensions()
        .get::<Params>()
        .cloned()
        .unwrap_or_default();
    run(request, &params, Format::of(&params))
        .await
        .unwrap_or_else(poem::IntoResponse::into_response)
}

async fn run(request: &Request, params: &Params, format: Format) -> Result<Response, ApiError> {
    let state = state(request)?;
    let action = params.get("action").unwrap_or_default();
    let scope = if action == "shorturl" {
        Scope::Create
    } else {
        Scope::Read
    };
    let caller = key(&state, request, scope)?;
    let ok = |value: Value, simple: &str| answer(format, StatusCode::OK, &value, simple);
    match action {
        "shorturl" => {
            let mut body = Map::new();
            for (theirs, ours) in [("url", "url"), ("keyword", "alias"), ("title", "title")] {
                if let Some(value) = params.get(theirs).filter(|value| !value.is_empty()) {
                    body.insert(ours.into(), Value::String(value.to_owned()));
                }
            }
            if !body.contains_key("url") {
                return Err(ApiError::bad_request("url", "is required"));
            }
            let asked = CreateLinkRequest::from_json(body)?;
            let link = state
                .create_link(asked, Some(caller.owner().clone()))
                .await?;
            let value = json!({
                "url": record(&link),
                "status": "success",
                "message": format!("{} added to database", link.url),
                "title": link.title.clone().unwrap_or_default(),
                "shorturl": link.short_url,
                "statusCode": 200,
            });
            Ok(ok(value, &link.short_url))
        }
        "expand" | "url-stats" => {
            let key = short_url(&state, params)?;
            let link = state.visible_link(&key, Some(&caller)).await?;
            let link = state.link_body(link);
            if action == "expand" {
                let value = json!({
                    "keyword": link.code,
                    "shorturl": link.short_url,
                    "longurl": link.url,
                    "title": link.title.clone().unwrap_or_default(),
                    "message": "success",
                    "statusCode": 200,
                });
                return Ok(ok(value, &link.url));
            }
            let value =
                json!({"link": stats_record(&link), "message": "success", "statusCode": 200});
            Ok(ok(value, &link.short_url))
        }
        "stats" | "db-stats" => {
            let (limit, start) = (
                number(params, "limit", 10, 100)?,
                number(params, "start", 0, u64::from(u32::MAX))?,
            );
            let order = match params.get("filter").unwrap_or("top") {
                _ if action == "db-stats" => ListOrder::Newest,
                "top" => ListOrder::MostVisited,
                "bottom" => ListOrder::LeastVisited,
                "last" => ListOrder::Newest,
                _ => {
                    return Err(ApiError::bad_request(
                        "filter",
                        "must be `top`, `bottom` or `last` (`rand` is not served)",
                    ));
                }
            };
            let query = ListQuery {
                order,
                offset: usize::try_from(start).unwrap_or(usize::MAX),
                after: None,
                limit: usize::try_from(limit).unwrap_or(100),
                search: None,
                tags: Tags::default(),
                domain: None,
                within: shortener_core::ListWithin::default(),
            };
            let repository = state.shortener.repository();
            let totals = repository.count(caller.access(), &query).await?;
            let totals_value = json!({
                "total_links": totals.links.to_string(),
                "total_clicks": totals.visits.to_string(),
            });
            if action == "db-stats" {
                let value =
                    json!({"db-stats": totals_value, "message": "success", "statusCode": 200});
                return Ok(ok(value, &totals.links.to_string()));
            }
            let links = repository.list(caller.access(), &query).await?;
            let mut listed = Map::new();
            for (index, link) in links.into_iter().enumerate() {
                let link = state.link_body(link);
                listed.insert(format!("link_{}", index + 1), stats_record(&link));
            }
            let value = json!({
                "links": listed,
                "stats": totals_value,
                "message": "success",
                "statusCode": 200,
            });
            Ok(ok(value, &totals.links.to_string()))
        }
        "version" => Ok(ok(
            json!({"version": VERSION, "message": "success", "statusCode": 200}),
            VERSION,
        )),
        "" => Err(ApiError::bad_request("action", "is required")),
        _ => Err(ApiError::bad_request(
            "action",
            "must be one of shorturl, expand, url-stats, stats, db-stats, version",
        )),
    }
}

/// The link that `shorturl` names: a keyword on the default domain, or a short URL on
/// any served domain.
fn short_url(state: &AppState, params: &Params) -> Result<LinkKey, ApiError> {
    let sent = params
        .get("shorturl")
        .filter(|sent| !sent.is_empty())
        .ok_or_else(|| ApiError::bad_request("code", "shorturl is required"))?;
    let Some(rest) = (sent.strip_prefix("https://")).or_else(|| sent.strip_prefix("http://"))
    else {
        return state.link_key(sent, None);
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let code = path.rsplit('/').next().unwrap_or_default();
    let default = &state.serving.domains.default_site().host;
    let host = (!host.eq_ignore_ascii_case(default)).then_some(host);
    state.link_key(code, host)
}

/// A whole number parameter within `1..=max` (or `0..=max` when its default is 0).
fn number(params: &Params, name: &str, default: u64, max: u64) -> Result<u64, ApiError> {
    let Some(raw) = params.get(name) else {
        return Ok(default);
    };
    match raw.parse::<u64>() {
        Ok(value) if value <= max && (value > 0 || default == 0) => Ok(value),
        _ => Err(ApiError::bad_request(
            name,
            format!("must be a whole number up to {max}"),
        )),
    }
}

/// A new link as YOURLS records it.
fn record(link: &LinkBody) -> Value {
    json!({
        "keyword": link.code,
        "url": link.url,
        "title": link.title.clone().unwrap_or_default(),
        "date": date(link.created_at),
        "ip": "",
    })
}

/// A link with its visits as YOURLS' `url-stats` and `stats` list them.
fn stats_record(link: &LinkBody) -> Value {
    json!({
        "shorturl": link.short_url,
        "url": link.url,
        "title": link.title.clone().unwrap_or_default(),
        "timestamp": date(link.created_at),
        "ip": "",
        "clicks": link.visits.to_string(),
    })
}

/// A time as YOURLS writes it: `Y-m-d H:i:s`, here in UTC.
fn date(at: OffsetDateTime) -> String {
    let format = format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    at.to_offset(time::UtcOffset::UTC)
        .format(&format)
        .unwrap_or_default()
}
