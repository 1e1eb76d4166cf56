//! Where a visit of a code goes: the link of the request's domain (or its lower-case
//! alias), opened by a password when it has one, its rules applied, its visit counted,
//! and the redirect that sends the visitor there with how long caches may keep it.

use poem::Request;
use shortener_core::{LinkKey, RedirectStatus, ResolveError, ShortCode};
use time::OffsetDateTime;

use crate::api::unlock::{PASSWORD_HEADER, Unlock};
use crate::api_error::ApiError;
use crate::http::header_text;
use crate::state::AppState;
use crate::visit::values::Visit;

/// Where the service sends a visit of a code: what the `redirect` operation and the
/// redirects answered before the router write, each in its own way.
#[derive(Debug)]
pub(crate) enum Sent {
    /// A redirect: its status, `Location`, `Cache-Control` and `Vary` (a link with rules
    /// names the request headers they read).
    To {
        status: RedirectStatus,
        location: String,
        cache: String,
        vary: Option<String>,
    },
    /// A link behind a password that this visit did not open: its page, never cached.
    Locked(LinkKey),
}

impl AppState {
    /// With `links.case_insensitive_aliases`, the lower-case form of a code not found as
    /// written, when it differs (aliases are stored in lower case then).
    pub(crate) fn lower_case_alias(&self, code: &ShortCode) -> Option<ShortCode> {
        if !self.serving.case_insensitive_aliases
            || !code.as_str().bytes().any(|b| b.is_ascii_uppercase())
        {
            return None;
        }
        ShortCode::parse(&code.as_str().to_ascii_lowercase()).ok()
    }

    /// The attempt at a locked link's password that a `GET` carries in `X-Link-Password`.
    pub(crate) fn unlock_from_header(&self, request: &Request) -> Option<Unlock> {
        let password = header_text(request, &PASSWORD_HEADER)?;
        Some(self.unlock_of(request, password.to_owned()))
    }

    /// Where a visit of `code` on the domain of the `request`'s `Host` goes, for `visit`
    /// (`None`: a `HEAD`, counted nowhere): the link's target with the request's query
    /// passed on under `links.forward_query`, or for a link with rules, where they send
    /// the request. A link behind a password is [`Sent::Locked`], or opens with what
    /// `unlock` gives (a `GET`'s `X-Link-Password`), asked only of such a link.
    pub(crate) async fn redirect(
        &self,
        request: &Request,
        code: &str,
        visit: Option<Visit<'_>>,
        unlock: impl FnOnce() -> Option<Unlock>,
    ) -> Result<Sent, ApiError> {
        let host = crate::domains::request_host(request);
        let visitor = visit.map(|visit| visit.visitor);
        let site = (self.serving.domains.by_host(host))
            .ok_or_else(|| ApiError::not_found("host: this service serves no such domain"))?;
        let not_found = || match &site.not_found_url {
            Some(url) => Ok(Sent::To {
                status: RedirectStatus::Found,
                location: url.as_str().to_owned(),
                cache: cache_control(Some(0)),
                vary: None,
            }),
            None => Err(ApiError::not_found("code: no link with this code")),
        };
        let Ok(code) = ShortCode::parse(code) else {
            return not_found();
        };
        let now = OffsetDateTime::now_utc();
        let key = LinkKey::new(site.domain.clone(), code);
        let (key, resolved) = match self.shortener.resolve(&key, now, visitor).await {
            Err(ResolveError::NotFound) => match self.lower_case_alias(&key.code) {
                Some(alias) => {
                    let alias = LinkKey::new(key.domain, alias);
                    let resolved = self.shortener.resolve(&alias, now, visitor).await;
                    (alias, resolved)
                }
                None => (key, Err(ResolveError::NotFound)),
            },
            resolved => (key, resolved),
        };
        let locked = || Ok(Sent::Locked(key.clone()));
        let resolved = match (resolved, visitor) {
            (Err(ResolveError::Locked(hash)), Some(visitor)) => match unlock() {
                // Boxed, as rare: a password check's future is large.
                Some(unlock) => {
                    (Box::pin(self.try_unlock(&key, hash, unlock, now, visitor)).await)?
                }
                None => return locked(),
            },
            (Err(ResolveError::Locked(_)), None) => return locked(),
            (resolved, _) => resolved,
        };
        let link = match resolved {
            Ok(link) => link,
            Err(ResolveError::NotFound) => return not_found(),
            // An ended link with somewhere to go: a temporary redirect that no cache keeps,
            // since an edit can bring the link back.
            Err(ResolveError::Expired(Some(url)) | ResolveError::Exhausted(Some(url)))
                if !self.targets.denies(url.as_str()) =>
            {
                return Ok(Sent::To {
                    status: RedirectStatus::Found,
                    location: url.as_str().to_owned(),
                    cache: cache_control(None),
                    vary: None,
                });
            }
            Err(error) => return Err(error.into()),
        };
        let rules_visit = crate::visit_rules::Visit::of(request, visitor, now);
        let destination = crate::visit_rules::destination(self, &link, &rules_visit);
        if let Some(visit) = &visit {
            self.count_values(&key, now, visit, destination.way.as_ref());
        }
        if self.targets.denies(&destination.location) {
            // Blocked after it was made: the operator stops a phishing link by listing its
            // host, without finding and deleting every link to it.
            return Err(ApiError::status(
                poem::http::StatusCode::GONE,
                "code: this link's target host is blocked on this service",
            ));
        }
        let cache = if destination.private {
            "private, max-age=0".to_owned()
        } else {
            cache_control(link.cacheable_for(now, self.serving.redirect_max_age_secs))
        };
        Ok(Sent::To {
            status: destination.status,
            location: destination.location,
            cache,
            vary: destination.vary.map(str::to_owned),
        })
    }

    /// Where a redirect of `link` goes: its target, with the request's `query` merged in
    /// under its own or the service's `forward_query`.
    pub(crate) fn location(&self, link: &shortener_core::Redirect, query: Option<&str>) -> String {
        let forward_query = (link.forward_query()).unwrap_or(self.serving.forward_query);
        match query {
            Some(query) if forward_query => link.url_with_query(query),
            _ => link.url().to_owned(),
        }
    }
}

/// The `Cache-Control` of a redirect that caches may keep `seconds` (`None`: not at all).
fn cache_control(seconds: Option<u64>) -> String {
    match seconds {
        None => "no-store".to_owned(),
        Some(0) => "private, max-age=0".to_owned(),
        Some(seconds) => format!("public, max-age={seconds}"),
    }
}
