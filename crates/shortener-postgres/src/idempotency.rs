//! Idempotency keys on PostgreSQL: a claim is one upsert that takes a free, expired or
//! abandoned key and leaves a live one alone (concurrent claims of one key wait on its
//! row, so exactly one wins); a claim that took nothing reads the record it met.

use shortener_core::{Claim, ClaimRequest, IdempotencyKey, RepositoryError, StoredResponse};
use time::OffsetDateTime;

use crate::PostgresRepository;
use crate::error::storage_error;
use crate::row::to_micros;

/// How often a claim tries again when the record it met went away before it was read
/// (released or purged in between).
const CLAIM_ATTEMPTS: usize = 3;

impl PostgresRepository {
    pub(crate) async fn claim(&self, request: &ClaimRequest) -> Result<Claim, RepositoryError> {
        let key = &request.key;
        for _ in 0..CLAIM_ATTEMPTS {
            let claimed: Option<(i32,)> = sqlx::query_as(
                "INSERT INTO idempotency_keys (scope, key, fingerprint, claimed_at) \
                 VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, \
                   claimed_at = excluded.claimed_at, status = NULL, body = NULL \
                 WHERE idempotency_keys.claimed_at < $5 \
                    OR (idempotency_keys.status IS NULL AND idempotency_keys.claimed_at < $6) \
                 RETURNING 1",
            )
            .bind(&key.scope)
            .bind(&key.key)
            .bind(&request.fingerprint)
            .bind(to_micros(request.now))
            .bind(to_micros(request.expired_before()))
            .bind(to_micros(request.lease_before()))
            .fetch_optional(&self.pool)
            .await
            .map_err(storage_error)?;
            if claimed.is_some() {
                return Ok(Claim::Claimed);
            }
            let record: Option<(String, Option<i32>, Option<String>)> = sqlx::query_as(
                "SELECT fingerprint, status, body FROM idempotency_keys \
                 WHERE scope = $1 AND key = $2",
            )
            .bind(&key.scope)
            .bind(&key.key)
            .fetch_optional(&self.pool)
            .await
            .map_err(storage_error)?;
            if let Some((fingerprint, status, body)) = record {
                if fingerprint != request.fingerprint {
                    return Ok(Claim::Mismatch);
                }
                return Ok(match (status, body) {
                    (Some(status), Some(body)) => Claim::Replay(StoredResponse {
                        status: u16::try_from(status).map_err(|_| {
                            RepositoryError::Unexpected(
                                format!("stored idempotent status {status}").into(),
                            )
                        })?,
                        body,
                    }),
                    _ => Claim::InFlight,
                });
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
        sqlx::query(
            "UPDATE idempotency_keys SET status = $1, body = $2 \
             WHERE scope = $3 AND key = $4 AND status IS NULL",
        )
        .bind(i32::from(response.status))
        .bind(&response.body)
        .bind(&key.scope)
        .bind(&key.key)
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(())
    }

    pub(crate) async fn release(&self, key: &IdempotencyKey) -> Result<(), RepositoryError> {
        sqlx::query(
            "DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND status IS NULL",
        )
        .bind(&key.scope)
        .bind(&key.key)
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(())
    }

    pub(crate) async fn purge(&self, before: OffsetDateTime) -> Result<u64, RepositoryError> {
        let result = sqlx::query("DELETE FROM idempotency_keys WHERE claimed_at < $1")
            .bind(to_micros(before))
            .execute(&self.pool)
            .await
            .map_err(storage_error)?;
        Ok(result.rows_affected())
    }
}
