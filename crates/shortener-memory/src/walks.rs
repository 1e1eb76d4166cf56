//! Walks of the index for what is not found by key: the links to a target (for
//! find-if-exists: memory storage keeps no index by target) and a domain's crawlable
//! codes.

use std::sync::PoisonError;

use shortener_core::{Domain, Owner, ShortCode};

use crate::MemoryRepository;

impl MemoryRepository {
    /// The links of [`shortener_core::LinkRepository::links_to`]: a walk of the index,
    /// newest first, since memory storage keeps no index by target.
    pub(crate) fn walk_to(
        &self,
        domain: &shortener_core::Domain,
        owner: Option<&Owner>,
        url: &shortener_core::TargetUrl,
        limit: usize,
    ) -> Vec<shortener_core::Link> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        (index.iter().rev())
            .filter(|at| at.2 == *domain)
            .filter_map(|at| self.at(at))
            .filter(|link| link.owner.as_ref() == owner && link.url == *url)
            .take(limit)
            .collect()
    }

    /// The codes of [`shortener_core::LinkRepository::crawlable`], in code order.
    pub(crate) fn walk_crawlable(&self, domain: &Domain, limit: usize) -> Vec<ShortCode> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let mut codes: Vec<ShortCode> = (index.iter())
            .filter(|at| at.2 == *domain)
            .filter(|at| self.at(at).is_some_and(|link| link.options.crawlable))
            .map(|(_, code, _)| code.clone())
            .collect();
        codes.sort_unstable();
        codes.truncate(limit);
        codes
    }
}
