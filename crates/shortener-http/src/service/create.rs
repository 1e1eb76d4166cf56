//! From request bodies to the domain: a create body becomes a [`CreateLink`] (and the link
//! it makes), an edit body a [`LinkPatch`]. Each value is parsed by its domain type and
//! each target (`url`, `expired_url`) checked against the service's target rules; every
//! refusal names its field.

use poem_openapi::types::MaybeUndefined;
use shortener_core::rules::Rules;
use shortener_core::{
    Alias, CreateLink, LinkOptions, LinkPatch, Owner, ParseError, RedirectStatus, Tags, TargetUrl,
    Title,
};
use time::OffsetDateTime;

use crate::api::fields::PatchLinkRequest;
use crate::api::{CreateLinkRequest, LinkBody};
use crate::api_error::ApiError;
use crate::state::AppState;

impl AppState {
    /// Creates one link under the rules of a create request; every error names its field.
    pub(crate) async fn create_link(
        &self,
        body: CreateLinkRequest,
        owner: Option<Owner>,
    ) -> Result<LinkBody, ApiError> {
        let mut request = self.create_request(&body, owner)?;
        // Hashed last: a body refused for another field costs no hash.
        if let Some(password) = body.password {
            request.options.password = Some(self.password_hash(password).await?);
        }
        let link = self
            .shortener
            .create(request, OffsetDateTime::now_utc())
            .await?;
        metrics::counter!("shortener_links_created_total").increment(1);
        Ok(self.link_body(link))
    }

    /// With `find_if_exists`, the caller's link that the create body would make again.
    pub(crate) async fn existing_link(
        &self,
        body: &CreateLinkRequest,
        owner: Option<Owner>,
    ) -> Result<Option<LinkBody>, ApiError> {
        if body.find_if_exists != Some(true) || body.password.is_some() {
            return Ok(None);
        }
        let request = self.create_request(body, owner)?;
        let found = (self.shortener)
            .find_existing(&request, OffsetDateTime::now_utc())
            .await?;
        Ok(found.map(|link| self.link_body(link)))
    }

    /// The caller's newest live link to the body's target on its domain, whatever its
    /// other fields (Kutt's `reuse`).
    pub(crate) async fn link_to_target(
        &self,
        body: &CreateLinkRequest,
        owner: Option<Owner>,
    ) -> Result<Option<LinkBody>, ApiError> {
        let request = self.create_request(body, owner)?;
        let found = (self.shortener)
            .find_to_target(&request, OffsetDateTime::now_utc())
            .await?;
        Ok(found.map(|link| self.link_body(link)))
    }

    /// The create a body asks for, checked, without its password.
    fn create_request(
        &self,
        body: &CreateLinkRequest,
        owner: Option<Owner>,
    ) -> Result<CreateLink, ApiError> {
        let alias = body.alias.as_ref().map(|alias| {
            if self.serving.case_insensitive_aliases {
                alias.to_lowercase()
            } else {
                alias.clone()
            }
        });
        let options = LinkOptions {
            redirect_status: body.redirect_status.map(status).transpose()?,
            forward_query: body.forward_query,
            expired_url: (body.expired_url.as_deref())
                .map(|url| self.target("expired_url", url))
                .transpose()?,
            title: (body.title.as_deref()).map(title).transpose()?,
            crawlable: body.crawlable.unwrap_or_default(),
            password: None,
            rules: self.rule_targets(body.checked_rules.clone())?,
        };
        // Shlink's API answers under `/rest/` when it is on: no alias may take it.
        if self.serving.shlink
            && alias
                .as_deref()
                .is_some_and(|a| a.eq_ignore_ascii_case("rest"))
        {
            return Err(ApiError::bad_request("alias", "'rest' is a reserved path"));
        }
        let domain = (self.serving.domains.served(body.domain.as_deref()))
            .map_err(|e| ApiError::bad_request("domain", e))?;
        if body.password.is_some() && owner.is_none() {
            // Nobody could change or remove it, and its look-up would be anyone's.
            return Err(ApiError::bad_request(
                "password",
                "needs an API key: a link behind a password must have an owner",
            ));
        }
        Ok(CreateLink {
            domain,
            url: self.target("url", &body.url)?,
            alias: (alias.as_deref())
                .map(Alias::parse)
                .transpose()
                .map_err(|e| ApiError::bad_request("alias", e))?,
            expires_at: body.expires_at,
            max_visits: body.max_visits,
            owner,
            tags: tags(body.tags.as_deref().unwrap_or_default())?,
            options,
        })
    }

    /// An edit body as the patch it asks for.
    pub(crate) async fn link_patch(&self, body: PatchLinkRequest) -> Result<LinkPatch, ApiError> {
        let target = |field: &'static str| move |url: String| self.target(field, &url);
        let mut patch = LinkPatch {
            url: body.url.map(target("url")).transpose()?,
            expires_at: maybe(body.expires_at, Ok)?,
            max_visits: maybe(body.max_visits, Ok)?,
            redirect_status: maybe(body.redirect_status, status)?,
            forward_query: maybe(body.forward_query, Ok)?,
            expired_url: maybe(body.expired_url, target("expired_url"))?,
            title: maybe(body.title, |raw| title(&raw))?,
            // `null` is the default, as for every other option.
            crawlable: maybe(body.crawlable, Ok)?.map(Option::unwrap_or_default),
            // `null` is no tags, as `[]`.
            tags: maybe(body.tags, |raw| tags(&raw))?.map(Option::unwrap_or_default),
            password: None,
            rules: (body.checked_rules)
                .map(|rules| self.rule_targets(rules))
                .transpose()?,
        };
        // Hashed last: a body refused for another field costs no hash.
        patch.password = match body.password {
            MaybeUndefined::Undefined => None,
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Value(password) => Some(Some(self.password_hash(password).await?)),
        };
        Ok(patch)
    }

    /// The hash of a new password, checked first; a 503 when password work is at its
    /// bound.
    async fn password_hash(
        &self,
        password: String,
    ) -> Result<shortener_core::PasswordHash, ApiError> {
        crate::passwords::check(&password).map_err(|e| ApiError::bad_request("password", e))?;
        let admission = self.passwords.admit()?;
        admission.hash(password).await.map_err(|error| {
            tracing::error!(%error, "a password could not be hashed");
            ApiError::status(
                poem::http::StatusCode::INTERNAL_SERVER_ERROR,
                "password: could not be hashed",
            )
        })
    }

    /// Checked rules whose every URL is one the service redirects to, as a link's own.
    fn rule_targets(&self, rules: Rules) -> Result<Rules, ApiError> {
        for (field, url) in rules.targets() {
            (self.targets.check(url)).map_err(|e| ApiError::bad_request(&field, e))?;
        }
        Ok(rules)
    }

    /// A target URL that the service redirects to: parsed and within the target rules.
    fn target(&self, field: &str, raw: &str) -> Result<TargetUrl, ApiError> {
        let url = TargetUrl::parse(raw).map_err(|e| ApiError::bad_request(field, e))?;
        self.targets
            .check(&url)
            .map_err(|e| ApiError::bad_request(field, e))?;
        Ok(url)
    }
}

fn status(code: u16) -> Result<RedirectStatus, ApiError> {
    RedirectStatus::parse(code.into()).map_err(|e| ApiError::bad_request("redirect_status", e))
}

/// A link's tags.
fn tags(raw: &[String]) -> Result<Tags, ApiError> {
    Tags::parse(raw.iter().map(String::as_str)).map_err(|e| ApiError::bad_request("tags", e))
}

fn title(raw: &str) -> Result<Title, ApiError> {
    Title::parse(raw).map_err(|e: ParseError| ApiError::bad_request("title", e))
}

/// A merge patch's field as the domain's patch has it (`None`: leave; `Some(None)`:
/// clear), its value parsed by `parse`.
fn maybe<T, U>(
    value: MaybeUndefined<T>,
    parse: impl FnOnce(T) -> Result<U, ApiError>,
) -> Result<Option<Option<U>>, ApiError> {
    Ok(match value {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(None),
        MaybeUndefined::Value(value) => Some(Some(parse(value)?)),
    })
}
