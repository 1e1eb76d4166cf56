//! The dry run of a visit: which rule of a link, and which target, a visit would get,
//! worked out by the redirect's own code ([`crate::visit_rules::destination`]) and counted nowhere.
//! `GET` imagines a visitor with the caller's own headers and address; `POST` takes
//! them from its body.

use std::net::IpAddr;
use std::sync::Arc;

use poem::Request;
use poem::http::{HeaderMap, HeaderValue, header};
use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde_json::{Map, Value};
use shortener_core::{Redirect, RedirectStatus};
use time::OffsetDateTime;

use super::auth::Caller;
use super::body::JsonBody;
use super::fields::{FieldError, FromJsonBody, deny_unknown, optional, string};
use super::{ApiError, ApiTags};
use crate::auth::Scope;
use crate::limit::limit_lookup;
use crate::state::AppState;
use crate::visit_rules::Visit;

/// Where a visit would go.
#[derive(Object, Debug)]
pub struct ResolutionBody {
    /// The place of the rule that matched, from 0; absent when none did and the visit
    /// goes to the link's own `url`.
    #[oai(skip_serializing_if_is_none)]
    pub rule: Option<usize>,
    /// What the visit is counted as by rule (`by=rule`): the rule's name or place, or
    /// `default`; absent for a link without rules.
    #[oai(skip_serializing_if_is_none)]
    pub counted_as_rule: Option<String>,
    /// What it is counted as by variant (`by=variant`), for a split.
    #[oai(skip_serializing_if_is_none)]
    pub counted_as_variant: Option<String>,
    /// The place of the split's variant, from 0.
    #[oai(skip_serializing_if_is_none)]
    pub variant: Option<usize>,
    /// The redirect's `Location`, the visit's query merged in under `forward_query`.
    pub location: String,
    pub redirect_status: u16,
}

/// An imagined visitor.
#[derive(Object, Debug, Default)]
#[oai(deny_unknown_fields)]
pub struct ImaginedVisit {
    /// Its `User-Agent` header.
    #[oai(validator(max_length = 1024))]
    pub user_agent: Option<String>,
    /// Its `Accept-Language` header.
    #[oai(validator(max_length = 1024))]
    pub accept_language: Option<String>,
    /// Its address (IPv4 or IPv6); `127.0.0.1` when absent.
    pub address: Option<String>,
    /// The query string of its visit, without `?` (`ref=mail`).
    #[oai(validator(max_length = 8192))]
    pub query: Option<String>,
    /// When it visits (RFC 3339); now when absent.
    pub at: Option<OffsetDateTime>,
}

impl FromJsonBody for ImaginedVisit {
    fn from_json(mut body: Map<String, Value>) -> Result<Self, FieldError> {
        let is_string = "must be a string";
        let visit = Self {
            user_agent: optional(&mut body, "user_agent", string, is_string)?,
            accept_language: optional(&mut body, "accept_language", string, is_string)?,
            address: optional(&mut body, "address", string, is_string)?,
            query: optional(&mut body, "query", string, is_string)?,
            at: super::fields::expires_at(body.remove("at")).map_err(|_| {
                FieldError::new(
                    "at",
                    "must be an RFC 3339 date-time such as 2030-01-01T00:00:00Z",
                )
            })?,
        };
        deny_unknown(&body, "an imagined visit")?;
        Ok(visit)
    }
}

#[derive(ApiResponse, Debug)]
enum ResolveResponse {
    #[oai(status = 200)]
    Ok(Json<ResolutionBody>),
}

/// The dry run of a visit.
#[derive(Debug, Default)]
pub struct Resolve;

#[OpenApi]
impl Resolve {
    /// Where a visit now with this request's own headers (`User-Agent`,
    /// `Accept-Language`) and address would go: which redirect rule matches and which target it sends to.
    /// Counted as no visit. Who may see the link may ask (scope `read`).
    #[oai(
        path = "/api/v1/links/:code/resolve",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "resolveLink",
        transform = "limit_lookup"
    )]
    async fn resolve(
        &self,
        state: Data<&Arc<AppState>>,
        request: &Request,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        /// The link's domain, by its host; the default domain when absent.
        #[oai(validator(
            max_length = 259,
            pattern = r"^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$"
        ))]
        domain: Query<Option<String>>,
        /// The query string of the imagined visit, without `?` (`ref=mail`).
        #[oai(validator(max_length = 8192))]
        query: Query<Option<String>>,
        caller: Caller,
    ) -> Result<ResolveResponse, ApiError> {
        let visit = Visit {
            query: query.0.as_deref(),
            ..Visit::of(request, None, OffsetDateTime::now_utc())
        };
        let link = link(&state, &code, domain.0.as_deref(), &caller).await?;
        Ok(ResolveResponse::Ok(Json(resolution(&state, &link, &visit))))
    }

    /// Where a visit by the visitor of the body would go, at the time it names, as
    /// `resolveLink` answers.
    #[oai(
        path = "/api/v1/links/:code/resolve",
        method = "post",
        tag = "ApiTags::Links",
        operation_id = "resolveLinkFor",
        transform = "limit_lookup"
    )]
    async fn resolve_for(
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
        body: JsonBody<ImaginedVisit>,
    ) -> Result<ResolveResponse, ApiError> {
        let imagined = body.0;
        let mut headers = HeaderMap::new();
        for (name, value) in [
            (header::USER_AGENT, &imagined.user_agent),
            (header::ACCEPT_LANGUAGE, &imagined.accept_language),
        ] {
            if let Some(value) = value {
                let value = HeaderValue::from_str(value)
                    .map_err(|_| ApiError::bad_request(name.as_str(), "is not a header value"))?;
                headers.insert(name, value);
            }
        }
        let peer: IpAddr = match &imagined.address {
            None => IpAddr::from([127, 0, 0, 1]),
            Some(address) => address
                .parse()
                .map_err(|_| ApiError::bad_request("address", "must be an IPv4 or IPv6 address"))?,
        };
        let visit = Visit {
            headers: &headers,
            peer: Some(peer),
            query: imagined.query.as_deref(),
            visitor: None,
            now: imagined.at.unwrap_or_else(OffsetDateTime::now_utc),
        };
        let link = link(&state, &code, domain.0.as_deref(), &caller).await?;
        Ok(ResolveResponse::Ok(Json(resolution(&state, &link, &visit))))
    }
}

/// The link a dry run is about, if the caller may see it.
async fn link(
    state: &AppState,
    code: &str,
    domain: Option<&str>,
    caller: &Caller,
) -> Result<Redirect, ApiError> {
    let key = caller.require(Scope::Read)?;
    let link_key = state.link_key(code, domain)?;
    Ok(Redirect::from(state.visible_link(&link_key, key).await?))
}

fn resolution(state: &AppState, link: &Redirect, visit: &Visit<'_>) -> ResolutionBody {
    let destination = crate::visit_rules::destination(state, link, visit);
    let (counted_as_rule, counted_as_variant) = match destination.way {
        Some((rule, variant)) => (Some(rule), variant),
        None => (None, None),
    };
    ResolutionBody {
        rule: destination.rule,
        counted_as_rule,
        counted_as_variant,
        variant: destination.variant,
        location: destination.location,
        redirect_status: RedirectStatus::code(destination.status),
    }
}
