//! A link as a request names it (its code and domain), as its caller may see it, and as
//! the API's bodies show it; every node's cache told of an edit; whether storage answers.

use shortener_core::{Link, LinkKey, LinkRepository as _, RedirectStatus, ShortCode};

use crate::api::LinkBody;
use crate::api_error::ApiError;
use crate::auth::ApiKeyEntry;
use crate::state::AppState;

impl AppState {
    /// The key of a link that a request names by its code (the path) and its domain
    /// (the `domain` parameter, by host; the default domain when absent).
    pub(crate) fn link_key(&self, code: &str, domain: Option<&str>) -> Result<LinkKey, ApiError> {
        let code = ShortCode::parse(code).map_err(|e| ApiError::bad_request("code", e))?;
        let domain =
            (self.serving.domains.named(domain)).map_err(|e| ApiError::bad_request("domain", e))?;
        Ok(LinkKey::new(domain, code))
    }

    /// The link of `key` if this caller may see it ([`auth::sees`]); else a 404, the same
    /// as for a code that does not exist, so that other owners' codes cannot be probed.
    pub(crate) async fn visible_link(
        &self,
        key: &LinkKey,
        caller: Option<&ApiKeyEntry>,
    ) -> Result<Link, ApiError> {
        let mut link = self.shortener.link(key).await?;
        if link.is_none()
            && let Some(alias) = self.lower_case_alias(&key.code)
        {
            link = (self.shortener)
                .link(&LinkKey::new(key.domain.clone(), alias))
                .await?;
        }
        link.filter(|link| crate::api::auth::sees(caller, link))
            .ok_or_else(|| ApiError::not_found("code: no link with this code"))
    }

    pub(crate) fn link_body(&self, link: Link) -> LinkBody {
        let domains = &self.serving.domains;
        LinkBody {
            short_url: domains.short_url(&link.domain, &link.code),
            domain: domains.host(&link.domain).to_owned(),
            code: link.code.to_string(),
            url: shortener_core::unicode_form(&link.url).into_owned(),
            created_at: link.created_at,
            expires_at: link.expires_at,
            max_visits: link.max_visits,
            visits: link.visits,
            redirect_status: (link.options.redirect_status).map(RedirectStatus::code),
            forward_query: link.options.forward_query,
            expired_url: (link.options.expired_url)
                .map(|url| shortener_core::unicode_form(&url).into_owned()),
            title: link.options.title.map(|title| title.as_str().to_owned()),
            crawlable: link.options.crawlable,
            tags: link.tags.names().map(str::to_owned).collect(),
            password_protected: link.options.password.is_some(),
            rules: crate::api::rules::bodies(&link.options.rules),
        }
    }

    /// Whether storage answers, from a probe at most a second old: `/readyz` is public,
    /// and a query per call would let anyone load the database through it.
    pub(crate) async fn storage_ready(&self) -> bool {
        let mut probe = self.storage_probe.lock().await;
        if let Some((at, ready)) = *probe
            && at.elapsed() < std::time::Duration::from_secs(1)
        {
            return ready;
        }
        let ready = self.shortener.repository().health().await.is_ok();
        *probe = Some((std::time::Instant::now(), ready));
        ready
    }

    /// After an edit or a delete: this node's cache forgets the link (the repository did
    /// already), and every other node is told to forget it too. Nodes that miss the message
    /// (Redis down) serve the old copy for at most `cache.ttl_secs`.
    pub(crate) async fn invalidate(&self, key: &LinkKey) {
        if let Some(invalidations) = &self.invalidations
            && let Err(error) = invalidations.publish(&key.to_string()).await
        {
            tracing::warn!(%error, link = %key, "other nodes may serve the old link until their cache expires");
        }
    }
}
