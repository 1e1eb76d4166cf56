//! API keys made, listed and revoked while the service runs (scope `admin`): kept in
//! storage by their SHA-256, the secret shown once. Every node takes a new key, and
//! refuses a revoked one, within a second (see `crate::service::keys`). Keys of the configuration
//! file are listed too, read-only.

use std::sync::Arc;

use poem::http::StatusCode;
use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use shortener_core::{KeyInsertError, KeyStore as _, Owner, StoredKey};
use time::OffsetDateTime;

use super::auth::ApiKeyAuth;
use super::body::JsonBody;
use super::fields::{FieldError, FromJsonBody, deny_unknown, optional, string, strings};
use super::{ApiError, ApiTags};
use crate::auth::{ApiKeyEntry, Scope};
use crate::limit::limit_manage;
use crate::state::AppState;

/// A key to make.
#[derive(Object, Debug)]
#[oai(deny_unknown_fields)]
pub struct NewKeyRequest {
    /// Its name: 1 to 64 of `A-Z a-z 0-9 . _ -`, unique among every key (stored or
    /// configured, revoked or not).
    #[oai(validator(pattern = r"^[A-Za-z0-9._-]{1,64}$"))]
    pub name: String,
    /// `create`, `read`, `update`, `delete`, `admin`; the first four when absent.
    #[oai(validator(pattern = r"^(create|read|update|delete|admin)$"))]
    pub scopes: Option<Vec<String>>,
    /// Whose links it reaches and creates; its own name's when absent. Several keys with
    /// one owner share one set of links.
    #[oai(validator(min_length = 1, max_length = 64))]
    pub owner: Option<String>,
    /// A tier of `limiter.tiers`, whose policies apply to it.
    pub tier: Option<String>,
    /// When it stops opening anything (RFC 3339, in the future).
    pub expires_at: Option<OffsetDateTime>,
}

impl FromJsonBody for NewKeyRequest {
    fn from_json(mut body: Map<String, Value>) -> Result<Self, FieldError> {
        let is_string = "must be a string";
        let name = optional(&mut body, "name", string, is_string)?
            .ok_or_else(|| FieldError::new("name", "is required"))?;
        let request = Self {
            name,
            scopes: optional(&mut body, "scopes", strings, super::fields::ARE_STRINGS)?,
            owner: optional(&mut body, "owner", string, is_string)?,
            tier: optional(&mut body, "tier", string, is_string)?,
            expires_at: super::fields::expires_at(body.remove("expires_at"))
                .map_err(|error| FieldError::new("expires_at", error.message))?,
        };
        deny_unknown(&body, "a key")?;
        Ok(request)
    }
}

/// An API key, without its secret.
#[derive(Object, Debug)]
pub struct KeyBody {
    pub name: String,
    pub scopes: Vec<String>,
    /// Whose links it reaches, when not its own name's.
    #[oai(skip_serializing_if_is_none)]
    pub owner: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub tier: Option<String>,
    /// `storage` (made and revoked here) or `config` (the file's `[[api_keys]]`:
    /// read-only here).
    pub source: String,
    #[oai(skip_serializing_if_is_none)]
    pub created_at: Option<OffsetDateTime>,
    #[oai(skip_serializing_if_is_none)]
    pub expires_at: Option<OffsetDateTime>,
    #[oai(skip_serializing_if_is_none)]
    pub revoked_at: Option<OffsetDateTime>,
    /// When it was last used, to the minute or so.
    #[oai(skip_serializing_if_is_none)]
    pub last_used_at: Option<OffsetDateTime>,
}

/// A key just made: the secret, shown this once.
#[derive(Object, Debug)]
pub struct NewKeyBody {
    /// Give it to the client; the service keeps only its SHA-256.
    pub secret: String,
    pub key: KeyBody,
}

/// Every key.
#[derive(Object, Debug)]
pub struct KeysBody {
    pub keys: Vec<KeyBody>,
}

#[derive(ApiResponse, Debug)]
enum NewKeyResponse {
    #[oai(status = 201)]
    Created(Json<NewKeyBody>),
}

#[derive(ApiResponse, Debug)]
enum KeysResponse {
    #[oai(status = 200)]
    Ok(Json<KeysBody>),
}

#[derive(ApiResponse, Debug)]
enum RevokeResponse {
    /// Revoked: every node refuses it within a second.
    #[oai(status = 204)]
    Revoked,
}

/// API keys.
#[derive(Debug, Default)]
pub struct Keys;

#[OpenApi]
impl Keys {
    /// Make an API key (scope `admin`); its secret is in this answer only.
    #[oai(
        path = "/api/v1/keys",
        method = "post",
        tag = "ApiTags::Keys",
        operation_id = "createKey",
        transform = "limit_manage"
    )]
    async fn create(
        &self,
        state: Data<&Arc<AppState>>,
        key: ApiKeyAuth,
        body: JsonBody<NewKeyRequest>,
    ) -> Result<NewKeyResponse, ApiError> {
        let admin = key.require(Scope::Admin)?;
        let stored = new_key(&state, body.0)?;
        let secret = stored.1;
        let made = stored.0.clone();
        match state.shortener.repository().insert_key(stored.0).await {
            Ok(()) => {}
            Err(KeyInsertError::NameTaken) => {
                return Err(ApiError::status(
                    StatusCode::CONFLICT,
                    "name: a key with this name exists (revoked keys keep their names)",
                ));
            }
            Err(KeyInsertError::Repository(error)) => return Err(error.into()),
        }
        state.reload_keys().await?;
        tracing::info!(key = %made.name, by = %admin.name, "API key made");
        Ok(NewKeyResponse::Created(Json(NewKeyBody {
            secret,
            key: stored_body(&made),
        })))
    }

    /// Every API key (scope `admin`): those made here, revoked ones too, and those of
    /// the configuration file.
    #[oai(
        path = "/api/v1/keys",
        method = "get",
        tag = "ApiTags::Keys",
        operation_id = "listKeys",
        transform = "limit_manage"
    )]
    async fn list(
        &self,
        state: Data<&Arc<AppState>>,
        key: ApiKeyAuth,
    ) -> Result<KeysResponse, ApiError> {
        key.require(Scope::Admin)?;
        let stored = state.shortener.repository().keys().await?;
        let configured = state.api_keys.configured().iter().map(configured_body);
        let keys = stored.iter().map(stored_body).chain(configured).collect();
        Ok(KeysResponse::Ok(Json(KeysBody { keys })))
    }

    /// Revoke an API key (scope `admin`): every node refuses it within a second. A key
    /// of the configuration file is revoked by removing it there.
    #[oai(
        path = "/api/v1/keys/:name",
        method = "delete",
        tag = "ApiTags::Keys",
        operation_id = "revokeKey",
        transform = "limit_manage"
    )]
    async fn revoke(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9._-]{1,64}$"))] name: Path<String>,
        key: ApiKeyAuth,
    ) -> Result<RevokeResponse, ApiError> {
        let admin = key.require(Scope::Admin)?;
        let name = Owner::parse(&name).map_err(|e| ApiError::bad_request("name", e))?;
        if state.api_keys.configures(&name) {
            return Err(ApiError::status(
                StatusCode::CONFLICT,
                "name: this key is in the configuration file; remove it there",
            ));
        }
        let now = OffsetDateTime::now_utc();
        if !state.shortener.repository().revoke_key(&name, now).await? {
            return Err(ApiError::not_found(
                "name: no key with this name, or revoked already",
            ));
        }
        state.reload_keys().await?;
        tracing::info!(key = %name, by = %admin.name, "API key revoked");
        Ok(RevokeResponse::Revoked)
    }
}

/// The key a request asks for, checked, and its secret: 192 random bits.
fn new_key(state: &AppState, request: NewKeyRequest) -> Result<(StoredKey, String), ApiError> {
    let name = Owner::parse(&request.name).map_err(|e| ApiError::bad_request("name", e))?;
    if state.api_keys.configures(&name) {
        return Err(ApiError::status(
            StatusCode::CONFLICT,
            "name: a key of the configuration file has this name",
        ));
    }
    let scopes = match request.scopes {
        None => ["create", "read", "update", "delete"]
            .map(str::to_owned)
            .to_vec(),
        Some(scopes) => {
            for scope in &scopes {
                if Scope::parse(scope).is_none() {
                    return Err(ApiError::bad_request(
                        "scopes",
                        format!("`{scope}`: must be create, read, update, delete or admin"),
                    ));
                }
            }
            scopes
        }
    };
    let owner = (request.owner.as_deref())
        .map(Owner::parse)
        .transpose()
        .map_err(|e| ApiError::bad_request("owner", e))?;
    if let Some(tier) = &request.tier
        && !state.policies.has_tier(tier)
    {
        return Err(ApiError::bad_request("tier", "is not one of limiter.tiers"));
    }
    let now = OffsetDateTime::now_utc();
    if request.expires_at.is_some_and(|expiry| expiry <= now) {
        return Err(ApiError::bad_request("expires_at", "must be in the future"));
    }
    let mut random = [0u8; 24];
    getrandom::fill(&mut random).map_err(|_| {
        ApiError::status(
            StatusCode::SERVICE_UNAVAILABLE,
            "no randomness to make a key",
        )
    })?;
    let secret: String = random.iter().map(|byte| format!("{byte:02x}")).collect();
    let secret = format!("shk_{secret}");
    let key = StoredKey {
        name,
        digest: Sha256::digest(secret.as_bytes()).into(),
        scopes,
        owner,
        tier: request.tier,
        created_at: now,
        expires_at: request.expires_at,
        revoked_at: None,
        last_used_at: None,
    };
    Ok((key, secret))
}

fn stored_body(key: &StoredKey) -> KeyBody {
    KeyBody {
        name: key.name.to_string(),
        scopes: key.scopes.clone(),
        owner: key.owner.as_ref().map(ToString::to_string),
        tier: key.tier.clone(),
        source: "storage".to_owned(),
        created_at: Some(key.created_at),
        expires_at: key.expires_at,
        revoked_at: key.revoked_at,
        last_used_at: key.last_used_at,
    }
}

fn configured_body(key: &ApiKeyEntry) -> KeyBody {
    KeyBody {
        name: key.name.to_string(),
        scopes: (Scope::ALL.into_iter())
            .filter(|scope| key.scopes.contains(*scope))
            .map(|scope| scope.name().to_owned())
            .collect(),
        owner: None,
        tier: key.tier.clone(),
        source: "config".to_owned(),
        created_at: None,
        expires_at: None,
        revoked_at: None,
        last_used_at: None,
    }
}
