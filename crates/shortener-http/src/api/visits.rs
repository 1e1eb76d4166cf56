//! Visit statistics: a link's visits per day, and where visits come from (the top values
//! of a dimension) for one link or for every link of the caller.

use std::sync::Arc;

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Enum, Object, OpenApi};
use shortener_core::{Dimension, LinkRepository as _, TopQuery, VisitScope};
use time::{Date, Duration, OffsetDateTime};

use super::auth::ApiKeyAuth;
use super::{ApiError, ApiTags};
use crate::auth::Scope;
use crate::limit::limit_lookup;
use crate::state::AppState;

/// The longest range of days one visits request covers.
pub const MAX_DAYS: i64 = 366;

/// How many values `by` answers with when `limit` is absent.
const DEFAULT_VALUES: u32 = 10;

/// The visits of one UTC day.
#[derive(Object, Debug)]
pub struct DayBody {
    /// The day, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Visits by people.
    pub visits: u64,
    /// Visits by bots (by `User-Agent`), never counted in `visits` or `max_visits`.
    pub bots: u64,
}

/// A value of a dimension and its visits (people and bots) over the range.
#[derive(Object, Debug)]
pub struct ValueBody {
    /// A referring host (`direct` for none), an ISO 3166 country code, a browser or
    /// operating system family, or a device class (`desktop`, `mobile`, `tablet`,
    /// `bot`); `other` sums the values past the top ones kept per link and day.
    pub value: String,
    pub visits: u64,
}

/// A link's visits per day, every day of the range, oldest first; with `by`, its top
/// values of that dimension over the range too.
#[derive(Object, Debug)]
pub struct VisitsBody {
    pub days: Vec<DayBody>,
    #[oai(skip_serializing_if_is_none)]
    pub by: Option<By>,
    /// The most frequent values first.
    #[oai(skip_serializing_if_is_none)]
    pub values: Option<Vec<ValueBody>>,
}

/// The top values of a dimension over the caller's links.
#[derive(Object, Debug)]
pub struct AllVisitsBody {
    /// The first and last day of the range, `YYYY-MM-DD`.
    pub from: String,
    pub to: String,
    pub by: By,
    /// The most frequent values first.
    pub values: Vec<ValueBody>,
}

/// What visits are counted by.
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
#[oai(rename_all = "lowercase")]
pub enum By {
    /// The host of the `Referer`, or `direct`.
    Referrer,
    /// The visitor's country, when the service has an IP database.
    Country,
    /// The browser's family.
    Browser,
    /// The operating system's family.
    Os,
    /// `desktop`, `mobile`, `tablet` or `bot`.
    Device,
    /// For a link with redirect rules: the rule that sent the visit, by its name or its
    /// place (`rules[2]`); `default` when none matched.
    Rule,
    /// For a link with a split: the variant the visit was sent to, as the rule's name or
    /// place and the variant's place (`launch.split[1]`).
    Variant,
}

impl From<By> for Dimension {
    fn from(by: By) -> Self {
        match by {
            By::Referrer => Dimension::Referrer,
            By::Country => Dimension::Country,
            By::Browser => Dimension::Browser,
            By::Os => Dimension::Os,
            By::Device => Dimension::Device,
            By::Rule => Dimension::Rule,
            By::Variant => Dimension::Variant,
        }
    }
}

#[derive(ApiResponse, Debug)]
enum VisitsResponse {
    #[oai(status = 200)]
    Ok(Json<VisitsBody>),
}

#[derive(ApiResponse, Debug)]
enum AllVisitsResponse {
    #[oai(status = 200)]
    Ok(Json<AllVisitsBody>),
}

/// Visit statistics.
#[derive(Debug, Default)]
pub struct Visits;

#[OpenApi]
impl Visits {
    /// Visits of a link per UTC day (scope `read`), people and bots apart, from the
    /// visit flush (at most a second behind). Days without visits are listed with 0.
    /// With `by`, also the link's most frequent referrers, countries, browsers,
    /// operating systems or devices over the range.
    #[oai(
        path = "/api/v1/links/:code/visits",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "linkVisits",
        transform = "limit_lookup"
    )]
    // Each query parameter is an argument of the operation, as poem-openapi takes them.
    #[allow(clippy::too_many_arguments)]
    async fn link_visits(
        &self,
        state: Data<&Arc<AppState>>,
        #[oai(validator(pattern = r"^[A-Za-z0-9_-]{1,64}$"))] code: Path<String>,
        /// The link's domain, by its host; the default domain when absent.
        #[oai(validator(
            max_length = 259,
            pattern = r"^[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?$"
        ))]
        domain: Query<Option<String>>,
        key: ApiKeyAuth,
        /// The first day, `YYYY-MM-DD` (default: 29 days before `to`).
        #[oai(validator(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
        from: Query<Option<String>>,
        /// The last day, `YYYY-MM-DD` (default: today, UTC).
        #[oai(validator(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
        to: Query<Option<String>>,
        /// A dimension whose top values to add.
        by: Query<Option<By>>,
        /// How many values of `by`, 1 to 100 (default 10).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
    ) -> Result<VisitsResponse, ApiError> {
        let key = key.require(Scope::Read)?;
        let link_key = state.link_key(&code, domain.0.as_deref())?;
        let (from, to) = range(from.0.as_deref(), to.0.as_deref())?;
        // The link as found (a case-insensitive alias may differ from the path's code).
        let link = state.visible_link(&link_key, Some(key)).await?;
        let link_key = link.key();
        let repository = state.shortener.repository();
        let mut stored = repository.visits_by_day(&link_key, from, to).await?;
        stored.sort_by_key(|row| row.day);
        let mut days = Vec::new();
        let mut day = from;
        let mut stored = stored.into_iter().peekable();
        loop {
            let (visits, bots) = match stored.next_if(|row| row.day == day) {
                Some(row) => (row.visits, row.bots),
                None => (0, 0),
            };
            days.push(DayBody {
                date: day.to_string(),
                visits,
                bots,
            });
            match day.next_day() {
                Some(next) if next <= to => day = next,
                _ => break,
            }
        }
        let values = match by.0 {
            Some(by) => {
                let scope = VisitScope::Link(&link_key);
                Some(top_values(&state, scope, by, (from, to), limit.0).await?)
            }
            None => None,
        };
        Ok(VisitsResponse::Ok(Json(VisitsBody {
            days,
            by: by.0,
            values,
        })))
    }

    /// The most frequent referrers, countries, browsers, operating systems or devices of
    /// the visits of every link of the caller's key (scope `read`; every link with
    /// `admin`), or of those with every `tag` given, over a range of UTC days.
    #[oai(
        path = "/api/v1/visits",
        method = "get",
        tag = "ApiTags::Links",
        operation_id = "allVisits",
        transform = "limit_lookup"
    )]
    // Each query parameter is an argument of the operation, as poem-openapi takes them.
    #[allow(clippy::too_many_arguments)]
    async fn all_visits(
        &self,
        state: Data<&Arc<AppState>>,
        key: ApiKeyAuth,
        /// The dimension to count by.
        by: Query<By>,
        /// The first day, `YYYY-MM-DD` (default: 29 days before `to`).
        #[oai(validator(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
        from: Query<Option<String>>,
        /// The last day, `YYYY-MM-DD` (default: today, UTC).
        #[oai(validator(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
        to: Query<Option<String>>,
        /// How many values, 1 to 100 (default 10).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
        /// Only links that have this tag (repeat: every one), case ignored.
        #[oai(validator(max_items = 10))]
        tag: Query<Vec<String>>,
    ) -> Result<AllVisitsResponse, ApiError> {
        let key = key.require(Scope::Read)?;
        let (from, to) = range(from.0.as_deref(), to.0.as_deref())?;
        let tags = shortener_core::Tags::parse(tag.0.iter().map(String::as_str)).map_err(|_| {
            ApiError::bad_request("tag", "each is 1 to 50 characters, without control characters, commas, quotes or backslashes")
        })?;
        let scope = VisitScope::Within(key.access(), &tags);
        let values = top_values(&state, scope, by.0, (from, to), limit.0).await?;
        Ok(AllVisitsResponse::Ok(Json(AllVisitsBody {
            from: from.to_string(),
            to: to.to_string(),
            by: by.0,
            values,
        })))
    }
}

async fn top_values(
    state: &AppState,
    scope: VisitScope<'_>,
    by: By,
    (from, to): (Date, Date),
    limit: Option<u32>,
) -> Result<Vec<ValueBody>, ApiError> {
    let query = TopQuery {
        scope,
        dimension: by.into(),
        from,
        to,
        limit: limit.unwrap_or(DEFAULT_VALUES) as usize,
    };
    let values = state.shortener.repository().top_values(&query).await?;
    Ok((values.into_iter())
        .map(|count| ValueBody {
            value: count.value,
            visits: count.visits,
        })
        .collect())
}

/// The days of `from` and `to` (`YYYY-MM-DD`): by default the 30 days to today (UTC),
/// at most [`MAX_DAYS`].
fn range(from: Option<&str>, to: Option<&str>) -> Result<(Date, Date), ApiError> {
    let to = match to {
        Some(raw) => parse_day("to", raw)?,
        None => OffsetDateTime::now_utc().date(),
    };
    let from = match from {
        Some(raw) => parse_day("from", raw)?,
        None => to.saturating_sub(Duration::days(29)),
    };
    if from > to {
        return Err(ApiError::bad_request("from", "must not be after `to`"));
    }
    if (to - from).whole_days() >= MAX_DAYS {
        return Err(ApiError::bad_request(
            "from",
            format!("the range covers at most {MAX_DAYS} days"),
        ));
    }
    Ok((from, to))
}

fn parse_day(field: &str, raw: &str) -> Result<Date, ApiError> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(raw, format)
        .map_err(|_| ApiError::bad_request(field, "must be a date such as 2026-12-01"))
}
