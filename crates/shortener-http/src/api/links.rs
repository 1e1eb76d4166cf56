//! Create, look up, edit and delete one link.

use std::sync::Arc;

use futures_util::StreamExt as _;
use poem::Request;
use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::{Header, Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::ToJSON as _;
use poem_openapi::{ApiResponse, OpenApi};
use time::OffsetDateTime;

use super::auth::{ApiKeyAuth, Caller, owner};
use super::body::JsonBody;
use super::bulk::{BulkResponse, BulkResult, BulkResults, limit_bulk};
use super::fields::{BulkRequest, FromJsonBody as _, PatchLinkRequest};
use super::listing::LinkPage;
use super::pages;
use super::{ApiError, ApiTags, CreateLinkRequest, LinkBody, LinkResponse, idempotency};
use crate::auth::Scope;
use crate::limit::{MAX_BULK, limit_create, limit_lookup, limit_manage};
use crate::state::AppState;

#[derive(ApiResponse, Debug)]
enum CreateResponse {
    /// The link was created.
    #[oai(status = 201)]
    Created(Json<LinkBody>, #[oai(header = "Location")] String),
    /// With `find_if_exists`: the caller's link that the body would make again.
    #[oai(status = 200)]
    Found(Json<LinkBody>),
}

#[derive(ApiResponse, Debug)]
enum PageResponse {
    #[oai(status = 200)]
    Ok(Json<LinkPage>),
}

#[derive(ApiResponse, Debug)]
enum DeleteResponse {
    /// The link was deleted.
    #[oai(status = 204)]
    Deleted,
}

/// How many creates of one bulk request run at once.
const BULK_CONCURRENCY: usize = 16;

/// Create, look up, edit and delete links.
#[derive(Debug, Default)]
pub struct Links;

#[OpenApi]
impl Links {
    /// Create a short link. With an API key (scope `create`), the link is the key's.
    #[oai(
        path = "/api/v1/links",
        method = "post",
        tag = "ApiTags::Links",
        operation_id = "createLink",
        transform = "limit_create"
    )]
    async fn create(
        &self,
        state: Data<&Arc<AppState>>,
        request: &Request,
        caller: Caller,
        /// Makes a retry safe: the same key with the same body within 24 hours answers
        /// the first answer again and creates nothing.
        #[oai(
            name = "Idempotency-Key",
            validator(min_length = 1, max_length = 257, pattern = r#"^"?[!-~]+"?$"#)
        )]
        _idempotency_key: Header<Option<String>>,
        body: JsonBody<CreateLinkRequest>,
    ) -> Result<CreateResponse, ApiError> {
        let key = caller.require(Scope::Create)?;
        let body = body.0;
        if let Some(found) = state.existing_link(&body, owner(key)).await? {
            return Ok(CreateResponse::Found(Json(found)));
        }
        let fingerprint = fingerprint(&body);
        let create = state.create_link(body, owner(key));
        let link = idempotency::once(&state, request, key, fingerprint.as_bytes(), create).await?;
        let location = link.short_url.clone();
        Ok(CreateResponse::Created(Json(link), location))
    }

    /// The caller's links (scope `read`; every link with `admin`), newest first or most
    /// visited first. Newest first, a walk by `next_cursor` never repeats or skips a link
    /// that existed when it began, however many are created meanwhile; most visited
    /// first, pages are counted from the top, so a link whose visits grow during a walk
    /// may move to a page already read.
    #[oai(
        path = "/api/v1/links",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "listLinks",
        transform = "limit_lookup"
    )]
    // Each query parameter is an argument of the operation, as poem-openapi takes them.
    #[allow(clippy::too_many_arguments)]
    async fn list(
        &self,
        state: Data<&Arc<AppState>>,
        key: ApiKeyAuth,
        /// How many links per page, 1 to 100 (default 20).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
        /// The `next_cursor` of the previous page, in the same `order`.
        #[oai(validator(
            pattern = r"^(-?[0-9]{1,16}\.[A-Za-z0-9_-]{1,64}(@[A-Za-z0-9.:-]{1,259})?|visits\.[0-9]{1,9})$"
        ))]
        cursor: Query<Option<String>>,
        /// `created` (newest first, the default) or `visits` (most visited first, by
        /// people's visits as of the last flush; ties newest first).
        order: Query<Option<pages::LinkOrder>>,
        /// Only links whose code, URL or title contains this text (ASCII case ignored).
        #[oai(validator(max_length = 200))]
        q: Query<Option<String>>,
        /// Only links that have this tag (repeat: every one), case ignored; the cursor
        /// walks the filtered listing as the plain one.
        #[oai(validator(max_items = 10))]
        tag: Query<Vec<String>>,
        /// Only links on this domain, by its host; every domain when absent.
        #[oai(validator(
            max_length = 259,
            pattern = r"^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$"
        ))]
        domain: Query<Option<String>>,
    ) -> Result<PageResponse, ApiError> {
        let key = key.require(Scope::Read)?;
        let filter = pages::Filter {
            q: q.0,
            tags: tag.0,
            domain: domain.0,
            order: order.0.unwrap_or_default(),
        };
        let page = pages::page(&state, key, limit.0, cursor.0, filter).await?;
        Ok(PageResponse::Ok(Json(page)))
    }

    /// Create up to 1000 links at once. It takes one token of the `create` policy per
    /// link, all in one decision. Each result says what a create of that item alone would
    /// have answered; the reply is 200 even when some items failed.
    #[oai(
        path = "/api/v1/links/bulk",
        method = "post",
        tag = "ApiTags::Links",
        operation_id = "createLinks",
        transform = "limit_bulk"
    )]
    async fn bulk(
        &self,
        state: Data<&Arc<AppState>>,
        request: &Request,
        caller: Caller,
        /// As for a single create.
        #[oai(
            name = "Idempotency-Key",
            validator(min_length = 1, max_length = 257, pattern = r#"^"?[!-~]+"?$"#)
        )]
        _idempotency_key: Header<Option<String>>,
        body: JsonBody<BulkRequest>,
    ) -> Result<BulkResponse, ApiError> {
        let key = caller.require(Scope::Create)?;
        let items = body.0.links;
        if items.is_empty() {
            return Err(ApiError::bad_request(
                "links",
                "must hold at least one link",
            ));
        }
        if items.len() > MAX_BULK {
            return Err(ApiError::status(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "links: at most {MAX_BULK} links per request, not {}",
                    items.len()
                ),
            ));
        }
        let masked: Vec<serde_json::Value> = items.iter().cloned().map(without_password).collect();
        let fingerprint = serde_json::to_vec(&masked).unwrap_or_default();
        let state = &**state;
        let run = async {
            let creates = items.into_iter().enumerate().map(|(index, item)| {
                let owner = owner(key);
                async move {
                    let created = match CreateLinkRequest::from_value(item) {
                        Ok(body) => match state.existing_link(&body, owner.clone()).await {
                            Ok(Some(found)) => Ok((found, 200)),
                            Ok(None) => {
                                state.create_link(body, owner).await.map(|link| (link, 201))
                            }
                            Err(error) => Err(error),
                        },
                        Err(error) => Err(error.into()),
                    };
                    BulkResult::from_outcome(index, created)
                }
            });
            // A few at a time: SQLite commits concurrent creates together.
            let results = futures_util::stream::iter(creates)
                .buffered(BULK_CONCURRENCY)
                .collect::<Vec<_>>()
                .await;
            Ok(BulkResults { results })
        };
        let results = idempotency::once(state, request, key, &fingerprint, run).await?;
        Ok(BulkResponse::Ok(Json(results)))
    }

    /// Look up a short link, with its visit count. Anonymous callers see links made
    /// without a key; a key (scope `read`) sees its own. An expired or used-up link is
    /// 410, without its URL.
    #[oai(
        path = "/api/v1/links/:code",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "getLink",
        transform = "limit_lookup"
    )]
    async fn get(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        /// The link's domain, by its host; the default domain when absent.
        #[oai(validator(
            max_length = 259,
            pattern = r"^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$"
        ))]
        domain: Query<Option<String>>,
        caller: Caller,
    ) -> Result<LinkResponse, ApiError> {
        let key = caller.require(Scope::Read)?;
        let link_key = state.link_key(&code, domain.0.as_deref())?;
        let link = state.visible_link(&link_key, key).await?;
        if link.is_expired(OffsetDateTime::now_utc()) {
            return Err(shortener_core::ResolveError::Expired(None).into());
        }
        if link.is_exhausted() {
            return Err(shortener_core::ResolveError::Exhausted(None).into());
        }
        Ok(LinkResponse::Ok(Json(state.link_body(link))))
    }

    /// Edit a link (scope `update`): its target, expiry or visit limit. Every node stops
    /// serving the old target within 200 ms when Redis is configured, else within
    /// `cache.ttl_secs`.
    #[oai(
        path = "/api/v1/links/:code",
        method = "patch",
        tag = "ApiTags::Links",
        operation_id = "updateLink",
        transform = "limit_manage"
    )]
    async fn update(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        /// The link's domain, by its host; the default domain when absent.
        #[oai(validator(
            max_length = 259,
            pattern = r"^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$"
        ))]
        domain: Query<Option<String>>,
        key: ApiKeyAuth,
        body: JsonBody<PatchLinkRequest>,
    ) -> Result<LinkResponse, ApiError> {
        let key = key.require(Scope::Update)?;
        let link_key = state.link_key(&code, domain.0.as_deref())?;
        let patch = state.link_patch(body.0).await?;
        let link = state
            .shortener
            .update(&link_key, key.access(), &patch, OffsetDateTime::now_utc())
            .await?;
        state.invalidate(&link_key).await;
        tracing::info!(link = %link_key, key = %key.name, "link updated");
        Ok(LinkResponse::Ok(Json(state.link_body(link))))
    }

    /// Delete a link (scope `delete`).
    #[oai(
        path = "/api/v1/links/:code",
        method = "delete",
        tag = "ApiTags::Links",
        operation_id = "deleteLink",
        transform = "limit_manage"
    )]
    async fn delete(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        /// The link's domain, by its host; the default domain when absent.
        #[oai(validator(
            max_length = 259,
            pattern = r"^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$"
        ))]
        domain: Query<Option<String>>,
        key: ApiKeyAuth,
    ) -> Result<DeleteResponse, ApiError> {
        let key = key.require(Scope::Delete)?;
        let link_key = state.link_key(&code, domain.0.as_deref())?;
        if state.shortener.delete(&link_key, key.access()).await? {
            state.invalidate(&link_key).await;
            tracing::info!(link = %link_key, key = %key.name, "link deleted");
            Ok(DeleteResponse::Deleted)
        } else {
            Err(ApiError::not_found("code: no link with this code"))
        }
    }
}

/// What a retry with the same `Idempotency-Key` must repeat: the body, its password
/// only as "one was given" (the fingerprint is stored, and a fast hash of a password
/// would be guessed far sooner than its argon2id hash).
fn fingerprint(body: &CreateLinkRequest) -> String {
    let value = serde_json::from_str(&body.to_json_string()).unwrap_or_default();
    without_password(value).to_string()
}

/// A create body with its `password` (if any) replaced by `true`.
fn without_password(mut body: serde_json::Value) -> serde_json::Value {
    if let Some(password) = body.get_mut("password")
        && !password.is_null()
    {
        *password = serde_json::Value::Bool(true);
    }
    body
}
