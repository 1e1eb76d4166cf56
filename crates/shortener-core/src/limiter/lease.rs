//! [`Lease`]: the terms on which a node may take tokens from a shared bucket ahead of
//! demand and admit from them in memory, without a backend round trip per request.
//!
//! A node that leases takes up to `tokens` from the shared bucket in one call and admits
//! later requests from what it took, until the lease is used up or `lifetime_us` has
//! passed since the call was sent; tokens left when it ends are dropped, never returned.
//!
//! The bound still holds for any number of nodes, because the shared bucket of a leased
//! policy is smaller than the policy by the refill of one lifetime (the *reserve*). Every
//! token admitted in a window `[t, t + T]` was taken from the shared bucket in
//! `[t - lifetime, t + T]`, and a bucket of `capacity - reserve` gives out at most
//! `capacity - reserve + refill * (T + lifetime)` in that longer window, which is at most
//! `capacity + refill * T`.
//!
//! The price is admitting a little less than the policy: the reserve, and tokens a node
//! holds but does not use before its lease ends. A lease is therefore kept small against
//! the policy: the reserve and one lease together at most 2% of the capacity
//! ([`MAX_LEASE_SHARE`]), so that while demand exceeds the quota, admission stays within
//! 2% of the bound (with several nodes, each may hold one lease it does not use).

/// The reserve and one lease together are at most `capacity / MAX_LEASE_SHARE`.
pub const MAX_LEASE_SHARE: u64 = 50;

/// How a node leases tokens of one policy from the shared bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lease {
    tokens: u64,
    lifetime_us: u64,
    reserve: u64,
}

/// Why lease terms were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseError {
    #[error("lease must be at least 1 token")]
    Tokens,
    #[error("lease_ms must be between 1 and 10000")]
    Lifetime,
    #[error(
        "lease and the refill of lease_ms are {needed} tokens together, more than 2% of \
         the capacity ({allowed}): lease less, or lease for less time"
    )]
    TooLarge { needed: u64, allowed: u64 },
}

impl Lease {
    /// Terms for a policy of `capacity` tokens refilled one per `interval_us`: leases of
    /// up to `tokens`, each valid for `lifetime_us` after its call is sent.
    ///
    /// # Errors
    /// [`LeaseError`] when `tokens` is 0, the lifetime is not between 1 ms and 10 s, or the
    /// lease and its reserve exceed [`MAX_LEASE_SHARE`]'s share of the capacity.
    pub fn new(
        capacity: u64,
        interval_us: u64,
        tokens: u64,
        lifetime_us: u64,
    ) -> Result<Self, LeaseError> {
        if tokens == 0 {
            return Err(LeaseError::Tokens);
        }
        if !(1_000..=10_000_000).contains(&lifetime_us) {
            return Err(LeaseError::Lifetime);
        }
        let reserve = lifetime_us.div_ceil(interval_us.max(1));
        let needed = reserve.saturating_add(tokens);
        let allowed = capacity / MAX_LEASE_SHARE;
        if needed > allowed {
            return Err(LeaseError::TooLarge { needed, allowed });
        }
        Ok(Self {
            tokens,
            lifetime_us,
            reserve,
        })
    }

    /// Most tokens one call takes for the lease.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// How long a lease may be used, counted from before its call is sent.
    pub fn lifetime_us(&self) -> u64 {
        self.lifetime_us
    }

    /// Tokens the shared bucket holds less than the policy: the refill of one lifetime.
    pub fn reserve(&self) -> u64 {
        self.reserve
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_one_lifetime_of_refill_and_stays_within_the_share() {
        // 50 000 tokens a second (20 µs each) for 100 ms: 5 000 tokens.
        let lease = Lease::new(1_000_000, 20, 1_000, 100_000).unwrap();
        assert_eq!(lease.reserve(), 5_000);
        // Rounded up: 1 ms at one token every 3 ms still reserves a token.
        assert_eq!(Lease::new(1_000, 3_000, 1, 1_000).unwrap().reserve(), 1);
        assert_eq!(
            Lease::new(1_000, 20, 16, 100_000),
            Err(LeaseError::TooLarge {
                needed: 5_016,
                allowed: 20
            })
        );
        assert_eq!(Lease::new(1_000, 20, 0, 100_000), Err(LeaseError::Tokens));
        assert_eq!(Lease::new(1_000, 20, 1, 999), Err(LeaseError::Lifetime));
    }
}
