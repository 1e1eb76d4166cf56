//! Idempotent creates: the records that let a retried request get its first answer.
//!
//! A client sends an `Idempotency-Key`; the first request with it claims the key, runs,
//! and stores its answer; a later request with the same key and the same body gets that
//! answer again; another body is a mismatch; a request while the first still runs finds
//! it in flight. Records live in the repository, so the rule holds across nodes and
//! restarts.

use std::time::Duration;

use time::OffsetDateTime;

/// How long an answer is kept for replays.
pub const IDEMPOTENCY_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// One idempotency key, within the space of whoever sent it: the API key's name, or the
/// anonymous client's identity, so that two clients never share keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    pub scope: String,
    pub key: String,
}

/// What a request with a key finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is this request's now: run it, then complete or release the key.
    Claimed,
    /// A request with this key and body is still running (or its node died less than a
    /// lease ago).
    InFlight,
    /// The key was used with another body.
    Mismatch,
    /// The key's request finished: this is its answer.
    Replay(StoredResponse),
}

/// An answer kept for replays: its status and JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub body: String,
}

/// A request to claim a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRequest {
    pub key: IdempotencyKey,
    /// A digest of the request body (and whatever else makes two requests the same).
    pub fingerprint: String,
    pub now: OffsetDateTime,
    /// An unfinished claim older than this is taken over: its node died.
    pub lease: Duration,
}

impl ClaimRequest {
    /// Claims made before this are gone, finished or not.
    pub fn expired_before(&self) -> OffsetDateTime {
        self.now - IDEMPOTENCY_TTL
    }

    /// Unfinished claims made before this may be taken over.
    pub fn lease_before(&self) -> OffsetDateTime {
        self.now - self.lease
    }
}
