//! The `Shortener` service: the use cases, over any repository and code generator.

use time::OffsetDateTime;

use crate::codes::CodeGenerator;
use crate::dimensions::Dimension;
use crate::domain::{Alias, Owner, TargetUrl};
use crate::key::{Domain, LinkKey};
use crate::link::{Link, NewLink};
use crate::manage::{Access, LinkPatch};
use crate::options::{LinkOptions, PasswordHash};
use crate::redirect::Redirect;
use crate::repository::{InsertError, LinkRepository, RepositoryError, VisitOutcome};
use crate::tags::Tags;
use crate::visits::{VisitBuffer, Visitor};

/// How many fresh codes a create tries before giving up. With 62^7 codes, needing more
/// than one means the code space is nearly full, and the operator must lengthen codes.
const CODE_ATTEMPTS: usize = 8;

/// Most links whose pending visits one write carries: a flush after traffic spread over
/// a million links writes them in batches, so that neither the tallies in memory nor the
/// statement grow with the number of links (nor the process's memory after the burst).
const FLUSH_BATCH: usize = 1000;

/// Most links whose values one write carries. A link's values are several rows (a row
/// per day, dimension and value), read against what is stored and placed under the cap
/// while the write lock is held: on SQLite 1 000 links held it 15 to 28 ms, and creates
/// waited behind each batch; 250 hold it a few ms.
const VALUES_FLUSH_BATCH: usize = 250;

/// How many batches of `batch` links a flush writes at most: enough for the links
/// pending when it starts. Visits that arrive while it writes wait for the next flush
/// rather than keep this one going.
fn batches(pending_links: usize, batch: usize) -> usize {
    pending_links.div_ceil(batch)
}

/// A validated create request.
#[derive(Debug, Clone)]
pub struct CreateLink {
    /// The domain the link is served on (its code is unique there).
    pub domain: Domain,
    pub url: TargetUrl,
    pub alias: Option<Alias>,
    pub expires_at: Option<OffsetDateTime>,
    pub max_visits: Option<u64>,
    /// The API key making the link; `None` for an anonymous create.
    pub owner: Option<Owner>,
    pub tags: Tags,
    pub options: LinkOptions,
}

/// Why a create failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreateError {
    #[error("alias is taken")]
    AliasTaken,
    #[error("expires_at is not in the future")]
    ExpiryNotInFuture,
    #[error("max_visits must be at least 1")]
    ZeroMaxVisits,
    /// Every generated code collided: the code space is (nearly) full.
    #[error("no free code found after {CODE_ATTEMPTS} attempts")]
    NoFreeCode,
    #[error(transparent)]
    Storage(#[from] RepositoryError),
}

/// Why a code does not resolve to a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("no link with this code")]
    NotFound,
    /// The link has expired; its `expired_url`, if it has one.
    #[error("the link has expired")]
    Expired(Option<TargetUrl>),
    /// The link has used all its visits; its `expired_url`, if it has one.
    #[error("the link has used all its visits")]
    Exhausted(Option<TargetUrl>),
    /// The link is behind a password that the visitor has not proven; its hash, for the
    /// caller to verify a password against. The visit was not counted.
    #[error("the link is behind a password")]
    Locked(PasswordHash),
    #[error(transparent)]
    Storage(#[from] RepositoryError),
}

/// Why an edit failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// No such link, or not the caller's.
    #[error("no link with this code")]
    NotFound,
    #[error("expires_at is not in the future")]
    ExpiryNotInFuture,
    #[error("max_visits must be at least 1")]
    ZeroMaxVisits,
    #[error(transparent)]
    Storage(#[from] RepositoryError),
}

/// Creates and resolves links.
#[derive(Debug)]
pub struct Shortener<R, G> {
    pub(crate) repository: R,
    generator: G,
    visits: VisitBuffer,
}

impl<R: LinkRepository, G: CodeGenerator> Shortener<R, G> {
    pub fn new(repository: R, generator: G) -> Self {
        Self {
            repository,
            generator,
            visits: VisitBuffer::default(),
        }
    }

    /// The service keeping at most `top_values` values per link, day and dimension of
    /// its visits (50 by default).
    #[must_use]
    pub fn with_top_values(mut self, top_values: usize) -> Self {
        self.visits = VisitBuffer::new(top_values);
        self
    }

    pub fn repository(&self) -> &R {
        &self.repository
    }

    /// How many links have visit counts waiting for [`Self::flush_visits`].
    pub fn pending_links(&self) -> usize {
        self.visits.pending_links()
    }

    /// How many links have counts of values waiting for [`Self::flush_values`].
    pub fn pending_value_links(&self) -> usize {
        self.visits.pending_value_links()
    }

    /// Counts the dimension values of a visit that [`Self::resolve`] (or
    /// [`Self::resolve_unlocked`]) admitted: in memory, flushed with the visit counts.
    pub fn count_values(&self, key: &LinkKey, now: OffsetDateTime, values: &[(Dimension, &str)]) {
        self.visits.add_values(key, now.date(), values);
    }

    /// Creates a link under its alias, or under a fresh code (a collision is retried with
    /// another code, never overwritten).
    ///
    /// # Errors
    /// [`CreateError`]: a taken alias, an expiry not after `now`, zero `max_visits`,
    /// a full code space, or a storage failure.
    pub async fn create(
        &self,
        request: CreateLink,
        now: OffsetDateTime,
    ) -> Result<Link, CreateError> {
        if request.expires_at.is_some_and(|at| at <= now) {
            return Err(CreateError::ExpiryNotInFuture);
        }
        if request.max_visits == Some(0) {
            return Err(CreateError::ZeroMaxVisits);
        }
        let new_link = |code| NewLink {
            domain: request.domain.clone(),
            code,
            url: request.url.clone(),
            // Stored at whole-microsecond precision, which every backend keeps exactly.
            created_at: now
                .replace_nanosecond(now.nanosecond() / 1000 * 1000)
                .unwrap_or(now),
            expires_at: request.expires_at,
            max_visits: request.max_visits,
            owner: request.owner.clone(),
            tags: request.tags.clone(),
            options: request.options.clone(),
        };
        if let Some(alias) = request.alias.clone() {
            return match self.repository.insert(new_link(alias.into_code())).await {
                Ok(link) => Ok(link),
                Err(InsertError::CodeTaken) => Err(CreateError::AliasTaken),
                Err(InsertError::Storage(e)) => Err(e.into()),
            };
        }
        for _ in 0..CODE_ATTEMPTS {
            match self
                .repository
                .insert(new_link(self.generator.generate()))
                .await
            {
                Ok(link) => return Ok(link),
                Err(InsertError::CodeTaken) => continue,
                Err(InsertError::Storage(e)) => return Err(e.into()),
            }
        }
        Err(CreateError::NoFreeCode)
    }

    /// Resolves a link's key for a redirect and counts the visit, by `visitor` (`None`: a HEAD
    /// request, counted nowhere). People's visits of links with `max_visits` are counted
    /// atomically in the store, which decides; every other visit is counted in memory
    /// (flushed by [`Self::flush_visits`]), per UTC day.
    ///
    /// # Errors
    /// [`ResolveError`]: unknown, expired, out of visits (each with the link's
    /// `expired_url`), behind a password, or a storage failure.
    pub async fn resolve(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
        visitor: Option<Visitor>,
    ) -> Result<Redirect, ResolveError> {
        self.resolve_unlocked(key, now, visitor, None).await
    }

    /// As [`Self::resolve`], by a visitor who has proven the password of the hash
    /// `proven` (verified by the caller against the hash of a [`ResolveError::Locked`]).
    /// A link behind a password resolves, and counts a visit, only when its hash is still
    /// that one: a password changed in between unlocks nothing.
    ///
    /// # Errors
    /// As [`Self::resolve`].
    pub async fn resolve_unlocked(
        &self,
        key: &LinkKey,
        now: OffsetDateTime,
        visitor: Option<Visitor>,
        proven: Option<&PasswordHash>,
    ) -> Result<Redirect, ResolveError> {
        let redirect = (self.repository.get_redirect(key).await?).ok_or(ResolveError::NotFound)?;
        let link = match redirect {
            // No password, no visit limit, no fallback: its expiry is all there is to check.
            Redirect::Plain(_) => {
                if redirect.is_expired(now) {
                    return Err(ResolveError::Expired(None));
                }
                if let Some(visitor) = visitor {
                    self.visits.add(key, now.date(), visitor);
                }
                return Ok(redirect);
            }
            Redirect::Full(link) => link,
        };
        // The fallback as the link was read: a visit that finds it used up between this
        // read and its count goes where the visitors before it were told to go.
        let expired_url = || link.options.expired_url.clone();
        if link.is_expired(now) {
            return Err(ResolveError::Expired(expired_url()));
        }
        if let Some(hash) = &link.options.password
            && proven != Some(hash)
        {
            if link.is_exhausted() {
                return Err(ResolveError::Exhausted(expired_url()));
            }
            return Err(ResolveError::Locked(hash.clone()));
        }
        if link.max_visits.is_none() || visitor != Some(Visitor::Person) {
            if link.is_exhausted() {
                return Err(ResolveError::Exhausted(expired_url()));
            }
            if let Some(visitor) = visitor {
                self.visits.add(key, now.date(), visitor);
            }
            return Ok(Redirect::Full(link));
        }
        // Boxed: a rare path (a person's visit of a link with a visit limit) whose large
        // future every redirect would otherwise carry.
        let link = match Box::pin(self.repository.record_visit(key, now)).await? {
            VisitOutcome::Counted(link) => link,
            VisitOutcome::Exhausted => return Err(ResolveError::Exhausted(expired_url())),
            VisitOutcome::Expired => return Err(ResolveError::Expired(expired_url())),
            VisitOutcome::NotFound => return Err(ResolveError::NotFound),
        };
        // Counted in the total already; the day's row is written by the next flush.
        self.visits.add(key, now.date(), Visitor::Person);
        Ok(Redirect::Full(link))
    }

    /// The link with its visits, including those not flushed yet: read from the store
    /// (past any cache, whose copies keep the visits they were read with), plus this
    /// node's visits not flushed yet. Other nodes' visits show after their next flush.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    pub async fn link(&self, key: &LinkKey) -> Result<Option<Link>, RepositoryError> {
        Ok(self.repository.get_fresh(key).await?.map(|mut link| {
            // Links with `max_visits` counted each visit in the store already.
            if link.max_visits.is_none() {
                link.visits += self.visits.pending(key);
            }
            link
        }))
    }

    /// Deletes a link within `access`; `true` when there was one.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    pub async fn delete(&self, key: &LinkKey, access: Access<'_>) -> Result<bool, RepositoryError> {
        let deleted = self.repository.delete(key, access).await?;
        if deleted {
            // Counted before the delete, they belong to the deleted link.
            self.visits.forget(key);
        }
        Ok(deleted)
    }

    /// Edits a link within `access`, under the rules of a create: an expiry must be in
    /// the future and a visit limit at least 1.
    ///
    /// # Errors
    /// [`UpdateError`]: no such link within reach, a rule broken, or a storage failure.
    pub async fn update(
        &self,
        key: &LinkKey,
        access: Access<'_>,
        patch: &LinkPatch,
        now: OffsetDateTime,
    ) -> Result<Link, UpdateError> {
        if patch.expires_at.flatten().is_some_and(|at| at <= now) {
            return Err(UpdateError::ExpiryNotInFuture);
        }
        if patch.max_visits == Some(Some(0)) {
            return Err(UpdateError::ZeroMaxVisits);
        }
        self.repository
            .update(key, access, patch)
            .await?
            .ok_or(UpdateError::NotFound)
    }

    /// Writes the visits counted in memory; on failure they are kept for the next flush.
    /// Returns how many links were updated.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    pub async fn flush_visits(&self) -> Result<usize, RepositoryError> {
        let mut written = 0;
        for _ in 0..batches(self.visits.pending_links(), FLUSH_BATCH) {
            let pending = self.visits.drain(FLUSH_BATCH);
            if pending.is_empty() {
                break;
            }
            if let Err(e) = self.repository.add_visits(&pending).await {
                self.visits.restore(pending);
                return Err(e);
            }
            written += pending.len();
        }
        Ok(written)
    }

    /// Writes the visits per dimension value counted in memory; on failure they are kept
    /// for the next flush. Apart from [`Self::flush_visits`] so that a caller flushes them
    /// less often: a flush writes a row per link, day and value, whatever the visits, so
    /// fewer flushes write fewer rows. Returns how many rows were written.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    pub async fn flush_values(&self) -> Result<usize, RepositoryError> {
        let top_values = self.visits.top_values();
        let mut written = 0;
        for _ in 0..batches(self.visits.pending_value_links(), VALUES_FLUSH_BATCH) {
            let values = self.visits.drain_values(VALUES_FLUSH_BATCH);
            if values.is_empty() {
                break;
            }
            if let Err(e) = self.repository.add_dimensions(&values, top_values).await {
                self.visits.restore_values(values);
                return Err(e);
            }
            written += values.len();
        }
        Ok(written)
    }
}
