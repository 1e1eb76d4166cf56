//! [`Sharded`]: a value split over a fixed number of locks chosen by a key's hash, so
//! that callers working on different keys rarely wait for each other. The one shard map
//! of the workspace: the visit buffer, the limiters' states per bucket (the refusal cache's
//! and the Redis limiter's leases, `limiter::per_bucket`), the memory limiter and the
//! memory repository are built on it.
//!
//! Its hasher, [`FastState`], is foldhash's, also the hasher of the maps kept in the
//! shards ([`FastMap`]). A redirect hashes its link three times (the shard, then the map
//! in it, for the visit counts and for their values) and its `User-Agent` twice. So the
//! hasher is a fast one, not std's SipHash, which showed in the redirect's profile.
//! See `cargo xtask bench --only http` (one hot link) in docs/BENCHMARKS.md.
//! foldhash is seeded at random per process and per map, so keys cannot be chosen to
//! collide without seeing its output. It is not a cryptographic hash, and no map here
//! needs one.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash};

/// The hasher of [`Sharded`] and of the maps in its shards.
pub type FastState = foldhash::fast::RandomState;

/// A `HashMap` hashed by [`FastState`]; `FastMap::default()` makes an empty one.
pub type FastMap<K, V> = HashMap<K, V, FastState>;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `count` values of `T`, each behind its own lock; a key always maps to the same one.
///
/// A poisoned lock (a panic while it was held) is taken over rather than propagated: each
/// user keeps its shard consistent at every await-free step, so the state a panic leaves
/// is one a caller may read.
pub struct Sharded<T> {
    hasher: FastState,
    shards: Box<[RwLock<T>]>,
}

impl<T: Default> Sharded<T> {
    /// `count` empty shards.
    ///
    /// # Panics
    /// When `count` is 0.
    pub fn new(count: usize) -> Self {
        assert!(count > 0, "a sharded map needs a shard");
        Self {
            hasher: FastState::default(),
            shards: (0..count).map(|_| RwLock::default()).collect(),
        }
    }
}

impl<T> Sharded<T> {
    /// The shard of `key`, for writing.
    pub fn write(&self, key: &(impl Hash + ?Sized)) -> RwLockWriteGuard<'_, T> {
        self.write_at(self.index_of(key))
    }

    /// The shard of `key`, for reading (shared with other readers).
    pub fn read(&self, key: &(impl Hash + ?Sized)) -> RwLockReadGuard<'_, T> {
        self.shards[self.index_of(key)]
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The index of `key`'s shard: for a caller that must hold several shards at once,
    /// and locks them by [`Sharded::write_at`] in index order so that two such callers
    /// never wait on each other.
    pub fn index_of(&self, key: &(impl Hash + ?Sized)) -> usize {
        // The remainder is below the shard count, so the cast back cannot truncate.
        (self.hasher.hash_one(key) % self.shards.len() as u64) as usize
    }

    /// The shard at `index` (from [`Sharded::index_of`]), for writing.
    ///
    /// # Panics
    /// When `index` is not below [`Sharded::count`].
    pub fn write_at(&self, index: usize) -> RwLockWriteGuard<'_, T> {
        self.shards[index]
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Every shard in turn, each locked for writing only while the iterator is on it:
    /// not a snapshot of the whole, which no caller needs.
    pub fn each(&self) -> impl Iterator<Item = RwLockWriteGuard<'_, T>> {
        self.shards
            .iter()
            .map(|shard| shard.write().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many shards there are.
    pub fn count(&self) -> usize {
        self.shards.len()
    }
}

impl<T> fmt::Debug for Sharded<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sharded")
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_always_reaches_the_same_shard() {
        let map: Sharded<FastMap<String, u32>> = Sharded::new(8);
        for n in 0..1000 {
            *map.write(&format!("k{n}"))
                .entry(format!("k{n}"))
                .or_default() += 1;
        }
        for n in 0..1000 {
            assert_eq!(map.read(&format!("k{n}")).get(&format!("k{n}")), Some(&1));
        }
        let total: usize = map.each().map(|shard| shard.len()).sum();
        assert_eq!(total, 1000);
        let used = map.each().filter(|shard| !shard.is_empty()).count();
        assert!(used > 1, "keys spread over shards");
        assert_eq!(map.count(), 8);
    }
}
