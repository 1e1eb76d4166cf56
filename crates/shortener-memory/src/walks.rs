//! Walks of the index for what is not found by key: listings and their counts, tag
//! renames and deletes, the links to a target (for find-if-exists: memory storage keeps no index by target) and a
//! domain's crawlable codes.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::PoisonError;

use shortener_core::{
    Access, Domain, Link, LinkKey, ListOrder, ListQuery, ListTotals, Owner, ShortCode, Tag,
    TagCount, Tags,
};

use crate::MemoryRepository;
use crate::repository::Position;

impl MemoryRepository {
    /// The page of [`shortener_core::LinkRepository::list`]: in the query's order from
    /// the cursor, the offset's links skipped.
    pub(crate) fn walk_page(&self, access: Access<'_>, query: &ListQuery) -> Vec<Link> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let upper = match &query.after {
            Some(after) => {
                Bound::Excluded((after.created_at, after.code.clone(), after.domain.clone()))
            }
            None => Bound::Unbounded,
        };
        let matching = (index.range((Bound::Unbounded, upper)).rev())
            .filter_map(|at| self.at(at))
            .filter(|link| access.reaches(link.owner.as_ref()) && query.matches(link));
        if query.order == ListOrder::Newest {
            // The index's own order: the walk stops at the page's end.
            return matching.skip(query.offset).take(query.limit).collect();
        }
        let mut links: Vec<Link> = matching.collect();
        links.sort_by(|a, b| query.order.compare(a, b));
        links
            .into_iter()
            .skip(query.offset)
            .take(query.limit)
            .collect()
    }

    /// The totals of [`shortener_core::LinkRepository::count`].
    pub(crate) fn walk_count(&self, access: Access<'_>, query: &ListQuery) -> ListTotals {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        (index.iter())
            .filter_map(|at| self.with_bots(at))
            .filter(|(link, _)| access.reaches(link.owner.as_ref()) && query.matches(link))
            .fold(ListTotals::default(), |totals, (link, bots)| ListTotals {
                links: totals.links + 1,
                visits: totals.visits.saturating_add(link.visits),
                bots: totals.bots.saturating_add(bots),
            })
    }

    /// The counts of [`shortener_core::LinkRepository::tags`], in tag order.
    pub(crate) fn walk_tags(&self, access: Access<'_>) -> Vec<TagCount> {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let mut counts: BTreeMap<Tag, TagCount> = BTreeMap::new();
        for (link, bots) in index.iter().filter_map(|at| self.with_bots(at)) {
            if !access.reaches(link.owner.as_ref()) {
                continue;
            }
            for tag in link.tags.as_slice() {
                let count = counts.entry(tag.clone()).or_insert_with(|| TagCount {
                    tag: tag.clone(),
                    links: 0,
                    visits: 0,
                    bots: 0,
                });
                count.links += 1;
                count.visits = count.visits.saturating_add(link.visits);
                count.bots = count.bots.saturating_add(bots);
            }
        }
        counts.into_values().collect()
    }

    /// The link at a place of the index, and its visits by bots in all.
    fn with_bots(&self, (_, code, domain): &Position) -> Option<(Link, u64)> {
        let key = LinkKey::new(domain.clone(), code.clone());
        let shard = self.read(&key);
        let stored = shard.get(&key)?;
        let bots = stored.days.values().map(|(_, bots)| bots).sum();
        Some((stored.link.clone(), bots))
    }

    /// Gives every link within `access` the tags `change` makes of its own, where it
    /// makes any; how many links changed.
    pub(crate) fn retag(&self, access: Access<'_>, change: impl Fn(&Tags) -> Option<Tags>) -> u64 {
        let index = self.index.read().unwrap_or_else(PoisonError::into_inner);
        let mut changed = 0;
        for (_, code, domain) in index.iter() {
            let key = LinkKey::new(domain.clone(), code.clone());
            let mut shard = self.write(&key);
            if let Some(stored) = shard.get_mut(&key)
                && access.reaches(stored.link.owner.as_ref())
                && let Some(tags) = change(&stored.link.tags)
            {
                stored.link.tags = tags;
                changed += 1;
            }
        }
        changed
    }

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
