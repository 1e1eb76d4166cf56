//! API keys on SQLite: one row per key in `api_keys`, times in Unix microseconds.

use shortener_core::{
    KeyColumns, KeyInsertError, KeyStore, KeyTimes, Owner, RepositoryError, StoredKey,
};
use time::OffsetDateTime;

use crate::SqliteRepository;
use crate::error::storage_error;
use crate::row::to_micros;

type KeyRow = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

impl KeyStore for SqliteRepository {
    async fn insert_key(&self, key: StoredKey) -> Result<(), KeyInsertError> {
        let columns = key.columns();
        let optional = |at: Option<OffsetDateTime>| at.map(to_micros).transpose();
        let _writing = self.gate.lock().await;
        let inserted = sqlx::query(
            "INSERT INTO api_keys (name, sha256, scopes, owner, tier, created_at, expires_at, \
             revoked_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&columns.name)
        .bind(&columns.sha256)
        .bind(&columns.scopes)
        .bind(&columns.owner)
        .bind(&columns.tier)
        .bind(to_micros(key.created_at)?)
        .bind(optional(key.expires_at)?)
        .bind(optional(key.revoked_at)?)
        .bind(optional(key.last_used_at)?)
        .execute(&self.pool)
        .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(error)
                if error
                    .as_database_error()
                    .is_some_and(sqlx::error::DatabaseError::is_unique_violation) =>
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
        let _writing = self.gate.lock().await;
        let revoked =
            sqlx::query("UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL")
                .bind(to_micros(at)?)
                .bind(name.as_str())
                .execute(&self.pool)
                .await
                .map_err(storage_error)?;
        Ok(revoked.rows_affected() == 1)
    }

    async fn touch_keys(&self, used: &[(Owner, OffsetDateTime)]) -> Result<(), RepositoryError> {
        let _writing = self.gate.lock().await;
        for (name, at) in used {
            sqlx::query(
                "UPDATE api_keys SET last_used_at = ?1 WHERE name = ?2 \
                 AND (last_used_at IS NULL OR last_used_at < ?1)",
            )
            .bind(to_micros(*at)?)
            .bind(name.as_str())
            .execute(&self.pool)
            .await
            .map_err(storage_error)?;
        }
        Ok(())
    }
}

fn into_key(row: KeyRow) -> Result<StoredKey, RepositoryError> {
    let (name, sha256, scopes, owner, tier, created_at, expires_at, revoked_at, last_used_at) = row;
    let time = |micros: i64| {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1000).map_err(|error| {
            RepositoryError::Unexpected(format!("stored key `{name}`: {error}").into())
        })
    };
    let times = KeyTimes {
        created_at: time(created_at)?,
        expires_at: expires_at.map(time).transpose()?,
        revoked_at: revoked_at.map(time).transpose()?,
        last_used_at: last_used_at.map(time).transpose()?,
    };
    let columns = KeyColumns {
        name: name.clone(),
        sha256,
        scopes,
        owner,
        tier,
    };
    StoredKey::from_columns(columns, times)
}
