//! The `LinkRepository` port.

use std::future::Future;

use time::OffsetDateTime;

use crate::domain::{Link, NewLink, ShortCode};

/// A storage failure that no operation can do anything about but report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RepositoryError {
    /// The store cannot be reached now (connection lost, pool timed out, shutting
    /// down); the request may succeed if retried later. Answered with 503.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The store has no space left (a full disk, or a size limit of the database):
    /// writes fail until space is freed, while reads go on and nothing stored is
    /// harmed. Answered with 503.
    #[error("storage full: {0}")]
    Full(String),
    /// Anything else: a bug, a corrupt row, a schema mismatch. Answered with 500.
    #[error("unexpected storage error: {0}")]
    Unexpected(String),
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
    Counted(Link),
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
    /// [`InsertError::CodeTaken`] when the code exists (adapters map their unique
    /// violation to it), [`InsertError::Storage`] otherwise.
    fn insert(&self, link: NewLink) -> impl Future<Output = Result<Link, InsertError>> + Send;

    /// The link with this code, if any.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn get(
        &self,
        code: &ShortCode,
    ) -> impl Future<Output = Result<Option<Link>, RepositoryError>> + Send;

    /// As [`LinkRepository::get`], read from the store itself: a cache in front of it
    /// answers this from its inner repository (for the visit counts, which a cache lets
    /// lag). Every repository that is not a cache reads the store in `get` already.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn get_fresh(
        &self,
        code: &ShortCode,
    ) -> impl Future<Output = Result<Option<Link>, RepositoryError>> + Send {
        self.get(code)
    }

    /// Deletes a link; `true` when there was one.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    fn delete(
        &self,
        code: &ShortCode,
    ) -> impl Future<Output = Result<bool, RepositoryError>> + Send;

    /// Counts one visit of a link, atomically with the check that it is not expired at
    /// `now` and has visits left: of concurrent calls on a link with `max_visits = n`,
    /// exactly `n` (in all) are ever [`VisitOutcome::Counted`].
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails; nothing was counted then.
    fn record_visit(
        &self,
        code: &ShortCode,
        now: OffsetDateTime,
    ) -> impl Future<Output = Result<VisitOutcome, RepositoryError>> + Send;

    /// Adds batched visit counts to links (those without `max_visits`); unknown codes
    /// are skipped.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails; then none of the counts were added.
    fn add_visits(
        &self,
        visits: &[(ShortCode, u64)],
    ) -> impl Future<Output = Result<(), RepositoryError>> + Send;

    /// Whether the store answers now (for `/readyz`).
    ///
    /// # Errors
    /// [`RepositoryError`] when it does not.
    fn health(&self) -> impl Future<Output = Result<(), RepositoryError>> + Send;
}
