//! API keys on PostgreSQL: one row per key in `api_keys`.

use shortener_core::{
    KeyColumns, KeyInsertError, KeyStore, KeyTimes, Owner, RepositoryError, StoredKey,
};
use time::OffsetDateTime;

use crate::PostgresRepository;
use crate::error::{UNIQUE_VIOLATION, storage_error};
use crate::row::to_micros;

type KeyRow = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    OffsetDateTime,
    Option<OffsetDateTime>,
    Option<OffsetDateTime>,
    Option<OffsetDateTime>,
);

impl KeyStore for PostgresRepository {
    async fn insert_key(&self, key: StoredKey) -> Result<(), KeyInsertError> {
        let columns = key.columns();
        let inserted = sqlx::query(
            "INSERT INTO api_keys (name, sha256, scopes, owner, tier, created_at, expires_at, \
             revoked_at, last_used_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&columns.name)
        .bind(&columns.sha256)
        .bind(&columns.scopes)
        .bind(&columns.owner)
        .bind(&columns.tier)
        .bind(to_micros(key.created_at))
        .bind(key.expires_at.map(to_micros))
        .bind(key.revoked_at.map(to_micros))
        .bind(key.last_used_at.map(to_micros))
        .execute(&self.pool)
        .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(error)
                if error.as_database_error().and_then(|e| e.code()).as_deref()
                    == Some(UNIQUE_VIOLATION) =>
            {
                Err(KeyInsertError::NameTaken)
            }
            Err(error) => Err(storage_error(error).into()),
        }
    }

    async fn keys(&self) -> Result<Vec<StoredKey>, RepositoryError> {
        let rows: Vec<KeyRow> = sqlx::query_as(
            "SELECT name, sha256, scopes, owner, tier, created_at, expires_at, revoked_at, \
             last_used_at FROM api_keys ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        rows.into_iter().map(into_key).collect()
    }

    async fn revoke_key(&self, name: &Owner, at: OffsetDateTime) -> Result<bool, RepositoryError> {
        let revoked = sqlx::query(
            "UPDATE api_keys SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL",
        )
        .bind(to_micros(at))
        .bind(name.as_str())
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(revoked.rows_affected() == 1)
    }

    async fn touch_keys(&self, used: &[(Owner, OffsetDateTime)]) -> Result<(), RepositoryError> {
        if used.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = used.iter().map(|(name, _)| name.as_str()).collect();
        let times: Vec<OffsetDateTime> = used.iter().map(|(_, at)| to_micros(*at)).collect();
        sqlx::query(
            "UPDATE api_keys SET last_used_at = used.at \
             FROM UNNEST($1::text[], $2::timestamptz[]) AS used(name, at) \
             WHERE api_keys.name = used.name \
               AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < used.at)",
        )
        .bind(&names)
        .bind(&times)
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(())
    }
}

fn into_key(row: KeyRow) -> Result<StoredKey, RepositoryError> {
    let (name, sha256, scopes, owner, tier, created_at, expires_at, revoked_at, last_used_at) = row;
    let times = KeyTimes {
        created_at,
        expires_at,
        revoked_at,
        last_used_at,
    };
    let columns = KeyColumns {
        name,
        sha256,
        scopes,
        owner,
        tier,
    };
    StoredKey::from_columns(columns, times)
}
