//! The checks of a recorded history: one total order per key that the core model replays
//! exactly, no over-admission over any interval, and admission close to the bound.

use shortener_core::limiter::{gcra, token_bucket};
use shortener_core::{Algorithm, Decision, Policy};

use crate::support::Record;

/// The model's state for either algorithm.
#[derive(Debug, Clone, Copy)]
enum State {
    Bucket(Option<token_bucket::Bucket>),
    Tat(Option<u64>),
}

impl State {
    fn new(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::TokenBucket => Self::Bucket(None),
            Algorithm::Gcra => Self::Tat(None),
            Algorithm::FixedWindow => unreachable!("no single-bucket fixed window in Redis"),
        }
    }

    /// The model's decision, and the state it writes (if any).
    fn step(self, policy: &Policy, now_us: u64, cost: u64) -> (Decision, Option<Self>) {
        match self {
            Self::Bucket(bucket) => {
                let (decision, next) = token_bucket::step(bucket, policy, now_us, cost);
                (decision, next.map(|next| Self::Bucket(Some(next))))
            }
            Self::Tat(tat) => {
                let (decision, next) = gcra::step(tat, policy, now_us, cost);
                (decision, next.map(|next| Self::Tat(Some(next))))
            }
        }
    }

    /// When the bucket is full again, given that it was last looked at `now_us`.
    fn full_at(self, policy: &Policy, now_us: u64) -> u64 {
        match self {
            Self::Bucket(None) | Self::Tat(None) => now_us,
            Self::Bucket(Some(bucket)) => bucket.at_us + (policy.burst_us() - bucket.credit_us),
            Self::Tat(Some(tat)) => tat,
        }
    }
}

/// What one key's history adds up to.
#[derive(Debug, Clone, Copy)]
struct Totals {
    /// Cost admitted.
    admitted: u64,
    /// capacity + span / interval: the most the key could admit over its history.
    bound: u64,
    /// The same, less the time the bucket sat full with no request asking for it (the test
    /// process starved of CPU, say): the most it could admit while demand exceeded it.
    demand_bound: u64,
}

/// Checks one key's history.
///
/// Every admitted decision wrote the next version, so their versions must be exactly
/// 1..=n, a total order. Replaying them in that order through the model, each at its
/// recorded time, must give the recorded decisions; and a refused decision, which read
/// state `v` and wrote nothing, must be what the model decides from state `v` at its time.
/// Then, for every pair of admitted times t1 <= t2, the cost admitted in [t1, t2] is at
/// most the burst plus the refill over t2 - t1.
fn check_key(records: &[Record], algorithm: Algorithm, policy: &Policy) -> Result<Totals, String> {
    let mut admitted: Vec<&Record> = records.iter().filter(|r| r.decision.allowed).collect();
    admitted.sort_by_key(|r| r.version);
    for (index, record) in admitted.iter().enumerate() {
        if record.version != index as u64 + 1 {
            return Err(format!(
                "admitted versions are not 1..=n: {record:?} at {index}"
            ));
        }
    }
    let mut states = vec![State::new(algorithm)];
    for record in &admitted {
        let state = *states.last().unwrap();
        let (decision, next) = state.step(policy, record.now_us, record.cost);
        if decision != record.decision {
            return Err(format!("replay of {record:?} gives {decision:?}"));
        }
        states.push(next.ok_or_else(|| format!("the model wrote nothing for {record:?}"))?);
    }
    for record in records.iter().filter(|r| !r.decision.allowed) {
        let state = states
            .get(record.version as usize)
            .ok_or_else(|| format!("refused {record:?} read a version never written"))?;
        let (decision, next) = state.step(policy, record.now_us, record.cost);
        if decision != record.decision || next.is_some() {
            return Err(format!("replay of refused {record:?} gives {decision:?}"));
        }
    }

    admitted.sort_by_key(|r| (r.now_us, r.version));
    let mut prefix = vec![0u64];
    for record in &admitted {
        prefix.push(prefix.last().unwrap() + record.cost);
    }
    for (i, first) in admitted.iter().enumerate() {
        // From the first admission at t1 (ties included) to the last one at each t2.
        let start = admitted.partition_point(|r| r.now_us < first.now_us);
        for last in &admitted[i..] {
            let end = admitted.partition_point(|r| r.now_us <= last.now_us);
            let cost = prefix[end] - prefix[start];
            let elapsed = last.now_us - first.now_us;
            if cost * policy.interval_us() > policy.burst_us() + elapsed {
                return Err(format!(
                    "over-admission: cost {cost} in [{}, {}]",
                    first.now_us, last.now_us
                ));
            }
        }
    }

    // In execution order, the state between two decisions is the one the first left.
    let mut order: Vec<&Record> = records.iter().collect();
    order.sort_by_key(|r| (r.now_us, r.version));
    let mut idle_us = 0;
    for pair in order.windows(2) {
        let full_at = states[pair[0].version as usize].full_at(policy, pair[0].now_us);
        idle_us += pair[1].now_us.saturating_sub(full_at.max(pair[0].now_us));
    }
    let span_us = order.last().map_or(0, |r| r.now_us) - order.first().map_or(0, |r| r.now_us);
    Ok(Totals {
        admitted: *prefix.last().unwrap(),
        bound: policy.capacity() + span_us / policy.interval_us(),
        demand_bound: policy.capacity() + (span_us - idle_us) / policy.interval_us(),
    })
}

/// [`check_key`] for every key; then, over the whole run, admission of at least 98% of the
/// bound while demand exceeded it. Returns admitted / bound over the whole run.
pub fn check_history(
    records: &[Record],
    keys: usize,
    algorithm: Algorithm,
    policy: &Policy,
) -> f64 {
    let (mut admitted, mut bound, mut demand_bound) = (0, 0, 0);
    for key in 0..keys {
        let history: Vec<Record> = records.iter().filter(|r| r.key == key).copied().collect();
        let totals = check_key(&history, algorithm, policy)
            .unwrap_or_else(|error| panic!("{algorithm:?}, key {key}: {error}"));
        admitted += totals.admitted;
        bound += totals.bound;
        demand_bound += totals.demand_bound;
    }
    assert!(
        admitted as f64 >= 0.98 * demand_bound as f64,
        "{algorithm:?}: admitted {admitted} while demand exceeded a bound of {demand_bound}"
    );
    admitted as f64 / bound as f64
}
