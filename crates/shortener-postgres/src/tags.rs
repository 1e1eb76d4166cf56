//! Tags on PostgreSQL, kept as a `text[]` in `links.tags`, in byte order: their counts,
//! and renames and deletes over every link of a caller.

use shortener_core::{Access, RepositoryError, Tag, TagCount};

use crate::PostgresRepository;
use crate::error::storage_error;
use crate::manage::owner_of;

impl PostgresRepository {
    pub(crate) async fn tag_counts(
        &self,
        access: Access<'_>,
    ) -> Result<Vec<TagCount>, RepositoryError> {
        // Ordered byte by byte ("C"), as tags compare everywhere else.
        let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT tag, count(*), COALESCE(sum(visits), 0)::int8, \
               COALESCE(sum((SELECT sum(bots) FROM link_days AS day \
                             WHERE day.code = links.code AND day.domain = links.domain)), 0)::int8 \
             FROM links, unnest(tags) AS tag \
             WHERE $1::text IS NULL OR owner = $1 \
             GROUP BY tag ORDER BY tag COLLATE \"C\"",
        )
        .bind(owner_of(&access))
        .fetch_all(&self.pool)
        .await
        .map_err(storage_error)?;
        (rows.into_iter())
            .map(|(tag, links, visits, bots)| {
                TagCount::from_columns(&tag, links, visits, bots)
                    .map_err(|e| RepositoryError::Unexpected(format!("stored tags: {e}").into()))
            })
            .collect()
    }

    pub(crate) async fn rename_tag_within(
        &self,
        access: Access<'_>,
        from: &Tag,
        to: &Tag,
    ) -> Result<u64, RepositoryError> {
        // One statement: every link that has the tag gets its set again, the one renamed,
        // each name once, in byte order ("C") as tags compare everywhere else.
        let changed = sqlx::query(
            "UPDATE links SET tags = ARRAY(\
               SELECT DISTINCT name COLLATE \"C\" FROM unnest(array_replace(tags, $1, $2)) \
               AS name ORDER BY 1) \
             WHERE ($3::text IS NULL OR owner = $3) AND tags @> ARRAY[$1::text]",
        )
        .bind(from.as_str())
        .bind(to.as_str())
        .bind(owner_of(&access))
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(changed.rows_affected())
    }

    pub(crate) async fn delete_tag_within(
        &self,
        access: Access<'_>,
        tag: &Tag,
    ) -> Result<u64, RepositoryError> {
        let changed = sqlx::query(
            "UPDATE links SET tags = array_remove(tags, $1) \
             WHERE ($2::text IS NULL OR owner = $2) AND tags @> ARRAY[$1::text]",
        )
        .bind(tag.as_str())
        .bind(owner_of(&access))
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(changed.rows_affected())
    }
}
