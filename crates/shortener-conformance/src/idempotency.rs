//! Scenarios of idempotency keys for any [`LinkRepository`].

use std::time::Duration;

use shortener_core::{
    Claim, ClaimRequest, IDEMPOTENCY_TTL, IdempotencyKey, LinkRepository, StoredResponse,
};
use time::OffsetDateTime;

use crate::repository::{now_micros, random_code};
use shortener_testkit::concurrently;

const LEASE: Duration = Duration::from_secs(60);

/// A key is claimed once; while it runs it is in flight; its answer is replayed for the
/// same body and refused for another; a released key can be claimed again.
pub async fn idempotency_claim_complete_replay(repo: &impl LinkRepository) {
    let key = random_key();
    let now = now_micros();
    let first = claim(&key, "body-a", now);
    assert_eq!(
        repo.claim_idempotency(&first).await.expect("claim"),
        Claim::Claimed
    );
    assert_eq!(
        repo.claim_idempotency(&first).await.expect("claim"),
        Claim::InFlight
    );
    assert_eq!(
        repo.claim_idempotency(&claim(&key, "body-b", now))
            .await
            .expect("claim"),
        Claim::Mismatch
    );
    let answer = StoredResponse {
        status: 201,
        body: r#"{"code":"abc"}"#.to_owned(),
    };
    repo.complete_idempotency(&key, &answer)
        .await
        .expect("complete");
    assert_eq!(
        repo.claim_idempotency(&first).await.expect("claim"),
        Claim::Replay(answer.clone())
    );
    // Releasing an answered key keeps the answer: only unfinished claims are given up.
    repo.release_idempotency(&key).await.expect("release");
    assert_eq!(
        repo.claim_idempotency(&first).await.expect("claim"),
        Claim::Replay(answer)
    );

    let other = random_key();
    let request = claim(&other, "body", now);
    assert_eq!(
        repo.claim_idempotency(&request).await.expect("claim"),
        Claim::Claimed
    );
    repo.release_idempotency(&other).await.expect("release");
    assert_eq!(
        repo.claim_idempotency(&request).await.expect("claim"),
        Claim::Claimed,
        "a released key runs again"
    );
}

/// An unfinished claim older than the lease is taken over; a record older than a day is
/// gone, answered or not, and purged.
pub async fn idempotency_leases_and_expiry(repo: &impl LinkRepository) {
    let now = now_micros();
    let (stuck, old) = (random_key(), random_key());
    let start = now - time::Duration::seconds(61);
    assert_eq!(
        repo.claim_idempotency(&claim(&stuck, "x", start))
            .await
            .expect("claim"),
        Claim::Claimed
    );
    assert_eq!(
        repo.claim_idempotency(&claim(&stuck, "x", now))
            .await
            .expect("claim"),
        Claim::Claimed,
        "a claim past its lease is taken over"
    );
    let long_ago = now - IDEMPOTENCY_TTL - time::Duration::seconds(1);
    repo.claim_idempotency(&claim(&old, "x", long_ago))
        .await
        .expect("claim");
    let answer = StoredResponse {
        status: 201,
        body: "{}".to_owned(),
    };
    repo.complete_idempotency(&old, &answer)
        .await
        .expect("complete");
    assert!(
        repo.purge_idempotency(now - IDEMPOTENCY_TTL)
            .await
            .expect("purge")
            >= 1
    );
    assert_eq!(
        repo.claim_idempotency(&claim(&old, "y", now))
            .await
            .expect("claim"),
        Claim::Claimed,
        "an expired key is new again, whatever its old body"
    );
}

/// Of 20 concurrent claims of one key, exactly one is `Claimed`.
pub async fn concurrent_claims_of_one_key_admit_one(repo: &impl LinkRepository) {
    let key = random_key();
    let now = now_micros();
    let outcomes = concurrently(20, |_| {
        let request = claim(&key, "same", now);
        async move { repo.claim_idempotency(&request).await }
    })
    .await;
    let claimed = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Ok(Claim::Claimed)))
        .count();
    assert_eq!(claimed, 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|outcome| matches!(outcome, Ok(Claim::Claimed | Claim::InFlight))),
        "{outcomes:?}"
    );
}

fn random_key() -> IdempotencyKey {
    IdempotencyKey {
        scope: format!("key-{}", random_code()),
        key: random_code().to_string(),
    }
}

fn claim(key: &IdempotencyKey, fingerprint: &str, now: OffsetDateTime) -> ClaimRequest {
    ClaimRequest {
        key: key.clone(),
        fingerprint: fingerprint.to_owned(),
        now,
        lease: LEASE,
    }
}
