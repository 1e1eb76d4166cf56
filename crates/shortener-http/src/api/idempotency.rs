//! The `Idempotency-Key` header of creates, after the IETF httpapi idempotency-key draft.
//!
//! The first request with a key claims it in the repository, runs, and stores its answer
//! (status and body); a retry with the same key and the same body gets that answer again
//! and creates nothing; the same key with another body is 422; a retry while the first
//! still runs is 409. Answers of 5xx are not kept: the key is released, and a retry runs
//! again. Keys live 24 hours, in the repository, so the rule holds across nodes and
//! restarts. Keys are per caller: the API key's name, or the anonymous client's network.

use std::future::Future;
use std::time::Duration;

use poem::Request;
use poem::http::StatusCode;
use poem_openapi::types::{ParseFromJSON, ToJSON};
use sha2::{Digest, Sha256};
use shortener_core::{
    Claim, ClaimRequest, IdempotencyKey, LinkRepository as _, RepositoryError, StoredResponse,
};
use time::OffsetDateTime;

use super::{ApiError, Problem};
use crate::auth::ApiKeyEntry;
use crate::limit::identity;
use crate::state::AppState;

/// A claim older than this whose request never finished (its node died) is taken over.
const LEASE: Duration = Duration::from_secs(60);

/// The header, as sent.
pub const HEADER: &str = "Idempotency-Key";

/// Runs `operation` at most once per key: the first time, or never when an answer is
/// stored. Without a key, just runs it.
///
/// # Errors
/// The operation's own error, 400 for a malformed key, 409 while a request with the key
/// runs, 422 when the key was used with another body.
pub async fn once<T>(
    state: &AppState,
    request: &Request,
    key: Option<&ApiKeyEntry>,
    fingerprint: &[u8],
    operation: impl Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError>
where
    T: ToJSON + ParseFromJSON,
{
    let Some(raw) = request.headers().get(HEADER) else {
        return operation.await;
    };
    // A value that is not visible ASCII is a bad key, not an absent one.
    let raw = raw
        .to_str()
        .map_err(|_| ApiError::bad_request(HEADER, "must be 1 to 255 visible ASCII characters"))?;
    let claim = ClaimRequest {
        key: IdempotencyKey {
            scope: identity(state, request, key),
            key: parse_key(raw)?,
        },
        fingerprint: hex::encode(Sha256::digest(fingerprint)),
        now: OffsetDateTime::now_utc(),
        lease: LEASE,
    };
    let repository = state.shortener.repository();
    match repository.claim_idempotency(&claim).await? {
        Claim::Claimed => {}
        Claim::InFlight => {
            return Err(ApiError::status(
                StatusCode::CONFLICT,
                "Idempotency-Key: a request with this key is still being processed; retry later",
            ));
        }
        Claim::Mismatch => {
            return Err(ApiError::status(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Idempotency-Key: this key was used with another request body",
            ));
        }
        Claim::Replay(stored) => return replay(&stored),
    }
    let result = operation.await;
    let stored = match &result {
        Ok(answer) => Some(StoredResponse {
            status: 0,
            body: answer.to_json_string(),
        }),
        Err(error) if error.problem().status < 500 => Some(StoredResponse {
            status: error.problem().status,
            body: error.problem().to_json_string(),
        }),
        Err(_) => None,
    };
    let kept = match stored {
        Some(stored) => repository.complete_idempotency(&claim.key, &stored).await,
        None => repository.release_idempotency(&claim.key).await,
    };
    if let Err(error) = kept {
        // The request's effect stands; only its replay is lost: a retry finds the key in
        // flight until the lease passes, then runs again.
        tracing::warn!(%error, "the answer of an idempotent request could not be stored");
    }
    result
}

/// The answer stored for a key: a success is kept with status 0 (its operation knows its
/// own status), an error with its status and problem.
fn replay<T: ParseFromJSON>(stored: &StoredResponse) -> Result<T, ApiError> {
    let value = serde_json::from_str(&stored.body).ok();
    if stored.status == 0 {
        return T::parse_from_json(value).map_err(|_| corrupt());
    }
    let problem = Problem::parse_from_json(value).map_err(|_| corrupt())?;
    let status = StatusCode::from_u16(stored.status).map_err(|_| corrupt())?;
    Err(ApiError::status(status, problem.detail))
}

fn corrupt() -> ApiError {
    RepositoryError::Unexpected("a stored idempotent answer cannot be read".into()).into()
}

/// A key is 1 to 255 visible ASCII characters; the draft sends it as a structured-field
/// string (`"abc"`), and the bare form is accepted too.
fn parse_key(raw: &str) -> Result<String, ApiError> {
    let key = raw
        .strip_prefix('"')
        .and_then(|key| key.strip_suffix('"'))
        .unwrap_or(raw);
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::bad_request(
            HEADER,
            "must be 1 to 255 visible ASCII characters",
        ));
    }
    Ok(key.to_owned())
}
