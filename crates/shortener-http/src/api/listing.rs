//! What a listing of a key's links answers (a page of them: its query in `pages.rs`, its
//! operation in `links.rs`, as poem-openapi wants each path in one `#[OpenApi]` block);
//! their export; their tags with counts; and the domains links may be on.

use std::sync::Arc;

use futures_util::{Stream, stream};
use poem::Body;
use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::{Binary, Json};
use poem_openapi::{ApiResponse, Enum, Object, OpenApi, ResponseContent};
use shortener_core::{LinkRepository as _, ListCursor};

use super::auth::ApiKeyAuth;
use super::{ApiError, ApiTags, LinkBody};
use crate::auth::Scope;
use crate::limit::limit_lookup;
use crate::state::AppState;
use shortener_transfer::export::{self, Format, Reach};

/// The most links one page holds.
pub const MAX_PAGE: u32 = 100;

/// A page of links, in the order asked for.
#[derive(Object, Debug)]
pub struct LinkPage {
    pub items: Vec<LinkBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    #[oai(nullable)]
    pub next_cursor: Option<String>,
}

/// A tag of the caller's links.
#[derive(Object, Debug)]
pub struct TagBody {
    pub tag: String,
    /// How many of the caller's links have it.
    pub links: u64,
    /// Their visits by people, in all (as of the last visit flush).
    pub visits: u64,
    /// Their visits by bots, in all.
    pub bots: u64,
}

/// The tags of the caller's links, in order.
#[derive(Object, Debug)]
pub struct TagsBody {
    pub tags: Vec<TagBody>,
}

#[derive(ApiResponse, Debug)]
enum TagsResponse {
    #[oai(status = 200)]
    Ok(Json<TagsBody>),
}

/// A domain the service serves.
#[derive(Object, Debug)]
pub struct DomainBody {
    /// Its host, as `domain` names it in the API.
    pub host: String,
    /// Whether it is the default domain (that of `server.public_url`).
    pub default: bool,
    /// Where `/` on it redirects instead of showing the page; `null`: the page.
    #[oai(nullable)]
    pub root_redirect: Option<String>,
    /// Where an unknown code on it redirects instead of a 404; `null`: the 404.
    #[oai(nullable)]
    pub not_found_url: Option<String>,
}

/// The domains the service serves, the default one first.
#[derive(Object, Debug)]
pub struct DomainsBody {
    pub domains: Vec<DomainBody>,
}

#[derive(ApiResponse, Debug)]
enum DomainsResponse {
    #[oai(status = 200)]
    Ok(Json<DomainsBody>),
}

/// The body of an export, by format.
#[derive(ResponseContent)]
enum ExportContent {
    #[oai(content_type = "application/x-ndjson")]
    Ndjson(Binary<Body>),
    #[oai(content_type = "text/csv; charset=utf-8")]
    Csv(Binary<Body>),
}

#[derive(ApiResponse)]
enum ExportResponse {
    /// Every link, newest first, streamed as it is read.
    #[oai(status = 200)]
    Ok(ExportContent),
}

/// The formats of an export.
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
#[oai(rename_all = "lowercase")]
enum ExportFormat {
    /// One JSON object per line.
    Ndjson,
    /// A header line, then one line per link (RFC 4180).
    Csv,
}

/// Listings and statistics.
#[derive(Debug, Default)]
pub struct Listing;

#[OpenApi]
impl Listing {
    /// Every link the key reaches (scope `read`; every link with `admin`), newest first,
    /// as NDJSON or CSV: code, url, created_at, expires_at, max_visits, visits, owner. It
    /// is streamed page by page as storage is read, so an export of any size holds one
    /// page in memory; a storage failure midway ends the body early (no last line break).
    /// Each page of 500 links after the first takes a token of the key's `lookup` policy:
    /// past its bucket, the export goes on at the policy's rate. CSV cells that a
    /// spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first) start with `'`.
    #[oai(
        path = "/api/v1/links/export",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "exportLinks",
        transform = "limit_lookup"
    )]
    async fn export(
        &self,
        state: Data<&Arc<AppState>>,
        key: ApiKeyAuth,
        /// `ndjson` (the default) or `csv`.
        format: Query<Option<ExportFormat>>,
    ) -> Result<ExportResponse, ApiError> {
        let key = key.require(Scope::Read)?;
        let reach = if key.scopes.contains(Scope::Admin) {
            Reach::All
        } else {
            Reach::Owner(key.owner().clone())
        };
        let format = match format.0.unwrap_or(ExportFormat::Ndjson) {
            ExportFormat::Ndjson => Format::Ndjson,
            ExportFormat::Csv => Format::Csv,
        };
        // The request's token paid for the first page; each later page takes one more of
        // the key's `lookup` bucket, so an export pays for what it reads.
        let pacer = (state.policies.get(key.tier.as_deref(), "lookup")).map(|policy| Pacer {
            identity: format!("key:{}", key.name),
            policy: policy.clone(),
        });
        let body = Body::from_bytes_stream(export_stream(state.0.clone(), reach, format, pacer));
        Ok(ExportResponse::Ok(match format {
            Format::Ndjson => ExportContent::Ndjson(Binary(body)),
            Format::Csv => ExportContent::Csv(Binary(body)),
        }))
    }

    /// The tags of the caller's links (scope `read`; every link's with `admin`), each
    /// with how many of those links have it and their visits in all.
    #[oai(
        path = "/api/v1/tags",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "listTags",
        transform = "limit_lookup"
    )]
    async fn tags(
        &self,
        state: Data<&Arc<AppState>>,
        key: ApiKeyAuth,
    ) -> Result<TagsResponse, ApiError> {
        let key = key.require(Scope::Read)?;
        let counts = state.shortener.repository().tags(key.access()).await?;
        let tags = (counts.into_iter())
            .map(|count| TagBody {
                tag: count.tag.to_string(),
                links: count.links,
                visits: count.visits,
                bots: count.bots,
            })
            .collect();
        Ok(TagsResponse::Ok(Json(TagsBody { tags })))
    }

    /// The domains links may be created on, the default one first (for a client's
    /// choice of domain; no key needed).
    #[oai(
        path = "/api/v1/domains",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "listDomains",
        transform = "limit_lookup"
    )]
    async fn domains(&self, state: Data<&Arc<AppState>>) -> DomainsResponse {
        let domains = (state.serving.domains.sites().iter())
            .map(|site| DomainBody {
                host: site.host.clone(),
                default: site.domain.is_default(),
                root_redirect: (site.root_redirect.as_ref()).map(|url| url.as_str().to_owned()),
                not_found_url: (site.not_found_url.as_ref()).map(|url| url.as_str().to_owned()),
            })
            .collect();
        DomainsResponse::Ok(Json(DomainsBody { domains }))
    }
}

/// The walk of an export: the header, then a chunk per page, until the last page or a
/// storage error (logged, and the body ends there).
/// What an export pays per page after the first: a token of the key's `lookup` policy.
/// While the bucket is empty the export waits for the next token rather than failing, so
/// that a large export completes at the rate the policy allows, sharing the bucket with
/// the key's other look-ups.
#[derive(Debug, Clone)]
struct Pacer {
    identity: String,
    policy: shortener_core::Policy,
}

impl Pacer {
    /// One token, waiting for it as long as the policy says; an error when the limiter
    /// cannot decide (the export then ends early, as on a storage failure).
    async fn pay(&self, state: &AppState) -> std::io::Result<()> {
        use shortener_core::RateLimiter as _;
        loop {
            let decision = (state.limiter.acquire(&self.identity, &self.policy, 1).await)
                .map_err(std::io::Error::other)?;
            if decision.allowed {
                return Ok(());
            }
            let wait_us = decision
                .retry_after_us
                .unwrap_or(1_000_000)
                .clamp(1_000, 60_000_000);
            tokio::time::sleep(std::time::Duration::from_micros(wait_us)).await;
        }
    }
}

fn export_stream(
    state: Arc<AppState>,
    reach: Reach,
    format: Format,
    pacer: Option<Pacer>,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static {
    enum Step {
        Header,
        After(Option<ListCursor>),
        Done,
    }
    stream::unfold(Step::Header, move |step| {
        let (state, reach, pacer) = (state.clone(), reach.clone(), pacer.clone());
        async move {
            match step {
                Step::Header => Some((Ok(format.header()), Step::After(None))),
                Step::After(after) => {
                    if let (Some(pacer), Some(_)) = (&pacer, &after)
                        && let Err(error) = pacer.pay(&state).await
                    {
                        tracing::warn!(%error, "an export ended early: the rate limiter is unavailable");
                        return Some((Err(error), Step::Done));
                    }
                    let repository = state.shortener.repository();
                    match export::page(repository, &reach, format, after).await {
                        Ok((text, Some(next))) => Some((Ok(text), Step::After(Some(next)))),
                        Ok((text, None)) => Some((Ok(text), Step::Done)),
                        Err(error) => {
                            tracing::error!(%error, "an export ended early");
                            Some((Err(std::io::Error::other(error)), Step::Done))
                        }
                    }
                }
                Step::Done => None,
            }
        }
    })
}
