//! `LinkRepository` for `SqliteRepository`.

use shortener_core::{
    InsertError, Link, LinkRepository, NewLink, RepositoryError, ShortCode, VisitOutcome,
};
use time::OffsetDateTime;

use sqlx::{Connection as _, SqliteConnection};

use crate::SqliteRepository;
use crate::error::{insert_error, storage_error};
use crate::row::{LinkRow, into_link, to_i64, to_micros};
use crate::writer::discard_after_failed_transaction;

/// How often `record_visit` counts again when the link changed between its update and
/// its read (deleted and created again); more than that is reported as `Unexpected`.
const VISIT_ATTEMPTS: usize = 3;

/// The column values of one insert, converted before any statement runs, so that a value
/// out of range fails its own insert and no other of a batch.
#[derive(Debug)]
pub(crate) struct InsertRow {
    code: String,
    url: String,
    created_at: i64,
    expires_at: Option<i64>,
    max_visits: Option<i64>,
}

impl InsertRow {
    pub(crate) fn new(link: &NewLink) -> Result<Self, RepositoryError> {
        Ok(Self {
            code: link.code.as_str().to_owned(),
            url: link.url.as_str().to_owned(),
            created_at: to_micros(link.created_at)?,
            expires_at: link.expires_at.map(to_micros).transpose()?,
            max_visits: link
                .max_visits
                .map(|max| to_i64(max, "max_visits"))
                .transpose()?,
        })
    }
}

/// One insert, on the pool or inside a transaction.
pub(crate) async fn insert_one<'c, E>(executor: E, row: &InsertRow) -> Result<Link, InsertError>
where
    E: sqlx::Executor<'c, Database = sqlx::Sqlite>,
{
    // A plain INSERT: an existing code is a unique violation, never overwritten. Inside a
    // transaction it undoes only this statement (SQLite's ABORT), not the transaction.
    // `fetch_all`, not `fetch_one`: SQLite commits an implicit transaction when the
    // statement runs to its end, and sqlx hands out the first row before that, so with
    // `fetch_one` a create could be answered before its commit (and its auto-checkpoint)
    // ran, or even failed.
    let stored: Vec<LinkRow> = sqlx::query_as(
        "INSERT INTO links (code, url, created_at, expires_at, max_visits) \
         VALUES (?, ?, ?, ?, ?) \
         RETURNING code, url, created_at, expires_at, max_visits, visits",
    )
    .bind(&row.code)
    .bind(&row.url)
    .bind(row.created_at)
    .bind(row.expires_at)
    .bind(row.max_visits)
    .fetch_all(executor)
    .await
    .map_err(insert_error)?;
    let stored = stored.into_iter().next().ok_or_else(|| {
        RepositoryError::Unexpected(format!("insert of {} returned no row", row.code))
    })?;
    Ok(into_link(stored)?)
}

impl LinkRepository for SqliteRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        match &self.writer {
            Some(writer) => writer.insert(link).await,
            None => {
                let row = InsertRow::new(&link)?;
                let _writing = self.gate.read().await;
                insert_one(&self.pool, &row).await
            }
        }
    }

    async fn get(&self, code: &ShortCode) -> Result<Option<Link>, RepositoryError> {
        let row: Option<LinkRow> = sqlx::query_as(
            "SELECT code, url, created_at, expires_at, max_visits, visits \
             FROM links WHERE code = ?",
        )
        .bind(code.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(storage_error)?;
        row.map(into_link).transpose()
    }

    async fn delete(&self, code: &ShortCode) -> Result<bool, RepositoryError> {
        let _writing = self.gate.read().await;
        let result = sqlx::query("DELETE FROM links WHERE code = ?")
            .bind(code.as_str())
            .execute(&self.pool)
            .await
            .map_err(storage_error)?;
        Ok(result.rows_affected() > 0)
    }

    async fn record_visit(
        &self,
        code: &ShortCode,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        let now_micros = to_micros(now)?;
        let _writing = self.gate.read().await;
        for _ in 0..VISIT_ATTEMPTS {
            // One statement checks and counts, so that concurrent visits of a link with
            // `max_visits = n` count exactly n: SQLite runs one writer at a time.
            // `fetch_all` runs the statement to its end, and so to its commit (see
            // `insert_one`), before the count is reported.
            let counted: Vec<LinkRow> = sqlx::query_as(
                "UPDATE links SET visits = visits + 1 \
                 WHERE code = ? \
                   AND (max_visits IS NULL OR visits < max_visits) \
                   AND (expires_at IS NULL OR expires_at > ?) \
                 RETURNING code, url, created_at, expires_at, max_visits, visits",
            )
            .bind(code.as_str())
            .bind(now_micros)
            .fetch_all(&self.pool)
            .await
            .map_err(storage_error)?;
            if let Some(row) = counted.into_iter().next() {
                return Ok(VisitOutcome::Counted(into_link(row)?));
            }
            // Nothing was counted: a read tells why.
            match self.get(code).await? {
                None => return Ok(VisitOutcome::NotFound),
                Some(link) if link.is_expired(now) => return Ok(VisitOutcome::Expired),
                Some(link) if link.is_exhausted() => return Ok(VisitOutcome::Exhausted),
                Some(_) => {}
            }
        }
        Err(RepositoryError::Unexpected(format!(
            "visit of {code} not counted: the link kept changing"
        )))
    }

    async fn add_visits(&self, visits: &[(ShortCode, u64)]) -> Result<(), RepositoryError> {
        if visits.is_empty() {
            return Ok(());
        }
        let counts = visits
            .iter()
            .map(|(code, count)| Ok((code.as_str(), to_i64(*count, "visit count")?)))
            .collect::<Result<Vec<_>, RepositoryError>>()?;
        let _writing = self.gate.read().await;
        let mut connection = self.pool.acquire().await.map_err(storage_error)?;
        let added = add_counts(&mut connection, &counts).await;
        if added.is_err() {
            discard_after_failed_transaction(&mut connection);
        }
        added
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(storage_error)?;
        Ok(())
    }
}

async fn add_counts(
    connection: &mut SqliteConnection,
    counts: &[(&str, i64)],
) -> Result<(), RepositoryError> {
    // IMMEDIATE takes the write lock up front, so the busy timeout applies; a deferred
    // transaction could fail at its first write instead of waiting.
    let mut transaction = connection
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(storage_error)?;
    for &(code, count) in counts {
        sqlx::query("UPDATE links SET visits = visits + ? WHERE code = ?")
            .bind(count)
            .bind(code)
            .execute(&mut *transaction)
            .await
            .map_err(storage_error)?;
    }
    transaction.commit().await.map_err(storage_error)
}
