//! `LinkRepository` for `PostgresRepository`.

use std::collections::BTreeMap;

use shortener_core::{
    InsertError, Link, LinkRepository, NewLink, RepositoryError, ShortCode, VisitOutcome,
};
use time::OffsetDateTime;

use crate::PostgresRepository;
use crate::error::{insert_error, storage_error};
use crate::row::{LinkRow, into_link, to_i64, to_micros};

/// How often `record_visit` counts again when the link changed between its update and
/// its read (deleted and created again); more than that is reported as `Unexpected`.
const VISIT_ATTEMPTS: usize = 3;

impl LinkRepository for PostgresRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        let max_visits = link
            .max_visits
            .map(|max| to_i64(max, "max_visits"))
            .transpose()?;
        // A plain INSERT: an existing code is a unique violation, never overwritten.
        let row: LinkRow = sqlx::query_as(
            "INSERT INTO links (code, url, created_at, expires_at, max_visits) \
             VALUES ($1, $2, $3, $4, $5) \
             RETURNING code, url, created_at, expires_at, max_visits, visits",
        )
        .bind(link.code.as_str())
        .bind(link.url.as_str())
        .bind(to_micros(link.created_at))
        .bind(link.expires_at.map(to_micros))
        .bind(max_visits)
        .fetch_one(&self.pool)
        .await
        .map_err(insert_error)?;
        Ok(into_link(row)?)
    }

    async fn get(&self, code: &ShortCode) -> Result<Option<Link>, RepositoryError> {
        let row: Option<LinkRow> = sqlx::query_as(
            "SELECT code, url, created_at, expires_at, max_visits, visits \
             FROM links WHERE code = $1",
        )
        .bind(code.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(storage_error)?;
        row.map(into_link).transpose()
    }

    async fn delete(&self, code: &ShortCode) -> Result<bool, RepositoryError> {
        let result = sqlx::query("DELETE FROM links WHERE code = $1")
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
        let now = to_micros(now);
        for _ in 0..VISIT_ATTEMPTS {
            // One statement checks and counts. A concurrent visit waits for the row lock
            // and then checks the updated row again, so that visits of a link with
            // `max_visits = n` count exactly n, from any number of nodes.
            let counted: Option<LinkRow> = sqlx::query_as(
                "UPDATE links SET visits = visits + 1 \
                 WHERE code = $1 \
                   AND (max_visits IS NULL OR visits < max_visits) \
                   AND (expires_at IS NULL OR expires_at > $2) \
                 RETURNING code, url, created_at, expires_at, max_visits, visits",
            )
            .bind(code.as_str())
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(storage_error)?;
            if let Some(row) = counted {
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
        // Summed per code first: in `UPDATE .. FROM`, a row that joins twice is updated
        // once, so a repeated code would lose counts.
        let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
        for (code, count) in visits {
            let total = totals.entry(code.as_str()).or_default();
            *total = total.saturating_add(*count);
        }
        if totals.is_empty() {
            return Ok(());
        }
        let mut codes = Vec::with_capacity(totals.len());
        let mut counts = Vec::with_capacity(totals.len());
        for (code, count) in totals {
            codes.push(code);
            counts.push(to_i64(count, "visit count")?);
        }
        // The rows are locked first, in code order (the lock step sits above the sort),
        // so flushes from several nodes touching the same links wait for each other
        // instead of deadlocking, as an UPDATE .. FROM locking in join order would.
        sqlx::query(
            "WITH v AS (SELECT * FROM unnest($1::text[], $2::bigint[]) AS v(code, n)), \
                  locked AS (SELECT links.code FROM links JOIN v ON links.code = v.code \
                             ORDER BY links.code FOR UPDATE OF links) \
             UPDATE links SET visits = links.visits + v.n \
             FROM v WHERE links.code = v.code \
             AND links.code IN (SELECT code FROM locked)",
        )
        .bind(codes)
        .bind(counts)
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(())
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(storage_error)?;
        Ok(())
    }
}
