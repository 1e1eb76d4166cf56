//! Who is calling: an API key (sent as `X-API-Key`, known to the server by its SHA-256)
//! or nobody, and what that caller may reach.
//!
//! A missing or unknown key where one is required is 401; a key without the scope an
//! operation needs is 403; another owner's link is 404, exactly like a link that does
//! not exist, so that a key cannot learn which codes other keys own.

use std::sync::Arc;

use poem::Request;
use poem::http::StatusCode;
use poem_openapi::SecurityScheme;
use poem_openapi::auth::ApiKey;
use poem_openapi::payload::Json;
use shortener_core::{Link, Owner};

use crate::api_error::{ApiError, Problem};
use crate::auth::{ApiKeyEntry, Scope};
use crate::state::AppState;

/// An API key, sent as `X-API-Key`; the server keeps only its SHA-256.
#[derive(SecurityScheme, Debug)]
#[oai(
    ty = "api_key",
    key_name = "X-API-Key",
    key_in = "header",
    checker = "check_api_key"
)]
pub struct ApiKeyAuth(pub ApiKeyEntry);

async fn check_api_key(request: &Request, key: ApiKey) -> Option<ApiKeyEntry> {
    let state = request.data::<Arc<AppState>>()?;
    state.api_keys.find(&key.key)
}

/// An operation open to anonymous callers that does more with a key. An unknown key is
/// refused with 401 by the rate-limit middleware in front of every such operation, so
/// `Anonymous` here means no key was sent.
#[derive(SecurityScheme, Debug)]
pub enum Caller {
    Key(ApiKeyAuth),
    #[oai(fallback)]
    Anonymous,
}

impl ApiKeyAuth {
    /// The key, when it has `scope`; 403 naming the scope otherwise.
    ///
    /// # Errors
    /// [`ApiError::Forbidden`].
    pub fn require(&self, scope: Scope) -> Result<&ApiKeyEntry, ApiError> {
        if self.0.scopes.contains(scope) || self.0.scopes.contains(Scope::Admin) {
            Ok(&self.0)
        } else {
            Err(ApiError::Forbidden(Json(Problem::new(
                StatusCode::FORBIDDEN,
                format!(
                    "X-API-Key: the key `{}` lacks the `{}` scope",
                    self.0.name,
                    scope.name()
                ),
            ))))
        }
    }
}

impl Caller {
    /// The key with `scope`, or `None` for an anonymous caller.
    ///
    /// # Errors
    /// [`ApiError::Forbidden`] for a key without the scope.
    pub fn require(&self, scope: Scope) -> Result<Option<&ApiKeyEntry>, ApiError> {
        match self {
            Caller::Key(key) => key.require(scope).map(Some),
            Caller::Anonymous => Ok(None),
        }
    }
}

/// Whether a caller may see a link: a key its own links (every link with `admin`),
/// an anonymous caller the links nobody owns.
pub fn sees(key: Option<&ApiKeyEntry>, link: &Link) -> bool {
    match key {
        Some(key) => key.access().reaches(link.owner.as_ref()),
        None => link.owner.is_none(),
    }
}

/// The owner recorded on a link created by this caller.
pub fn owner(key: Option<&ApiKeyEntry>) -> Option<Owner> {
    key.map(|key| key.owner().clone())
}
