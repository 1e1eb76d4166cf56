//! Visit counts kept in memory between flushes, so that a redirect writes nothing to the
//! database: per link and UTC day, people and bots apart.

use std::collections::HashMap;
use std::sync::RwLockWriteGuard;

use time::Date;

use crate::key::LinkKey;
use crate::manage::VisitTally;
use crate::sharded::Sharded;

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

type Shard = HashMap<LinkKey, HashMap<Date, Counts>>;

/// Pending visit counts, sharded by link so that concurrent redirects do not serialize
/// on one lock.
#[derive(Debug)]
pub struct VisitBuffer {
    shards: Sharded<Shard>,
}

impl Default for VisitBuffer {
    fn default() -> Self {
        Self {
            shards: Sharded::new(SHARDS),
        }
    }
}

impl VisitBuffer {
    /// Counts one visit of `key` on `day`.
    pub fn add(&self, key: &LinkKey, day: Date, visitor: Visitor) {
        let mut shard = self.shard(key);
        let days = match shard.get_mut(key) {
            Some(days) => days,
            None => shard.entry(key.clone()).or_default(),
        };
        let counts = days.entry(day).or_default();
        match visitor {
            Visitor::Person => counts.visits += 1,
            Visitor::Bot => counts.bots += 1,
        }
    }

    /// Visits by people of `key` counted here and not flushed yet, all days together.
    pub fn pending(&self, key: &LinkKey) -> u64 {
        self.shard(key)
            .get(key)
            .map_or(0, |days| days.values().map(|counts| counts.visits).sum())
    }

    /// Drops the pending counts of `key`: after a delete, so that a link made later with
    /// the same code does not inherit them.
    pub fn forget(&self, key: &LinkKey) {
        self.shard(key).remove(key);
    }

    /// Takes every pending count out of the buffer, sorted by key (domain, then code) and
    /// day: the order in which a flush locks rows.
    pub fn drain(&self) -> Vec<VisitTally> {
        let mut all = Vec::new();
        for mut shard in self.shards.each() {
            let drained = std::mem::take(&mut *shard);
            for (key, days) in drained {
                all.extend(days.into_iter().map(|(day, counts)| VisitTally {
                    key: key.clone(),
                    day,
                    visits: counts.visits,
                    bots: counts.bots,
                }));
            }
        }
        all.sort_by(|a, b| (&a.key, a.day).cmp(&(&b.key, b.day)));
        all
    }

    /// Puts counts back after a failed flush, so that none is lost.
    pub fn restore(&self, tallies: Vec<VisitTally>) {
        for tally in tallies {
            let mut shard = self.shard(&tally.key);
            let counts = shard
                .entry(tally.key)
                .or_default()
                .entry(tally.day)
                .or_default();
            counts.visits += tally.visits;
            counts.bots += tally.bots;
        }
    }

    fn shard(&self, key: &LinkKey) -> RwLockWriteGuard<'_, Shard> {
        self.shards.write(key)
    }
}

#[cfg(test)]
mod tests {
    use time::macros::date;

    use super::*;
    use crate::ShortCode;

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
        let drained = buffer.drain();
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
        assert_eq!(buffer.drain()[1], tally(&a, tuesday, 3, 0));
        buffer.add(&a, tuesday, Visitor::Person);
        buffer.add(&b, tuesday, Visitor::Person);
        buffer.forget(&a);
        assert_eq!(buffer.pending(&a), 0);
        assert_eq!(buffer.drain(), vec![tally(&b, tuesday, 1, 0)]);
    }
}
