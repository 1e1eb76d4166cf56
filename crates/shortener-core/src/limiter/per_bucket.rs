//! [`PerBucket`]: what a limiter keeps in memory for each bucket it has seen, a (policy,
//! identity) pair: the refusal cache's remembered refusals, the Redis limiter's leases.
//!
//! Sharded by the pair, so that requests of different clients rarely wait for each other,
//! and bounded: at most [`IDENTITIES_PER_SHARD`] identities per shard, each with a short
//! list of states, one per policy. A new identity that finds its shard full first drops
//! the identities whose states have all ended, and is not remembered if that frees no room:
//! a caller must then decide as if it held nothing for the bucket. A full shard is swept
//! at most once per [`SWEEP_INTERVAL_US`] (new identities that find it full meanwhile are
//! not remembered), so that a flood of new identities (clients that each come once) does
//! not scan thousands of entries under the lock per request.
//! Identities are looked up by `&str` and copied only when first remembered, never per
//! request.

use std::sync::RwLockWriteGuard;

use crate::sharded::{FastMap, Sharded};

const SHARDS: usize = 16;

/// Most identities remembered per shard (16 shards), by default.
pub const IDENTITIES_PER_SHARD: usize = 4096;

/// The least time between two sweeps of a shard; new identities that find it full
/// meanwhile are not remembered, as when a sweep frees no room.
pub const SWEEP_INTERVAL_US: u64 = 10_000;

/// What a [`PerBucket`] holds for one bucket.
pub trait BucketState {
    /// The name of the policy it belongs to: an identity has one state per policy.
    fn policy(&self) -> &str;

    /// Whether it says nothing any more at `now_us`, so that it may be dropped to make room.
    fn ended(&self, now_us: u64) -> bool;
}

/// The states of every bucket a limiter remembers.
#[derive(Debug)]
pub struct PerBucket<V> {
    shards: Sharded<Shard<V>>,
    identities_per_shard: usize,
}

/// States by identity, each identity with one per policy.
#[derive(Debug)]
struct Shard<V> {
    states: FastMap<String, Vec<V>>,
    /// When it was last swept, if ever.
    swept_at: Option<u64>,
}

/// One bucket's place in its locked shard, given to [`PerBucket::with`]'s function.
#[derive(Debug)]
pub struct BucketEntry<'a, V> {
    shard: RwLockWriteGuard<'a, Shard<V>>,
    identities_per_shard: usize,
    policy: &'a str,
    identity: &'a str,
}

impl<V> Default for Shard<V> {
    fn default() -> Self {
        Self {
            states: FastMap::default(),
            swept_at: None,
        }
    }
}

impl<V> Default for PerBucket<V> {
    fn default() -> Self {
        Self::bounded(IDENTITIES_PER_SHARD)
    }
}

impl<V> PerBucket<V> {
    /// At most `identities_per_shard` identities in each of its 16 shards.
    pub fn bounded(identities_per_shard: usize) -> Self {
        Self {
            shards: Sharded::new(SHARDS),
            identities_per_shard,
        }
    }
}

impl<V: BucketState> PerBucket<V> {
    /// Runs `with` on the bucket of (`policy`, `identity`), its shard locked meanwhile.
    pub fn with<R>(
        &self,
        policy: &str,
        identity: &str,
        with: impl FnOnce(&mut BucketEntry<'_, V>) -> R,
    ) -> R {
        let mut bucket = BucketEntry {
            shard: self.shards.write(&(policy, identity)),
            identities_per_shard: self.identities_per_shard,
            policy,
            identity,
        };
        with(&mut bucket)
    }

    /// Forgets every bucket.
    pub fn clear(&self) {
        for mut shard in self.shards.each() {
            *shard = Shard::default();
        }
    }
}

impl<V: BucketState> BucketEntry<'_, V> {
    /// The bucket's state, if one is remembered.
    pub fn get_mut(&mut self) -> Option<&mut V> {
        let policy = self.policy;
        (self.shard.states.get_mut(self.identity)?)
            .iter_mut()
            .find(|state| state.policy() == policy)
    }

    /// The bucket's state, made by `make` if none is remembered; `None` when the identity
    /// is new and its shard is full of states that have not ended at `now_us`.
    pub fn get_or_insert_with(&mut self, now_us: u64, make: impl FnOnce() -> V) -> Option<&mut V> {
        if !self.shard.states.contains_key(self.identity) {
            if !self.make_room(now_us) {
                return None;
            }
            (self.shard.states).insert(self.identity.to_owned(), Vec::new());
        }
        let policy = self.policy;
        let states = self.shard.states.get_mut(self.identity)?;
        let index = match states.iter().position(|state| state.policy() == policy) {
            Some(index) => index,
            None => {
                states.push(make());
                states.len() - 1
            }
        };
        states.get_mut(index)
    }

    /// Forgets the bucket's state (and the identity, when it was its last).
    pub fn remove(&mut self) {
        let policy = self.policy;
        if let Some(states) = self.shard.states.get_mut(self.identity) {
            states.retain(|state| state.policy() != policy);
            if states.is_empty() {
                self.shard.states.remove(self.identity);
            }
        }
    }

    /// Whether a new identity fits, after dropping those whose states have all ended
    /// (unless the shard was swept less than [`SWEEP_INTERVAL_US`] ago).
    fn make_room(&mut self, now_us: u64) -> bool {
        let shard = &mut *self.shard;
        if shard.states.len() < self.identities_per_shard {
            return true;
        }
        if (shard.swept_at).is_some_and(|at| now_us < at.saturating_add(SWEEP_INTERVAL_US)) {
            return false;
        }
        shard.swept_at = Some(now_us);
        shard.states.retain(|_, states| {
            states.retain(|state| !state.ended(now_us));
            !states.is_empty()
        });
        shard.states.len() < self.identities_per_shard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct State {
        policy: &'static str,
        until: u64,
    }

    impl BucketState for State {
        fn policy(&self) -> &str {
            self.policy
        }

        fn ended(&self, now_us: u64) -> bool {
            self.until <= now_us
        }
    }

    fn insert(map: &PerBucket<State>, policy: &'static str, identity: &str, now_us: u64) -> bool {
        map.with(policy, identity, |bucket| {
            let until = now_us + 100_000;
            (bucket.get_or_insert_with(now_us, || State { policy, until })).is_some()
        })
    }

    fn until(map: &PerBucket<State>, policy: &str, identity: &str) -> Option<u64> {
        map.with(policy, identity, |bucket| {
            bucket.get_mut().map(|state| state.until)
        })
    }

    #[test]
    fn keeps_one_state_per_policy_and_identity() {
        let map = PerBucket::default();
        assert!(insert(&map, "create", "a", 0));
        assert!(insert(&map, "redirect", "a", 10));
        // Present already: `make` is not called, the state stays as it was.
        assert!(insert(&map, "create", "a", 99));
        assert_eq!(until(&map, "create", "a"), Some(100_000));
        assert_eq!(until(&map, "redirect", "a"), Some(100_010));
        assert_eq!(until(&map, "create", "b"), None);
        map.with("create", "a", |bucket| bucket.remove());
        assert_eq!(until(&map, "create", "a"), None);
        assert_eq!(until(&map, "redirect", "a"), Some(100_010));
        map.clear();
        assert_eq!(until(&map, "redirect", "a"), None);
    }

    #[test]
    fn a_full_shard_takes_a_new_identity_only_in_place_of_ended_ones() {
        let per_shard = 8;
        let map = PerBucket::bounded(per_shard);
        let bound = SHARDS * per_shard;
        // Ten times what all shards hold: every shard fills up (by the hash, 80 expected
        // in each) and the rest are refused, at 0 and at each sweep interval after it.
        let live = |n: usize| format!("live-{n}");
        let taken = (0..10 * bound)
            .filter(|&n| insert(&map, "p", &live(n), 0))
            .count();
        assert_eq!(taken, bound);
        let again =
            (0..10 * bound).filter(|&n| insert(&map, "p", &format!("new-{n}"), SWEEP_INTERVAL_US));
        assert_eq!(
            again.count(),
            0,
            "taken in place of identities that had not ended"
        );
        // Their states end at 100 000: every shard takes new identities again.
        let after = (0..10 * bound).filter(|&n| insert(&map, "p", &format!("late-{n}"), 100_000));
        assert_eq!(after.count(), bound);
        let kept = (0..10 * bound).filter(|&n| until(&map, "p", &live(n)).is_some());
        assert_eq!(kept.count(), 0, "ended identities were not dropped");
    }

    #[test]
    fn a_shard_left_full_is_not_swept_again_within_the_interval() {
        let map = PerBucket::bounded(1);
        assert!(insert(&map, "p", "a", 0));
        // Its shard's one place is taken; find another identity of the same shard.
        let same_shard = (0..10_000)
            .map(|n| format!("b-{n}"))
            .find(|b| map.shards.index_of(&("p", b.as_str())) == map.shards.index_of(&("p", "a")))
            .expect("an identity in the same shard");
        // Not ended at 99 999: the sweep leaves the shard full...
        assert!(!insert(&map, "p", &same_shard, 99_999));
        // ...and at 100 000, when "a" has ended, the next sweep waits for the interval.
        assert!(!insert(&map, "p", &same_shard, 100_000));
        assert!(insert(&map, "p", &same_shard, 99_999 + SWEEP_INTERVAL_US));
        assert_eq!(until(&map, "p", "a"), None);
    }
}
