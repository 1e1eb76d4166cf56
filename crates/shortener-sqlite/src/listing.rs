//! Listings on SQLite: a page by keyset (or by offset, for clients that page by number)
//! and the count (and visits) of what a listing's filters match.

use shortener_core::{Access, Domain, Link, ListOrder, ListQuery, ListTotals, RepositoryError};

use crate::SqliteRepository;
use crate::error::storage_error;
use crate::manage::owner_of;
use crate::row::{LinkRow, into_link, link_columns, tags_json, to_micros};

/// The filters of a listing after its owner's, given their parameters' numbers: the
/// domain, the search (lower case), the tags (a JSON array that the link's must include,
/// or meet when `$any` is 1), the creation range and the live-links switches
/// ([`shortener_core::ListWithin`]).
macro_rules! filters {
    ($domain:literal, $search:literal, $tags:literal,
     $any:literal, $from:literal, $to:literal, $left:literal, $live:literal) => {
        concat!(
            " AND (",
            $domain,
            " IS NULL OR domain = ",
            $domain,
            ") \
             AND (instr(lower(code), ",
            $search,
            ") > 0 OR instr(lower(url), ",
            $search,
            ") > 0 \
                  OR instr(lower(COALESCE(title, '')), ",
            $search,
            ") > 0) \
             AND CASE WHEN ",
            $any,
            " THEN json_array_length(",
            $tags,
            ") = 0 OR EXISTS (SELECT value FROM json_each(",
            $tags,
            ") INTERSECT SELECT value FROM json_each(links.tags)) \
             ELSE NOT EXISTS (SELECT value FROM json_each(",
            $tags,
            ") EXCEPT SELECT value FROM json_each(links.tags)) END \
             AND (",
            $from,
            " IS NULL OR created_at >= ",
            $from,
            ") AND (",
            $to,
            " IS NULL OR created_at <= ",
            $to,
            ") AND (",
            $left,
            " = 0 OR max_visits IS NULL OR visits < max_visits) AND (",
            $live,
            " IS NULL OR expires_at IS NULL OR expires_at > ",
            $live,
            ")"
        )
    };
}

impl SqliteRepository {
    pub(crate) async fn list_within(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<Vec<Link>, RepositoryError> {
        // Without a cursor, start above every link: none was created at the end of time.
        let (created_at, code, domain) = match &query.after {
            Some(after) => (
                to_micros(after.created_at)?,
                after.code.as_str(),
                after.domain.as_str(),
            ),
            None => (i64::MAX, "", ""),
        };
        let search = search(query);
        let within = Within::of(query)?;
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(query.offset).unwrap_or(i64::MAX);
        // Two statements rather than `(? IS NULL OR owner = ?)`, so that each walks its
        // index (`links_by_owner`, `links_by_age`) in order and stops at the limit.
        let statement = match access {
            Access::Owner(_) => concat!(
                "SELECT ",
                link_columns!(),
                " FROM links WHERE owner = ?1 AND (created_at, code, domain) < (?2, ?3, ?7)",
                filters!("?8", "?4", "?6", "?10", "?11", "?12", "?13", "?14"),
                " ORDER BY created_at DESC, code DESC, domain DESC LIMIT ?5 OFFSET ?9"
            ),
            Access::All => concat!(
                "SELECT ",
                link_columns!(),
                " FROM links WHERE ?1 IS NULL AND (created_at, code, domain) < (?2, ?3, ?7)",
                filters!("?8", "?4", "?6", "?10", "?11", "?12", "?13", "?14"),
                " ORDER BY created_at DESC, code DESC, domain DESC LIMIT ?5 OFFSET ?9"
            ),
        };
        // Made of this file's literals only: no input reaches the text.
        let statement = ordered(statement, query.order);
        let rows: Vec<LinkRow> = sqlx::query_as(sqlx::AssertSqlSafe(statement))
            .bind(owner_of(&access))
            .bind(created_at)
            .bind(code)
            .bind(&search)
            .bind(limit)
            .bind(tags_json(&query.tags))
            .bind(domain)
            .bind(query.domain.as_ref().map(Domain::as_str))
            .bind(offset)
            .bind(within.any_tag)
            .bind(within.created_from)
            .bind(within.created_to)
            .bind(within.with_visits_left)
            .bind(within.live_at)
            .fetch_all(&self.pool)
            .await
            .map_err(storage_error)?;
        rows.into_iter().map(into_link).collect()
    }

    pub(crate) async fn count_within(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> Result<ListTotals, RepositoryError> {
        let within = Within::of(query)?;
        let statement = concat!(
            "SELECT count(*), COALESCE(sum(visits), 0), COALESCE(sum((SELECT sum(bots) \
             FROM link_days AS day WHERE day.code = links.code AND day.domain = links.domain)), 0) \
             FROM links WHERE (?1 IS NULL OR owner = ?1)",
            filters!("?2", "?3", "?4", "?5", "?6", "?7", "?8", "?9")
        );
        let (links, visits, bots): (i64, i64, i64) = sqlx::query_as(statement)
            .bind(owner_of(&access))
            .bind(query.domain.as_ref().map(Domain::as_str))
            .bind(search(query))
            .bind(tags_json(&query.tags))
            .bind(within.any_tag)
            .bind(within.created_from)
            .bind(within.created_to)
            .bind(within.with_visits_left)
            .bind(within.live_at)
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

/// [`shortener_core::ListWithin`] as the statements' parameters (instants in unix
/// microseconds, as the columns hold them).
struct Within {
    any_tag: bool,
    created_from: Option<i64>,
    created_to: Option<i64>,
    with_visits_left: bool,
    live_at: Option<i64>,
}

impl Within {
    fn of(query: &ListQuery) -> Result<Self, RepositoryError> {
        let within = &query.within;
        Ok(Self {
            any_tag: within.any_tag,
            created_from: within.created_from.map(to_micros).transpose()?,
            created_to: within.created_to.map(to_micros).transpose()?,
            with_visits_left: within.with_visits_left,
            live_at: within.live_at.map(to_micros).transpose()?,
        })
    }
}
