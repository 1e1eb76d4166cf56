//! The `LinkRepository` port.

use crate::cause::Cause;
use std::future::Future;
use std::sync::Arc;

use time::{Date, OffsetDateTime};

use crate::dimensions::{DimensionTally, TopQuery, ValueCount};
use crate::domain::{Owner, ShortCode, TargetUrl};
use crate::idempotency::{Claim, ClaimRequest, IdempotencyKey, StoredResponse};
use crate::key::{Domain, LinkKey};
use crate::link::{Link, NewLink};
use crate::manage::{Access, DayVisits, LinkPatch, ListQuery, ListTotals, VisitTally};
use crate::redirect::Redirect;
use crate::tags::{Tag, TagCount};

/// A storage failure that no operation can do anything about but report. Its text says
/// its cause; it has no `source()` (see [`Cause`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepositoryError {
    /// The store cannot be reached now (connection lost, pool timed out, shutting
    /// down); the request may succeed if retried later. Answered with 503.
    #[error("storage unavailable: {0}")]
    Unavailable(Cause),
    /// The store has no space left (a full disk, or a size limit of the database):
    /// writes fail until space is freed, while reads go on and nothing stored is
    /// harmed. Answered with 503.
    #[error("storage full: {0}")]
    Full(Cause),
    /// Anything else: a bug, a corrupt row, a schema mismatch. Answered with 500.
    #[error("unexpected storage error: {0}")]
    Unexpected(Cause),
}

impl RepositoryError {
    /// What the store said.
    pub fn cause(&self) -> &Cause {
        match self {
            Self::Unavailable(cause) | Self::Full(cause) | Self::Unexpected(cause) => cause,
        }
    }
}

/// Why an insert did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InsertError {
    /// A link with this code exists; nothing was written or overwritten.
    #[error("code is taken")]
    CodeTaken,
    #[error(transparent)]
    Storage(#[from] RepositoryError),
}

/// The result of counting one visit of a link that has `max_visits`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VisitOutcome {
    /// The visit was counted; the link as it is after counting.
    Counted(Arc<Link>),
    /// The link has used all its visits; nothing was counted.
    Exhausted,
    /// The link expired; nothing was counted.
    Expired,
    /// No such link.
    NotFound,
}

/// Where links live. Every method is one atomic operation on the store.
pub trait LinkRepository: Send + Sync + 'static {
    /// Inserts a new link, never overwriting an existing one.
    ///
    /// # Errors
    /// [`InsertError::CodeTaken`] when the code exists on the link's domain (adapters map their unique
    /// violation to it), [`InsertError::Storage`] otherwise.
    fn insert(&self, link: NewLink) -> impl Future<Output = Result<Link, InsertError>> + Send;

    /// Inserts many new links, in one transaction where the store has them (one commit
    /// for the lot: what makes an import fast). Each link comes back in order as
    /// [`LinkRepository::insert`] would answer it: the stored link, or
    /// [`InsertError::CodeTaken`] (that one is not written; the others are). A key (domain
    /// and code) twice in `links` is taken the second time.
    ///
    /// The default inserts one by one, for stores without transactions.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails: in a transaction nothing of the batch is
    /// written then; one by one, the links before the failure stay.
    fn insert_many(
        &self,
        links: Vec<NewLink>,
    ) -> impl Future<Output = Result<Vec<Result<Link, InsertError>>, RepositoryError>> + Send {
        async move {
            let mut results = Vec::with_capacity(links.len());
            for link in links {
                match self.insert(link).await {
                    Err(InsertError::Storage(error)) => return Err(error),
                    result => results.push(result),
                }
            }
            Ok(results)
        }
    }

    /// The link with this domain and code, if any.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn get(
        &self,
        key: &LinkKey,
    ) -> impl Future<Output = Result<Option<Link>, RepositoryError>> + Send;

    /// As [`LinkRepository::get`], as a redirect reads it: a cache answers with the
    /// [`Redirect`] it holds, without copying the link; the default converts `get`'s
    /// answer.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn get_redirect(
        &self,
        key: &LinkKey,
    ) -> impl Future<Output = Result<Option<Redirect>, RepositoryError>> + Send {
        async move { Ok(self.get(key).await?.map(Redirect::from)) }
    }

    /// The links of many keys at once, each in order as [`LinkRepository::get`] would
    /// answer it (a key twice is answered twice): one query where the store can (what
    /// makes a rerun of an import fast).
    ///
    /// The default looks them up one by one.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn get_many(
        &self,
        keys: &[LinkKey],
    ) -> impl Future<Output = Result<Vec<Option<Link>>, RepositoryError>> + Send {
        async move {
            let mut links = Vec::with_capacity(keys.len());
            for key in keys {
                links.push(self.get(key).await?);
            }
            Ok(links)
        }
    }

    /// As [`LinkRepository::get`], read from the store itself: a cache in front of it
    /// answers this from its inner repository (for the visit counts, which a cache lets
    /// lag). Every repository that is not a cache reads the store in `get` already.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn get_fresh(
        &self,
        key: &LinkKey,
    ) -> impl Future<Output = Result<Option<Link>, RepositoryError>> + Send {
        self.get(key)
    }

    /// Deletes a link within `access`, with its visit statistics; `true` when there
    /// was one (a link out of reach is not there).
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn delete(
        &self,
        key: &LinkKey,
        access: Access<'_>,
    ) -> impl Future<Output = Result<bool, RepositoryError>> + Send;

    /// Applies `patch` to a link within `access`, atomically; the link as it is after,
    /// or `None` when there is no such link within reach. Visits are left as they are.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails; nothing changed then.
    fn update(
        &self,
        key: &LinkKey,
        access: Access<'_>,
        patch: &LinkPatch,
    ) -> impl Future<Output = Result<Option<Link>, RepositoryError>> + Send;

    /// One page of the links within `access` that match `query.search` and have every
    /// tag of `query.tags`, newest first
    /// (`created_at` descending, then `code` descending), strictly after `query.after`,
    /// the first `query.offset` of those skipped, at most `query.limit` of them.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn list(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> impl Future<Output = Result<Vec<Link>, RepositoryError>> + Send;

    /// How many links within `access` [`ListQuery::matches`], wherever `query.after`,
    /// `query.offset` and `query.limit` would start or end a page (the total of a listing
    /// paged by number), and their visits in all.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn count(
        &self,
        access: Access<'_>,
        query: &ListQuery,
    ) -> impl Future<Output = Result<ListTotals, RepositoryError>> + Send;

    /// The tags of the links within `access`, in order, each with how many of those links
    /// have it and their visits in all (as of the last flush).
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn tags(
        &self,
        access: Access<'_>,
    ) -> impl Future<Output = Result<Vec<TagCount>, RepositoryError>> + Send;

    /// Renames the tag `from` to `to` on every link within `access` that has it (a link
    /// that has both keeps one); how many links changed. The tags stay in order.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails; then no link changed.
    fn rename_tag(
        &self,
        access: Access<'_>,
        from: &Tag,
        to: &Tag,
    ) -> impl Future<Output = Result<u64, RepositoryError>> + Send;

    /// Takes `tag` off every link within `access` that has it; how many links changed.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails; then no link changed.
    fn delete_tag(
        &self,
        access: Access<'_>,
        tag: &Tag,
    ) -> impl Future<Output = Result<u64, RepositoryError>> + Send;

    /// The links on `domain` of `owner` (`None`: the links nobody owns) whose target is
    /// `url`, newest first, at most `limit` of them: where a create with find-if-exists
    /// looks for the link it would make. Indexed by target in the database adapters.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn links_to(
        &self,
        domain: &Domain,
        owner: Option<&Owner>,
        url: &TargetUrl,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<Link>, RepositoryError>> + Send;

    /// The codes of `domain`'s links marked crawlable, in code order, at most `limit` of
    /// them (what that domain's `/robots.txt` lets crawlers follow).
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn crawlable(
        &self,
        domain: &Domain,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<ShortCode>, RepositoryError>> + Send;

    /// Counts one visit of a link, atomically with the check that it is not expired at
    /// `now` and has visits left: of concurrent calls on a link with `max_visits = n`,
    /// exactly `n` (in all) are ever [`VisitOutcome::Counted`].
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails; nothing was counted then.
    fn record_visit(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
    ) -> impl Future<Output = Result<VisitOutcome, RepositoryError>> + Send;

    /// Adds the visits counted in memory since the last flush: to each day's row of the
    /// link's statistics (created on its first visit), and people's visits to the total
    /// of links without `max_visits`. Unknown links are skipped. A flush lists each
    /// link once per day, and adapters that lock rows lock them in key order, so that
    /// flushes of several nodes never deadlock.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails; then none of the counts were added.
    fn add_visits(
        &self,
        visits: &[VisitTally],
    ) -> impl Future<Output = Result<(), RepositoryError>> + Send;

    /// A link's visits per UTC day from `from` to `to`, both included, oldest first;
    /// days without visits are left out.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn visits_by_day(
        &self,
        key: &LinkKey,
        from: Date,
        to: Date,
    ) -> impl Future<Output = Result<Vec<DayVisits>, RepositoryError>> + Send;

    /// Adds the visits per dimension value counted in memory since the last flush, each
    /// to its (link, day, dimension, value) row, created on its first count. A value not
    /// stored yet for its link, day and dimension is stored as `other` once
    /// `top_values` values are stored there ([`crate::dimensions::placed`] decides), so
    /// storage per link and day stays bounded whatever visitors send. Unknown links are
    /// skipped.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails; then none of the counts were added.
    fn add_dimensions(
        &self,
        tallies: &[DimensionTally],
        top_values: usize,
    ) -> impl Future<Output = Result<(), RepositoryError>> + Send;

    /// The most frequent values of a dimension from `from` to `to` (both included), for
    /// one link or every link within reach, ordered as [`crate::dimensions::top`]
    /// orders them.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn top_values(
        &self,
        query: &TopQuery<'_>,
    ) -> impl Future<Output = Result<Vec<ValueCount>, RepositoryError>> + Send;

    /// Claims an idempotency key for a request, atomically across every node: the
    /// first claim of a key (or of a key whose record expired) is
    /// [`Claim::Claimed`]; a later one finds the first one's state. A claim not
    /// completed within `request.lease` may be taken over.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn claim_idempotency(
        &self,
        request: &ClaimRequest,
    ) -> impl Future<Output = Result<Claim, RepositoryError>> + Send;

    /// Stores the answer of a claimed key for replays.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn complete_idempotency(
        &self,
        key: &IdempotencyKey,
        response: &StoredResponse,
    ) -> impl Future<Output = Result<(), RepositoryError>> + Send;

    /// Gives up a claimed key whose request failed without an answer worth replaying,
    /// so that a retry runs again.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn release_idempotency(
        &self,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<(), RepositoryError>> + Send;

    /// Deletes idempotency records made before `before`; how many.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn purge_idempotency(
        &self,
        before: OffsetDateTime,
    ) -> impl Future<Output = Result<u64, RepositoryError>> + Send;

    /// Whether the store answers now (for `/readyz`).
    ///
    /// # Errors
    /// [`RepositoryError`] when it does not.
    fn health(&self) -> impl Future<Output = Result<(), RepositoryError>> + Send;
}
