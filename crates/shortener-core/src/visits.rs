//! Visit counts kept in memory between flushes, so that a redirect of a link without
//! `max_visits` writes nothing to the database.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, PoisonError};

use crate::domain::ShortCode;

const SHARDS: usize = 16;

/// Pending visit counts, sharded so that concurrent redirects do not serialize on one lock.
#[derive(Debug)]
pub struct VisitBuffer {
    hasher: RandomState,
    shards: Vec<Mutex<HashMap<ShortCode, u64>>>,
}

impl Default for VisitBuffer {
    fn default() -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl VisitBuffer {
    /// Adds `count` visits of `code`.
    pub fn add(&self, code: &ShortCode, count: u64) {
        let mut shard = self.shard(code);
        match shard.get_mut(code) {
            Some(pending) => *pending += count,
            None => {
                shard.insert(code.clone(), count);
            }
        }
    }

    /// Visits of `code` counted here and not flushed yet.
    pub fn pending(&self, code: &ShortCode) -> u64 {
        self.shard(code).get(code).copied().unwrap_or(0)
    }

    /// Takes every pending count out of the buffer.
    pub fn drain(&self) -> Vec<(ShortCode, u64)> {
        let mut all = Vec::new();
        for shard in &self.shards {
            all.extend(shard.lock().unwrap_or_else(PoisonError::into_inner).drain());
        }
        all
    }

    /// Puts counts back after a failed flush, so that none is lost.
    pub fn restore(&self, visits: Vec<(ShortCode, u64)>) {
        for (code, count) in visits {
            self.add(&code, count);
        }
    }

    fn shard(&self, code: &ShortCode) -> std::sync::MutexGuard<'_, HashMap<ShortCode, u64>> {
        let index = (self.hasher.hash_one(code) as usize) % SHARDS;
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_drain_and_restore() {
        let buffer = VisitBuffer::default();
        let a = ShortCode::parse("aaa").unwrap();
        let b = ShortCode::parse("bbb").unwrap();
        buffer.add(&a, 1);
        buffer.add(&a, 2);
        buffer.add(&b, 1);
        assert_eq!(buffer.pending(&a), 3);
        let mut drained = buffer.drain();
        drained.sort();
        assert_eq!(drained, vec![(a.clone(), 3), (b.clone(), 1)]);
        assert_eq!(buffer.pending(&a), 0);
        buffer.add(&a, 1);
        buffer.restore(drained);
        assert_eq!(buffer.pending(&a), 4);
    }
}
