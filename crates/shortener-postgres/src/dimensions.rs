//! Visits per dimension value on PostgreSQL: the flush's rows placed under the cap of top
//! values against what the table holds, in one transaction that first locks the flushed
//! links (in key order, as the visit flush does), so that flushes of several nodes adding
//! values to one link take turns and the cap holds exactly; and the top values of a link
//! or of every link within reach.

use shortener_core::add_stored;
use shortener_core::dimensions::{StoredValues, placed};
use shortener_core::{DimensionTally, RepositoryError, TopQuery, ValueCount, VisitScope};
use time::Date;

use crate::PostgresRepository;
use crate::error::storage_error;
use crate::manage::owner_of;
use crate::row::{tags_column, to_i64};

impl PostgresRepository {
    pub(crate) async fn add_dimension_rows(
        &self,
        tallies: &[DimensionTally],
        top_values: usize,
    ) -> Result<(), RepositoryError> {
        if tallies.is_empty() {
            return Ok(());
        }
        let (mut codes, mut domains, mut days, mut dimensions) = (vec![], vec![], vec![], vec![]);
        for tally in tallies {
            codes.push(tally.key.code.as_str());
            domains.push(tally.key.domain.as_str());
            days.push(tally.day);
            dimensions.push(tally.dimension.as_str());
        }
        let mut transaction = self.pool.begin().await.map_err(storage_error)?;
        sqlx::query(
            "SELECT 1 FROM links \
             WHERE (code, domain) IN (SELECT * FROM unnest($1::text[], $2::text[])) \
             ORDER BY domain, code FOR UPDATE",
        )
        .bind(&codes)
        .bind(&domains)
        .execute(&mut *transaction)
        .await
        .map_err(storage_error)?;
        let existing: Vec<(String, String, Date, String, String)> = sqlx::query_as(
            "SELECT code, domain, day, dimension, value FROM link_dimensions \
             WHERE (code, domain, day, dimension) IN \
               (SELECT * FROM unnest($1::text[], $2::text[], $3::date[], $4::text[]))",
        )
        .bind(&codes)
        .bind(&domains)
        .bind(&days)
        .bind(&dimensions)
        .fetch_all(&mut *transaction)
        .await
        .map_err(storage_error)?;
        let mut stored = StoredValues::new();
        for (code, domain, day, dimension, value) in existing {
            add_stored(&mut stored, (code, &domain, day, &dimension, value))?;
        }
        let rows = placed(tallies, stored, top_values);
        let (mut codes, mut domains, mut days, mut dimensions) = (vec![], vec![], vec![], vec![]);
        let (mut values, mut visits) = (vec![], vec![]);
        for row in &rows {
            codes.push(row.key.code.as_str());
            domains.push(row.key.domain.as_str());
            days.push(row.day);
            dimensions.push(row.dimension.as_str());
            values.push(row.value.as_str());
            visits.push(to_i64(row.visits, "visit count")?);
        }
        sqlx::query(
            "INSERT INTO link_dimensions (code, domain, day, dimension, value, visits) \
             SELECT v.* FROM unnest($1::text[], $2::text[], $3::date[], $4::text[], \
                                    $5::text[], $6::bigint[]) \
                      AS v(code, domain, day, dimension, value, visits) \
             WHERE EXISTS (SELECT 1 FROM links WHERE code = v.code AND domain = v.domain) \
             ON CONFLICT (code, domain, day, dimension, value) DO UPDATE \
             SET visits = link_dimensions.visits + excluded.visits",
        )
        .bind(&codes)
        .bind(&domains)
        .bind(&days)
        .bind(&dimensions)
        .bind(&values)
        .bind(&visits)
        .execute(&mut *transaction)
        .await
        .map_err(storage_error)?;
        transaction.commit().await.map_err(storage_error)
    }

    pub(crate) async fn top(
        &self,
        query: &TopQuery<'_>,
    ) -> Result<Vec<ValueCount>, RepositoryError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let dimension = query.dimension.as_str();
        let rows: Vec<(String, i64)> = match query.scope {
            VisitScope::Link(key) => {
                sqlx::query_as(
                    "SELECT value, SUM(visits)::bigint FROM link_dimensions \
                     WHERE code = $1 AND domain = $2 AND dimension = $3 \
                       AND day BETWEEN $4 AND $5 \
                     GROUP BY value ORDER BY 2 DESC, value COLLATE \"C\" LIMIT $6",
                )
                .bind(key.code.as_str())
                .bind(key.domain.as_str())
                .bind(dimension)
                .bind(query.from)
                .bind(query.to)
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
            VisitScope::Within(access, tags) => {
                sqlx::query_as(
                    "SELECT d.value, SUM(d.visits)::bigint FROM link_dimensions AS d \
                     JOIN links AS l ON l.code = d.code AND l.domain = d.domain \
                     WHERE d.dimension = $1 AND d.day BETWEEN $2 AND $3 \
                       AND ($4::text IS NULL OR l.owner = $4) AND l.tags @> $6::text[] \
                     GROUP BY d.value ORDER BY 2 DESC, d.value COLLATE \"C\" LIMIT $5",
                )
                .bind(dimension)
                .bind(query.from)
                .bind(query.to)
                .bind(owner_of(&access))
                .bind(limit)
                .bind(tags_column(tags))
                .fetch_all(&self.pool)
                .await
            }
        }
        .map_err(storage_error)?;
        rows.into_iter().map(ValueCount::from_sum).collect()
    }
}
