//! What a [`Fallback`](super::Fallback) admitted on its own while the primary was
//! unavailable: the debts the next primary call on a key pays back.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::lock;
use crate::limiter::Policy;

/// Tokens admitted locally, by (policy name, identity), with the policy to take them
/// under. `count` lets the hot path skip the lock while there are none.
#[derive(Debug, Default)]
pub(super) struct Debts {
    count: AtomicUsize,
    map: Mutex<HashMap<(String, String), (Policy, u64)>>,
}

impl Debts {
    pub(super) fn add(&self, identity: &str, policy: &Policy, tokens: u64) {
        let mut map = lock(&self.map);
        let entry = map
            .entry((policy.name().to_owned(), identity.to_owned()))
            .or_insert_with(|| (policy.clone(), 0));
        entry.1 = entry.1.saturating_add(tokens);
        self.count.store(map.len(), Ordering::Release);
    }

    pub(super) fn take<'a>(&'a self, identity: &str, policy: &Policy) -> Option<Debt<'a>> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut map = lock(&self.map);
        let (stored, tokens) = map.remove(&(policy.name().to_owned(), identity.to_owned()))?;
        self.count.store(map.len(), Ordering::Release);
        Some(Debt {
            debts: self,
            identity: identity.to_owned(),
            policy: stored,
            tokens,
            settled: false,
        })
    }

    pub(super) fn total(&self) -> u64 {
        lock(&self.map).values().map(|(_, tokens)| tokens).sum()
    }
}

/// A debt taken out for one primary call: put back unless the call settled it, so that a
/// failed or cancelled call loses none.
#[derive(Debug)]
pub(super) struct Debt<'a> {
    debts: &'a Debts,
    identity: String,
    policy: Policy,
    pub(super) tokens: u64,
    settled: bool,
}

impl Debt<'_> {
    pub(super) fn settle(mut self) -> u64 {
        self.settled = true;
        self.tokens
    }
}

impl Drop for Debt<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.debts.add(&self.identity, &self.policy, self.tokens);
        }
    }
}
