//! Tags on SQLite, kept as a JSON array of text in `links.tags`, in byte order: their
//! counts, and renames and deletes over every link of a caller.

use shortener_core::{Access, RepositoryError, Tag, TagCount};

use crate::SqliteRepository;
use crate::error::storage_error;
use crate::manage::owner_of;

impl SqliteRepository {
    pub(crate) async fn tag_counts(
        &self,
        access: Access<'_>,
    ) -> Result<Vec<TagCount>, RepositoryError> {
        let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT tag.value, count(*), COALESCE(sum(links.visits), 0), \
               COALESCE(sum((SELECT sum(bots) FROM link_days AS day \
                             WHERE day.code = links.code AND day.domain = links.domain)), 0) \
             FROM links, json_each(links.tags) AS tag \
             WHERE ?1 IS NULL OR links.owner = ?1 \
             GROUP BY tag.value ORDER BY tag.value",
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
        let _writing = self.gate.lock().await;
        // One statement: every link that has the tag gets its set again, the one renamed,
        // each name once, in order.
        let changed = sqlx::query(
            "UPDATE links SET tags = (\
               SELECT json_group_array(name ORDER BY name) FROM (\
                 SELECT DISTINCT CASE WHEN tag.value = ?1 THEN ?2 ELSE tag.value END AS name \
                 FROM json_each(links.tags) AS tag)) \
             WHERE (?3 IS NULL OR owner = ?3) \
               AND EXISTS (SELECT 1 FROM json_each(links.tags) WHERE value = ?1)",
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
        let _writing = self.gate.lock().await;
        let changed = sqlx::query(
            "UPDATE links SET tags = (\
               SELECT json_group_array(tag.value ORDER BY tag.value) \
               FROM json_each(links.tags) AS tag WHERE tag.value <> ?1) \
             WHERE (?2 IS NULL OR owner = ?2) \
               AND EXISTS (SELECT 1 FROM json_each(links.tags) WHERE value = ?1)",
        )
        .bind(tag.as_str())
        .bind(owner_of(&access))
        .execute(&self.pool)
        .await
        .map_err(storage_error)?;
        Ok(changed.rows_affected())
    }
}
