//! Listings on PostgreSQL: a page by keyset (or by offset, for clients that page by
//! number) and the count (and visits) of what a listing's filters match.

use shortener_core::{Access, Domain, Link, ListOrder, ListQuery, ListTotals, RepositoryError};

use crate::PostgresRepository;
use crate::error::storage_error;
use crate::manage::owner_of;
use crate::row::{LinkRow, into_link, link_columns, tags_column, to_micros};

/// The filters of a listing after its owner's, given their parameters' numbers: the
/// search (lower case), the tags (which the link's must include, or meet when `$any`),
/// the domain, the creation range and the live-links switches
/// ([`shortener_core::ListWithin`]).
macro_rules! filters {
    ($search:literal, $tags:literal, $domain:literal,
     $any:literal, $from:literal, $to:literal, $left:literal, $live:literal) => {
        concat!(
            " AND (strpos(lower(code), ",
            $search,
            ") > 0 OR strpos(lower(url), ",
            $search,
            ") > 0 \
                  OR strpos(lower(COALESCE(title, '')), ",
            $search,
            ") > 0) \
             AND CASE WHEN ",
            $any,
            "::bool THEN cardinality(",
            $tags,
            "::text[]) = 0 OR tags && ",
            $tags,
            "::text[] ELSE tags @> ",
            $tags,
            "::text[] END AND (",
            $domain,
            "::text IS NULL OR domain = ",
            $domain,
            ") AND (",
            $from,
            "::timestamptz IS NULL OR created_at >= ",
            $from,
            ") AND (",
            $to,
            "::timestamptz IS NULL OR created_at <= ",
            $to,
            ") AND (NOT ",
            $left,
            "::bool OR max_visits IS NULL OR visits < max_visits) AND (",
            $live,
            "::timestamptz IS NULL OR expires_at IS NULL OR expires_at > ",
            $live,
            ")"
        )
    };
}

impl PostgresRepository {
    pub(crate) async fn list_within(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<Vec<Link>, RepositoryError> {
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
        // A statement per case rather than `($1 IS NULL OR ...)`, so that each walks its
        // index (`links_by_owner`, `links_by_age`) in order and stops at the limit.
        macro_rules! listing {
            ($where:literal) => {
                concat!(
                    "SELECT ",
                    link_columns!(),
                    " FROM links WHERE ",
                    $where,
                    filters!("$2", "$4", "$5", "$7", "$8", "$9", "$10", "$11"),
                    " ORDER BY created_at DESC, code DESC, domain DESC LIMIT $3 OFFSET $6"
                )
            };
        }
        let statement = match (access, &query.after) {
            (Access::Owner(_), None) => listing!("owner = $1"),
            (Access::Owner(_), Some(_)) => {
                listing!("owner = $1 AND (created_at, code, domain) < ($12, $13, $14)")
            }
            (Access::All, None) => listing!("$1::text IS NULL"),
            (Access::All, Some(_)) => {
                listing!("$1::text IS NULL AND (created_at, code, domain) < ($12, $13, $14)")
            }
        };
        // Made of this file's literals only: no input reaches the text.
        let statement = ordered(statement, query.order);
        let mut select = sqlx::query_as::<_, LinkRow>(sqlx::AssertSqlSafe(statement))
            .bind(owner_of(&access))
            .bind(search(query))
            .bind(limit)
            .bind(tags_column(&query.tags))
            .bind(query.domain.as_ref().map(Domain::as_str))
            .bind(offset)
            .bind(query.within.any_tag)
            .bind(query.within.created_from.map(to_micros))
            .bind(query.within.created_to.map(to_micros))
            .bind(query.within.with_visits_left)
            .bind(query.within.live_at.map(to_micros));
        if let Some(after) = &query.after {
            select = select
                .bind(to_micros(after.created_at))
                .bind(after.code.as_str())
                .bind(after.domain.as_str());
        }
        let rows = select.fetch_all(&self.pool).await.map_err(storage_error)?;
        rows.into_iter().map(into_link).collect()
    }

    pub(crate) async fn count_within(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<ListTotals, RepositoryError> {
        let statement = concat!(
            "SELECT count(*), COALESCE(sum(visits), 0)::int8, COALESCE(sum((SELECT sum(bots) \
             FROM link_days AS day WHERE day.code = links.code AND day.domain = links.domain)), 0)::int8 \
             FROM links WHERE ($1::text IS NULL OR owner = $1)",
            filters!("$2", "$3", "$4", "$5", "$6", "$7", "$8", "$9")
        );
        let (links, visits, bots): (i64, i64, i64) = sqlx::query_as(statement)
            .bind(owner_of(&access))
            .bind(search(query))
            .bind(tags_column(&query.tags))
            .bind(query.domain.as_ref().map(Domain::as_str))
            .bind(query.within.any_tag)
            .bind(query.within.created_from.map(to_micros))
            .bind(query.within.created_to.map(to_micros))
            .bind(query.within.with_visits_left)
            .bind(query.within.live_at.map(to_micros))
            .fetch_one(&self.pool)
            .await
            .map_err(storage_error)?;
        let negative = |_| RepositoryError::Unexpected("a negative count of links".into());
        Ok(ListTotals {
            links: u64::try_from(links).map_err(negative)?,
            visits: u64::try_from(visits).map_err(negative)?,
            bots: u64::try_from(bots).map_err(negative)?,
        })
    }
}

/// What a listing searches for: lower case, the empty string matching every link.
fn search(query: &ListQuery) -> String {
    (query.search.as_deref())
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// The listing's statement (written newest first, the keyset's order) in `order`.
fn ordered(statement: &'static str, order: ListOrder) -> std::borrow::Cow<'static, str> {
    const NEWEST: &str = " ORDER BY created_at DESC, code DESC, domain DESC ";
    let by = match order {
        ListOrder::Newest => return statement.into(),
        ListOrder::Oldest => " ORDER BY created_at ASC, code ASC, domain ASC ",
        ListOrder::MostVisited => " ORDER BY visits DESC, created_at DESC, code DESC, domain DESC ",
        ListOrder::LeastVisited => " ORDER BY visits ASC, created_at DESC, code DESC, domain DESC ",
    };
    statement.replacen(NEWEST, by, 1).into()
}
