//! The counts of visit values pending in memory between flushes: [`PendingValues`].
//!
//! Traffic spread over many links leaves each link a few values of a day between two
//! flushes, so a link's counts are one short list of (day, dimension, value, visits): one
//! allocation for the list and one per value. A map per day and a list per dimension
//! reserved far more per link (a map of one day reserves four slots of five lists).
//! See `cargo xtask bench --only links` (RSS per cached link) in docs/BENCHMARKS.md.
//! The flush that bounded the old buffer wrote a row per visit under such traffic.

use time::Date;

use super::drain_links;
use crate::dimensions::{Dimension, DimensionTally, MAX_VALUE_BYTES, OTHER, capped};
use crate::key::LinkKey;
use crate::sharded::{FastMap, Sharded};

/// The visits of one value of one dimension on one day.
#[derive(Debug)]
struct Pending {
    day: Date,
    dimension: Dimension,
    value: Box<str>,
    visits: u64,
}

impl Pending {
    fn of(&self, day: Date, dimension: Dimension) -> bool {
        self.day == day && self.dimension == dimension
    }
}

/// Counts one more visit of `value` when `counts` has it: whether it had.
fn counted(counts: &mut [Pending], day: Date, dimension: Dimension, value: &str) -> bool {
    let same = |count: &&mut Pending| count.of(day, dimension) && *count.value == *value;
    counts
        .iter_mut()
        .find(same)
        .map(|count| count.visits += 1)
        .is_some()
}

/// Pending counts of values, sharded by link like the visit counts.
#[derive(Debug)]
pub(super) struct PendingValues {
    shards: Sharded<FastMap<LinkKey, Vec<Pending>>>,
    top_values: usize,
}

impl PendingValues {
    pub(super) fn new(shards: usize, top_values: usize) -> Self {
        Self {
            shards: Sharded::new(shards),
            top_values,
        }
    }

    pub(super) fn top_values(&self) -> usize {
        self.top_values
    }

    /// See [`super::VisitBuffer::add_values`].
    pub(super) fn add(&self, key: &LinkKey, day: Date, values: &[(Dimension, &str)]) {
        if values.is_empty() {
            return;
        }
        let mut shard = self.shards.write(key);
        let counts = match shard.get_mut(key) {
            Some(counts) => counts,
            None => (shard.entry(key.clone())).or_insert_with(|| Vec::with_capacity(values.len())),
        };
        for &(dimension, value) in values {
            let value = if value.len() > MAX_VALUE_BYTES || value.is_empty() {
                OTHER
            } else {
                value
            };
            if counted(counts, day, dimension, value) {
                continue;
            }
            let (known, has_other) = (counts.iter())
                .filter(|count| count.of(day, dimension))
                .fold((0, false), |(known, other), count| {
                    (known + 1, other || &*count.value == OTHER)
                });
            let kept = capped(
                value,
                false,
                known - usize::from(has_other),
                self.top_values,
            );
            if !counted(counts, day, dimension, kept) {
                counts.push(Pending {
                    day,
                    dimension,
                    value: kept.into(),
                    visits: 1,
                });
            }
        }
    }

    /// The pending counts of at most `links` links, taken out.
    pub(super) fn drain(&self, links: usize) -> Vec<DimensionTally> {
        drain_links(&self.shards, links, |key, counts| {
            counts.into_iter().map(move |count| DimensionTally {
                key: key.clone(),
                day: count.day,
                dimension: count.dimension,
                value: count.value.into(),
                visits: count.visits,
            })
        })
    }

    /// Puts drained counts back (their values were within the cap when counted, and
    /// stay so).
    pub(super) fn restore(&self, tallies: Vec<DimensionTally>) {
        for tally in tallies {
            let mut shard = self.shards.write(&tally.key);
            let counts = shard.entry(tally.key).or_default();
            let same = |count: &&mut Pending| {
                count.of(tally.day, tally.dimension) && *count.value == *tally.value
            };
            match counts.iter_mut().find(same) {
                Some(count) => count.visits += tally.visits,
                None => counts.push(Pending {
                    day: tally.day,
                    dimension: tally.dimension,
                    value: tally.value.into(),
                    visits: tally.visits,
                }),
            }
        }
    }

    pub(super) fn forget(&self, key: &LinkKey) {
        self.shards.write(key).remove(key);
    }

    pub(super) fn links(&self) -> usize {
        self.shards.each().map(|shard| shard.len()).sum()
    }
}
