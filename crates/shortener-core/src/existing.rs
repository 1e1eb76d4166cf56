//! Find-if-exists: the caller's live link that a create would make again, so that a
//! client asking for "a short link to X" twice gets one link.

use time::OffsetDateTime;

use crate::codes::CodeGenerator;
use crate::link::Link;
use crate::repository::{LinkRepository, RepositoryError};
use crate::service::{CreateLink, Shortener};

/// How many of the caller's links to one target a find-if-exists compares, newest first.
const FIND_AMONG: usize = 50;

impl<R: LinkRepository, G: CodeGenerator> Shortener<R, G> {
    /// The caller's live link that `request` would make again, if any (find-if-exists):
    /// the same domain, owner and target, the same expiry, visit limit, tags and options,
    /// and the alias as its code when one is asked for. A request with a password finds
    /// none (a hash cannot be compared with a password without the work of a check).
    ///
    /// # Errors
    /// When storage fails.
    pub async fn find_existing(
        &self,
        request: &CreateLink,
        now: OffsetDateTime,
    ) -> Result<Option<Link>, RepositoryError> {
        if request.options.password.is_some() {
            return Ok(None);
        }
        let candidates = (self.repository)
            .links_to(
                &request.domain,
                request.owner.as_ref(),
                &request.url,
                FIND_AMONG,
            )
            .await?;
        Ok(candidates.into_iter().find(|link| {
            let alias_fits =
                (request.alias.as_ref()).is_none_or(|alias| link.code.as_str() == alias.as_str());
            alias_fits
                && !link.is_expired(now)
                && !link.is_exhausted()
                && link.expires_at == request.expires_at
                && link.max_visits == request.max_visits
                && link.tags == request.tags
                && link.options == request.options
        }))
    }

    /// The caller's newest live link on the request's domain to the request's target,
    /// whatever its other fields: Kutt's `reuse`, looser than [`Self::find_existing`].
    ///
    /// # Errors
    /// [`RepositoryError`] when the store fails.
    pub async fn find_to_target(
        &self,
        request: &CreateLink,
        now: OffsetDateTime,
    ) -> Result<Option<Link>, RepositoryError> {
        let candidates = (self.repository)
            .links_to(
                &request.domain,
                request.owner.as_ref(),
                &request.url,
                FIND_AMONG,
            )
            .await?;
        Ok((candidates.into_iter()).find(|link| {
            !link.is_expired(now) && !link.is_exhausted() && link.options.password.is_none()
        }))
    }
}
