//! The HTTP API as a poem-openapi service. The OpenAPI document generated
//! from this module is committed as `openapi/shortener.json`.
//!
//! - [`links`]: create (one or in bulk, idempotent with `Idempotency-Key`), look up, edit
//!   and delete links;
//! - [`listing`]: a key's links page by page, its tags, the domains, the export;
//! - [`tags`]: a tag renamed or deleted over every link of a key;
//! - [`visits`]: visits per day, and the top values of where they come from;
//! - [`qr`]: a link's QR code, SVG or PNG;
//! - [`redirect`]: the redirect itself and a locked link's form; [`ops`]: health,
//!   readiness and metrics;
//! - [`rules`]: redirect rules in bodies; [`resolve`]: the dry run of a visit;
//! - [`keys`]: API keys made, listed and revoked while the service runs;
//! - [`unlock`]: links behind a password: their page, the unlock form's answer.
//!
//! [`auth`] says who is calling and what they may reach. The operations parse and
//! answer; what they do is the application service's (`crate::service`).

pub mod auth;
mod body;
mod bulk;
pub(crate) mod fields;
#[cfg(test)]
mod fuzz_tests;
mod idempotency;
pub(crate) mod json;
mod keys;
mod links;
mod listing;
mod ops;
mod pages;
mod qr;
mod redirect;
mod resolve;
pub(crate) mod rules;
pub(crate) mod tags;
pub(crate) mod unlock;
mod visits;

use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi, OpenApiService, Tags};
use time::OffsetDateTime;

pub use crate::api_error::{ApiError, Problem};
pub(crate) use redirect::RedirectResponse;

#[derive(Tags)]
enum ApiTags {
    /// Short links.
    Links,
    /// Redirects from short codes.
    Redirect,
    /// Health and metrics.
    Operations,
    /// API keys made and revoked while the service runs.
    Keys,
}

// Read by `fields::FromJsonBody`; the validators here describe the same rules in the
// OpenAPI document. (The doc comment below is the document's description.)
/// The body of a create request.
#[derive(Object, Debug)]
#[oai(deny_unknown_fields)]
pub struct CreateLinkRequest {
    /// The absolute `http`/`https` URL to redirect to (at most 8192 bytes, no user-info).
    #[oai(validator(min_length = 1, max_length = 8192))]
    pub url: String,
    /// A code of your choice: 3 to 64 of `A-Z a-z 0-9 _ -`; a random code when absent.
    pub alias: Option<String>,
    /// When the link stops redirecting (RFC 3339, in the future).
    pub expires_at: Option<OffsetDateTime>,
    /// How many redirects the link serves in all (at least 1).
    #[oai(validator(minimum(value = "1")))]
    pub max_visits: Option<u64>,
    /// The status of its redirects: 301, 302, 307 or 308; the service's
    /// (`server.redirect_status`) when absent.
    #[oai(validator(minimum(value = "301"), maximum(value = "308")))]
    pub redirect_status: Option<u16>,
    /// Whether a redirect merges the request's query string into the target's (the
    /// request's keys winning); the service's (`links.forward_query`) when absent.
    pub forward_query: Option<bool>,
    /// Where the link sends its visitors once expired or used up (a 302), instead of
    /// answering 410; the rules of `url` apply.
    #[oai(validator(min_length = 1, max_length = 8192))]
    pub expired_url: Option<String>,
    /// Free text shown in listings and matched by `search`: 1 to 512 characters, on one
    /// line. Nothing is fetched from the target.
    #[oai(validator(min_length = 1, max_length = 512))]
    pub title: Option<String>,
    /// Whether `/robots.txt` lets crawlers follow it (default false).
    pub crawlable: Option<bool>,
    /// Labels to find the link by: at most 10, each 1 to 50 characters (no control
    /// characters, commas, quotes or backslashes), stored in lower case.
    #[oai(validator(
        max_items = 10,
        pattern = r#"^\s*[^\s\x00-\x1F\x7F-\x9F,"\\]([^\x00-\x1F\x7F-\x9F,"\\]{0,48}[^\s\x00-\x1F\x7F-\x9F,"\\])?\s*$"#
    ))]
    pub tags: Option<Vec<String>>,
    /// The domain to serve it on, by its host (one of the service's domains); the
    /// default domain (that of `server.public_url`) when absent. Codes are unique per
    /// domain.
    #[oai(validator(
        max_length = 259,
        pattern = r"^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$"
    ))]
    pub domain: Option<String>,
    /// A password that visitors must give before the link redirects (8 characters to
    /// 1024 bytes; needs an API key). Stored as an argon2id hash, never returned.
    #[oai(validator(min_length = 8, max_length = 1024), write_only)]
    pub password: Option<String>,
    /// Redirect rules, at most 16, tried in order: the first whose conditions all hold
    /// sends the visit to its `url` or a variant of its `split`; none: the link's `url`.
    #[oai(validator(max_items = 16))]
    pub rules: Option<Vec<rules::RuleBody>>,
    /// The same rules, checked as they were read.
    #[oai(skip)]
    pub checked_rules: shortener_core::rules::Rules,
    /// When true, the caller's live link on the domain with the same target, alias (if
    /// one is given), expiry, visit limit, tags and options is answered (200) instead of
    /// a new one (201). A link with a password is always new.
    pub find_if_exists: Option<bool>,
}

impl fields::FromJsonBody for CreateLinkRequest {
    // Unknown fields are refused, as an edit's are: a misspelt `password` would
    // otherwise make an open link without a word.
    fn from_json(
        mut body: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, fields::FieldError> {
        use fields::{boolean, optional, status, string};
        let (is_boolean, is_string) = ("must be true or false", "must be a string");
        let mut create = Self {
            url: fields::url(body.remove("url"))?,
            alias: fields::alias(body.remove("alias"))?,
            expires_at: fields::expires_at(body.remove("expires_at"))?,
            max_visits: fields::max_visits(body.remove("max_visits"))?,
            redirect_status: optional(&mut body, "redirect_status", status, fields::STATUSES)?,
            forward_query: optional(&mut body, "forward_query", boolean, is_boolean)?,
            expired_url: optional(&mut body, "expired_url", string, is_string)?,
            title: optional(&mut body, "title", string, is_string)?,
            crawlable: optional(&mut body, "crawlable", boolean, is_boolean)?,
            tags: optional(&mut body, "tags", fields::strings, fields::ARE_STRINGS)?,
            domain: optional(&mut body, "domain", string, is_string)?,
            password: optional(&mut body, "password", string, is_string)?,
            rules: None,
            find_if_exists: optional(&mut body, "find_if_exists", boolean, is_boolean)?,
            checked_rules: match body.remove("rules") {
                None | Some(serde_json::Value::Null) => shortener_core::rules::Rules::default(),
                Some(value) => rules::read(value)?,
            },
        };
        fields::deny_unknown(&body, "a link")?;
        if !create.checked_rules.is_empty() {
            create.rules = Some(rules::bodies(&create.checked_rules));
        }
        Ok(create)
    }
}

/// A short link.
#[derive(Object, Debug)]
pub struct LinkBody {
    /// The short code (also the path of the redirect).
    pub code: String,
    /// The host the link is served on (the code is unique there).
    pub domain: String,
    /// The domain's URL + "/" + code.
    pub short_url: String,
    /// The target URL, its host in Unicode (`bücher.example`); redirects send the ASCII
    /// form (`xn--bcher-kva.example`), which is how it is stored and compared.
    pub url: String,
    pub created_at: OffsetDateTime,
    #[oai(skip_serializing_if_is_none)]
    pub expires_at: Option<OffsetDateTime>,
    #[oai(skip_serializing_if_is_none)]
    pub max_visits: Option<u64>,
    /// Redirects served so far.
    pub visits: u64,
    /// Its own redirect status; absent: the service's.
    #[oai(skip_serializing_if_is_none)]
    pub redirect_status: Option<u16>,
    /// Its own choice of forwarding the query string; absent: the service's.
    #[oai(skip_serializing_if_is_none)]
    pub forward_query: Option<bool>,
    /// Where it sends its visitors once expired or used up.
    #[oai(skip_serializing_if_is_none)]
    pub expired_url: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub title: Option<String>,
    /// Whether `/robots.txt` lets crawlers follow it.
    pub crawlable: bool,
    /// Its tags, lower case, in order.
    pub tags: Vec<String>,
    /// Whether visitors must give a password (which is never returned).
    pub password_protected: bool,
    /// Its redirect rules, in order (none: every visit goes to `url`).
    pub rules: Vec<rules::RuleBody>,
}

#[derive(ApiResponse, Debug)]
enum LinkResponse {
    #[oai(status = 200)]
    Ok(Json<LinkBody>),
}

/// Every operation of the API.
pub type Api = (
    links::Links,
    listing::Listing,
    visits::Visits,
    qr::Qr,
    ops::Ops,
    redirect::Redirect,
    resolve::Resolve,
    keys::Keys,
    tags::TagChanges,
);

fn api() -> Api {
    (
        links::Links,
        listing::Listing,
        visits::Visits,
        qr::Qr,
        ops::Ops,
        redirect::Redirect,
        resolve::Resolve,
        keys::Keys,
        tags::TagChanges,
    )
}

/// The poem-openapi service, with the server URL of the configuration.
pub fn service(public_url: &str) -> OpenApiService<Api, ()> {
    OpenApiService::new(api(), "shortener", crate::version::VERSION)
        .description("A URL shortener whose rate limits hold across any number of nodes.")
        .server(public_url)
}

/// The methods of every path of the API, for the `Allow` header of a 405.
pub(crate) fn allowed_methods() -> crate::http::AllowedMethods {
    let apis = <Api as OpenApi>::meta();
    crate::http::AllowedMethods::new(apis.iter().flat_map(|api| {
        api.paths.iter().flat_map(|path| {
            path.operations
                .iter()
                .map(|operation| (path.path.as_str(), operation.method.clone()))
        })
    }))
}

/// The request bodies whose every reader refuses a field it does not know
/// (`fields::deny_unknown`): closed in the document too, which poem-openapi does not
/// write for `deny_unknown_fields`.
const CLOSED_BODIES: [&str; 6] = [
    "CreateLinkRequest",
    "PatchLinkRequest",
    "BulkRequest",
    "RenameTagRequest",
    "NewKeyRequest",
    "ImaginedVisit",
];

/// The OpenAPI document as `/openapi.json` serves it: poem-openapi's, its
/// [`CLOSED_BODIES`] with `additionalProperties: false` (keys in order).
pub(crate) fn document_for(public_url: &str) -> String {
    let spec = service(public_url).spec();
    let Ok(mut document) = serde_json::from_str::<serde_json::Value>(&spec) else {
        return spec;
    };
    if let Some(schemas) =
        (document.pointer_mut("/components/schemas")).and_then(serde_json::Value::as_object_mut)
    {
        for name in CLOSED_BODIES {
            if let Some(serde_json::Value::Object(schema)) = schemas.get_mut(name) {
                schema.insert("additionalProperties".into(), false.into());
            }
        }
    }
    serde_json::to_string_pretty(&document).unwrap_or(spec)
}

/// The OpenAPI document as committed in `openapi/shortener.json` (with a neutral server
/// URL); `cargo xtask openapi` writes it through the test below.
#[cfg(test)]
fn document() -> String {
    document_for("http://127.0.0.1:8080")
}

#[cfg(test)]
mod tests {
    /// Each closed body is in the document, so that a rename is not left behind.
    #[test]
    fn every_closed_body_is_closed_in_the_document() {
        let document: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        for name in super::CLOSED_BODIES {
            let closed = &document["components"]["schemas"][name]["additionalProperties"];
            assert_eq!(*closed, serde_json::Value::Bool(false), "{name}");
        }
    }

    /// `openapi/shortener.json` is what clients generate from: it must match the code.
    /// `cargo xtask openapi` (which sets `UPDATE_OPENAPI=1`) rewrites it.
    #[test]
    fn openapi_document_is_committed() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../openapi/shortener.json");
        let generated = super::document() + "\n";
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(&path, &generated).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "openapi/shortener.json is stale: run `cargo xtask openapi`"
        );
    }
}
