//! Inserts of new links on SQLite: a row's values converted before any statement runs,
//! one insert, and a batch of them in one transaction (what the group-commit writer and
//! `LinkRepository::insert_many` commit).

use std::collections::HashSet;

use shortener_core::{InsertError, Link, NewLink, OptionColumns, RepositoryError};
use sqlx::pool::PoolConnection;
use sqlx::{Connection as _, Sqlite, SqliteConnection, SqlitePool};

use crate::error::{insert_error, storage_error};
use crate::row::{LinkRow, into_link, link_columns, tags_json, to_i64, to_micros};

/// The column values of one insert, converted before any statement runs, so that a value
/// out of range fails its own insert and no other of a batch.
#[derive(Debug)]
pub(crate) struct InsertRow {
    domain: String,
    code: String,
    url: String,
    created_at: i64,
    expires_at: Option<i64>,
    max_visits: Option<i64>,
    owner: Option<String>,
    options: OptionColumns,
    tags: String,
}

impl InsertRow {
    /// The row as a read of it after the insert gives it (no visits yet).
    fn as_stored(&self) -> LinkRow {
        let options = &self.options;
        (
            self.code.clone(),
            self.url.clone(),
            self.created_at,
            self.expires_at,
            self.max_visits,
            0,
            self.owner.clone(),
            options.redirect_status,
            options.forward_query,
            options.expired_url.clone(),
            options.title.clone(),
            options.crawlable,
            self.tags.clone(),
            self.domain.clone(),
            options.password_hash.clone(),
            options.rules.clone(),
        )
    }

    pub(crate) fn new(link: &NewLink) -> Result<Self, RepositoryError> {
        Ok(Self {
            domain: link.domain.as_str().to_owned(),
            code: link.code.as_str().to_owned(),
            url: link.url.as_str().to_owned(),
            created_at: to_micros(link.created_at)?,
            expires_at: link.expires_at.map(to_micros).transpose()?,
            max_visits: link
                .max_visits
                .map(|max| to_i64(max, "max_visits"))
                .transpose()?,
            owner: link.owner.as_ref().map(|owner| owner.as_str().to_owned()),
            options: OptionColumns::from(&link.options),
            tags: tags_json(&link.tags),
        })
    }
}

/// One insert, on the pool or inside a transaction.
pub(crate) async fn insert_one<'c, E>(executor: E, row: &InsertRow) -> Result<Link, InsertError>
where
    E: sqlx::Executor<'c, Database = sqlx::Sqlite>,
{
    // A plain INSERT: an existing code on the domain is a unique violation, never overwritten. Inside a
    // transaction it undoes only this statement (SQLite's ABORT), not the transaction.
    // `fetch_all`, not `fetch_one`: SQLite commits an implicit transaction when the
    // statement runs to its end, and sqlx hands out the first row before that, so with
    // `fetch_one` a create could be answered before its commit (and its auto-checkpoint)
    // ran, or even failed.
    let stored: Vec<LinkRow> = sqlx::query_as(concat!(
        "INSERT INTO links (code, url, created_at, expires_at, max_visits, owner, \
           redirect_status, forward_query, expired_url, title, crawlable, tags, domain, \
           password_hash, rules) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ",
        link_columns!()
    ))
    .bind(&row.code)
    .bind(&row.url)
    .bind(row.created_at)
    .bind(row.expires_at)
    .bind(row.max_visits)
    .bind(&row.owner)
    .bind(row.options.redirect_status)
    .bind(row.options.forward_query)
    .bind(&row.options.expired_url)
    .bind(&row.options.title)
    .bind(row.options.crawlable)
    .bind(&row.tags)
    .bind(&row.domain)
    .bind(&row.options.password_hash)
    .bind(&row.options.rules)
    .fetch_all(executor)
    .await
    .map_err(insert_error)?;
    let stored = stored.into_iter().next().ok_or_else(|| {
        RepositoryError::Unexpected(format!("insert of {} returned no row", row.code).into())
    })?;
    Ok(into_link(stored)?)
}

/// Inserts `rows` in one transaction: each row's own result (a link, or its code taken)
/// when the transaction committed; the storage error when it did not, which then holds
/// for every row. The caller holds the write gate.
pub(crate) async fn insert_all(
    pool: &SqlitePool,
    rows: &[&InsertRow],
) -> Result<Vec<Result<Link, InsertError>>, RepositoryError> {
    let mut connection = pool.acquire().await.map_err(storage_error)?;
    let inserted = insert_batch(&mut connection, rows).await;
    if inserted.is_err() {
        discard_after_failed_transaction(&mut connection);
    }
    inserted
}

/// Marks a connection whose write transaction failed to be closed, not reused.
///
/// SQLite rolls a transaction back by itself on some errors (a full disk, an IO error);
/// sqlx's own ROLLBACK then fails, and the connection would go back to the pool
/// believing it is still in a transaction, failing every later `BEGIN` on it.
pub(crate) fn discard_after_failed_transaction(connection: &mut PoolConnection<Sqlite>) {
    connection.close_on_drop();
}

async fn insert_batch(
    connection: &mut SqliteConnection,
    rows: &[&InsertRow],
) -> Result<Vec<Result<Link, InsertError>>, RepositoryError> {
    // IMMEDIATE takes the write lock up front, so the busy timeout applies.
    let mut transaction = connection
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(storage_error)?;
    // Two statements for the whole batch: sqlx runs each statement on the connection's
    // worker thread and hands each row of its answer back, and a statement per row spent
    // most of a batch handing rows between threads. The rows go in as one JSON array of
    // arrays, read by `jsonb_each`, whose rows `->>` reads without parsing each row's text
    // again (as `json_each`'s would be). First the keys (domain, code) of the batch that
    // exist (none, in a fresh import), then the insert, which skips a taken key (`WHERE
    // true` tells SQLite's parser that `ON CONFLICT` is the upsert clause) and returns
    // nothing: under the write lock, a row whose code was free is written exactly as given.
    let batch = rows_json(rows);
    let existing: Vec<(String, String)> = sqlx::query_as(
        "SELECT domain, code FROM links \
         WHERE (domain, code) IN (SELECT value ->> 12, value ->> 0 FROM jsonb_each(?))",
    )
    .bind(&batch)
    .fetch_all(&mut *transaction)
    .await
    .map_err(storage_error)?;
    sqlx::query(
        "INSERT INTO links (code, url, created_at, expires_at, max_visits, owner, \
           redirect_status, forward_query, expired_url, title, crawlable, tags, domain, \
           password_hash, rules) \
         SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, \
           value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 10, \
           value ->> 11, value ->> 12, value ->> 13, value ->> 14 \
         FROM jsonb_each(?) WHERE true ON CONFLICT (code, domain) DO NOTHING",
    )
    .bind(&batch)
    .execute(&mut *transaction)
    .await
    .map_err(storage_error)?;
    transaction.commit().await.map_err(storage_error)?;
    // A key that existed is taken; of a key twice in the batch, the first row is
    // written and a later one finds it taken.
    let mut taken: HashSet<(&str, &str)> = (existing.iter())
        .map(|(domain, code)| (domain.as_str(), code.as_str()))
        .collect();
    Ok(rows
        .iter()
        .map(|row| {
            if taken.insert((row.domain.as_str(), row.code.as_str())) {
                Ok(into_link(row.as_stored())?)
            } else {
                Err(InsertError::CodeTaken)
            }
        })
        .collect())
}

/// The rows as one JSON array of arrays of their column values, in the insert's order.
fn rows_json(rows: &[&InsertRow]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let options = &row.options;
            serde_json::json!([
                row.code,
                row.url,
                row.created_at,
                row.expires_at,
                row.max_visits,
                row.owner,
                options.redirect_status,
                options.forward_query,
                options.expired_url,
                options.title,
                options.crawlable,
                row.tags,
                row.domain,
                options.password_hash,
                options.rules,
            ])
        })
        .collect();
    serde_json::Value::Array(rows).to_string()
}
