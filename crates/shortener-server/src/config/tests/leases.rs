//! Lease terms of a policy: taken within 2% of the capacity on Redis, refused otherwise.

// figment's `Jail` closures return `figment::Result`, whose error is large; the type is the API's.
#![allow(clippy::result_large_err)]

use figment::Jail;

use super::{load_in, refused_naming_the_key};

#[test]
fn a_lease_within_two_percent_of_the_capacity_is_taken() {
    Jail::expect_with(|jail| {
        // 100 ms of refill at 100/s (10 tokens) plus a lease of 10: 20, 2% of 1 000.
        let config = load_in(
            jail,
            "[limiter]\nkind = \"redis\"\n[limiter.policies.redirect]\ncapacity = 1000\nrefill_per_sec = 100\nlease = 10",
        )
        .unwrap();
        let policy = config.policies.get(None, "redirect").unwrap();
        let lease = policy.lease().unwrap();
        assert_eq!(
            (lease.tokens(), lease.lifetime_us(), lease.reserve()),
            (10, 100_000, 10)
        );
        assert_eq!(policy.shared().capacity(), 990);
        assert_eq!(policy.capacity(), 1000);
        Ok(())
    });
}

#[test]
fn bad_lease_terms_name_the_key() {
    Jail::expect_with(|jail| {
        let cases = [
            (
                "[limiter.policies.redirect]\ncapacity = 1000\nrefill_per_sec = 100\nlease = 5",
                "limiter.policies.redirect.lease",
            ),
            (
                "[limiter]\nkind = \"redis\"\n[limiter.policies.redirect]\ncapacity = 1000\nrefill_per_sec = 100\nlease = 11",
                "limiter.policies.redirect.lease",
            ),
            (
                "[limiter]\nkind = \"redis\"\n[limiter.policies.redirect]\ncapacity = 1000\nrefill_per_sec = 100\nlease_ms = 10",
                "limiter.policies.redirect.lease_ms",
            ),
            (
                "[limiter]\nkind = \"redis\"\n[limiter.policies.unlock]\ncapacity = 1000\nrefill_per_sec = 1\nlease = 1",
                "limiter.policies.unlock.lease",
            ),
        ];
        refused_naming_the_key(jail, &cases);
        Ok(())
    });
}
