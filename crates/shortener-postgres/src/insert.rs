//! Inserts of links: one link by a plain `INSERT ... RETURNING`, many by one statement
//! over `jsonb_to_recordset`, and the [`Inserter`] that groups concurrent creates.
//!
//! A busy node otherwise pays a round trip and a commit (a WAL flush) per create, and
//! sqlx adds a ping of the connection each time it comes back to the pool. The inserter
//! takes whatever creates are queued when one of its [`IN_FLIGHT`] slots is free (at
//! most [`MAX_BATCH`]) and inserts them in one statement, answering each create once
//! that statement has committed. Under light load a batch is one link, inserted by the
//! plain statement with no added wait. A batch that fails for any reason but an
//! unavailable database is inserted again link by link, so that a link the database
//! refuses fails alone, as it would have without grouping.

use std::sync::Arc;

use shortener_core::{
    InsertError, Link, NewLink, OptionColumns, RepositoryError, inserted_in_order,
};
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use sqlx::{PgPool, Postgres};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::error::{insert_error, storage_error};
use crate::row::{LinkRow, into_link, link_columns, status_column, tags_column, to_i64, to_micros};

/// The most links of one statement.
const MAX_BATCH: usize = 256;
/// Statements of the inserter at once: while some wait on the database, the next
/// batch gathers; the pool's other connections stay free for reads and visits.
const IN_FLIGHT: usize = 4;
/// Creates waiting for a slot; more wait in `send` (back-pressure on the handlers).
const QUEUE: usize = 4096;

/// One create waiting for its batch.
struct Job {
    link: NewLink,
    reply: oneshot::Sender<Result<Link, InsertError>>,
}

/// The handle of the inserter task, shared by every clone of the repository; the task
/// ends when the last handle is dropped, after inserting what it was given.
#[derive(Debug)]
pub(crate) struct Inserter {
    jobs: mpsc::Sender<Job>,
}

impl Inserter {
    pub(crate) fn spawn(pool: PgPool) -> Self {
        let (jobs, receiver) = mpsc::channel(QUEUE);
        tokio::spawn(run(pool, receiver));
        Self { jobs }
    }

    /// Inserts `link` in the next batch; returns once that batch committed (or failed).
    pub(crate) async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        let (reply, answer) = oneshot::channel();
        let closed = || RepositoryError::Unavailable("the database is closing".into());
        self.jobs
            .send(Job { link, reply })
            .await
            .map_err(|_| closed())?;
        // The task answers every job it took; no answer means it stopped without.
        answer.await.map_err(|_| closed())?
    }
}

async fn run(pool: PgPool, mut jobs: mpsc::Receiver<Job>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    loop {
        // A slot first, then everything queued: batches grow while the slots are busy.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let mut batch = Vec::with_capacity(MAX_BATCH);
        if jobs.recv_many(&mut batch, MAX_BATCH).await == 0 {
            return;
        }
        let pool = pool.clone();
        tokio::spawn(async move {
            answer(&pool, batch).await;
            drop(slot);
        });
    }
}

/// Inserts the batch and answers every job of it.
async fn answer(pool: &PgPool, mut batch: Vec<Job>) {
    if batch.len() == 1 {
        let Job { link, reply } = batch.remove(0);
        let _ = reply.send(insert_one(pool, &link).await);
        return;
    }
    let (links, replies): (Vec<NewLink>, Vec<_>) =
        batch.into_iter().map(|job| (job.link, job.reply)).unzip();
    let results = match insert_all(pool, &links).await {
        Ok(results) => results,
        Err(error @ RepositoryError::Unavailable(_)) => {
            let failed = |_| Err(InsertError::Storage(error.clone()));
            links.iter().map(failed).collect()
        }
        Err(_) => {
            let mut results = Vec::with_capacity(links.len());
            for link in &links {
                results.push(insert_one(pool, link).await);
            }
            results
        }
    };
    for (reply, result) in replies.into_iter().zip(results) {
        // A dropped receiver is a create whose client went away; its link stays.
        let _ = reply.send(result);
    }
}

/// One link by the plain statement: an existing code on its domain is `CodeTaken`.
pub(crate) async fn insert_one(pool: &PgPool, link: &NewLink) -> Result<Link, InsertError> {
    let row = insert_query(link)?
        .fetch_one(pool)
        .await
        .map_err(insert_error)?;
    Ok(into_link(row)?)
}

/// Many links in one statement (one round trip, atomic without a transaction of its
/// own): a link whose code is taken, or taken earlier in `links`, is `CodeTaken`, and a
/// value out of range fails its own link only.
pub(crate) async fn insert_all(
    pool: &PgPool,
    links: &[NewLink],
) -> Result<Vec<Result<Link, InsertError>>, RepositoryError> {
    // A value out of range fails its own link only; the others go in one statement
    // (one round trip for the batch, atomic without a transaction of its own).
    let rows: Vec<Result<serde_json::Value, RepositoryError>> =
        links.iter().map(batch_row).collect();
    let mut valid: Vec<_> = (links.iter().zip(&rows))
        .filter_map(|(link, row)| Some((link, row.as_ref().ok()?)))
        .collect();
    // In key order (a stable sort: of one key asked twice, the first asked is written),
    // so that two statements inserting the same keys, on this node or another, take
    // their index locks in the same order and cannot deadlock each other.
    valid.sort_by(|(a, _), (b, _)| {
        (a.domain.as_str(), a.code.as_str()).cmp(&(b.domain.as_str(), b.code.as_str()))
    });
    let valid = valid.into_iter().map(|(_, row)| row.clone()).collect();
    let batch = serde_json::Value::Array(valid).to_string();
    // `jsonb_to_recordset` yields the rows in order and `INSERT ... SELECT` inserts
    // them so: of a key (domain, code) twice in the batch, the first is written.
    let stored: Vec<LinkRow> = sqlx::query_as(concat!(
        "INSERT INTO links (code, url, created_at, expires_at, max_visits, owner, \
               redirect_status, forward_query, expired_url, title, crawlable, tags, domain, \
               password_hash, rules) \
             SELECT code, url, created_at, expires_at, max_visits, owner, redirect_status, \
               forward_query, expired_url, title, crawlable, tags, domain, password_hash, \
               rules::jsonb \
             FROM jsonb_to_recordset($1::jsonb) AS batch(code TEXT, url TEXT, \
               created_at TIMESTAMPTZ, expires_at TIMESTAMPTZ, max_visits BIGINT, owner TEXT, \
               redirect_status SMALLINT, forward_query BOOLEAN, expired_url TEXT, title TEXT, \
               crawlable BOOLEAN, tags TEXT[], domain TEXT, password_hash TEXT, rules TEXT) \
             ON CONFLICT (code, domain) DO NOTHING RETURNING ",
        link_columns!()
    ))
    .bind(batch)
    .fetch_all(pool)
    .await
    .map_err(storage_error)?;
    let written = stored
        .into_iter()
        .map(into_link)
        .collect::<Result<_, _>>()?;
    let asked = links.iter().zip(&rows).filter(|(_, row)| row.is_ok());
    let mut inserted =
        inserted_in_order(asked.map(|(link, _)| (&link.domain, &link.code)), written).into_iter();
    Ok(rows
        .into_iter()
        .map(|row| match row {
            Ok(_) => inserted.next().unwrap_or(Err(InsertError::CodeTaken)),
            Err(error) => Err(error.into()),
        })
        .collect())
}

/// One link of a batch insert: its columns as a JSON object for `jsonb_to_recordset`
/// (times in RFC 3339 to the microsecond).
fn batch_row(link: &NewLink) -> Result<serde_json::Value, RepositoryError> {
    let time = |at: OffsetDateTime| {
        to_micros(at)
            .format(&Rfc3339)
            .map_err(|error| RepositoryError::Unexpected(format!("time {at}: {error}").into()))
    };
    let options = OptionColumns::from(&link.options);
    Ok(serde_json::json!({
        "domain": link.domain.as_str(),
        "code": link.code.as_str(),
        "url": link.url.as_str(),
        "created_at": time(link.created_at)?,
        "expires_at": link.expires_at.map(time).transpose()?,
        "max_visits": link.max_visits.map(|max| to_i64(max, "max_visits")).transpose()?,
        "owner": link.owner.as_ref().map(|owner| owner.as_str()),
        "redirect_status": status_column(&options),
        "forward_query": options.forward_query,
        "expired_url": options.expired_url,
        "title": options.title,
        "crawlable": options.crawlable,
        "tags": tags_column(&link.tags),
        "password_hash": options.password_hash,
        "rules": options.rules,
    }))
}

/// The insert of one link: a plain INSERT (an existing code on the link's domain is a
/// unique violation, never overwritten).
fn insert_query(
    link: &NewLink,
) -> Result<QueryAs<'static, Postgres, LinkRow, PgArguments>, RepositoryError> {
    let max_visits = link
        .max_visits
        .map(|max| to_i64(max, "max_visits"))
        .transpose()?;
    let options = OptionColumns::from(&link.options);
    let sql = concat!(
        "INSERT INTO links (code, url, created_at, expires_at, max_visits, owner, \
           redirect_status, forward_query, expired_url, title, crawlable, tags, domain, \
           password_hash, rules) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb) \
         RETURNING ",
        link_columns!()
    );
    Ok(sqlx::query_as(sql)
        .bind(link.code.as_str().to_owned())
        .bind(link.url.as_str().to_owned())
        .bind(to_micros(link.created_at))
        .bind(link.expires_at.map(to_micros))
        .bind(max_visits)
        .bind(link.owner.as_ref().map(|owner| owner.as_str().to_owned()))
        .bind(status_column(&options))
        .bind(options.forward_query)
        .bind(options.expired_url)
        .bind(options.title)
        .bind(options.crawlable)
        .bind(tags_column(&link.tags))
        .bind(link.domain.as_str().to_owned())
        .bind(options.password_hash)
        .bind(options.rules))
}
