//! The `Shortener` service: the use cases, over any repository and code generator.

use time::OffsetDateTime;

use crate::codes::CodeGenerator;
use crate::domain::{Alias, Link, NewLink, ShortCode, TargetUrl};
use crate::repository::{InsertError, LinkRepository, RepositoryError, VisitOutcome};
use crate::visits::VisitBuffer;

/// How many fresh codes a create tries before giving up. With 62^7 codes, needing more
/// than one means the code space is nearly full, and the operator must lengthen codes.
const CODE_ATTEMPTS: usize = 8;

/// A validated create request.
#[derive(Debug, Clone)]
pub struct CreateLink {
    pub url: TargetUrl,
    pub alias: Option<Alias>,
    pub expires_at: Option<OffsetDateTime>,
    pub max_visits: Option<u64>,
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
    #[error("the link has expired")]
    Expired,
    #[error("the link has used all its visits")]
    Exhausted,
    #[error(transparent)]
    Storage(#[from] RepositoryError),
}

/// Creates and resolves links.
#[derive(Debug)]
pub struct Shortener<R, G> {
    repository: R,
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

    pub fn repository(&self) -> &R {
        &self.repository
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
            code,
            url: request.url.clone(),
            // Stored at whole-microsecond precision, which every backend keeps exactly.
            created_at: now
                .replace_nanosecond(now.nanosecond() / 1000 * 1000)
                .unwrap_or(now),
            expires_at: request.expires_at,
            max_visits: request.max_visits,
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

    /// Resolves a code for a redirect and counts the visit: atomically in the store
    /// for links with `max_visits`, in memory (flushed by [`Self::flush_visits`]) otherwise.
    ///
    /// # Errors
    /// [`ResolveError`]: unknown, expired, out of visits, or a storage failure.
    pub async fn resolve(
        &self,
        code: &ShortCode,
        now: OffsetDateTime,
    ) -> Result<Link, ResolveError> {
        let link = self
            .repository
            .get(code)
            .await?
            .ok_or(ResolveError::NotFound)?;
        if link.is_expired(now) {
            return Err(ResolveError::Expired);
        }
        if link.max_visits.is_none() {
            self.visits.add(code, 1);
            return Ok(link);
        }
        match self.repository.record_visit(code, now).await? {
            VisitOutcome::Counted(link) => Ok(link),
            VisitOutcome::Exhausted => Err(ResolveError::Exhausted),
            VisitOutcome::Expired => Err(ResolveError::Expired),
            VisitOutcome::NotFound => Err(ResolveError::NotFound),
        }
    }

    /// The link with its visits, including those not flushed yet: read from the store
    /// (past any cache, whose copies keep the visits they were read with), plus this
    /// node's visits not flushed yet. Other nodes' visits show after their next flush.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    pub async fn link(&self, code: &ShortCode) -> Result<Option<Link>, RepositoryError> {
        Ok(self.repository.get_fresh(code).await?.map(|mut link| {
            link.visits += self.visits.pending(code);
            link
        }))
    }

    /// Deletes a link; `true` when there was one.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    pub async fn delete(&self, code: &ShortCode) -> Result<bool, RepositoryError> {
        self.repository.delete(code).await
    }

    /// Writes the visits counted in memory; on failure they are kept for the next flush.
    /// Returns how many links were updated.
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    pub async fn flush_visits(&self) -> Result<usize, RepositoryError> {
        let pending = self.visits.drain();
        if pending.is_empty() {
            return Ok(0);
        }
        match self.repository.add_visits(&pending).await {
            Ok(()) => Ok(pending.len()),
            Err(e) => {
                self.visits.restore(pending);
                Err(e)
            }
        }
    }
}
