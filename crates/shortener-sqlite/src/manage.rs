//! Link management on SQLite: scoped deletes and edits, and the visit flush with its
//! rows per day.

use std::collections::BTreeMap;

use shortener_core::{
    Access, DayVisits, Domain, Link, LinkKey, LinkPatch, RepositoryError, ShortCode, VisitTally,
};
use sqlx::{Connection as _, SqliteConnection};
use time::Date;
use time::macros::format_description;

use crate::SqliteRepository;
use crate::error::storage_error;
use crate::insert::discard_after_failed_transaction;
use crate::row::{LinkRow, into_link, link_columns, tags_json, to_i64, to_micros};

/// How a day is stored: `YYYY-MM-DD`, which sorts as dates do.
pub(crate) const DAY: &[time::format_description::BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]");

/// The owner a statement is limited to; `None` (bound as NULL) reaches every link.
pub(crate) fn owner_of<'a>(access: &Access<'a>) -> Option<&'a str> {
    match access {
        Access::All => None,
        Access::Owner(owner) => Some(owner.as_str()),
    }
}

pub(crate) fn day_text(day: Date) -> Result<String, RepositoryError> {
    day.format(DAY)
        .map_err(|e| RepositoryError::Unexpected(format!("day {day}: {e}").into()))
}

impl SqliteRepository {
    pub(crate) async fn delete_within(
        &self,
        key: &LinkKey,
        access: Access<'_>,
    ) -> Result<bool, RepositoryError> {
        let _writing = self.gate.lock().await;
        let mut connection = self.pool.acquire().await.map_err(storage_error)?;
        let deleted = delete_with_days(&mut connection, key, owner_of(&access)).await;
        if deleted.is_err() {
            discard_after_failed_transaction(&mut connection);
        }
        deleted
    }

    pub(crate) async fn update_within(
        &self,
        key: &LinkKey,
        access: Access<'_>,
        patch: &LinkPatch,
    ) -> Result<Option<Link>, RepositoryError> {
        let expires_at = patch
            .expires_at
            .map(|at| at.map(to_micros).transpose())
            .transpose()?;
        let max_visits = patch
            .max_visits
            .map(|max| max.map(|max| to_i64(max, "max_visits")).transpose())
            .transpose()?;
        let options = patch.option_columns();
        let _writing = self.gate.lock().await;
        // One statement: the ownership check and the edit are one atomic step. A `CASE`
        // per optional field tells "leave" (flag 0) from "set, maybe to NULL".
        let updated: Vec<LinkRow> = sqlx::query_as(concat!(
            "UPDATE links SET url = COALESCE(?, url), \
               expires_at = CASE WHEN ? THEN ? ELSE expires_at END, \
               max_visits = CASE WHEN ? THEN ? ELSE max_visits END, \
               redirect_status = CASE WHEN ? THEN ? ELSE redirect_status END, \
               forward_query = CASE WHEN ? THEN ? ELSE forward_query END, \
               expired_url = CASE WHEN ? THEN ? ELSE expired_url END, \
               title = CASE WHEN ? THEN ? ELSE title END, \
               crawlable = COALESCE(?, crawlable), \
               tags = COALESCE(?, tags), \
               password_hash = CASE WHEN ? THEN ? ELSE password_hash END, \
               rules = CASE WHEN ? THEN ? ELSE rules END \
             WHERE domain = ? AND code = ? AND (? IS NULL OR owner = ?) RETURNING ",
            link_columns!()
        ))
        .bind(patch.url.as_ref().map(|url| url.as_str()))
        .bind(expires_at.is_some())
        .bind(expires_at.flatten())
        .bind(max_visits.is_some())
        .bind(max_visits.flatten())
        .bind(patch.redirect_status.is_some())
        .bind(options.redirect_status)
        .bind(patch.forward_query.is_some())
        .bind(options.forward_query)
        .bind(patch.expired_url.is_some())
        .bind(&options.expired_url)
        .bind(patch.title.is_some())
        .bind(&options.title)
        .bind(patch.crawlable)
        .bind(patch.tags.as_ref().map(tags_json))
        .bind(patch.password.is_some())
        .bind(&options.password_hash)
        .bind(patch.rules.is_some())
        .bind(&options.rules)
        .bind(key.domain.as_str())
        .bind(key.code.as_str())
        .bind(owner_of(&access))
        .bind(owner_of(&access))
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        updated.into_iter().next().map(into_link).transpose()
    }

    pub(crate) async fn crawlable_codes(
        &self,
        domain: &Domain,
        limit: usize,
    ) -> Result<Vec<ShortCode>, RepositoryError> {
        // Walks the partial index `links_crawlable`, in code order.
        let codes: Vec<String> = sqlx::query_scalar(
            "SELECT code FROM links WHERE crawlable = 1 AND domain = ? ORDER BY code LIMIT ?",
        )
        .bind(domain.as_str())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        (codes.into_iter())
            .map(|code| {
                ShortCode::try_from(code).map_err(|e| {
                    RepositoryError::Unexpected(
                        format!("stored link has an invalid code: {e}").into(),
                    )
                })
            })
            .collect()
    }

    pub(crate) async fn add_tallies(&self, visits: &[VisitTally]) -> Result<(), RepositoryError> {
        if visits.is_empty() {
            return Ok(());
        }
        // The rows of each domain apart (one group in the common case of one domain), so
        // that a statement binds the domain once rather than reading it from every row.
        let mut by_domain: BTreeMap<&str, Vec<FlushRow<'_>>> = BTreeMap::new();
        for tally in visits {
            by_domain
                .entry(tally.key.domain.as_str())
                .or_default()
                .push((
                    tally.key.code.as_str(),
                    day_text(tally.day)?,
                    to_i64(tally.visits, "visit count")?,
                    to_i64(tally.bots, "bot count")?,
                ));
        }
        let _writing = self.gate.lock().await;
        let mut connection = self.pool.acquire().await.map_err(storage_error)?;
        let added = add_rows(&mut connection, &by_domain).await;
        if added.is_err() {
            discard_after_failed_transaction(&mut connection);
        }
        added
    }

    pub(crate) async fn days(
        &self,
        key: &LinkKey,
        from: Date,
        to: Date,
    ) -> Result<Vec<DayVisits>, RepositoryError> {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT day, visits, bots FROM link_days \
             WHERE domain = ? AND code = ? AND day >= ? AND day <= ? ORDER BY day",
        )
        .bind(key.domain.as_str())
        .bind(key.code.as_str())
        .bind(day_text(from)?)
        .bind(day_text(to)?)
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        rows.into_iter()
            .map(|(day, visits, bots)| {
                let corrupt = |what: &str| {
                    RepositoryError::Unexpected(
                        format!("stored day of {key} has an invalid {what}").into(),
                    )
                };
                Ok(DayVisits {
                    day: Date::parse(&day, DAY).map_err(|_| corrupt("day"))?,
                    visits: u64::try_from(visits).map_err(|_| corrupt("visit count"))?,
                    bots: u64::try_from(bots).map_err(|_| corrupt("bot count"))?,
                })
            })
            .collect()
    }
}

async fn delete_with_days(
    connection: &mut SqliteConnection,
    key: &LinkKey,
    owner: Option<&str>,
) -> Result<bool, RepositoryError> {
    let mut transaction = connection
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(storage_error)?;
    let deleted =
        sqlx::query("DELETE FROM links WHERE domain = ? AND code = ? AND (? IS NULL OR owner = ?)")
            .bind(key.domain.as_str())
            .bind(key.code.as_str())
            .bind(owner)
            .bind(owner)
            .execute(&mut *transaction)
            .await
            .map_err(storage_error)?
            .rows_affected()
            > 0;
    if deleted {
        sqlx::query("DELETE FROM link_days WHERE domain = ? AND code = ?")
            .bind(key.domain.as_str())
            .bind(key.code.as_str())
            .execute(&mut *transaction)
            .await
            .map_err(storage_error)?;
        sqlx::query("DELETE FROM link_dimensions WHERE domain = ? AND code = ?")
            .bind(key.domain.as_str())
            .bind(key.code.as_str())
            .execute(&mut *transaction)
            .await
            .map_err(storage_error)?;
    }
    transaction.commit().await.map_err(storage_error)?;
    Ok(deleted)
}

/// One link's visits of one day in a flush: code, day, people, bots.
type FlushRow<'a> = (&'a str, String, i64, i64);

async fn add_rows(
    connection: &mut SqliteConnection,
    by_domain: &BTreeMap<&str, Vec<FlushRow<'_>>>,
) -> Result<(), RepositoryError> {
    // IMMEDIATE takes the write lock up front, so the busy timeout applies; a deferred
    // transaction could fail at its first write instead of waiting.
    let mut transaction = connection
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(storage_error)?;
    for (domain, rows) in by_domain {
        // Two statements for each domain's rows, bound as one JSON array of
        // [code, day, visits, bots]: sqlx runs each statement on the connection's worker
        // thread, and two statements per row spent most of a flush handing rows over.
        // `jsonb_each`, not `json_each`: a row's `value` is then SQLite's binary JSON,
        // which `->>` reads in place, where `json_each` gives it as text that every `->>`
        // parsed again. See `cargo xtask bench --only http` (a random link out of 10 000).
        let rows = serde_json::to_string(rows)
            .map_err(|error| RepositoryError::Unexpected(error.to_string().into()))?;
        // Links with `max_visits` counted each visit when it was admitted. A link may have
        // rows for several days: their visits are summed first.
        sqlx::query(
            "UPDATE links SET visits = visits + flushed.added \
             FROM (SELECT value ->> 0 AS code, SUM(value ->> 2) AS added \
                   FROM jsonb_each(?1) GROUP BY 1) AS flushed \
             WHERE links.code = flushed.code AND links.domain = ?2 \
               AND links.max_visits IS NULL AND flushed.added > 0",
        )
        .bind(&rows)
        .bind(domain)
        .execute(&mut *transaction)
        .await
        .map_err(storage_error)?;
        sqlx::query(
            "INSERT INTO link_days (code, domain, day, visits, bots) \
             SELECT value ->> 0, ?2, value ->> 1, value ->> 2, value ->> 3 FROM jsonb_each(?1) \
             WHERE EXISTS (SELECT 1 FROM links WHERE code = value ->> 0 AND domain = ?2) \
             ON CONFLICT (code, domain, day) DO UPDATE \
             SET visits = visits + excluded.visits, bots = bots + excluded.bots",
        )
        .bind(&rows)
        .bind(domain)
        .execute(&mut *transaction)
        .await
        .map_err(storage_error)?;
    }
    transaction.commit().await.map_err(storage_error)
}
