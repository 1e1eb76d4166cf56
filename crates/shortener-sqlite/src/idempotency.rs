//! Idempotency keys on SQLite: a claim is one upsert that takes a free, expired or
//! abandoned key and leaves a live one alone; a claim that took nothing reads the
//! record it met.

use shortener_core::{Claim, ClaimRequest, IdempotencyKey, RepositoryError, StoredResponse};
use time::OffsetDateTime;

use crate::SqliteRepository;
use crate::error::storage_error;
use crate::row::to_micros;

/// How often a claim tries again when the record it met went away before it was read
/// (released or purged in between).
const CLAIM_ATTEMPTS: usize = 3;

impl SqliteRepository {
    pub(crate) async fn claim(&self, request: &ClaimRequest) -> Result<Claim, RepositoryError> {
        let now = to_micros(request.now)?;
        let expired_before = to_micros(request.expired_before())?;
        let lease_before = to_micros(request.lease_before())?;
        let key = &request.key;
        for _ in 0..CLAIM_ATTEMPTS {
            let claimed: Vec<(i64,)> = {
                let _writing = self.gate.lock().await;
                sqlx::query_as(
                    "INSERT INTO idempotency_keys (scope, key, fingerprint, claimed_at) \
                     VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, \
                       claimed_at = excluded.claimed_at, status = NULL, body = NULL \
                     WHERE idempotency_keys.claimed_at < ?5 \
                        OR (idempotency_keys.status IS NULL AND idempotency_keys.claimed_at < ?6) \
                     RETURNING 1",
                )
                .bind(&key.scope)
                .bind(&key.key)
                .bind(&request.fingerprint)
                .bind(now)
                .bind(expired_before)
                .bind(lease_before)
                .fetch_all(&self.pool)
                .await
                .map_err(storage_error)?
            };
            if !claimed.is_empty() {
                return Ok(Claim::Claimed);
            }
            let record: Option<(String, Option<i64>, Option<String>)> = sqlx::query_as(
                "SELECT fingerprint, status, body FROM idempotency_keys WHERE scope = ? AND key = ?",
            )
            .bind(&key.scope)
            .bind(&key.key)
            .fetch_optional(&self.pool)
            .await
            .map_err(storage_error)?;
            if let Some((fingerprint, status, body)) = record {
                return claim_of(&request.fingerprint, &fingerprint, status, body);
            }
        }
        Err(RepositoryError::Unexpected(
            format!(
                "idempotency key {} kept changing while it was claimed",
                key.key
            )
            .into(),
        ))
    }

    pub(crate) async fn complete(
        &self,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), RepositoryError> {
        let _writing = self.gate.lock().await;
        sqlx::query(
            "UPDATE idempotency_keys SET status = ?, body = ? \
             WHERE scope = ? AND key = ? AND status IS NULL",
        )
        .bind(i64::from(response.status))
        .bind(&response.body)
        .bind(&key.scope)
        .bind(&key.key)
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(())
    }

    pub(crate) async fn release(&self, key: &IdempotencyKey) -> Result<(), RepositoryError> {
        let _writing = self.gate.lock().await;
        sqlx::query("DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND status IS NULL")
            .bind(&key.scope)
            .bind(&key.key)
            .execute(&self.pool)
            .await
            .map_err(storage_error)?;
        Ok(())
    }

    pub(crate) async fn purge(&self, before: OffsetDateTime) -> Result<u64, RepositoryError> {
        let _writing = self.gate.lock().await;
        let result = sqlx::query("DELETE FROM idempotency_keys WHERE claimed_at < ?")
            .bind(to_micros(before)?)
            .execute(&self.pool)
            .await
            .map_err(storage_error)?;
        Ok(result.rows_affected())
    }
}

/// What a claim met: the record of another request with this key.
pub(crate) fn claim_of(
    fingerprint: &str,
    stored_fingerprint: &str,
    status: Option<i64>,
    body: Option<String>,
) -> Result<Claim, RepositoryError> {
    if stored_fingerprint != fingerprint {
        return Ok(Claim::Mismatch);
    }
    match (status, body) {
        (Some(status), Some(body)) => Ok(Claim::Replay(StoredResponse {
            status: u16::try_from(status).map_err(|_| {
                RepositoryError::Unexpected(format!("stored idempotent status {status}").into())
            })?,
            body,
        })),
        _ => Ok(Claim::InFlight),
    }
}
