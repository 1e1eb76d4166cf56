//! `LinkRepository` for `PostgresRepository`.

use shortener_core::{
    Access, Claim, ClaimRequest, DayVisits, Domain, IdempotencyKey, InsertError, Link, LinkKey,
    LinkPatch, LinkRepository, ListQuery, ListTotals, NewLink, Owner, RepositoryError, ShortCode,
    StoredResponse, Tag, TagCount, TargetUrl, VisitOutcome, VisitTally, in_order_of,
};
use time::{Date, OffsetDateTime};

use crate::PostgresRepository;
use crate::error::storage_error;
use crate::insert::insert_all;
use crate::row::{LinkRow, into_link, link_columns, to_micros};

/// How often `record_visit` counts again when the link changed between its update and
/// its read (deleted and created again); more than that is reported as `Unexpected`.
const VISIT_ATTEMPTS: usize = 3;

impl LinkRepository for PostgresRepository {
    async fn insert(&self, link: NewLink) -> Result<Link, InsertError> {
        self.inserter.insert(link).await
    }

    async fn insert_many(
        &self,
        links: Vec<NewLink>,
    ) -> Result<Vec<Result<Link, InsertError>>, RepositoryError> {
        insert_all(&self.pool, &links).await
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
        // Walks the hash index `links_by_url` (a B-tree entry could not hold a long URL).
        let rows: Vec<LinkRow> = sqlx::query_as(concat!(
            "SELECT ",
            link_columns!(),
            " FROM links WHERE url = $1 AND domain = $2 AND owner IS NOT DISTINCT FROM $3 \
             ORDER BY created_at DESC, code DESC LIMIT $4"
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
