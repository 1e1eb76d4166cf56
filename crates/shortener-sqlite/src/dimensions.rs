//! Visits per dimension value on SQLite: the flush's rows placed under the cap of top
//! values against what the table holds, in one write transaction, and the top values of
//! a link or of every link within reach.

use shortener_core::add_stored;
use shortener_core::dimensions::{StoredValues, placed};
use shortener_core::{DimensionTally, RepositoryError, TopQuery, ValueCount, VisitScope};
use sqlx::{Connection as _, SqliteConnection};
use time::Date;

use crate::SqliteRepository;
use crate::error::storage_error;
use crate::insert::discard_after_failed_transaction;
use crate::manage::{DAY, day_text, owner_of};
use crate::row::{tags_json, to_i64};

impl SqliteRepository {
    pub(crate) async fn add_dimension_rows(
        &self,
        tallies: &[DimensionTally],
        top_values: usize,
    ) -> Result<(), RepositoryError> {
        if tallies.is_empty() {
            return Ok(());
        }
        let _writing = self.gate.lock().await;
        let mut connection = self.pool.acquire().await.map_err(storage_error)?;
        let added = add_rows(&mut connection, tallies, top_values).await;
        if added.is_err() {
            discard_after_failed_transaction(&mut connection);
        }
        added
    }

    pub(crate) async fn top(
        &self,
        query: &TopQuery<'_>,
    ) -> Result<Vec<ValueCount>, RepositoryError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let (from, to) = (day_text(query.from)?, day_text(query.to)?);
        let dimension = query.dimension.as_str();
        let rows: Vec<(String, i64)> = match query.scope {
            VisitScope::Link(key) => {
                sqlx::query_as(
                    "SELECT value, SUM(visits) FROM link_dimensions \
                     WHERE code = ? AND domain = ? AND dimension = ? AND day >= ? AND day <= ? \
                     GROUP BY value ORDER BY 2 DESC, 1 LIMIT ?",
                )
                .bind(key.code.as_str())
                .bind(key.domain.as_str())
                .bind(dimension)
                .bind(&from)
                .bind(&to)
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
            VisitScope::Within(access, tags) => {
                let owner = owner_of(&access);
                sqlx::query_as(
                    "SELECT d.value, SUM(d.visits) FROM link_dimensions AS d \
                     JOIN links AS l ON l.code = d.code AND l.domain = d.domain \
                     WHERE d.dimension = ? AND d.day >= ? AND d.day <= ? \
                       AND (? IS NULL OR l.owner = ?) \
                       AND NOT EXISTS (SELECT value FROM json_each(?) \
                                       EXCEPT SELECT value FROM json_each(l.tags)) \
                     GROUP BY d.value ORDER BY 2 DESC, 1 LIMIT ?",
                )
                .bind(dimension)
                .bind(&from)
                .bind(&to)
                .bind(owner)
                .bind(owner)
                .bind(tags_json(tags))
                .bind(limit)
                .fetch_all(&self.pool)
                .await
            }
        }
        .map_err(storage_error)?;
        rows.into_iter().map(ValueCount::from_sum).collect()
    }
}

async fn add_rows(
    connection: &mut SqliteConnection,
    tallies: &[DimensionTally],
    top_values: usize,
) -> Result<(), RepositoryError> {
    // IMMEDIATE: the write lock first, so that no other flush adds values between the
    // read of what is stored and the write of what is placed against it.
    let mut transaction = connection
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(storage_error)?;
    let groups = groups_json(tallies)?;
    let existing: Vec<(String, String, String, String, String)> = sqlx::query_as(
        "SELECT code, domain, day, dimension, value FROM link_dimensions \
         WHERE (code, domain, day, dimension) IN \
           (SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM jsonb_each(?))",
    )
    .bind(&groups)
    .fetch_all(&mut *transaction)
    .await
    .map_err(storage_error)?;
    let mut stored = StoredValues::new();
    for (code, domain, day, dimension, value) in existing {
        let day = Date::parse(&day, DAY).map_err(|_| {
            RepositoryError::Unexpected(format!("a stored dimension row has day {day}").into())
        })?;
        add_stored(&mut stored, (code, &domain, day, &dimension, value))?;
    }
    let rows = placed(tallies, stored, top_values);
    let mut json = Vec::with_capacity(rows.len());
    for row in &rows {
        json.push((
            row.key.code.as_str(),
            row.key.domain.as_str(),
            day_text(row.day)?,
            row.dimension.as_str(),
            row.value.as_str(),
            to_i64(row.visits, "visit count")?,
        ));
    }
    sqlx::query(
        "INSERT INTO link_dimensions (code, domain, day, dimension, value, visits) \
         SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 \
         FROM jsonb_each(?) \
         WHERE EXISTS (SELECT 1 FROM links WHERE code = value ->> 0 AND domain = value ->> 1) \
         ON CONFLICT (code, domain, day, dimension, value) DO UPDATE \
         SET visits = visits + excluded.visits",
    )
    .bind(serde_json::to_string(&json).map_err(unexpected)?)
    .execute(&mut *transaction)
    .await
    .map_err(storage_error)?;
    transaction.commit().await.map_err(storage_error)
}

/// The (code, domain, day, dimension) of each tally, as one JSON array.
fn groups_json(tallies: &[DimensionTally]) -> Result<String, RepositoryError> {
    let mut groups = Vec::with_capacity(tallies.len());
    for tally in tallies {
        groups.push((
            tally.key.code.as_str(),
            tally.key.domain.as_str(),
            day_text(tally.day)?,
            tally.dimension.as_str(),
        ));
    }
    serde_json::to_string(&groups).map_err(unexpected)
}

/// A JSON array's writing failed (it does not, for these tuples).
fn unexpected(error: serde_json::Error) -> RepositoryError {
    RepositoryError::Unexpected(error.to_string().into())
}
