//! Kutt's `GET /links/{id}/stats`: the link in Kutt's shape with its visits by people over
//! the last day, week, month and year, and their browsers, operating systems, countries
//! and referrers, read from this service's daily counts.
//!
//! Kutt counts its last day by hour, and this service counts by UTC day: `lastDay` is
//! today (UTC) with its total and breakdowns and no hourly `views` (an empty list), never
//! hours made up. A week and a month are days (today last: `views[6]`, `views[29]`), a
//! year is the twelve calendar months to this one (`views[11]`).

use poem::web::Json;
use poem::{IntoResponse as _, Request, Response, handler};
use serde_json::{Map, Value, json};
use shortener_core::{Dimension, LinkKey, LinkRepository as _, TopQuery, VisitScope};
use time::format_description::well_known::Rfc3339;
use time::{Date, Duration, Month, OffsetDateTime};

use super::links::{link_key, shape};
use crate::api::ApiError;
use crate::auth::Scope;
use crate::compat::{answer, key, state};
use crate::state::AppState;

/// How many values of each breakdown, the most frequent first.
const VALUES: usize = 20;

/// `GET /links/{id}/stats`.
#[handler]
pub(super) async fn read(request: &Request) -> Response {
    answer(
        stats_from(request)
            .await
            .map(|stats| Json(stats).into_response()),
    )
}

async fn stats_from(request: &Request) -> Result<Value, ApiError> {
    let state = state(request)?;
    let key = key(&state, request, Scope::Read)?;
    let link = state
        .visible_link(&link_key(&state, request)?, Some(&key))
        .await?;
    let link_key = link.key();
    let now = OffsetDateTime::now_utc();
    let today = now.date();
    let year_from = months_before(today, 11);
    let days = (state.shortener.repository())
        .visits_by_day(&link_key, year_from, today)
        .await?;
    let visits_on = |day: Date| {
        (days.iter().filter(|row| row.day == day))
            .map(|row| row.visits)
            .sum::<u64>()
    };
    let daily = |count: i64| -> Vec<u64> {
        (0..count)
            .rev()
            .map(|back| visits_on(today - Duration::days(back)))
            .collect()
    };
    let mut monthly = vec![0_u64; 12];
    for row in &days {
        let month_index = |day: Date| i32::from(u8::from(day.month())) + day.year() * 12;
        let at = month_index(row.day) - month_index(year_from);
        if let Some(month) = usize::try_from(at).ok().and_then(|at| monthly.get_mut(at)) {
            *month += row.visits;
        }
    }
    let periods = [
        ("lastDay", today, Vec::new()),
        ("lastWeek", today - Duration::days(6), daily(7)),
        ("lastMonth", today - Duration::days(29), daily(30)),
        ("lastYear", year_from, monthly),
    ];
    let Value::Object(mut body) = shape(&state, state.link_body(link)) else {
        unreachable!("a link's shape is an object")
    };
    for (name, from, views) in periods {
        let total: u64 = (days.iter().filter(|row| row.day >= from))
            .map(|row| row.visits)
            .sum();
        let stats = breakdowns(&state, &link_key, from, today).await?;
        body.insert(
            name.to_owned(),
            json!({"stats": stats, "views": views, "total": total}),
        );
    }
    body.insert(
        "updatedAt".to_owned(),
        json!(now.format(&Rfc3339).unwrap_or_default()),
    );
    Ok(Value::Object(body))
}

/// Kutt's `{browser, os, country, referrer}`, each a list of `{name, value}`, the most
/// frequent first (names in lower case, as Kutt writes them).
async fn breakdowns(
    state: &AppState,
    link_key: &LinkKey,
    from: Date,
    to: Date,
) -> Result<Value, ApiError> {
    let mut stats = Map::new();
    for (name, dimension) in [
        ("browser", Dimension::Browser),
        ("os", Dimension::Os),
        ("country", Dimension::Country),
        ("referrer", Dimension::Referrer),
    ] {
        let query = TopQuery {
            scope: VisitScope::Link(link_key),
            dimension,
            from,
            to,
            limit: VALUES,
        };
        let values = state.shortener.repository().top_values(&query).await?;
        let values = (values.into_iter())
            .map(|count| json!({"name": count.value.to_lowercase(), "value": count.visits}))
            .collect();
        stats.insert(name.to_owned(), Value::Array(values));
    }
    Ok(Value::Object(stats))
}

/// The first day of the month `months` before `day`'s.
fn months_before(day: Date, months: u32) -> Date {
    let (mut year, mut month) = (day.year(), day.month());
    for _ in 0..months {
        if month == Month::January {
            year -= 1;
        }
        month = month.previous();
    }
    Date::from_calendar_date(year, month, 1).unwrap_or(day)
}

#[cfg(test)]
mod tests {
    use time::macros::date;

    use super::*;

    #[test]
    fn a_year_starts_on_the_first_of_the_month_eleven_months_back() {
        assert_eq!(
            months_before(date!(2026 - 12 - 07), 11),
            date!(2026 - 01 - 01)
        );
        assert_eq!(
            months_before(date!(2026 - 03 - 31), 11),
            date!(2025 - 04 - 01)
        );
        assert_eq!(
            months_before(date!(2026 - 01 - 15), 0),
            date!(2026 - 01 - 01)
        );
    }
}
