//! Visit counts kept in memory between flushes, so that a redirect writes nothing to the
//! database: per link and UTC day, people and bots apart, and the visits of each value of
//! each [`Dimension`] (at most `top_values` values per link, day and dimension; the rest
//! count as [`OTHER`](crate::dimensions::OTHER)).

use std::sync::RwLockWriteGuard;

use time::Date;

mod values;

use crate::dimensions::{Dimension, DimensionTally};
use crate::key::LinkKey;
use crate::manage::VisitTally;
use crate::sharded::{FastMap, Sharded};
use values::PendingValues;

const SHARDS: usize = 16;

/// Who made a visit, as far as its User-Agent tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visitor {
    Person,
    Bot,
}

/// People and bots of one link on one day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    visits: u64,
    bots: u64,
}

/// A link's counts by day, in a list: between two flushes a link has one day, rarely
/// two, and a map of one day reserves four.
type Shard = FastMap<LinkKey, Vec<(Date, Counts)>>;

/// The counts of `day` in `days`, added when missing.
fn on(days: &mut Vec<(Date, Counts)>, day: Date) -> &mut Counts {
    match days.iter().position(|(known, _)| *known == day) {
        Some(at) => &mut days[at].1,
        None => {
            days.push((day, Counts::default()));
            &mut days.last_mut().expect("just pushed").1
        }
    }
}

/// How many values per link, day and dimension are kept by default.
pub const DEFAULT_TOP_VALUES: usize = 50;

/// Pending visit counts, sharded by link so that concurrent redirects do not serialize
/// on one lock.
#[derive(Debug)]
pub struct VisitBuffer {
    shards: Sharded<Shard>,
    values: PendingValues,
}

impl Default for VisitBuffer {
    fn default() -> Self {
        Self::new(DEFAULT_TOP_VALUES)
    }
}

impl VisitBuffer {
    /// A buffer that keeps at most `top_values` values per link, day and dimension.
    pub fn new(top_values: usize) -> Self {
        Self {
            shards: Sharded::new(SHARDS),
            values: PendingValues::new(SHARDS, top_values),
        }
    }

    /// The most values kept per link, day and dimension.
    pub fn top_values(&self) -> usize {
        self.values.top_values()
    }

    /// Counts one visit of `key` on `day` under each of its `values` (a dimension at most
    /// once). A value not seen yet for the link, day and dimension counts as `other`
    /// once `top_values` values are; so does a value longer than
    /// [`MAX_VALUE_BYTES`](crate::dimensions::MAX_VALUE_BYTES).
    /// Allocates only for a link or a value it has not seen that day.
    pub fn add_values(&self, key: &LinkKey, day: Date, values: &[(Dimension, &str)]) {
        self.values.add(key, day, values);
    }

    /// Takes the pending counts of values of at most `links` links out of the buffer.
    pub fn drain_values(&self, links: usize) -> Vec<DimensionTally> {
        self.values.drain(links)
    }

    /// Puts counts of values back after a failed flush, so that none is lost (their values
    /// were within the cap when counted, and stay so).
    pub fn restore_values(&self, tallies: Vec<DimensionTally>) {
        self.values.restore(tallies);
    }

    /// Counts one visit of `key` on `day`.
    pub fn add(&self, key: &LinkKey, day: Date, visitor: Visitor) {
        let mut shard = self.shard(key);
        let days = match shard.get_mut(key) {
            Some(days) => days,
            None => shard
                .entry(key.clone())
                .or_insert_with(|| Vec::with_capacity(1)),
        };
        let counts = on(days, day);
        match visitor {
            Visitor::Person => counts.visits += 1,
            Visitor::Bot => counts.bots += 1,
        }
    }

    /// Visits by people of `key` counted here and not flushed yet, all days together.
    pub fn pending(&self, key: &LinkKey) -> u64 {
        self.shard(key)
            .get(key)
            .map_or(0, |days| days.iter().map(|(_, counts)| counts.visits).sum())
    }

    /// Drops the pending counts of `key`: after a delete, so that a link made later with
    /// the same code does not inherit them.
    pub fn forget(&self, key: &LinkKey) {
        self.shard(key).remove(key);
        self.values.forget(key);
    }

    /// Takes the pending counts of at most `links` links out of the buffer, sorted by key
    /// (domain, then code) and day: the order in which a flush locks rows.
    pub fn drain(&self, links: usize) -> Vec<VisitTally> {
        let mut all = drain_links(&self.shards, links, |key, days| {
            // The key moves into the last day's tally: a link has one day but around
            // midnight, and a clone is an allocation per link and flush.
            let last = days.len().saturating_sub(1);
            let mut key = Some(key);
            days.into_iter()
                .enumerate()
                .map(move |(at, (day, counts))| {
                    let key = if at == last { key.take() } else { key.clone() };
                    VisitTally {
                        key: key.expect("moved out at the last day only"),
                        day,
                        visits: counts.visits,
                        bots: counts.bots,
                    }
                })
        });
        // Unstable: no two tallies share a key and day, so the order is the same, without
        // the stable sort's scratch buffer (the sort was most of a flush's own time).
        all.sort_unstable_by(|a, b| (&a.key, a.day).cmp(&(&b.key, b.day)));
        all
    }

    /// Puts counts back after a failed flush, so that none is lost.
    pub fn restore(&self, tallies: Vec<VisitTally>) {
        for tally in tallies {
            let mut shard = self.shard(&tally.key);
            let counts = on(shard.entry(tally.key).or_default(), tally.day);
            counts.visits += tally.visits;
            counts.bots += tally.bots;
        }
    }

    /// How many links have visits pending.
    pub fn pending_links(&self) -> usize {
        self.shards.each().map(|shard| shard.len()).sum()
    }

    /// How many links have counts of values pending.
    pub fn pending_value_links(&self) -> usize {
        self.values.links()
    }

    fn shard(&self, key: &LinkKey) -> RwLockWriteGuard<'_, Shard> {
        self.shards.write(key)
    }
}

/// Most links a shard keeps room for once drained: enough that steady traffic does not
/// grow its map again after every flush, few enough that a burst over a million links
/// does not hold its memory until the process ends.
const KEPT_CAPACITY: usize = 1024;

/// Takes whole links out of `shards`, at most `links` of them, shard by shard, and turns
/// each link's pending counts into its tallies.
fn drain_links<V, I: IntoIterator>(
    shards: &Sharded<FastMap<LinkKey, V>>,
    links: usize,
    mut tallies: impl FnMut(LinkKey, V) -> I,
) -> Vec<I::Item> {
    let mut all = Vec::new();
    let mut left = links;
    for mut shard in shards.each() {
        if left == 0 {
            break;
        }
        for (key, pending) in take_some(&mut shard, &mut left) {
            all.extend(tallies(key, pending));
        }
    }
    all
}

/// Takes the entries of at most `left` links out of `shard`, and counts them off `left`.
fn take_some<V>(shard: &mut FastMap<LinkKey, V>, left: &mut usize) -> Vec<(LinkKey, V)> {
    let taken: Vec<(LinkKey, V)> = if shard.len() <= *left {
        let all = shard.drain().collect();
        shard.shrink_to(KEPT_CAPACITY);
        all
    } else {
        // Part of a shard that is still in use: its room stays as it is.
        let keys: Vec<LinkKey> = shard.keys().take(*left).cloned().collect();
        let remove = |key: LinkKey| shard.remove(&key).map(|value| (key, value));
        keys.into_iter().filter_map(remove).collect()
    };
    *left -= taken.len();
    taken
}

#[cfg(test)]
mod tests {
    use time::macros::date;

    use super::*;
    use crate::ShortCode;
    use crate::dimensions::OTHER;

    #[test]
    fn counts_drain_sorted_and_restore() {
        let buffer = VisitBuffer::default();
        let a = LinkKey::on_default(ShortCode::parse("aaa").unwrap());
        let b = LinkKey::on_default(ShortCode::parse("bbb").unwrap());
        let (monday, tuesday) = (date!(2026 - 11 - 30), date!(2026 - 12 - 01));
        buffer.add(&b, monday, Visitor::Person);
        buffer.add(&a, tuesday, Visitor::Person);
        buffer.add(&a, monday, Visitor::Bot);
        buffer.add(&a, tuesday, Visitor::Person);
        assert_eq!(buffer.pending(&a), 2);
        let drained = buffer.drain(usize::MAX);
        let tally = |key: &LinkKey, day, visits, bots| VisitTally {
            key: key.clone(),
            day,
            visits,
            bots,
        };
        assert_eq!(
            drained,
            vec![
                tally(&a, monday, 0, 1),
                tally(&a, tuesday, 2, 0),
                tally(&b, monday, 1, 0),
            ]
        );
        assert_eq!(buffer.pending(&a), 0);
        buffer.add(&a, tuesday, Visitor::Person);
        buffer.restore(drained);
        assert_eq!(buffer.pending(&a), 3);
        assert_eq!(buffer.drain(usize::MAX)[1], tally(&a, tuesday, 3, 0));
        buffer.add(&a, tuesday, Visitor::Person);
        buffer.add(&b, tuesday, Visitor::Person);
        buffer.forget(&a);
        assert_eq!(buffer.pending(&a), 0);
        assert_eq!(buffer.drain(usize::MAX), vec![tally(&b, tuesday, 1, 0)]);
    }

    /// A drain takes whole links (every day of each), at most as many as asked, until
    /// none is left; each link's counts come out once.
    #[test]
    fn drains_whole_links_in_batches() {
        let buffer = VisitBuffer::default();
        let (monday, tuesday) = (date!(2026 - 11 - 30), date!(2026 - 12 - 01));
        for i in 0..2500 {
            let key = LinkKey::on_default(ShortCode::parse(&format!("c{i}")).unwrap());
            buffer.add(&key, monday, Visitor::Person);
            buffer.add(&key, tuesday, Visitor::Bot);
            buffer.add_values(&key, monday, &[(Dimension::Device, "mobile")]);
        }
        assert_eq!(buffer.pending_links(), 2500);
        let batch = || Some(buffer.drain(1000)).filter(|batch| !batch.is_empty());
        let batches: Vec<Vec<VisitTally>> = std::iter::from_fn(batch).collect();
        let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
        assert_eq!(
            sizes,
            [2000, 2000, 1000],
            "two days of 1000, 1000 and 500 links"
        );
        let mut keys: Vec<&LinkKey> = batches.iter().flatten().map(|tally| &tally.key).collect();
        keys.dedup();
        assert_eq!(keys.len(), 2500, "no link is split across batches");
        assert_eq!(buffer.pending_links(), 0);
        assert_eq!(buffer.pending_value_links(), 2500);
        let values: Vec<usize> = (0..4).map(|_| buffer.drain_values(1000).len()).collect();
        assert_eq!(values, [1000, 1000, 500, 0]);
    }

    fn sorted(mut tallies: Vec<DimensionTally>) -> Vec<(Dimension, String, u64)> {
        tallies.sort_by(|a, b| (a.dimension, &a.value).cmp(&(b.dimension, &b.value)));
        (tallies.into_iter())
            .map(|tally| (tally.dimension, tally.value, tally.visits))
            .collect()
    }

    #[test]
    fn values_are_counted_up_to_the_cap_then_as_other() {
        let buffer = VisitBuffer::new(2);
        let a = LinkKey::on_default(ShortCode::parse("aaa").unwrap());
        let day = date!(2026 - 12 - 04);
        for referrer in [
            "x.example",
            "y.example",
            "x.example",
            "z.example",
            "w.example",
        ] {
            buffer.add_values(
                &a,
                day,
                &[
                    (Dimension::Referrer, referrer),
                    (Dimension::Device, "mobile"),
                ],
            );
        }
        buffer.add_values(&a, day, &[(Dimension::Referrer, &"h".repeat(300))]);
        let drained = buffer.drain_values(usize::MAX);
        assert_eq!(
            sorted(drained.clone()),
            [
                (Dimension::Referrer, "other".to_owned(), 3),
                (Dimension::Referrer, "x.example".to_owned(), 2),
                (Dimension::Referrer, "y.example".to_owned(), 1),
                (Dimension::Device, "mobile".to_owned(), 5),
            ]
        );
        assert!(buffer.drain_values(usize::MAX).is_empty());
        buffer.restore_values(drained.clone());
        buffer.add_values(&a, day, &[(Dimension::Device, "mobile")]);
        let again = sorted(buffer.drain_values(usize::MAX));
        assert_eq!(again[3], (Dimension::Device, "mobile".to_owned(), 6));
        buffer.add_values(&a, day, &[(Dimension::Os, "iOS")]);
        buffer.forget(&a);
        assert!(buffer.drain_values(usize::MAX).is_empty());
    }

    /// However many distinct values arrive, the buffer holds at most `top_values + 1`
    /// of them per link, day and dimension.
    #[test]
    fn a_flood_of_distinct_values_holds_top_values_and_other() {
        let buffer = VisitBuffer::new(DEFAULT_TOP_VALUES);
        let a = LinkKey::on_default(ShortCode::parse("aaa").unwrap());
        let day = date!(2026 - 12 - 04);
        for n in 0..100_000 {
            let referrer = format!("host-{n}.example");
            buffer.add_values(&a, day, &[(Dimension::Referrer, &referrer)]);
        }
        let drained = buffer.drain_values(usize::MAX);
        assert_eq!(drained.len(), DEFAULT_TOP_VALUES + 1);
        assert_eq!(
            drained.iter().map(|tally| tally.visits).sum::<u64>(),
            100_000
        );
        let other = drained.iter().find(|tally| tally.value == OTHER).unwrap();
        assert_eq!(other.visits, 100_000 - DEFAULT_TOP_VALUES as u64);
    }
}
