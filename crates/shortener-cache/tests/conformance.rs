//! The repository story of `shortener-conformance`, through the cache and with it off.

use std::time::Duration;

use shortener_cache::{CacheConfig, CachedRepository};
use shortener_memory::MemoryRepository;

async fn make() -> CachedRepository<MemoryRepository> {
    let config = CacheConfig {
        capacity: 10_000,
        ttl: Duration::from_secs(3600),
        negative_ttl: Duration::from_secs(3600),
    };
    CachedRepository::new(MemoryRepository::default(), config)
}

shortener_conformance::link_repository_tests!(make);

mod without_cache {
    use super::*;

    async fn make_uncached() -> CachedRepository<MemoryRepository> {
        let config = CacheConfig {
            capacity: 0,
            ..CacheConfig::default()
        };
        CachedRepository::new(MemoryRepository::default(), config)
    }

    shortener_conformance::link_repository_tests!(make_uncached);
}
