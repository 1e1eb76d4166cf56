//! Conversions between domain values and PostgreSQL column values.

use shortener_core::{
    Domain, Link, OptionColumns, Owner, RepositoryError, ShortCode, Tags, TargetUrl,
};
use time::OffsetDateTime;

/// The columns of `links`, in the order every query selects them (`link_columns!`).
pub(crate) type LinkRow = (
    String,
    String,
    OffsetDateTime,
    Option<OffsetDateTime>,
    Option<i64>,
    i64,
    Option<String>,
    // The options: redirect_status (SMALLINT), forward_query, expired_url, title,
    // crawlable.
    Option<i16>,
    Option<bool>,
    Option<String>,
    Option<String>,
    bool,
    Vec<String>,
    // The domain, '' for the default one.
    String,
    // The password's hash, NULL when the link is open.
    Option<String>,
    // The redirect rules (JSONB, read as text), NULL when there are none.
    Option<String>,
);

/// What every query of links selects or returns, in [`LinkRow`]'s order: a macro, so
/// that statements are whole literals (`concat!`), built at compile time.
macro_rules! link_columns {
    () => {
        "code, url, created_at, expires_at, max_visits, visits, owner, \
         redirect_status, forward_query, expired_url, title, crawlable, tags, domain, \
         password_hash, rules::text"
    };
}
pub(crate) use link_columns;

/// The instant rounded down to whole microseconds, which `TIMESTAMPTZ` keeps exactly
/// (sqlx would round toward 2000-01-01 instead, moving earlier instants later).
pub(crate) fn to_micros(at: OffsetDateTime) -> OffsetDateTime {
    let nanos = at.unix_timestamp_nanos();
    OffsetDateTime::from_unix_timestamp_nanos(nanos - nanos.rem_euclid(1000)).unwrap_or(at)
}

/// A redirect status as its `SMALLINT` column (301 to 308 fit).
pub(crate) fn status_column(options: &OptionColumns) -> Option<i16> {
    options
        .redirect_status
        .and_then(|code| i16::try_from(code).ok())
}

/// Tags as their `TEXT[]` column holds them.
pub(crate) fn tags_column(tags: &Tags) -> Vec<String> {
    tags.names().map(str::to_owned).collect()
}

/// A count as PostgreSQL's `BIGINT`.
pub(crate) fn to_i64(value: u64, what: &str) -> Result<i64, RepositoryError> {
    i64::try_from(value).map_err(|_| {
        RepositoryError::Unexpected(
            format!("{what} {value} does not fit a signed 64-bit integer").into(),
        )
    })
}

pub(crate) fn into_link(row: LinkRow) -> Result<Link, RepositoryError> {
    let (code, url, created_at, expires_at, max_visits, visits, owner) =
        (row.0, row.1, row.2, row.3, row.4, row.5, row.6);
    let options = OptionColumns {
        redirect_status: row.7.map(i64::from),
        forward_query: row.8,
        expired_url: row.9,
        title: row.10,
        crawlable: row.11,
        password_hash: row.14,
        rules: row.15,
    };
    let corrupt = |what: &str, detail: String| {
        RepositoryError::Unexpected(format!("stored link has an invalid {what}: {detail}").into())
    };
    Ok(Link {
        domain: Domain::from_stored(&row.13).map_err(|e| corrupt("domain", e.0))?,
        code: ShortCode::try_from(code).map_err(|e| corrupt("code", e.0))?,
        url: TargetUrl::parse(&url).map_err(|e| corrupt("url", e.0))?,
        created_at,
        expires_at,
        max_visits: max_visits
            .map(u64::try_from)
            .transpose()
            .map_err(|e| corrupt("max_visits", e.to_string()))?,
        visits: u64::try_from(visits).map_err(|e| corrupt("visits", e.to_string()))?,
        owner: owner
            .as_deref()
            .map(Owner::parse)
            .transpose()
            .map_err(|e| corrupt("owner", e.0))?,
        tags: Tags::parse(row.12.iter().map(String::as_str)).map_err(|e| corrupt("tags", e.0))?,
        options: options
            .try_into()
            .map_err(|e: shortener_core::ParseError| corrupt("option", e.0))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_down_to_microseconds() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789).unwrap();
        assert_eq!(
            to_micros(at).unix_timestamp_nanos(),
            1_700_000_000_123_456_000
        );
        let before_epoch = OffsetDateTime::from_unix_timestamp_nanos(-1_500).unwrap();
        assert_eq!(to_micros(before_epoch).unix_timestamp_nanos(), -2_000);
    }

    #[test]
    fn counts_beyond_i64_are_refused() {
        assert_eq!(to_i64(7, "visits").unwrap(), 7);
        assert!(matches!(
            to_i64(u64::MAX, "max_visits"),
            Err(RepositoryError::Unexpected(message)) if message.starts_with("max_visits")
        ));
    }
}
