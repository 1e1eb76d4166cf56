//! Conversions between domain values and SQLite column values.

use shortener_core::{
    Domain, Link, OptionColumns, Owner, RepositoryError, ShortCode, Tags, TargetUrl,
};
use time::OffsetDateTime;

/// The columns of `links`, in the order every query selects them (`link_columns!`).
pub(crate) type LinkRow = (
    String,
    String,
    i64,
    Option<i64>,
    Option<i64>,
    i64,
    Option<String>,
    // The options: redirect_status, forward_query, expired_url, title, crawlable.
    Option<i64>,
    Option<bool>,
    Option<String>,
    Option<String>,
    bool,
    // The tags, a JSON array.
    String,
    // The domain, '' for the default one.
    String,
    // The password's hash, NULL when the link is open.
    Option<String>,
    // The redirect rules as JSON, NULL when there are none.
    Option<String>,
);

/// What every query of links selects or returns, in [`LinkRow`]'s order: a macro, so
/// that statements are whole literals (`concat!`), built at compile time.
macro_rules! link_columns {
    () => {
        "code, url, created_at, expires_at, max_visits, visits, owner, \
         redirect_status, forward_query, expired_url, title, crawlable, tags, domain, \
         password_hash, rules"
    };
}
pub(crate) use link_columns;

/// Unix microseconds, rounded down: an instant never moves later when stored.
pub(crate) fn to_micros(at: OffsetDateTime) -> Result<i64, RepositoryError> {
    i64::try_from(at.unix_timestamp_nanos().div_euclid(1000))
        .map_err(|_| RepositoryError::Unexpected(format!("time {at} is out of range").into()))
}

/// A count as SQLite's signed 64-bit integer.
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
        redirect_status: row.7,
        forward_query: row.8,
        expired_url: row.9,
        title: row.10,
        crawlable: row.11,
        password_hash: row.14,
        rules: row.15,
    };
    let (tags, domain) = (row.12, row.13);
    let corrupt = |what: &str, detail: String| {
        RepositoryError::Unexpected(format!("stored link has an invalid {what}: {detail}").into())
    };
    Ok(Link {
        domain: Domain::from_stored(&domain).map_err(|e| corrupt("domain", e.0))?,
        code: ShortCode::try_from(code).map_err(|e| corrupt("code", e.0))?,
        url: TargetUrl::parse(&url).map_err(|e| corrupt("url", e.0))?,
        created_at: from_micros(created_at).map_err(|e| corrupt("created_at", e))?,
        expires_at: expires_at
            .map(from_micros)
            .transpose()
            .map_err(|e| corrupt("expires_at", e))?,
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
        tags: from_json(&tags).map_err(|e| corrupt("tags", e))?,
        options: options
            .try_into()
            .map_err(|e: shortener_core::ParseError| corrupt("option", e.0))?,
    })
}

/// Tags as their column holds them: a JSON array of strings.
pub(crate) fn tags_json(tags: &Tags) -> String {
    // An array of strings always serializes.
    serde_json::to_string(&tags.names().collect::<Vec<_>>()).unwrap_or_else(|_| "[]".to_owned())
}

fn from_json(json: &str) -> Result<Tags, String> {
    let names: Vec<String> = serde_json::from_str(json).map_err(|e| e.to_string())?;
    Tags::parse(names.iter().map(String::as_str)).map_err(|e| e.0)
}

fn from_micros(micros: i64) -> Result<OffsetDateTime, String> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1000).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_down_and_round_trip() {
        let at = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789).unwrap();
        let micros = to_micros(at).unwrap();
        assert_eq!(micros, 1_700_000_000_123_456);
        assert_eq!(
            from_micros(micros).unwrap(),
            OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_000).unwrap()
        );
        // Before 1970, rounding down means away from zero.
        let before_epoch = OffsetDateTime::from_unix_timestamp_nanos(-1_500).unwrap();
        assert_eq!(to_micros(before_epoch).unwrap(), -2);
    }

    #[test]
    fn counts_beyond_i64_are_refused() {
        assert_eq!(to_i64(7, "visits").unwrap(), 7);
        assert!(matches!(
            to_i64(u64::MAX, "max_visits"),
            Err(RepositoryError::Unexpected(message)) if message.starts_with("max_visits")
        ));
    }

    #[test]
    fn corrupt_rows_are_unexpected() {
        let row = (
            "bad code!".to_owned(),
            "https://example.com/".to_owned(),
            0,
            None,
            None,
            0,
            None,
            None,
            None,
            None,
            None,
            false,
            "[]".to_owned(),
            String::new(),
            None,
            None,
        );
        assert!(matches!(
            into_link(row),
            Err(RepositoryError::Unexpected(_))
        ));
    }
}
