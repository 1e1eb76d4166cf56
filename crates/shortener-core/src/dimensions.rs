//! Where visits come from, counted without storing anyone: per link, UTC day and
//! [`Dimension`], a count per value (a referring host, a country code, a browser family,
//! an operating system family, a device class, the redirect rule and split variant that
//! sent it), never a row per visit.
//!
//! What a visit's values are is the server's business (its `Referer`, its address, its
//! `User-Agent`); here they are plain text, already reduced to what may be kept. The
//! number of values per link, day and dimension is bounded by the service's
//! `top_values`: past it, a new value counts as [`OTHER`], in memory and in storage
//! alike, so a flood of distinct referrers grows neither.

use std::collections::{HashMap, HashSet};
use std::fmt;

use time::Date;

use crate::key::LinkKey;
use crate::manage::Access;
use crate::tags::Tags;

/// What a visit is counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dimension {
    /// The host of the `Referer`, or [`DIRECT`].
    Referrer,
    /// The ISO 3166-1 alpha-2 code of the visitor's country.
    Country,
    /// The browser's family (`Chrome`, `Firefox`, ...).
    Browser,
    /// The operating system's family (`Windows`, `iOS`, ...).
    Os,
    /// `desktop`, `mobile`, `tablet` or `bot`.
    Device,
    /// The redirect rule that sent the visit: its name, or its place (`rules[2]`), or
    /// `default` when none matched; counted for links with rules only.
    Rule,
    /// The variant of a split that the visit was sent to (`launch.split[1]`).
    Variant,
}

/// The value that every value past a link's top values of a day counts as.
pub const OTHER: &str = "other";

/// The referrer of a visit that names none.
pub const DIRECT: &str = "direct";

/// The longest value kept, in bytes (a host name is at most 253).
pub const MAX_VALUE_BYTES: usize = 253;

impl Dimension {
    pub const ALL: [Dimension; 7] = [
        Dimension::Referrer,
        Dimension::Country,
        Dimension::Browser,
        Dimension::Os,
        Dimension::Device,
        Dimension::Rule,
        Dimension::Variant,
    ];

    /// The name of the dimension in the API and in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Referrer => "referrer",
            Self::Country => "country",
            Self::Browser => "browser",
            Self::Os => "os",
            Self::Device => "device",
            Self::Rule => "rule",
            Self::Variant => "variant",
        }
    }

    /// The dimension of a name; `None` for any other text.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|dimension| dimension.as_str() == name)
    }

    /// The position of the dimension in [`Self::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Dimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The visits of one link on one day that had one value of one dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionTally {
    pub key: LinkKey,
    pub day: Date,
    pub dimension: Dimension,
    pub value: String,
    pub visits: u64,
}

/// Which links a question about top values covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VisitScope<'a> {
    /// One link.
    Link(&'a LinkKey),
    /// Every link within reach (an owner's, or all of them) that has every one of the
    /// tags (none: every link).
    Within(Access<'a>, &'a Tags),
}

/// The most frequent values of a dimension over a range of days.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopQuery<'a> {
    pub scope: VisitScope<'a>,
    pub dimension: Dimension,
    /// The first and last day, both included.
    pub from: Date,
    pub to: Date,
    /// How many values at most, the most frequent first.
    pub limit: usize,
}

/// A value and its visits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueCount {
    pub value: String,
    pub visits: u64,
}

/// The values already stored for each (link, day, dimension), as an adapter reads them
/// before it writes a flush.
pub type StoredValues = HashMap<(LinkKey, Date, Dimension), HashSet<String>>;

/// Where each count of a flush goes: to its own value when storage has it for the link,
/// day and dimension, or has fewer than `top_values` values there (taking one of the
/// free places, in the order of `tallies`), else to [`OTHER`]. The rows to add, summed by
/// (link, day, dimension, value) and in that order, which is also the order an adapter
/// locks them in.
///
/// A flush holds thousands of (link, day, dimension) groups of a few values each, most of
/// them new to storage: each group is placed on its own with a short list of the values
/// it placed, so beyond the rows it returns only a list of references to the tallies is
/// allocated (and a key per group found in `stored`).
pub fn placed(
    tallies: &[DimensionTally],
    stored: StoredValues,
    top_values: usize,
) -> Vec<DimensionTally> {
    fn group_of(tally: &DimensionTally) -> (&LinkKey, Date, Dimension) {
        (&tally.key, tally.day, tally.dimension)
    }
    let mut order: Vec<&DimensionTally> = tallies.iter().collect();
    // Stable: within a group, values keep their order for the free places.
    order.sort_by(|a, b| group_of(a).cmp(&group_of(b)));
    let mut rows = Vec::with_capacity(tallies.len());
    let empty = HashSet::new();
    // (value, visits) of the group being placed; values new to storage, without `other`.
    let (mut sums, mut new): (Vec<(&str, u64)>, Vec<&str>) = (Vec::new(), Vec::new());
    for group in order.chunk_by(|a, b| group_of(a) == group_of(b)) {
        let first = group[0];
        let known = match stored.is_empty() {
            true => &empty,
            false => {
                (stored.get(&(first.key.clone(), first.day, first.dimension))).unwrap_or(&empty)
            }
        };
        let counted = known.len() - usize::from(known.contains(OTHER));
        sums.clear();
        new.clear();
        for tally in group {
            let value = tally.value.as_str();
            let is_known = known.contains(value) || new.contains(&value);
            let value = capped(value, is_known, counted + new.len(), top_values);
            if !is_known && value != OTHER {
                new.push(value);
            }
            match sums.iter_mut().find(|(placed, _)| *placed == value) {
                Some((_, visits)) => *visits += tally.visits,
                None => sums.push((value, tally.visits)),
            }
        }
        sums.sort_unstable();
        rows.extend(sums.iter().map(|&(value, visits)| DimensionTally {
            key: first.key.clone(),
            day: first.day,
            dimension: first.dimension,
            value: value.to_owned(),
            visits,
        }));
    }
    rows
}

/// Sums `counts` by value and keeps the `limit` largest, by visits descending then value
/// ascending (the order every adapter answers in).
pub fn top(counts: impl IntoIterator<Item = (String, u64)>, limit: usize) -> Vec<ValueCount> {
    let mut sums: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for (value, visits) in counts {
        *sums.entry(value).or_default() += visits;
    }
    let mut values: Vec<ValueCount> = (sums.into_iter())
        .map(|(value, visits)| ValueCount { value, visits })
        .collect();
    values.sort_by(|a, b| b.visits.cmp(&a.visits).then_with(|| a.value.cmp(&b.value)));
    values.truncate(limit);
    values
}

/// The value a count stores for `value`: itself if it is one of the `known` values of
/// its link, day and dimension, or if fewer than `top_values` are known; else [`OTHER`].
/// `known` does not count [`OTHER`] itself.
pub fn capped(value: &str, is_known: bool, known: usize, top_values: usize) -> &str {
    if value == OTHER || is_known || known < top_values {
        value
    } else {
        OTHER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_round_trip_their_names() {
        for dimension in Dimension::ALL {
            assert_eq!(Dimension::parse(dimension.as_str()), Some(dimension));
            assert_eq!(Dimension::ALL[dimension.index()], dimension);
        }
        assert_eq!(Dimension::parse("Referrer"), None);
        assert_eq!(Dimension::parse(""), None);
    }

    #[test]
    fn top_sums_and_orders_by_visits_then_value() {
        let counts = [("b", 2), ("a", 2), ("c", 5), ("b", 1)]
            .map(|(value, visits)| (value.to_owned(), visits));
        let values: Vec<(String, u64)> = top(counts, 2)
            .into_iter()
            .map(|count| (count.value, count.visits))
            .collect();
        assert_eq!(values, [("c".to_owned(), 5), ("b".to_owned(), 3)]);
    }

    #[test]
    fn a_flush_takes_the_free_places_and_sends_the_rest_to_other() {
        let key = LinkKey::on_default(crate::ShortCode::parse("abc").unwrap());
        let day = time::macros::date!(2026 - 12 - 04);
        let tally = |value: &str, visits| DimensionTally {
            key: key.clone(),
            day,
            dimension: Dimension::Referrer,
            value: value.to_owned(),
            visits,
        };
        let stored = StoredValues::from([(
            (key.clone(), day, Dimension::Referrer),
            HashSet::from(["a".to_owned(), OTHER.to_owned()]),
        )]);
        let rows = placed(
            &[
                tally("b", 1),
                tally("c", 2),
                tally("a", 3),
                tally("b", 4),
                tally(OTHER, 5),
            ],
            stored,
            2,
        );
        let rows: Vec<(&str, u64)> = (rows.iter())
            .map(|row| (row.value.as_str(), row.visits))
            .collect();
        assert_eq!(rows, [("a", 3), ("b", 5), ("other", 7)]);
    }

    #[test]
    fn values_past_the_cap_are_other() {
        assert_eq!(capped("new", false, 49, 50), "new");
        assert_eq!(capped("new", false, 50, 50), OTHER);
        assert_eq!(capped("old", true, 50, 50), "old");
        assert_eq!(capped(OTHER, false, 50, 50), OTHER);
    }
}
