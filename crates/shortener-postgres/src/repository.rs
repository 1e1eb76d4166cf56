//! `LinkRepository` for `PostgresRepository`.

use shortener_core::{
    Access, Claim, ClaimRequest, DayVisits, Domain, IdempotencyKey, InsertError, Link, LinkKey,
    LinkPatch, LinkRepository, ListQuery, NewLink, OptionColumns, RepositoryError, ShortCode,
    StoredResponse, TagCount, VisitOutcome, VisitTally, in_order_of, inserted_in_order,
};
use sqlx::Postgres;
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime};

use crate::PostgresRepository;
use crate::error::{insert_error, storage_error};
use crate::row::{LinkRow, into_link, link_columns, status_column, tags_column, to_i64, to_micros};

/// How often `record_visit` counts again when the link changed between its update and
/// its read (deleted and created again); more than that is reported as `Unexpected`.
const VISIT_ATTEMPTS: usize = 3;

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
           password_hash) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING ",
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
        .bind(options.password_hash))
}

impl LinkRepository for PostgresRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        let row = insert_query(&link)?
            .fetch_one(&self.pool)
            .await
            .map_err(insert_error)?;
        Ok(into_link(row)?)
    }

    async fn insert_many(
        &self,
        links: Vec<NewLink>,
    ) -> Result<Vec<Result<Link, InsertError>>, RepositoryError> {
        // A value out of range fails its own link only; the others go in one statement
        // (one round trip for the batch, atomic without a transaction of its own).
        let rows: Vec<Result<serde_json::Value, RepositoryError>> =
            links.iter().map(batch_row).collect();
        let valid = rows.iter().filter_map(|row| row.as_ref().ok());
        let batch = serde_json::Value::Array(valid.cloned().collect()).to_string();
        // `jsonb_to_recordset` yields the rows in order and `INSERT ... SELECT` inserts
        // them so: of a key (domain, code) twice in the batch, the first is written.
        let stored: Vec<LinkRow> = sqlx::query_as(concat!(
            "INSERT INTO links (code, url, created_at, expires_at, max_visits, owner, \
               redirect_status, forward_query, expired_url, title, crawlable, tags, domain, \
               password_hash) \
             SELECT code, url, created_at, expires_at, max_visits, owner, redirect_status, \
               forward_query, expired_url, title, crawlable, tags, domain, password_hash \
             FROM jsonb_to_recordset($1::jsonb) AS batch(code TEXT, url TEXT, \
               created_at TIMESTAMPTZ, expires_at TIMESTAMPTZ, max_visits BIGINT, owner TEXT, \
               redirect_status SMALLINT, forward_query BOOLEAN, expired_url TEXT, title TEXT, \
               crawlable BOOLEAN, tags TEXT[], domain TEXT, password_hash TEXT) \
             ON CONFLICT (code, domain) DO NOTHING RETURNING ",
            link_columns!()
        ))
        .bind(batch)
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        let written = stored
            .into_iter()
            .map(into_link)
            .collect::<Result<_, _>>()?;
        let asked = links.iter().zip(&rows).filter(|(_, row)| row.is_ok());
        let mut inserted =
            inserted_in_order(asked.map(|(link, _)| (&link.domain, &link.code)), written)
                .into_iter();
        Ok(rows
            .into_iter()
            .map(|row| match row {
                Ok(_) => inserted.next().unwrap_or(Err(InsertError::CodeTaken)),
                Err(error) => Err(error.into()),
            })
            .collect())
    }

    async fn get(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        let row: Option<LinkRow> = sqlx::query_as(concat!(
            "SELECT ",
            link_columns!(),
            " FROM links WHERE domain = $1 AND code = $2"
        ))
        .bind(key.domain.as_str())
        .bind(key.code.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(storage_error)?;
        row.map(into_link).transpose()
    }

    async fn get_many(&self, keys: &[LinkKey]) -> Result<Vec<Option<Link>>, RepositoryError> {
        let domains: Vec<&str> = keys.iter().map(|key| key.domain.as_str()).collect();
        let codes: Vec<&str> = keys.iter().map(|key| key.code.as_str()).collect();
        let rows: Vec<LinkRow> = sqlx::query_as(concat!(
            "SELECT ",
            link_columns!(),
            " FROM links WHERE (domain, code) IN \
              (SELECT * FROM unnest($1::text[], $2::text[]))"
        ))
        .bind(domains)
        .bind(codes)
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        let found = rows.into_iter().map(into_link).collect::<Result<_, _>>()?;
        Ok(in_order_of(keys, found))
    }

    async fn delete(&self, key: &LinkKey, access: Access<'_>) -> Result<bool, RepositoryError> {
        self.delete_within(key, access).await
    }

    async fn update(
        &self,
        key: &LinkKey,
        access: Access<'_>,
        patch: &LinkPatch,
    ) -> Result<Option<Link>, RepositoryError> {
        self.update_within(key, access, patch).await
    }

    async fn list(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<Vec<Link>, RepositoryError> {
        self.list_within(access, query).await
    }

    async fn tags(&self, access: Access<'_>) -> Result<Vec<TagCount>, RepositoryError> {
        self.tag_counts(access).await
    }

    async fn crawlable(
        &self,
        domain: &Domain,
        limit: usize,
    ) -> Result<Vec<ShortCode>, RepositoryError> {
        // Walks the partial index `links_crawlable`, in code order.
        let codes: Vec<String> = sqlx::query_scalar(
            "SELECT code FROM links WHERE crawlable AND domain = $1 ORDER BY code LIMIT $2",
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

    async fn record_visit(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        let now = to_micros(now);
        for _ in 0..VISIT_ATTEMPTS {
            // One statement checks and counts. A concurrent visit waits for the row lock
            // and then checks the updated row again, so that visits of a link with
            // `max_visits = n` count exactly n, from any number of nodes.
            let counted: Option<LinkRow> = sqlx::query_as(concat!(
                "UPDATE links SET visits = visits + 1 \
                 WHERE domain = $3 AND code = $1 \
                   AND (max_visits IS NULL OR visits < max_visits) \
                   AND (expires_at IS NULL OR expires_at > $2) \
                 RETURNING ",
                link_columns!()
            ))
            .bind(key.code.as_str())
            .bind(now)
            .bind(key.domain.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(storage_error)?;
            if let Some(row) = counted {
                return Ok(VisitOutcome::Counted(std::sync::Arc::new(into_link(row)?)));
            }
            // Nothing was counted: a read tells why.
            match self.get(key).await? {
                None => return Ok(VisitOutcome::NotFound),
                Some(link) if link.is_expired(now) => return Ok(VisitOutcome::Expired),
                Some(link) if link.is_exhausted() => return Ok(VisitOutcome::Exhausted),
                Some(_) => {}
            }
        }
        Err(RepositoryError::Unexpected(
            format!("visit of {key} not counted: the link kept changing").into(),
        ))
    }

    async fn add_visits(&self, visits: &[VisitTally]) -> Result<(), RepositoryError> {
        self.add_tallies(visits).await
    }

    async fn add_dimensions(
        &self,
        tallies: &[shortener_core::DimensionTally],
        top_values: usize,
    ) -> Result<(), RepositoryError> {
        self.add_dimension_rows(tallies, top_values).await
    }

    async fn top_values(
        &self,
        query: &shortener_core::TopQuery<'_>,
    ) -> Result<Vec<shortener_core::ValueCount>, RepositoryError> {
        self.top(query).await
    }

    async fn visits_by_day(
        &self,
        key: &LinkKey,
        from: Date,
        to: Date,
    ) -> Result<Vec<DayVisits>, RepositoryError> {
        self.days(key, from, to).await
    }

    async fn claim_idempotency(&self, request: &ClaimRequest) -> Result<Claim, RepositoryError> {
        self.claim(request).await
    }

    async fn complete_idempotency(
        &self,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> Result<(), RepositoryError> {
        self.complete(key, response).await
    }

    async fn release_idempotency(&self, key: &IdempotencyKey) -> Result<(), RepositoryError> {
        self.release(key).await
    }

    async fn purge_idempotency(&self, before: OffsetDateTime) -> Result<u64, RepositoryError> {
        self.purge(before).await
    }

    async fn health(&self) -> Result<(), RepositoryError> {
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(storage_error)?;
        Ok(())
    }
}
