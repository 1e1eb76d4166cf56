//! `Fallback`: a primary limiter (Redis) behind a circuit breaker, with a configured
//! answer while the primary is unavailable.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::{Decision, LimiterError, Policy, RateLimiter, token_bucket};

/// What a [`Fallback`] answers while its primary is unavailable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OnError {
    /// Admit, with the decision a full bucket would give (see [`Fallback`]).
    FailOpen,
    /// Refuse with [`LimiterError::Unavailable`]; the server answers 503.
    FailClosed,
    /// Ask the local limiter (an in-memory bucket on this node).
    #[default]
    Local,
}

/// A [`RateLimiter`] that asks `primary`, and after a transient error of it
/// ([`LimiterError::is_transient`]) opens a circuit: calls then skip the primary and get
/// the [`OnError`] answer, so that a dead backend costs one timeout, not one per request.
///
/// Once `probe_interval` has passed since the circuit opened (or since the last failed
/// probe), one call at a time probes the primary while the others keep the fallback
/// answer; a probe that gets an answer closes the circuit. Errors that are not transient
/// are returned as they are and do not open the circuit.
///
/// With [`OnError::FailOpen`] the decision is the model's for a full bucket: admitted
/// with `remaining = capacity - cost` (a cost above capacity is still refused as never),
/// since nothing better is known without the backend.
#[derive(Debug)]
pub struct Fallback<P, L> {
    primary: P,
    local: L,
    on_error: OnError,
    probe_interval: Duration,
    origin: Instant,
    open: AtomicBool,
    /// When the next probe may start, in microseconds since `origin`.
    probe_at_us: AtomicU64,
    probing: AtomicBool,
    primary_errors: AtomicU64,
    fallback_decisions: AtomicU64,
}

impl<P: RateLimiter, L: RateLimiter> Fallback<P, L> {
    pub fn new(primary: P, local: L, on_error: OnError, probe_interval: Duration) -> Self {
        Self {
            primary,
            local,
            on_error,
            probe_interval,
            origin: Instant::now(),
            open: AtomicBool::new(false),
            probe_at_us: AtomicU64::new(0),
            probing: AtomicBool::new(false),
            primary_errors: AtomicU64::new(0),
            fallback_decisions: AtomicU64::new(0),
        }
    }

    pub fn primary(&self) -> &P {
        &self.primary
    }

    pub fn local(&self) -> &L {
        &self.local
    }

    pub fn on_error(&self) -> OnError {
        self.on_error
    }

    /// Transient errors of the primary so far.
    pub fn primary_errors(&self) -> u64 {
        self.primary_errors.load(Ordering::Relaxed)
    }

    /// Calls answered without the primary so far (admissions, refusals and
    /// [`OnError::FailClosed`] errors alike).
    pub fn fallback_decisions(&self) -> u64 {
        self.fallback_decisions.load(Ordering::Relaxed)
    }

    /// Whether calls skip the primary now.
    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    fn now_us(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Opens the circuit (or keeps it open) until one probe interval from now.
    fn trip(&self) {
        self.primary_errors.fetch_add(1, Ordering::Relaxed);
        let interval = u64::try_from(self.probe_interval.as_micros()).unwrap_or(u64::MAX);
        self.probe_at_us
            .store(self.now_us().saturating_add(interval), Ordering::Release);
        self.open.store(true, Ordering::Release);
    }

    /// Claims the one probe, if its time has come and no other call holds it.
    fn try_probe(&self) -> Option<ProbeGuard<'_>> {
        let due = self.now_us() >= self.probe_at_us.load(Ordering::Acquire);
        let claimed = due
            && self
                .probing
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        claimed.then_some(ProbeGuard(&self.probing))
    }

    async fn fallback(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        self.fallback_decisions.fetch_add(1, Ordering::Relaxed);
        match self.on_error {
            OnError::FailOpen => Ok(token_bucket::step(None, policy, 0, cost).0),
            OnError::FailClosed => Err(LimiterError::Unavailable(
                "rate limiter backend unavailable (on_error = fail_closed)".into(),
            )),
            OnError::Local => self.local.acquire(identity, policy, cost).await,
        }
    }
}

impl<P: RateLimiter, L: RateLimiter> RateLimiter for Fallback<P, L> {
    async fn acquire(
        &self,
        identity: &str,
        policy: &Policy,
        cost: u64,
    ) -> Result<Decision, LimiterError> {
        // `probe` is held across the primary call, and released when this call ends or
        // is dropped, so a cancelled probe does not block the next one.
        let probe = if self.is_open() {
            match self.try_probe() {
                Some(probe) => Some(probe),
                None => return self.fallback(identity, policy, cost).await,
            }
        } else {
            None
        };
        match self.primary.acquire(identity, policy, cost).await {
            Err(error) if error.is_transient() => {
                self.trip();
                self.fallback(identity, policy, cost).await
            }
            answered => {
                // Only a probe closes the circuit: a call that started before it opened
                // says nothing about the primary now.
                if probe.is_some() {
                    self.open.store(false, Ordering::Release);
                }
                answered
            }
        }
    }

    /// The primary's health: `/readyz` reports the configured backend, whatever the
    /// fallback would answer meanwhile.
    async fn health(&self) -> Result<(), LimiterError> {
        self.primary.health().await
    }
}

/// Holds the half-open probe; releasing it on drop covers cancelled calls too.
#[derive(Debug)]
struct ProbeGuard<'a>(&'a AtomicBool);

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::atomic::AtomicU8;
    use std::task::{Context, Poll, Waker};

    use super::*;

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
    const BROKEN: u8 = 2;

    /// A limiter that answers `remaining = tag`, fails, or waits at a gate, and counts
    /// its calls.
    #[derive(Debug)]
    struct Fake {
        tag: u64,
        mode: AtomicU8,
        gate_open: AtomicBool,
        calls: AtomicU64,
    }

    impl Fake {
        fn new(tag: u64, mode: u8) -> Self {
            Self {
                tag,
                mode: AtomicU8::new(mode),
                gate_open: AtomicBool::new(true),
                calls: AtomicU64::new(0),
            }
        }

        fn calls(&self) -> u64 {
            self.calls.load(Ordering::SeqCst)
        }

        fn set(&self, mode: u8) {
            self.mode.store(mode, Ordering::SeqCst);
        }
    }

    impl RateLimiter for Fake {
        async fn acquire(
            &self,
            _: &str,
            policy: &Policy,
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
                UP => Ok(Decision {
                    allowed: true,
                    limit: policy.capacity(),
                    remaining: self.tag,
                    retry_after_us: Some(0),
                    reset_after_us: 0,
                }),
                DOWN => Err(LimiterError::Unavailable("timed out".into())),
                _ => Err(LimiterError::Unexpected("bad reply".into())),
            }
        }

        async fn health(&self) -> Result<(), LimiterError> {
            Ok(())
        }
    }

    const PRIMARY: u64 = 1;
    const LOCAL: u64 = 2;

    fn fallback(mode: u8, on_error: OnError, probe_interval: Duration) -> Fallback<Fake, Fake> {
        Fallback::new(
            Fake::new(PRIMARY, mode),
            Fake::new(LOCAL, UP),
            on_error,
            probe_interval,
        )
    }

    fn policy() -> Policy {
        Policy::from_interval("p", 5, 1_000).unwrap()
    }

    fn answered_by(limiter: &Fallback<Fake, Fake>) -> u64 {
        block_on(limiter.acquire("id", &policy(), 1))
            .unwrap()
            .remaining
    }

    #[test]
    fn one_transient_error_opens_the_circuit_until_the_probe_interval() {
        let limiter = fallback(DOWN, OnError::Local, Duration::from_secs(3600));
        assert_eq!(answered_by(&limiter), LOCAL);
        assert!(limiter.is_open());
        limiter.primary().set(UP);
        for _ in 0..10 {
            assert_eq!(answered_by(&limiter), LOCAL);
        }
        assert_eq!(limiter.primary().calls(), 1, "the primary was skipped");
        assert_eq!(
            (limiter.primary_errors(), limiter.fallback_decisions()),
            (1, 11)
        );
    }

    #[test]
    fn a_probe_after_the_interval_closes_the_circuit() {
        let limiter = fallback(DOWN, OnError::Local, Duration::from_millis(20));
        assert_eq!(answered_by(&limiter), LOCAL);
        limiter.primary().set(UP);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(
            answered_by(&limiter),
            PRIMARY,
            "the probe reached the primary"
        );
        assert!(!limiter.is_open());
        assert_eq!(answered_by(&limiter), PRIMARY);
        assert_eq!(limiter.primary().calls(), 3);
    }

    #[test]
    fn a_failed_probe_waits_another_interval() {
        let limiter = fallback(DOWN, OnError::Local, Duration::from_millis(20));
        assert_eq!(answered_by(&limiter), LOCAL);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(answered_by(&limiter), LOCAL, "the probe failed");
        assert_eq!(limiter.primary().calls(), 2);
        assert!(limiter.is_open());
        limiter.primary().set(UP);
        assert_eq!(
            answered_by(&limiter),
            LOCAL,
            "no probe before the next interval"
        );
        assert_eq!(limiter.primary().calls(), 2);
        assert_eq!(limiter.primary_errors(), 2);
    }

    #[test]
    fn one_probe_at_a_time_and_a_dropped_probe_releases_it() {
        let limiter = fallback(DOWN, OnError::Local, Duration::ZERO);
        assert_eq!(answered_by(&limiter), LOCAL);
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
            assert_eq!(answered_by(&limiter), LOCAL);
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

    #[test]
    fn fail_open_admits_as_a_full_bucket_would() {
        let limiter = fallback(DOWN, OnError::FailOpen, Duration::from_secs(3600));
        for _ in 0..2 {
            let decision = block_on(limiter.acquire("id", &policy(), 3)).unwrap();
            assert!(decision.allowed);
            assert_eq!((decision.limit, decision.remaining), (5, 2));
            assert_eq!(decision.retry_after_us, Some(0));
        }
        let never = block_on(limiter.acquire("id", &policy(), 6)).unwrap();
        assert!(!never.allowed);
        assert_eq!(never.retry_after_us, None);
        assert_eq!(limiter.local().calls(), 0);
    }

    #[test]
    fn fail_closed_is_unavailable() {
        let limiter = fallback(DOWN, OnError::FailClosed, Duration::from_secs(3600));
        for _ in 0..2 {
            let error = block_on(limiter.acquire("id", &policy(), 1)).unwrap_err();
            assert!(matches!(error, LimiterError::Unavailable(_)), "{error:?}");
        }
        assert_eq!(limiter.fallback_decisions(), 2);
        assert_eq!(limiter.local().calls(), 0);
    }

    #[test]
    fn errors_that_are_not_transient_pass_through() {
        let limiter = fallback(BROKEN, OnError::Local, Duration::from_secs(3600));
        let error = block_on(limiter.acquire("id", &policy(), 1)).unwrap_err();
        assert!(matches!(error, LimiterError::Unexpected(_)), "{error:?}");
        assert!(!limiter.is_open());
        assert_eq!(
            (limiter.local().calls(), limiter.fallback_decisions()),
            (0, 0)
        );
    }
}
