//! Three limiter instances (as three app nodes) leasing one client's bucket: light traffic
//! that leaves each node holding leased tokens, a pause long enough for the bucket to fill
//! up again, and a burst. Tokens leased before the pause must not be admitted on top of
//! the full bucket after it: no interval of the run admits more than the bound.

use std::sync::Arc;
use std::time::{Duration, Instant};

use shortener_core::{Algorithm, Policy, RateLimiter};
use shortener_redis::RedisRateLimiter;

use crate::support::{Target, connect, server, unique};

const NODES: usize = 3;
const TASKS: usize = 8;
const BURST: Duration = Duration::from_millis(150);
/// Longer than the bucket takes to fill from empty (1 000 tokens at 1 000 a second).
const PAUSE: Duration = Duration::from_millis(1_050);

/// 1 000 tokens at 1 000 a second; leases of up to 15 tokens for 5 ms (a reserve of 5).
fn policy() -> Policy {
    Policy::from_interval("redirect", 1_000, 1_000)
        .unwrap()
        .with_lease(15, 5_000)
        .unwrap()
}

/// One admission: the time before its call and after it, on the test's clock.
#[derive(Debug, Clone, Copy)]
struct Admission {
    start: Instant,
    end: Instant,
}

/// One task per node asks for a token every millisecond or so: below the refill rate, so
/// the bucket stays nearly full while the nodes' leases grow and are held.
async fn light(limiters: &[Arc<RedisRateLimiter>], identity: &str) -> Vec<Admission> {
    let mut handles = Vec::new();
    for limiter in limiters {
        let (limiter, identity) = (limiter.clone(), identity.to_owned());
        handles.push(tokio::spawn(async move {
            let policy = policy();
            let mut admitted = Vec::new();
            for _ in 0..40 {
                let start = Instant::now();
                let decision = limiter.acquire(&identity, &policy, 1).await.unwrap();
                assert!(decision.allowed, "light traffic is admitted");
                admitted.push(Admission {
                    start,
                    end: Instant::now(),
                });
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            admitted
        }));
    }
    let mut admitted = Vec::new();
    for handle in handles {
        admitted.extend(handle.await.unwrap());
    }
    admitted
}

/// Every node's tasks ask for one token each, as fast as they can, for `BURST`.
async fn burst(limiters: &[Arc<RedisRateLimiter>], identity: &str) -> Vec<Admission> {
    let mut handles = Vec::new();
    for limiter in limiters {
        for _ in 0..TASKS {
            let (limiter, identity) = (limiter.clone(), identity.to_owned());
            handles.push(tokio::spawn(async move {
                let (policy, began) = (policy(), Instant::now());
                let mut admitted = Vec::new();
                while began.elapsed() < BURST {
                    let start = Instant::now();
                    let decision = limiter.acquire(&identity, &policy, 1).await.unwrap();
                    if decision.allowed {
                        admitted.push(Admission {
                            start,
                            end: Instant::now(),
                        });
                    } else {
                        assert!(decision.retry_after_us.is_some_and(|retry| retry > 0));
                        tokio::task::yield_now().await;
                    }
                }
                admitted
            }));
        }
    }
    let mut admitted = Vec::new();
    for handle in handles {
        admitted.extend(handle.await.unwrap());
    }
    admitted
}

/// Admissions sorted by start: those from `i` to `j` happened between the start of `i` and
/// the latest end among them, so their count is bounded by that span.
fn check_bound(admissions: &mut [Admission], label: &str) {
    let policy = policy();
    admissions.sort_by_key(|admission| admission.start);
    let mut tightest = i64::MIN;
    for i in 0..admissions.len() {
        let mut latest = admissions[i].end;
        for (count, admission) in admissions[i..].iter().enumerate() {
            latest = latest.max(admission.end);
            let span_us = latest.duration_since(admissions[i].start).as_micros() as u64;
            let count = count as u64 + 1;
            let over = (count * policy.interval_us()) as i64 - (policy.burst_us() + span_us) as i64;
            tightest = tightest.max(over);
            assert!(
                count * policy.interval_us() <= policy.burst_us() + span_us,
                "{label}: {count} admitted within {span_us} µs, over the bound"
            );
        }
    }
    eprintln!(
        "{label}: the closest interval came within {} µs of refill of the bound",
        -tightest
    );
}

async fn leases_keep_the_bound(algorithm: Algorithm) {
    let target = Target::Standalone(server().url().to_owned());
    let mut limiters = Vec::new();
    for _ in 0..NODES {
        limiters.push(Arc::new(
            connect(&target, algorithm, Duration::from_secs(2)).await,
        ));
    }
    let identity = unique("lease");
    let mut admissions = light(&limiters, &identity).await;
    tokio::time::sleep(PAUSE).await;
    let second = burst(&limiters, &identity).await;
    let after_pause = second.len();
    admissions.extend(second);
    let leased: u64 = limiters.iter().map(|l| l.leased_admissions()).sum();
    eprintln!(
        "{algorithm:?}: {} admitted, {leased} of them from leases, {after_pause} after the pause",
        admissions.len()
    );
    check_bound(&mut admissions, &format!("{algorithm:?}"));
    assert!(
        leased * 2 > admissions.len() as u64,
        "{algorithm:?}: most admissions come from leases, not calls ({leased})"
    );
    // After the pause the shared bucket is full (995 tokens: the policy less its reserve);
    // what a node may fail to use is the lease it holds when the burst ends.
    let shared = policy().shared().capacity() as usize;
    assert!(
        after_pause >= shared - NODES * 15,
        "{algorithm:?}: {after_pause} admitted after the pause, below {shared} less the leases"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leased_tokens_held_over_a_pause_are_not_admitted_on_top_of_a_full_bucket() {
    tokio::join!(
        leases_keep_the_bound(Algorithm::TokenBucket),
        leases_keep_the_bound(Algorithm::Gcra)
    );
}
