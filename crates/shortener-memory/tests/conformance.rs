//! The port stories of `shortener-conformance`, run on the memory adapters.

use shortener_core::Algorithm;
use shortener_memory::{MemoryRateLimiter, MemoryRepository};

async fn make_repository() -> MemoryRepository {
    MemoryRepository::default()
}

async fn make_limiter(algorithm: Algorithm) -> MemoryRateLimiter {
    MemoryRateLimiter::new(algorithm)
}

shortener_conformance::link_repository_tests!(make_repository);
shortener_conformance::rate_limiter_tests!(make_limiter);
