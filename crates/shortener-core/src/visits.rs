//! Visit counts kept in memory between flushes, so that a redirect writes nothing to the
//! database: per link and UTC day, people and bots apart.

use std::collections::HashMap;
use std::sync::RwLockWriteGuard;

use time::Date;

use crate::domain::ShortCode;
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

type Shard = HashMap<ShortCode, HashMap<Date, Counts>>;

/// Pending visit counts, sharded by code so that concurrent redirects do not serialize
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
    /// Counts one visit of `code` on `day`.
    pub fn add(&self, code: &ShortCode, day: Date, visitor: Visitor) {
        let mut shard = self.shard(code);
        let days = match shard.get_mut(code) {
            Some(days) => days,
            None => shard.entry(code.clone()).or_default(),
        };
        let counts = days.entry(day).or_default();
        match visitor {
            Visitor::Person => counts.visits += 1,
            Visitor::Bot => counts.bots += 1,
        }
    }

    /// Visits by people of `code` counted here and not flushed yet, all days together.
    pub fn pending(&self, code: &ShortCode) -> u64 {
        self.shard(code)
            .get(code)
            .map_or(0, |days| days.values().map(|counts| counts.visits).sum())
    }

    /// Drops the pending counts of `code`: after a delete, so that a link made later with
    /// the same code does not inherit them.
    pub fn forget(&self, code: &ShortCode) {
        self.shard(code).remove(code);
    }

    /// Takes every pending count out of the buffer, sorted by code and day: the order
    /// in which a flush locks rows.
    pub fn drain(&self) -> Vec<VisitTally> {
        let mut all = Vec::new();
        for mut shard in self.shards.each() {
            let drained = std::mem::take(&mut *shard);
            for (code, days) in drained {
                all.extend(days.into_iter().map(|(day, counts)| VisitTally {
                    code: code.clone(),
                    day,
                    visits: counts.visits,
                    bots: counts.bots,
                }));
            }
        }
        all.sort_by(|a, b| (&a.code, a.day).cmp(&(&b.code, b.day)));
        all
    }

    /// Puts counts back after a failed flush, so that none is lost.
    pub fn restore(&self, tallies: Vec<VisitTally>) {
        for tally in tallies {
            let mut shard = self.shard(&tally.code);
            let counts = shard
                .entry(tally.code)
                .or_default()
                .entry(tally.day)
                .or_default();
            counts.visits += tally.visits;
            counts.bots += tally.bots;
        }
    }

    fn shard(&self, code: &ShortCode) -> RwLockWriteGuard<'_, Shard> {
        self.shards.write(code)
    }
}

#[cfg(test)]
mod tests {
    use time::macros::date;

    use super::*;

    #[test]
    fn counts_drain_sorted_and_restore() {
        let buffer = VisitBuffer::default();
        let a = ShortCode::parse("aaa").unwrap();
        let b = ShortCode::parse("bbb").unwrap();
        let (monday, tuesday) = (date!(2026 - 11 - 30), date!(2026 - 12 - 01));
        buffer.add(&b, monday, Visitor::Person);
        buffer.add(&a, tuesday, Visitor::Person);
        buffer.add(&a, monday, Visitor::Bot);
        buffer.add(&a, tuesday, Visitor::Person);
        assert_eq!(buffer.pending(&a), 2);
        let drained = buffer.drain();
        let tally = |code: &ShortCode, day, visits, bots| VisitTally {
            code: code.clone(),
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
