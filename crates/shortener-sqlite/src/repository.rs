//! `LinkRepository` for `SqliteRepository`.

use shortener_core::{
    Access, Claim, ClaimRequest, DayVisits, Domain, IdempotencyKey, InsertError, Link, LinkKey,
    LinkPatch, LinkRepository, ListQuery, ListTotals, NewLink, Owner, RepositoryError, ShortCode,
    StoredResponse, Tag, TagCount, TargetUrl, VisitOutcome, VisitTally, in_order_of,
};
use time::{Date, OffsetDateTime};

use crate::SqliteRepository;
use crate::error::storage_error;
use crate::insert::{InsertRow, insert_all, insert_one};
use crate::row::{LinkRow, into_link, link_columns, to_micros};

/// How often `record_visit` counts again when the link changed between its update and
/// its read (deleted and created again); more than that is reported as `Unexpected`.
const VISIT_ATTEMPTS: usize = 3;

impl LinkRepository for SqliteRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        match &self.writer {
            Some(writer) => writer.insert(link).await,
            None => {
                let row = InsertRow::new(&link)?;
                let _writing = self.gate.lock().await;
                insert_one(&self.pool, &row).await
            }
        }
    }

    async fn insert_many(
        &self,
        links: Vec<NewLink>,
    ) -> Result<Vec<Result<Link, InsertError>>, RepositoryError> {
        // A value out of range fails its own link only; the others go in one transaction
        // (beside the group-commit writer, taking the write lock in turn with it).
        let rows: Vec<Result<InsertRow, RepositoryError>> =
            links.iter().map(InsertRow::new).collect();
        let mut inserted = {
            let _writing = self.gate.lock().await;
            let valid: Vec<&InsertRow> = rows.iter().filter_map(|row| row.as_ref().ok()).collect();
            insert_all(&self.pool, &valid).await?
        }
        .into_iter();
        Ok(rows
            .into_iter()
            .map(|row| match row {
                Ok(_) => inserted.next().unwrap_or_else(|| {
                    Err(RepositoryError::Unexpected("a batch insert lost a row".into()).into())
                }),
                Err(error) => Err(error.into()),
            })
            .collect())
    }

    async fn get(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        let row: Option<LinkRow> = sqlx::query_as(concat!(
            "SELECT ",
            link_columns!(),
            " FROM links WHERE domain = ? AND code = ?"
        ))
        .bind(key.domain.as_str())
        .bind(key.code.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(storage_error)?;
        row.map(into_link).transpose()
    }

    async fn get_many(&self, keys: &[LinkKey]) -> Result<Vec<Option<Link>>, RepositoryError> {
        // The keys as one JSON array of [domain, code]: one statement (prepared once) for
        // any count.
        let keys_json = serde_json::to_string(
            &(keys.iter())
                .map(|key| [key.domain.as_str(), key.code.as_str()])
                .collect::<Vec<_>>(),
        )
        .map_err(|error| RepositoryError::Unexpected(error.to_string().into()))?;
        let rows: Vec<LinkRow> = sqlx::query_as(concat!(
            "SELECT ",
            link_columns!(),
            " FROM links WHERE (domain, code) IN \
              (SELECT value ->> 0, value ->> 1 FROM json_each(?))"
        ))
        .bind(keys_json)
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

    async fn count(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<ListTotals, RepositoryError> {
        self.count_within(access, query).await
    }

    async fn tags(&self, access: Access<'_>) -> Result<Vec<TagCount>, RepositoryError> {
        self.tag_counts(access).await
    }

    async fn rename_tag(
        &self,
        access: Access<'_>,
        from: &Tag,
        to: &Tag,
    ) -> Result<u64, RepositoryError> {
        self.rename_tag_within(access, from, to).await
    }

    async fn delete_tag(&self, access: Access<'_>, tag: &Tag) -> Result<u64, RepositoryError> {
        self.delete_tag_within(access, tag).await
    }

    async fn links_to(
        &self,
        domain: &Domain,
        owner: Option<&Owner>,
        url: &TargetUrl,
        limit: usize,
    ) -> Result<Vec<Link>, RepositoryError> {
        // Walks the index `links_by_url`; `IS` matches a NULL owner as equal.
        let rows: Vec<LinkRow> = sqlx::query_as(concat!(
            "SELECT ",
            link_columns!(),
            " FROM links WHERE url = ? AND domain = ? AND owner IS ? \
             ORDER BY created_at DESC, code DESC LIMIT ?"
        ))
        .bind(url.as_str())
        .bind(domain.as_str())
        .bind(owner.map(Owner::as_str))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        rows.into_iter().map(into_link).collect()
    }

    async fn crawlable(
        &self,
        domain: &Domain,
        limit: usize,
    ) -> Result<Vec<ShortCode>, RepositoryError> {
        self.crawlable_codes(domain, limit).await
    }

    async fn record_visit(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
    ) -> Result<VisitOutcome, RepositoryError> {
        let now_micros = to_micros(now)?;
        let _writing = self.gate.lock().await;
        for _ in 0..VISIT_ATTEMPTS {
            // One statement checks and counts, so that concurrent visits of a link with
            // `max_visits = n` count exactly n: SQLite runs one writer at a time.
            // `fetch_all` runs the statement to its end, and so to its commit (see
            // `insert_one`), before the count is reported.
            let counted: Vec<LinkRow> = sqlx::query_as(concat!(
                "UPDATE links SET visits = visits + 1 \
                 WHERE domain = ? AND code = ? \
                   AND (max_visits IS NULL OR visits < max_visits) \
                   AND (expires_at IS NULL OR expires_at > ?) \
                 RETURNING ",
                link_columns!()
            ))
            .bind(key.domain.as_str())
            .bind(key.code.as_str())
            .bind(now_micros)
            .fetch_all(&self.pool)
            .await
            .map_err(storage_error)?;
            if let Some(row) = counted.into_iter().next() {
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
