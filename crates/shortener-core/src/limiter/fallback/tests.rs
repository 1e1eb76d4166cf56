//! The fallback against scripted primaries and a model local limiter: the circuit, the
//! probes, the debts and each `on_error` mode.

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::AtomicU8;
use std::task::{Context, Poll, Waker};

use super::*;
use crate::limiter::clock::ManualClock;

/// What the fallback answers while the primary is down: each `OnError`, and the local
/// share with its debts.
mod on_error;

/// Runs a future that must complete without waiting (the fakes here never wait
/// unless gated).
pub(in crate::limiter) fn block_on<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the future was expected to be ready"),
    }
}

const UP: u8 = 0;
const DOWN: u8 = 1;
const REFUSED: u8 = 2;
const BROKEN: u8 = 3;

/// A primary that answers `remaining = PRIMARY`, fails, or waits at a gate, and
/// records its calls and the debts it was given.
#[derive(Debug)]
struct Primary {
    mode: AtomicU8,
    gate_open: AtomicBool,
    calls: AtomicU64,
    debts: Mutex<Vec<(String, u64)>>,
}

impl Primary {
    fn new(mode: u8) -> Self {
        Self {
            mode: AtomicU8::new(mode),
            gate_open: AtomicBool::new(true),
            calls: AtomicU64::new(0),
            debts: Mutex::new(Vec::new()),
        }
    }

    fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }

    fn debts(&self) -> Vec<(String, u64)> {
        lock(&self.debts).clone()
    }
}

impl RateLimiter for Primary {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        self.acquire_after_debt(identity, policy, 0, cost).await
    }

    async fn health(&self) -> Result<(), LimiterError> {
        Ok(())
    }
}

impl SharedRateLimiter for Primary {
    async fn acquire_after_debt(
        &self,
        identity: &str,
        policy: &Policy,
        debt: u64,
        _: u64,
    ) -> Result<Decision, LimiterError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        std::future::poll_fn(|_| {
            if self.gate_open.load(Ordering::SeqCst) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        match self.mode.load(Ordering::SeqCst) {
            UP => {
                if debt > 0 {
                    lock(&self.debts).push((identity.to_owned(), debt));
                }
                Ok(Decision {
                    allowed: true,
                    limit: policy.capacity(),
                    remaining: PRIMARY,
                    retry_after_us: Some(0),
                    reset_after_us: 0,
                })
            }
            DOWN => Err(LimiterError::Unavailable("timed out".into())),
            REFUSED => Err(LimiterError::Unreachable("connection refused".into())),
            _ => Err(LimiterError::Unexpected("bad reply".into())),
        }
    }
}

/// A local limiter with a real bucket per call's policy (the core model at a fixed
/// time), that starts empty unless `full`, and counts resets.
#[derive(Debug, Default)]
struct Local {
    buckets: Mutex<HashMap<String, token_bucket::Bucket>>,
    full: bool,
    now_us: AtomicU64,
    resets: AtomicU64,
    policies: Mutex<Vec<(u64, u64)>>,
}

impl RateLimiter for Local {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        lock(&self.policies).push((policy.capacity(), policy.interval_us()));
        let now = self.now_us.load(Ordering::SeqCst);
        let mut buckets = lock(&self.buckets);
        let stored =
            buckets
                .get(identity)
                .copied()
                .or((!self.full).then_some(token_bucket::Bucket {
                    credit_us: 0,
                    at_us: now,
                }));
        let (decision, next) = token_bucket::step(stored, policy, now, cost);
        if let Some(bucket) = next.or(stored) {
            buckets.insert(identity.to_owned(), bucket);
        }
        Ok(decision)
    }

    async fn health(&self) -> Result<(), LimiterError> {
        Ok(())
    }
}

impl LocalRateLimiter for Local {
    fn reset(&self) {
        self.resets.fetch_add(1, Ordering::SeqCst);
        lock(&self.buckets).clear();
    }
}

const PRIMARY: u64 = 1_000;

type Tested = Fallback<Primary, Local, ManualClock>;

fn fallback(mode: u8, on_error: OnError, probe_interval: Duration) -> Tested {
    Fallback::with_clock(
        Primary::new(mode),
        Local {
            full: true,
            ..Local::default()
        },
        FallbackConfig {
            on_error,
            probe_interval,
            breaker_failures: 1,
            nodes: 1,
        },
        ManualClock::new(0),
    )
}

fn policy() -> Policy {
    Policy::from_interval("p", 5, 1_000).unwrap()
}

fn answered_by(limiter: &Tested) -> u64 {
    block_on(limiter.acquire("id", &policy(), 1))
        .unwrap()
        .remaining
}

#[test]
fn an_open_circuit_skips_the_primary_until_the_probe_interval() {
    let limiter = fallback(DOWN, OnError::Local, Duration::from_secs(3600));
    assert_eq!(answered_by(&limiter), 4, "the local bucket");
    assert!(limiter.is_open());
    limiter.primary().set(UP);
    for _ in 0..3 {
        assert_ne!(answered_by(&limiter), PRIMARY);
    }
    assert_eq!(limiter.primary().calls(), 1, "the primary was skipped");
    assert_eq!(
        (limiter.primary_errors(), limiter.fallback_decisions()),
        (1, 4)
    );
    assert_eq!(limiter.state(), BackendState::Degraded);
}

#[test]
fn the_circuit_opens_after_consecutive_failures_or_at_once_on_a_refusal() {
    let mut config = FallbackConfig {
        probe_interval: Duration::from_secs(3600),
        ..FallbackConfig::default()
    };
    config.breaker_failures = 3;
    let limiter = Fallback::with_clock(
        Primary::new(DOWN),
        Local::default(),
        config,
        ManualClock::new(0),
    );
    block_on(limiter.acquire("id", &policy(), 1)).unwrap();
    block_on(limiter.acquire("id", &policy(), 1)).unwrap();
    assert!(!limiter.is_open(), "two failures are not enough");
    assert_eq!(limiter.state(), BackendState::Degraded);
    limiter.primary().set(UP);
    assert_eq!(answered_by_any(&limiter), PRIMARY);
    assert_eq!(limiter.state(), BackendState::Ok);
    limiter.primary().set(DOWN);
    for _ in 0..2 {
        block_on(limiter.acquire("id", &policy(), 1)).unwrap();
    }
    assert!(!limiter.is_open(), "an answer restarts the count");
    block_on(limiter.acquire("id", &policy(), 1)).unwrap();
    assert!(limiter.is_open(), "three in a row open it");

    let refused = Fallback::with_clock(
        Primary::new(REFUSED),
        Local::default(),
        config,
        ManualClock::new(0),
    );
    block_on(refused.acquire("id", &policy(), 1)).unwrap();
    assert!(refused.is_open(), "a refused connection opens it at once");
    assert!(matches!(
        refused.last_error(),
        Some(LimiterError::Unreachable(_))
    ));
}

fn answered_by_any(limiter: &Tested) -> u64 {
    block_on(limiter.acquire("id", &policy(), 1))
        .unwrap()
        .remaining
}

#[test]
fn a_probe_after_the_interval_closes_the_circuit() {
    let limiter = fallback(DOWN, OnError::Local, Duration::ZERO);
    assert_ne!(answered_by(&limiter), PRIMARY);
    limiter.primary().set(UP);
    assert_eq!(
        answered_by(&limiter),
        PRIMARY,
        "the probe reached the primary"
    );
    assert!(!limiter.is_open());
    assert_eq!(answered_by(&limiter), PRIMARY);
    assert_eq!(limiter.primary().calls(), 3);
    assert_eq!(limiter.state(), BackendState::Ok);
    assert_eq!(limiter.last_error(), None);
}

#[test]
fn a_failed_probe_waits_another_interval() {
    let limiter = fallback(DOWN, OnError::Local, Duration::from_millis(20));
    assert_ne!(answered_by(&limiter), PRIMARY);
    limiter.clock.advance(20_000);
    assert_ne!(answered_by(&limiter), PRIMARY, "the probe failed");
    assert_eq!(limiter.primary().calls(), 2);
    assert!(limiter.is_open());
    limiter.primary().set(UP);
    assert_ne!(
        answered_by(&limiter),
        PRIMARY,
        "no probe before the next interval"
    );
    assert_eq!(limiter.primary().calls(), 2);
    assert_eq!(limiter.primary_errors(), 2);
    limiter.clock.advance(19_999);
    assert_ne!(answered_by(&limiter), PRIMARY, "a microsecond early");
    limiter.clock.advance(1);
    assert_eq!(answered_by(&limiter), PRIMARY, "the next probe, on time");
    assert!(!limiter.is_open());
}

#[test]
fn one_probe_at_a_time_and_a_dropped_probe_releases_it() {
    let limiter = fallback(DOWN, OnError::Local, Duration::ZERO);
    assert_ne!(answered_by(&limiter), PRIMARY);
    limiter.primary().set(UP);
    limiter.primary().gate_open.store(false, Ordering::SeqCst);
    let waker = Waker::noop();
    let mut context = Context::from_waker(waker);
    let policy = policy();
    {
        let mut probe = pin!(limiter.acquire("id", &policy, 1));
        assert!(probe.as_mut().poll(&mut context).is_pending());
        assert_eq!(limiter.primary().calls(), 2);
        // The probe is in flight: others use the fallback, though a probe is due.
        assert_ne!(answered_by(&limiter), PRIMARY);
        assert_eq!(limiter.primary().calls(), 2);
    }
    // The probe was dropped unfinished: the next call may probe.
    let mut probe = pin!(limiter.acquire("id", &policy, 1));
    assert!(probe.as_mut().poll(&mut context).is_pending());
    assert_eq!(limiter.primary().calls(), 3);
    limiter.primary().gate_open.store(true, Ordering::SeqCst);
    match probe.as_mut().poll(&mut context) {
        Poll::Ready(Ok(decision)) => assert_eq!(decision.remaining, PRIMARY),
        other => panic!("{other:?}"),
    }
    assert!(!limiter.is_open());
}
