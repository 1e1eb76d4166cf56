//! A repository for the cache's tests: memory storage that counts its reads and can hold
//! their answers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use shortener_core::{Link, LinkKey, LinkRepository, RepositoryError};
use shortener_memory::MemoryRepository;

/// A memory repository that counts its reads, each of which takes a while after it has
/// read, so that concurrent misses really overlap. A test holding `answers` for writing
/// keeps every read that has read from answering.
#[derive(Debug, Default)]
pub struct CountingRepository {
    pub links: MemoryRepository,
    gets: AtomicU64,
    pub answers: tokio::sync::RwLock<()>,
}

impl CountingRepository {
    pub fn gets(&self) -> u64 {
        self.gets.load(Ordering::SeqCst)
    }
}

impl LinkRepository for CountingRepository {
    async fn get(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        let link = self.links.get(key).await;
        self.gets.fetch_add(1, Ordering::SeqCst);
        drop(self.answers.read().await);
        tokio::time::sleep(Duration::from_millis(20)).await;
        link
    }

    shortener_core::forward_link_repository!(self.links => insert, delete, update, list, count, tags, rename_tag, delete_tag,
        crawlable, links_to, record_visit, add_visits, add_dimensions, top_values, visits_by_day,
        claim_idempotency, complete_idempotency, release_idempotency, purge_idempotency, health);
}
